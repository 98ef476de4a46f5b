//! The enum-literal rule ([`Rule::PolicyEnumLiteral`]): a policy may not compare an
//! enum-valued attribute with a string literal outside its values.
//!
//! Cedar has no string enumerations, so `context.input.search_depth` of an input schema with
//! `"enum": ["basic", "advanced"]` is a `String`, and strict validation accepts
//! `context.input.search_depth == "advnced"`: a comparison that can never hold, so a `forbid`
//! that never fires. This rule keeps the values ([`CedarType::Enum`]) and refuses such a
//! literal in `==`, `!=`, `in [..]`, a set literal's `.contains(..)`, and an enum set's
//! `.contains(..)`, `.containsAny(..)` and `.containsAll(..)`.
//!
//! The attributes with values: `context.input.<path>` of a string `enum` or `const` (and sets
//! of them), and `resource.side_effect_class` (the side-effect classes). A policy is checked
//! against every tool action its scope can match ([`slice::applies`]); where one of them holds
//! the attribute as a plain `String` (or declares its own context in the user's
//! `.cedarschema`), any literal may be meant and nothing is reported. The literal's position is
//! found among the string literals of the policy's text.

use std::collections::HashSet;
use std::str::FromStr;

use cedar_policy::{EntityUid, Policy, Schema};
use escepine_contract::SideEffectClass;
use serde_json::Value;

use crate::cedar::schema_gen::Declared;
use crate::cedar::slice;
use crate::cedar::string_literals::string_tokens;
use crate::cedar::syntax;
use crate::cedar::types::{input_type, CedarType};
use crate::cedar::url_scope;
use escepine_registry::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use escepine_registry::record::ToolRecord;
use escepine_registry::rule::Rule;

/// How deep an expression is followed (far beyond any real policy).
const MAX_DEPTH: usize = 256;

/// The tool actions and their input types, built once per binding.
pub(crate) struct EnumScope {
    tools: Vec<ToolTypes>,
}

struct ToolTypes {
    action: EntityUid,
    matching: HashSet<EntityUid>,
    /// `None` when the user's `.cedarschema` declares the action (its context is theirs) or the
    /// input has no Cedar type.
    input: Option<CedarType>,
}

/// What a path is across the actions a policy applies to.
enum Values {
    /// No applicable action has the attribute.
    Absent,
    /// Every applicable action that has it holds one of these values.
    Only(Vec<String>),
    /// Some applicable action holds any value.
    Any,
}

/// One comparison of a path with a literal found in a policy.
struct Finding {
    path: Vec<String>,
    literal: String,
    /// Whether the literal is compared with the elements of a set-valued path.
    element: bool,
}

/// An operand of a comparison.
enum Operand {
    Path(Vec<String>),
    Literal(String),
    SetLiteral(Vec<String>),
    Other,
}

impl EnumScope {
    /// The scope of `records` under `schema`; `declared` names the user-declared actions.
    pub(crate) fn new(records: &[ToolRecord], schema: &Schema, declared: &Declared) -> Self {
        let action_entities = schema.action_entities().ok();
        let tools = records
            .iter()
            .filter_map(|r| {
                let action = EntityUid::from_str(&format!(
                    "Action::{}",
                    Value::String(r.cedar_action().to_string())
                ))
                .ok()?;
                let matching = match &action_entities {
                    Some(e) => url_scope::matching_actions(e, &action),
                    None => HashSet::from([action.clone()]),
                };
                let input = if declared.actions.contains(r.cedar_action()) {
                    None
                } else {
                    input_type(r.input_schema()).ok()
                };
                Some(ToolTypes {
                    action,
                    matching,
                    input,
                })
            })
            .collect();
        Self { tools }
    }

