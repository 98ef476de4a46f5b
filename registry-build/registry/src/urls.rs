//! Which parts of a payload carry URLs, and which of them Cedar authorizes one at a time
//! (`context.url`).
//!
//! A **URL-bearing field** is a string with `format` `uri`, `uri-reference`, `iri` or
//! `iri-reference`, or a string property named like a URL (`url`, `uri`, `href`, `link`, or
//! ending in `_url`, `_uri`, `-url`, `Url` or `Uri`, in any case); the items of a list
//! property named like a list of URLs (`urls`, `links`, `image_urls`, …) are URL-bearing too.
//!
//! A request authorizes one URL when the tool's payload has exactly one URL-bearing field
//! outside any list (the single-URL tool), or for each element of a list marked
//! `"x-authorize-each": true` (the bulk tool: one request per element). The elements of such a
//! list are URL-bearing strings, or objects holding exactly one URL-bearing field (outside any
//! further list): each object is authorized on that field's URL.
//!
//! Everything here walks the payload's instances ([`crate::schema::visit`]), `$ref` followed,
//! so a `$defs` entry reached from inside a list is judged inside that list.

use serde_json::Value;

use crate::schema::visit::{self, Node};
use crate::schema::walk::JsonType;

/// The `format` values that make a string URL-bearing.
pub const URL_FORMATS: &[&str] = &["uri", "uri-reference", "iri", "iri-reference"];

/// Whether a property name names a URL (`url`, `imageUrl`, `base_uri`, `href`, `link`, …).
pub fn is_url_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(lower.as_str(), "url" | "uri" | "href" | "link" | "iri")
        || ["_url", "_uri", "-url", "-uri", "_href", "_link"]
            .iter()
            .any(|s| lower.ends_with(s))
        || ["Url", "Uri", "URL", "URI", "Href", "Link"]
            .iter()
            .any(|s| name.len() > s.len() && name.ends_with(s))
}

/// Whether a list property's name names a list of URLs (`urls`, `links`, `imageUrls`, …).
pub fn is_url_list_name(name: &str) -> bool {
    ["s", "_list", "List"].iter().any(|suffix| {
        name.strip_suffix(suffix)
            .is_some_and(|stem| !stem.is_empty() && is_url_name(stem))
    })
}

/// Whether a node of the payload is a URL-bearing field.
pub fn is_url_bearing(node: &Node<'_>) -> bool {
    node.ty == Some(JsonType::String)
        && (node
            .schema
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| URL_FORMATS.contains(&f))
            || node.name.is_some_and(is_url_name)
            || node.item_of.is_some_and(is_url_list_name))
}

/// A list whose elements Cedar authorizes one by one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EachList {
    /// The list's pointer in the payload.
    pub list: String,
    /// The pointer of the URL inside each element, or `None` when the element is the URL.
    pub item_url: Option<String>,
}

/// The per-URL shape of an input schema.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerUrl {
    /// The pointer of the one URL-bearing field outside lists, and whether it is always
    /// present; `None` when there are zero or several such fields.
    pub single: Option<(String, bool)>,
    /// The lists marked `x-authorize-each` (outside any other list), each with where the URL
    /// of an element is.
    pub each: Vec<EachList>,
}

impl PerUrl {
    /// Whether some request of this tool carries `context.url`.
    pub fn has_url(&self) -> bool {
        self.single.is_some() || !self.each.is_empty()
    }

    /// Whether every request of this tool carries `context.url` (so it is declared required).
    pub fn url_always(&self) -> bool {
        self.each.is_empty() && self.single.as_ref().is_some_and(|(_, always)| *always)
    }
}

/// Analyse an input schema that passed the subset rules.
pub fn per_url(input_schema: &Value) -> PerUrl {
    let nodes = visit::nodes(input_schema);
    let mut singles: Vec<(String, bool)> = nodes
        .iter()
        .filter(|n| n.lists.is_empty() && is_url_bearing(n))
        .map(|n| (n.pointer.clone(), n.always_present))
        .collect();
    let each = nodes
        .iter()
        .filter(|n| n.lists.is_empty() && n.ty == Some(JsonType::Array) && n.marked_each())
        .filter_map(|list| element_url(&nodes, &list.pointer).map(|item_url| (list, item_url)))
        .map(|(list, item_url)| EachList {
            list: list.pointer.clone(),
            item_url,
        })
        .collect();
    PerUrl {
        single: if singles.len() == 1 {
            singles.pop()
        } else {
            None
        },
        each,
    }
}

