//! The one walk over the instances a schema describes: from the root, through `properties`,
//! `items` and `$ref`, as a validator sees them.
//!
//! A rule that depends on where a sub-schema sits in a payload — inside a list or not, always
//! present or not, under which property name, inside which list marked `x-authorize-each` —
//! asks this walk, never a walk of the schema document: a `$defs` entry reached through `$ref`
//! from inside a list is inside that list. The walk follows `$ref` into the root's `$defs`;
//! the subset rules reject every keyword beside `$ref` except annotations
//! ([`Rule::SchemaRefSiblings`](crate::rule::Rule::SchemaRefSiblings)), so the referenced schema is all there is to see.
//! Recursion is rejected by the subset rules as well; the walk stops at a depth bound anyway.

use serde_json::Value;

use crate::schema::walk::{self, escape, JsonType};

/// The deepest the walk goes (the subset rules reject recursive `$defs`).
const MAX_DEPTH: usize = 64;

/// One sub-schema as the payload meets it.
#[derive(Debug, Clone)]
pub struct Node<'a> {
    /// The sub-schema, `$ref` followed.
    pub schema: &'a Value,
    /// Its type, if the schema has one.
    pub ty: Option<JsonType>,
    /// Where its values sit in a payload: a JSON pointer whose list steps are `/-`.
    pub pointer: String,
    /// Where the sub-schema is written in the schema document (after `$ref`: in `$defs`).
    pub written_at: String,
    /// The property name it was reached under (`None` for the root and for list items).
    pub name: Option<&'a str>,
    /// For a list's items: the property name the list was reached under.
    pub item_of: Option<&'a str>,
    /// Whether every step from the root is a required property (no list step).
    pub always_present: bool,
    /// The lists enclosing it, outermost first: their payload pointers and whether each is
    /// marked `"x-authorize-each": true`.
    pub lists: Vec<(String, bool)>,
}

impl Node<'_> {
    /// Whether the schema is marked `"x-authorize-each": true`.
    pub fn marked_each(&self) -> bool {
        self.schema.get("x-authorize-each") == Some(&Value::Bool(true))
    }
}

/// Every node of `root`'s instances, parents before children.
pub fn nodes(root: &Value) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    walk_node(
        root,
        root,
        Step {
            pointer: String::new(),
            written_at: String::new(),
            name: None,
            item_of: None,
            always_present: true,
            lists: Vec::new(),
        },
        &mut out,
        0,
    );
    out
}

struct Step<'a> {
    pointer: String,
    written_at: String,
    name: Option<&'a str>,
    item_of: Option<&'a str>,
    always_present: bool,
    lists: Vec<(String, bool)>,
}

fn walk_node<'a>(
    root: &'a Value,
    schema: &'a Value,
    step: Step<'a>,
    out: &mut Vec<Node<'a>>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let (resolved, written_at) = follow(root, schema, step.written_at);
    let Some(s) = resolved else { return };
    let ty = walk::type_of(root, s);
    let node = Node {
        schema: s,
        ty,
        pointer: step.pointer,
        written_at,
        name: step.name,
        item_of: step.item_of,
        always_present: step.always_present,
        lists: step.lists,
    };
    let marked = node.marked_each();
    let own_name = node.name;
    let (pointer, at, always, lists) = (
        node.pointer.clone(),
        node.written_at.clone(),
        node.always_present,
        node.lists.clone(),
    );
    out.push(node);
    match ty {
        Some(JsonType::Object) => {
            let props = s.get("properties").and_then(Value::as_object);
            let required = walk::properties(root, s);
            for (name, sub) in props.into_iter().flatten() {
                let req = required.iter().any(|(n, _, r)| *n == name && *r);
                walk_node(
                    root,
                    sub,
                    Step {
                        pointer: format!("{pointer}/{}", escape(name)),
                        written_at: format!("{at}/properties/{}", escape(name)),
                        name: Some(name.as_str()),
                        item_of: None,
                        always_present: always && req,
                        lists: lists.clone(),
                    },
                    out,
                    depth + 1,
                );
            }
        }
        Some(JsonType::Array) => {
            if let Some(items) = s.get("items") {
                let mut inner = lists;
                inner.push((pointer.clone(), marked));
                walk_node(
                    root,
                    items,
                    Step {
                        pointer: format!("{pointer}/-"),
                        written_at: format!("{at}/items"),
                        name: None,
                        item_of: own_name,
                        always_present: false,
                        lists: inner,
                    },
                    out,
                    depth + 1,
                );
            }
        }
        _ => {}
    }
}

/// Follow `$ref` chains, keeping where the schema finally reached is written.
fn follow<'a>(root: &'a Value, schema: &'a Value, at: String) -> (Option<&'a Value>, String) {
    let mut cur = schema;
    let mut at = at;
    for _ in 0..MAX_DEPTH {
        let Some(r) = cur.get("$ref").and_then(Value::as_str) else {
            return (Some(cur), at);
        };
        let Some(name) = r.strip_prefix("#/$defs/") else {
            return (None, at);
        };
        let name = name.replace("~1", "/").replace("~0", "~");
        match root.get("$defs").and_then(|d| d.get(&name)) {
            Some(def) => {
                at = format!("/$defs/{}", escape(&name));
                cur = def;
            }
            None => return (None, at),
        }
    }
    (None, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_def_reached_from_inside_a_list_is_inside_it() {
        let s = json!({"type":"object","additionalProperties":false,
            "properties":{"pages":{"type":"array","items":{"$ref":"#/$defs/P"}}},
            "$defs":{"P":{"type":"object","additionalProperties":false,
                "required":["link"],"properties":{"link":{"type":"string"}}}}});
        let nodes = nodes(&s);
        let link = nodes
            .iter()
            .find(|n| n.name == Some("link"))
            .expect("reached");
        assert_eq!(link.pointer, "/pages/-/link");
        assert_eq!(link.written_at, "/$defs/P/properties/link");
        assert_eq!(link.lists, vec![("/pages".to_string(), false)]);
        assert!(!link.always_present);
    }

    #[test]
    fn required_steps_make_a_field_always_present() {
        let s = json!({"type":"object","additionalProperties":false,"required":["a"],
            "properties":{"a":{"type":"object","additionalProperties":false,"required":["b"],
                "properties":{"b":{"type":"string"},"c":{"type":"string"}}}}});
        let nodes = nodes(&s);
        let b = nodes.iter().find(|n| n.pointer == "/a/b").expect("b");
        let c = nodes.iter().find(|n| n.pointer == "/a/c").expect("c");
        assert!(b.always_present && !c.always_present);
    }
}