    /// Report every enum attribute of `policy` compared with a literal outside its values;
    /// `span` is the policy's place in `src`.
    pub(crate) fn check(
        &self,
        policy: &Policy,
        src: &SourceFile,
        span: Option<(usize, usize)>,
        diags: &mut Diagnostics,
    ) {
        let applicable: Vec<&ToolTypes> = self
            .tools
            .iter()
            .filter(|t| slice::applies(policy, &t.action, &t.matching))
            .collect();
        if applicable.is_empty() {
            return;
        }
        let Ok(est) = policy.to_json() else {
            return;
        };
        let mut findings = Vec::new();
        if let Some(conditions) = est.get("conditions") {
            collect(conditions, &mut findings, 0);
        }
        let (base, text) = match span.and_then(|(s, l)| Some((s, src.text.get(s..s + l)?))) {
            Some((s, t)) => (s, t),
            None => (0, ""),
        };
        let tokens = string_tokens(text);
        let mut cursor = 0;
        for f in findings {
            let Values::Only(allowed) = values(&applicable, &f.path, f.element) else {
                continue;
            };
            if allowed.contains(&f.literal) {
                continue;
            }
            let at = tokens
                .iter()
                .position(|t| t.value == f.literal && t.start >= cursor)
                .or_else(|| tokens.iter().position(|t| t.value == f.literal));
            let literal_span = at.map(|i| {
                cursor = tokens[i].start + tokens[i].len;
                (base + tokens[i].start, tokens[i].len)
            });
            let allowed_text: Vec<String> = allowed.iter().map(|v| syntax::quote(v)).collect();
            let message = format!(
                "{} is not a value of {}{} (allowed: {})",
                syntax::quote(&f.literal),
                if f.element { "the elements of " } else { "" },
                path_text(&f.path),
                allowed_text.join(", ")
            );
            diags.push(
                Diagnostic::at_span(Rule::PolicyEnumLiteral, src, literal_span.or(span), message)
                    .help(format!(
                        "policy `{}` compares with a value the attribute never has, so the \
                     comparison never holds; write one of the allowed values, or add the value \
                     to the input schema's `enum`",
                        policy.id()
                    )),
            );
        }
    }
}

/// The values `path` (its elements, with `element`) may have across `tools`.
fn values(tools: &[&ToolTypes], path: &[String], element: bool) -> Values {
    let mut allowed: Vec<String> = Vec::new();
    let mut found = false;
    for t in tools {
        let ty = match resolve(t, path) {
            Resolved::Absent => continue,
            Resolved::Unknown => return Values::Any,
            Resolved::Type(ty) => ty,
        };
        let ty = match (element, ty) {
            (false, ty) => ty,
            (true, CedarType::Set(inner)) => inner.as_ref().clone(),
            (true, _) => return Values::Any,
        };
        match ty {
            CedarType::Enum(vs) => {
                found = true;
                for v in vs {
                    if !allowed.contains(&v) {
                        allowed.push(v);
                    }
                }
            }
            _ => return Values::Any,
        }
    }
    if found {
        Values::Only(allowed)
    } else {
        Values::Absent
    }
}

enum Resolved {
    Absent,
    Unknown,
    Type(CedarType),
}

/// The type of `path` (`[var, attr, …]`) in a tool's requests.
fn resolve(tool: &ToolTypes, path: &[String]) -> Resolved {
    match path {
        [var, attr] if var == "resource" && attr == "side_effect_class" => {
            Resolved::Type(CedarType::Enum(
                SideEffectClass::ALL
                    .iter()
                    .map(|c| c.as_str().to_string())
                    .collect(),
            ))
        }
        [var, input, rest @ ..] if var == "context" && input == "input" => {
            let Some(mut ty) = tool.input.as_ref() else {
                return Resolved::Unknown;
            };
            for name in rest {
                let CedarType::Record(attributes) = ty else {
                    return Resolved::Absent;
                };
                match attributes.iter().find(|a| &a.name == name) {
                    Some(a) => ty = &a.ty,
                    None => return Resolved::Absent,
                }
            }
            Resolved::Type(ty.clone())
        }
        _ => Resolved::Unknown,
    }
}

/// `context.input.search_depth`, names that are not identifiers as `["page-size"]`.
fn path_text(path: &[String]) -> String {
    let mut out = String::new();
    for (i, p) in path.iter().enumerate() {
        if i == 0 {
            out.push_str(p);
        } else if syntax::is_plain_ident(p) {
            out.push('.');
            out.push_str(p);
        } else {
            out.push('[');
            out.push_str(&syntax::quote(p));
            out.push(']');
        }
    }
    out
}

