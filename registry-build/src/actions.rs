//! `pub mod actions`: one marker type per action of the Cedar schema.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;

use super::error::BuildError;
use super::idents::action_ident;
use escepine_contract::SideEffectClass;
use escepine_policy::cedar::ActionInfo;
use escepine_registry::record::ToolRecord;
use escepine_registry::rust_names::{action_marker, clashes};

/// The `actions` module: a marker for every action of the schema — the class groups, the
/// groups the records name, one action per tool, and every action the user's `.cedarschema`
/// declares beside them (the markers Rust-first tools name).
pub(crate) fn actions_module(
    actions: &[ActionInfo],
    records: &[&ToolRecord],
    place: &SchemaPlace,
    c: &syn::Path,
) -> Result<TokenStream, BuildError> {
    let clashed = clashes(
        actions
            .iter()
            .map(|a| (action_marker(&a.id), a.id.as_str())),
    );
    if !clashed.is_empty() {
        let message = clashed
            .iter()
            .map(|(marker, ids)| {
                format!(
                    "Cedar actions {} all map to the marker type `actions::{marker}`; rename one",
                    ids.iter()
                        .map(|i| format!("`{i}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        return Err(BuildError::Name { message });
    }

    // The contexts the `.cedarschema` declares, which `#[tool]` checks its input against.
    let mut declared = escepine_policy::cedar::context::declared_all(&place.schema_files)
        .map_err(BuildError::SchemaContext)?;
    let mut items = TokenStream::new();
    for action in actions {
        let name = action_ident(&action.id)?;
        let id = action.id.as_str();
        let is_group = action.is_group;
        let own_tool = records.iter().any(|r| r.cedar_action() == id);
        let doc = if action.is_group {
            let members: Vec<String> = records
                .iter()
                .filter(|r| {
                    r.side_effect_class().as_str() == id
                        || r.action_groups().iter().any(|g| g == id)
                })
                .map(|r| format!("`{}`", r.tool_id()))
                .collect();
            let members = if members.is_empty() {
                "no tool".to_string()
            } else {
                members.join(", ")
            };
            format!(" `Action::\"{id}\"`: an action group (tools: {members}).")
        } else {
            let groups: Vec<String> = action.groups.iter().map(|g| format!("`{g}`")).collect();
            let whose = if own_tool {
                format!("the action of tool `{id}`")
            } else if id == escepine_policy::cedar::flow::DECLASSIFY_ACTION {
                "the action a principal must be permitted on `Flow::\"<id>\"` to remove a \
                 label from that flow (`escepine flow declassify`)"
                    .to_string()
            } else if id == escepine_policy::cedar::approval::APPROVE_ACTION {
                "the action an approver of a call waiting for approval (an `@approval` permit) \
                 must be permitted on the call's tool"
                    .to_string()
            } else {
                "declared in the `.cedarschema` (the action of a Rust-first tool)".to_string()
            };
            if groups.is_empty() {
                format!(" `Action::\"{id}\"`: {whose}.")
            } else {
                format!(
                    " `Action::\"{id}\"`: {whose}, in the groups {}.",
                    groups.join(", ")
                )
            }
        };
        let context = declared
            .remove(id)
            .filter(|_| !action.is_group)
            .map(|(file, context)| {
                let file = place.shown(&file);
                let shape = shape(&context, c);
                quote! {
                    const CONTEXT: #c::cedar_shape::Shape = #shape;
                    const SCHEMA_FILE: &'static str = #file;
                }
            });
        items.extend(quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
            pub struct #name;

            impl #c::CedarAction for #name {
                const ACTION_ID: &'static str = #id;
                const IS_GROUP: bool = #is_group;
                #context
            }
        });
    }

    Ok(quote! {
        /// The actions of the Cedar schema, one marker type each: the class groups
        /// (`read_only`, `compensatable`, `supersede`), the groups the records name, one action
        /// per tool, and the actions the `.cedarschema` declares. A tool's `Tool::Action` names
        /// its marker, so a policy binding or an SOP step that names an action the schema lacks
        /// does not compile.
        #[allow(dead_code, non_camel_case_types)]
        pub mod actions {
            #items

            /// What `action!` names for an action the schema does not declare, beside the
            /// compile error that says so (a type of its own, so that error is the only one).
            #[doc(hidden)]
            pub struct __Undeclared<const E: usize>;

            impl<const E: usize> #c::CedarAction for __Undeclared<E> {
                const ACTION_ID: &'static str = "";
                const IS_GROUP: bool = false;
            }
        }
    })
}

/// The `cedar_shape::Shape` of a canonical Cedar type
/// ([`escepine_policy::cedar::context::canon`]).
fn shape(ty: &serde_json::Value, c: &syn::Path) -> TokenStream {
    use serde_json::Value;
    let s = quote!(#c::cedar_shape::Shape);
    match ty {
        Value::String(name) => match name.as_str() {
            "String" => quote!(#s::String),
            "Long" => quote!(#s::Long),
            "Bool" => quote!(#s::Bool),
            "decimal" => quote!(#s::Decimal),
            "ipaddr" => quote!(#s::IpAddr),
            "datetime" => quote!(#s::DateTime),
            "duration" => quote!(#s::Duration),
            _ => quote!(#s::Unchecked),
        },
        Value::Object(o) => {
            if let Some(Value::Object(attrs)) = o.get("Record") {
                let attrs = attrs.iter().map(|(name, a)| {
                    let presence = if a.get("required") == Some(&Value::Bool(false)) {
                        quote!(#c::cedar_shape::Presence::Optional)
                    } else {
                        quote!(#c::cedar_shape::Presence::Required)
                    };
                    let inner = shape(a.get("type").unwrap_or(&Value::Null), c);
                    quote!(#c::cedar_shape::Attr { name: #name, presence: #presence, shape: #inner })
                });
                quote!(#s::Record(&[#(#attrs),*]))
            } else if let Some(element) = o.get("Set") {
                let inner = shape(element, c);
                quote!(#s::Set(&#inner))
            } else if let Some(Value::String(entity)) = o.get("Entity") {
                quote!(#s::Entity(#entity))
            } else {
                quote!(#s::Unchecked)
            }
        }
        _ => quote!(#s::Unchecked),
    }
}

/// Where the actions of a build are declared: the user's `.cedarschema` files and the folder
/// of the policies (named by the error of an undeclared action).
#[derive(Debug, Clone, Default)]
pub(crate) struct SchemaPlace {
    /// The `.cedarschema` files read beside the policies.
    pub(crate) schema_files: Vec<PathBuf>,
    /// The folder of the policies, when the build has policies.
    pub(crate) policy_dir: Option<PathBuf>,
    /// The crate's directory: the files are named relative to it when inside it.
    pub(crate) manifest_dir: Option<PathBuf>,
}

impl SchemaPlace {
    /// What an undeclared action's error names: the schema files, or where one would go.
    fn describe(&self) -> String {
        let files: Vec<String> = self
            .schema_files
            .iter()
            .map(|f| format!("`{}`", self.shown(f)))
            .collect();
        match (files.is_empty(), &self.policy_dir) {
            (false, _) => format!("not declared in {}", files.join(" or ")),
            (true, Some(dir)) => format!(
                "not declared: no `.cedarschema` file is beside the policies in `{}`",
                self.shown(dir)
            ),
            (true, None) => {
                "not declared: the build has no policies, so no `.cedarschema` file".to_string()
            }
        }
    }

    /// `path` relative to the crate's directory (`schema.cedarschema`,
    /// `../../tools/policies/schema.cedarschema`), so that the generated text names no checkout;
    /// as it is when there is no crate directory or the two share no root.
    fn shown(&self, path: &Path) -> String {
        // The schema files' paths are canonical; so is the directory they are shown from.
        self.manifest_dir
            .as_deref()
            .map(|dir| std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()))
            .and_then(|dir| relative(path, &dir))
            .unwrap_or_else(|| path.to_path_buf())
            .display()
            .to_string()
    }
}

/// `path` relative to `dir`, both absolute; `None` when either is not.
fn relative(path: &Path, dir: &Path) -> Option<PathBuf> {
    if !path.is_absolute() || !dir.is_absolute() {
        return None;
    }
    let (mut p, mut d) = (path.components().peekable(), dir.components().peekable());
    while let (Some(a), Some(b)) = (p.peek(), d.peek()) {
        if a != b {
            break;
        }
        p.next();
        d.next();
    }
    let mut out: PathBuf = d.map(|_| std::path::Component::ParentDir).collect();
    out.extend(p);
    Some(out)
}

/// `action!{[<registry path>] <marker> "<id>" compile_error}`: the marker of a declared action, one arm per
/// action of the schema, and for any other a `compile_error!` naming the action and the
/// `.cedarschema` that lacks it. `#[tool]` names its action through this macro, so an
/// undeclared action is reported at the tool's `id = "…"` as what it is rather than as a type
/// that cannot be found, and the proc macros stay free of Cedar.
pub(crate) fn action_macro(
    actions: &[ActionInfo],
    place: &SchemaPlace,
) -> Result<TokenStream, BuildError> {
    let mut arms = TokenStream::new();
    for action in actions {
        let name = action_ident(&action.id)?;
        arms.extend(quote! {
            ([$($p:tt)*] #name $id:literal $e:ident) => { $($p)*::actions::#name };
        });
    }
    // The tools' actions, not the class groups (plain actions while no tool is in them), the
    // approver's action or the declassifier's.
    let declared: Vec<String> = actions
        .iter()
        .filter(|a| {
            !a.is_group
                && a.id != escepine_policy::cedar::approval::APPROVE_ACTION
                && a.id != escepine_policy::cedar::flow::DECLASSIFY_ACTION
                && !SideEffectClass::ALL.iter().any(|c| c.as_str() == a.id)
        })
        .map(|a| format!("`{}`", a.id))
        .collect();
    let declared = if declared.is_empty() {
        "none".to_string()
    } else {
        declared.join(", ")
    };
    let after = format!(
        "` of this `#[tool]` is {}; declare it there (the actions declared: {declared}). \
         `cargo test` runs the tool's generated test `registers_with_its_cedar_action`, \
         which prints the declaration its payload implies.",
        place.describe()
    );
    Ok(quote! {
        /// `action!{[path] marker "id" compile_error}`: the marker type `path::actions::marker` of a Cedar
        /// action of the schema, or a compile error naming the action and the `.cedarschema`
        /// that does not declare it. `#[tool]` expands to it.
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! __escepine_action {
            #arms
            // `$e` is `compile_error`, spelled at the tool's `id = "…"` so the error is shown
            // there.
            ([$($p:tt)*] $other:ident $id:literal $e:ident) => {
                $($p)*::actions::__Undeclared<{
                    $e!(::core::concat!("the Cedar action `", $id, #after));
                    0
                }>
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use __escepine_action as action;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_files_are_named_from_the_crate_directory() {
        let place = SchemaPlace {
            schema_files: vec![PathBuf::from("/ws/tools/policies/schema.cedarschema")],
            policy_dir: None,
            manifest_dir: Some(PathBuf::from("/ws/examples/client")),
        };
        assert_eq!(
            place.describe(),
            "not declared in `../../tools/policies/schema.cedarschema`"
        );
        let inside = SchemaPlace {
            schema_files: vec![PathBuf::from("/ws/agent/policies/a.cedarschema")],
            policy_dir: None,
            manifest_dir: Some(PathBuf::from("/ws/agent")),
        };
        assert_eq!(
            inside.describe(),
            "not declared in `policies/a.cedarschema`"
        );
        let unknown = SchemaPlace {
            schema_files: vec![PathBuf::from("policies/a.cedarschema")],
            policy_dir: None,
            manifest_dir: Some(PathBuf::from("/ws/agent")),
        };
        assert_eq!(
            unknown.describe(),
            "not declared in `policies/a.cedarschema`"
        );
    }
}
