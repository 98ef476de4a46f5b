//! `compensation`: the inverse of a compensatable tool, declared by this record (its shape) and
//! checked against the inverse's record (its fields and types).

use escepine_contract::SideEffectClass;
use serde_json::Value;

use super::context::Checked;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::fields::Object;
use crate::record::{CompensationSpec, ToolRecord};
use crate::rule::Rule;
use crate::rules::names;
use crate::schema::walk::{self, escape, JsonType};

/// `compensation`: required on a compensatable tool, refused on any other; a closed object with
/// the inverse's tool id and a map from the inverse's fields to pointers into this tool's
/// `{"input": …, "output": …}`.
pub(super) fn shape(
    rec: &Object<'_>,
    class: Option<SideEffectClass>,
    diags: &mut Diagnostics,
) -> Option<CompensationSpec> {
    let src = rec.src;
    match (class, rec.map.get("compensation")) {
        (Some(SideEffectClass::Compensatable), None) => {
            diags.push(
                Diagnostic::at(
                    Rule::CompensationMissing,
                    src,
                    &rec.ptr("side_effect_class"),
                    "a compensatable tool must declare `compensation`: its inverse and how to \
                     build the inverse's payload",
                )
                .help(
                    "add \"compensation\": { \"tool\": \"<inverse tool id>\", \"map\": { \
                     \"<inverse field>\": \"/output/<field>\" } }",
                ),
            );
            None
        }
        (Some(c), Some(_)) if c != SideEffectClass::Compensatable => {
            diags.push(Diagnostic::at(
                Rule::CompensationUnexpected,
                src,
                &rec.ptr("compensation"),
                format!(
                    "only compensatable tools declare an inverse; this tool is {}",
                    c.as_str()
                ),
            ));
            None
        }
        (_, Some(v)) => {
            let c = rec.as_object("compensation", v, diags)?;
            c.closed(&["tool", "map"], "`compensation`", diags);
            let tool = c
                .string("tool", diags)
                .and_then(|t| match names::tool_id_problem(t) {
                    Some((_, problem)) => {
                        diags.push(Diagnostic::at(
                            Rule::CompensationInverse,
                            src,
                            &c.ptr("tool"),
                            format!("the inverse cannot be registered: {problem}"),
                        ));
                        None
                    }
                    None => Some(t.to_string()),
                });
            let map = c.object("map", diags).and_then(|m| {
                let mut out = Vec::new();
                let mut ok = true;
                for (k, v) in m.map {
                    match v.as_str() {
                        Some(p) if is_payload_pointer(p) => out.push((k.clone(), p.to_string())),
                        Some(p) => {
                            diags.push(
                                Diagnostic::at(
                                    Rule::CompensationPointer,
                                    src,
                                    &m.ptr(k),
                                    format!(
                                        "`{p}` is not a JSON pointer into {{\"input\": …, \
                                         \"output\": …}}"
                                    ),
                                )
                                .help("write \"/input/<field>\" or \"/output/<field>\""),
                            );
                            ok = false;
                        }
                        None => {
                            m.wrong(
                                k,
                                "a JSON pointer string into {\"input\": …, \"output\": …}",
                                diags,
                            );
                            ok = false;
                        }
                    }
                }
                ok.then_some(out)
            });
            Some(CompensationSpec {
                tool: tool?,
                map: map?,
            })
        }
        _ => None,
    }
}

/// Whether `p` points into `{"input": …, "output": …}`.
fn is_payload_pointer(p: &str) -> bool {
    ["/input", "/output"]
        .iter()
        .any(|root| p == *root || p.strip_prefix(root).is_some_and(|r| r.starts_with('/')))
}