/// Every comparison of a path with a string literal in an EST expression (or list of them).
fn collect(v: &Value, out: &mut Vec<Finding>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Array(items) => items.iter().for_each(|x| collect(x, out, depth + 1)),
        Value::Object(map) => {
            for (op, body) in map {
                let pair = || Some((operand(body.get("left")?), operand(body.get("right")?)));
                match (op.as_str(), pair()) {
                    ("==" | "!=", Some(pair)) => match pair {
                        (Operand::Path(p), Operand::Literal(l))
                        | (Operand::Literal(l), Operand::Path(p)) => out.push(Finding {
                            path: p,
                            literal: l,
                            element: false,
                        }),
                        _ => {}
                    },
                    ("in", Some((Operand::Path(p), Operand::SetLiteral(ls)))) => {
                        push_all(out, &p, ls, false);
                    }
                    ("contains", Some(pair)) => match pair {
                        (Operand::SetLiteral(ls), Operand::Path(p)) => push_all(out, &p, ls, false),
                        (Operand::Path(p), Operand::Literal(l)) => out.push(Finding {
                            path: p,
                            literal: l,
                            element: true,
                        }),
                        _ => {}
                    },
                    ("containsAll" | "containsAny", Some(pair)) => match pair {
                        (Operand::Path(p), Operand::SetLiteral(ls))
                        | (Operand::SetLiteral(ls), Operand::Path(p)) => {
                            push_all(out, &p, ls, true);
                        }
                        _ => {}
                    },
                    _ => {}
                }
                collect(body, out, depth + 1);
            }
        }
        _ => {}
    }
}

fn push_all(out: &mut Vec<Finding>, path: &[String], literals: Vec<String>, element: bool) {
    out.extend(literals.into_iter().map(|literal| Finding {
        path: path.to_vec(),
        literal,
        element,
    }));
}

/// What an EST expression is, as far as this rule cares.
fn operand(v: &Value) -> Operand {
    if let Some(Value::String(s)) = v.get("Value") {
        return Operand::Literal(s.clone());
    }
    if let Some(Value::Array(items)) = v.get("Set") {
        return Operand::SetLiteral(
            items
                .iter()
                .filter_map(|i| match i.get("Value") {
                    Some(Value::String(s)) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
        );
    }
    path(v, 0).map_or(Operand::Other, Operand::Path)
}

/// `[var, attr, …]` for an attribute access chain on a variable.
fn path(v: &Value, depth: usize) -> Option<Vec<String>> {
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(Value::String(var)) = v.get("Var") {
        return Some(vec![var.clone()]);
    }
    let access = v.get(".")?;
    let mut p = path(access.get("left")?, depth + 1)?;
    p.push(access.get("attr")?.as_str()?.to_string());
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cedar_policy::PolicySet;

    fn findings(text: &str) -> Vec<(String, String, bool)> {
        let set = PolicySet::from_str(text).expect("parses");
        let mut out = Vec::new();
        for p in set.policies() {
            let est = p.to_json().expect("est");
            collect(&est["conditions"], &mut out, 0);
        }
        out.into_iter()
            .map(|f| (path_text(&f.path), f.literal, f.element))
            .collect()
    }

    #[test]
    fn comparisons_with_literals_are_found() {
        let got = findings(
            r#"forbid(principal, action, resource) when {
                context.input.d == "a" && "b" != context.input.d &&
                ["c", "e"].contains(context.input.d) &&
                context.input.tags.contains("f") &&
                context.input.tags.containsAny(["g"]) &&
                ["h"].containsAll(context.input.tags) &&
                context.input["page-size"] == "i" &&
                resource.side_effect_class == "j" &&
                context.input.d like "k*"
            };"#,
        );
        let want = [
            ("context.input.d", "a", false),
            ("context.input.d", "b", false),
            ("context.input.d", "c", false),
            ("context.input.d", "e", false),
            ("context.input.tags", "f", true),
            ("context.input.tags", "g", true),
            ("context.input.tags", "h", true),
            ("context.input[\"page-size\"]", "i", false),
            ("resource.side_effect_class", "j", false),
        ];
        let mut got = got;
        got.sort();
        let mut want: Vec<(String, String, bool)> = want
            .iter()
            .map(|(p, l, e)| (p.to_string(), l.to_string(), *e))
            .collect();
        want.sort();
        assert_eq!(got, want);
    }
}