/// Where the URL of each element of the marked list at `list` is: `Some(None)` when the
/// element is a URL-bearing string, `Some(Some(pointer))` when it is an object with exactly
/// one URL-bearing field outside further lists, `None` otherwise.
fn element_url(nodes: &[Node<'_>], list: &str) -> Option<Option<String>> {
    let element = format!("{list}/-");
    let item = nodes.iter().find(|n| n.pointer == element)?;
    if is_url_bearing(item) {
        return Some(None);
    }
    if item.ty != Some(JsonType::Object) {
        return None;
    }
    let depth = item.lists.len();
    let mut urls = nodes.iter().filter(|n| {
        n.lists.len() == depth && n.pointer.starts_with(&format!("{element}/")) && is_url_bearing(n)
    });
    let first = urls.next()?;
    if urls.next().is_some() {
        return None;
    }
    Some(Some(first.pointer[element.len()..].to_string()))
}

/// A URL-bearing field (or a marked list) whose URLs would not each be authorized on their
/// own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeProblem {
    /// Where its values sit in a payload (list steps as `/-`).
    pub pointer: String,
    /// Where it is written in the schema document.
    pub written_at: String,
    /// What is wrong, and what to do.
    pub message: String,
}

/// Every URL-bearing field of `input_schema` that is neither the one per-URL field nor the URL
/// of an element of a list marked `x-authorize-each`: the fields whose URLs Cedar would never
/// see one by one.
pub fn shape_problems(input_schema: &Value) -> Vec<ShapeProblem> {
    let nodes = visit::nodes(input_schema);
    let mut out = Vec::new();
    let outside: Vec<&Node<'_>> = nodes
        .iter()
        .filter(|n| n.lists.is_empty() && is_url_bearing(n))
        .collect();
    if outside.len() > 1 {
        let all: Vec<String> = outside.iter().map(|n| format!("`{}`", n.pointer)).collect();
        for n in &outside {
            out.push(ShapeProblem {
                pointer: n.pointer.clone(),
                written_at: n.written_at.clone(),
                message: format!(
                    "the URL field `{}` is one of {} URL fields outside lists ({}): a request \
                     authorizes one URL, so a per-URL tool has exactly one such field; put the \
                     others in a list marked `\"x-authorize-each\": true`",
                    n.pointer,
                    outside.len(),
                    all.join(", ")
                ),
            });
        }
    }
    for n in nodes
        .iter()
        .filter(|n| !n.lists.is_empty() && is_url_bearing(n))
    {
        let problem = match n.lists.as_slice() {
            [(list, true)] => {
                let fits = element_url(&nodes, list).is_some_and(|url| match url {
                    None => n.pointer == format!("{list}/-"),
                    Some(p) => n.pointer == format!("{list}/-{p}"),
                });
                (!fits).then(|| {
                    format!(
                        "the URL field `{}` is one of several URLs in each element of the list \
                         `{list}`: each element is authorized on one URL",
                        n.pointer
                    )
                })
            }
            [(list, false)] => Some(format!(
                "the URL field `{}` sits in the list `{list}`, which is not marked \
                 `\"x-authorize-each\": true`: its URLs would be authorized only together, never \
                 one by one",
                n.pointer
            )),
            _ => Some(format!(
                "the URL field `{}` sits in a list inside another list: only the elements of a \
                 top-level list marked `\"x-authorize-each\": true` are authorized one by one",
                n.pointer
            )),
        };
        if let Some(message) = problem {
            out.push(ShapeProblem {
                pointer: n.pointer.clone(),
                written_at: n.written_at.clone(),
                message,
            });
        }
    }
    out
}