/// The map of `c`'s compensation against the inverse's input schema: every mapped field is the
/// inverse's, every pointer resolves in `c`'s schemas to a value the field accepts, every
/// required field of the inverse is mapped.
pub(super) fn against_inverse(c: &Checked, inverse: &ToolRecord, diags: &mut Diagnostics) {
    let Some(comp) = c.record.compensation.as_ref() else {
        return;
    };
    let inv_root = &inverse.input_schema;
    let inv_fields = walk::properties(inv_root, inv_root);
    for (field, pointer) in &comp.map {
        let at = format!("/compensation/map/{}", escape(field));
        let Some((_, target, _)) = inv_fields.iter().find(|(k, _, _)| k == field) else {
            diags.push(Diagnostic::at(
                Rule::CompensationFields,
                &c.src,
                &at,
                format!(
                    "`{field}` is not a field of the inverse `{}`'s input",
                    inverse.tool_id
                ),
            ));
            continue;
        };
        let resolved = pointer.strip_prefix('/').and_then(|p| {
            let (head, rest) = p
                .split_once('/')
                .map_or((p, String::new()), |(h, r)| (h, format!("/{r}")));
            let root = match head {
                "input" => &c.record.input_schema,
                "output" => &c.record.output_schema,
                _ => return None,
            };
            walk::pointer_schema(root, root, &rest).map(|t| (root, t.schema))
        });
        let Some((src_root, source)) = resolved else {
            diags.push(
                Diagnostic::at(
                    Rule::CompensationPointer,
                    &c.src,
                    &at,
                    format!("`{pointer}` does not resolve in this tool's schemas"),
                )
                .help(
                    "a pointer starts with /input/ or /output/ and follows declared properties \
                     (and array indices)",
                ),
            );
            continue;
        };
        if let Some(problem) = incompatible(src_root, source, inv_root, target) {
            diags.push(Diagnostic::at(
                Rule::CompensationType,
                &c.src,
                &at,
                format!(
                    "`{pointer}` gives {problem}, which the inverse's `{field}` does not accept"
                ),
            ));
        }
    }
    for (name, _, required) in &inv_fields {
        if *required && !comp.map.iter().any(|(f, _)| f == name) {
            diags.push(Diagnostic::at(
                Rule::CompensationFields,
                &c.src,
                "/compensation/map",
                format!(
                    "the inverse `{}` requires `{name}`, which the map does not provide",
                    inverse.tool_id
                ),
            ));
        }
    }
}
/// Why values of `source` may not be accepted by `target`, if they may not.
fn incompatible(
    src_root: &Value,
    source: &Value,
    dst_root: &Value,
    target: &Value,
) -> Option<String> {
    let (Some(s), Some(t)) = (
        walk::resolve(src_root, source),
        walk::resolve(dst_root, target),
    ) else {
        return Some("an unresolvable schema".into());
    };
    let (Some(st), Some(tt)) = (walk::type_of(src_root, s), walk::type_of(dst_root, t)) else {
        return Some("an untyped value".into());
    };
    if !st.fits(tt) {
        return Some(format!(
            "a value of type `{}`, not `{}`",
            st.as_str(),
            tt.as_str()
        ));
    }
    let allowed = |v: &Value| -> Option<Vec<Value>> {
        v.get("const")
            .map(|c| vec![c.clone()])
            .or_else(|| v.get("enum").and_then(Value::as_array).cloned())
    };
    if let Some(target_values) = allowed(t) {
        match allowed(s) {
            Some(sv) if sv.iter().all(|v| target_values.contains(v)) => {}
            _ => return Some("values outside the inverse's `enum`".into()),
        }
    }
    match st {
        JsonType::Array => match (s.get("items"), t.get("items")) {
            (Some(si), Some(ti)) => {
                incompatible(src_root, si, dst_root, ti).map(|p| format!("list items that are {p}"))
            }
            _ => None,
        },
        JsonType::Object => {
            let sp = walk::properties(src_root, s);
            for (name, tsub, req) in walk::properties(dst_root, t) {
                match sp.iter().find(|(k, _, _)| *k == name) {
                    Some((_, ssub, sreq)) => {
                        if req && !sreq {
                            return Some(format!("an object whose `{name}` may be missing"));
                        }
                        if let Some(p) = incompatible(src_root, ssub, dst_root, tsub) {
                            return Some(format!("an object whose `{name}` is {p}"));
                        }
                    }
                    None if req => return Some(format!("an object without `{name}`")),
                    None => {}
                }
            }
            sp.iter()
                .find(|(k, _, _)| !walk::properties(dst_root, t).iter().any(|(n, _, _)| n == k))
                .map(|(k, _, _)| format!("an object with `{k}`, unknown to the inverse"))
        }
        _ => None,
    }
}