/// Misplaced `"x-authorize-each": true` marks: on a list inside another list, or on a list
/// whose elements are neither URL-bearing strings nor objects with exactly one URL-bearing
/// field. Judged where the payload meets the list (`$ref` followed).
pub fn each_mark_problems(input_schema: &Value) -> Vec<ShapeProblem> {
    let nodes = visit::nodes(input_schema);
    let mut out = Vec::new();
    for n in nodes
        .iter()
        .filter(|n| n.ty == Some(JsonType::Array) && n.marked_each())
    {
        let mut push = |message: String| {
            out.push(ShapeProblem {
                pointer: n.pointer.clone(),
                written_at: n.written_at.clone(),
                message,
            })
        };
        if !n.lists.is_empty() {
            push(format!(
                "the list `{}` is marked `x-authorize-each` but sits inside another list; only a \
                 top-level list's elements are authorized one by one",
                n.pointer
            ));
        } else if element_url(&nodes, &n.pointer).is_none() {
            push(format!(
                "`x-authorize-each` marks a list whose elements are URL strings (`\"format\": \
                 \"uri\"`) or objects with exactly one URL field; the elements of `{}` are neither",
                n.pointer
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn single_url_tool() {
        let s = json!({"type":"object","additionalProperties":false,"required":["url"],
            "properties":{"url":{"type":"string","format":"uri"}}});
        let p = per_url(&s);
        assert_eq!(p.single, Some(("/url".to_string(), true)));
        assert!(p.url_always());
        assert!(shape_problems(&s).is_empty());
    }

    #[test]
    fn bulk_tool_and_unmarked_list() {
        let s = json!({"type":"object","additionalProperties":false,"properties":{
            "urls":{"type":"array","x-authorize-each":true,"items":{"type":"string","format":"uri"}},
            "more":{"type":"array","items":{"type":"string","format":"uri"}}}});
        let p = per_url(&s);
        assert_eq!(p.single, None);
        assert_eq!(
            p.each,
            vec![EachList {
                list: "/urls".into(),
                item_url: None
            }]
        );
        assert!(p.has_url() && !p.url_always());
        let problems = shape_problems(&s);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].pointer, "/more/-");
    }

    #[test]
    fn two_urls_are_not_single_and_both_are_named() {
        let s = json!({"type":"object","additionalProperties":false,"properties":{
            "a":{"type":"string","format":"uri"},"b":{"$ref":"#/$defs/U"}},
            "$defs":{"U":{"type":"string","format":"iri"}}});
        assert_eq!(per_url(&s), PerUrl::default());
        let problems = shape_problems(&s);
        let at: Vec<&str> = problems.iter().map(|p| p.written_at.as_str()).collect();
        assert_eq!(at, ["/properties/a", "/$defs/U"]);
    }

    #[test]
    fn url_names_without_a_format_bear_urls() {
        for name in [
            "url",
            "URL",
            "href",
            "link",
            "image_url",
            "imageUrl",
            "base_uri",
            "baseURI",
            "next-url",
        ] {
            assert!(is_url_name(name), "{name}");
        }
        for name in [
            "curl",
            "urlencoded",
            "hurl",
            "linked",
            "blink_count",
            "query",
            "uri_scheme",
        ] {
            assert!(!is_url_name(name), "{name}");
        }
        assert!(
            is_url_list_name("urls") && is_url_list_name("imageUrls") && is_url_list_name("links")
        );
        assert!(!is_url_list_name("s") && !is_url_list_name("tags"));
        let s = json!({"type":"object","additionalProperties":false,"properties":{
            "target":{"type":"string"},"link":{"type":"string"}}});
        assert_eq!(per_url(&s).single, Some(("/link".to_string(), false)));
    }

    #[test]
    fn a_marked_list_of_objects_is_authorized_on_each_objects_url() {
        let s = json!({"type":"object","additionalProperties":false,"properties":{
            "pages":{"type":"array","x-authorize-each":true,"items":{"$ref":"#/$defs/P"}}},
            "$defs":{"P":{"type":"object","additionalProperties":false,"required":["href"],
                "properties":{"href":{"type":"string"},"title":{"type":"string"}}}}});
        assert_eq!(
            per_url(&s).each,
            vec![EachList {
                list: "/pages".into(),
                item_url: Some("/href".into())
            }]
        );
        assert!(shape_problems(&s).is_empty());
        assert!(each_mark_problems(&s).is_empty());
    }

    #[test]
    fn a_mark_reached_through_ref_inside_a_list_is_refused() {
        let s = json!({"type":"object","additionalProperties":false,"properties":{
            "groups":{"type":"array","items":{"$ref":"#/$defs/G"}}},
            "$defs":{"G":{"type":"array","x-authorize-each":true,
                "items":{"type":"string","format":"uri"}}}});
        let problems = each_mark_problems(&s);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].written_at, "/$defs/G");
        assert_eq!(per_url(&s).each, Vec::new());
        assert_eq!(shape_problems(&s).len(), 1);
    }
}
