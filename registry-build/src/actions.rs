//! `pub mod actions`: one marker type per action of the Cedar schema.

use proc_macro2::TokenStream;
use quote::quote;

use super::error::BuildError;
use super::idents::action_ident;
use escepine_policy::cedar::ActionInfo;
use escepine_registry::record::ToolRecord;
use escepine_registry::rust_names::{action_marker, clashes};

/// The `actions` module: a marker for every action of the schema — the class groups, the
/// groups the records name, one action per tool, and every action the user's `.cedarschema`
/// declares beside them (the markers Rust-first tools name).
pub(crate) fn actions_module(
    actions: &[ActionInfo],
    records: &[&ToolRecord],
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
        items.extend(quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
            pub struct #name;

            impl #c::CedarAction for #name {
                const ACTION_ID: &'static str = #id;
                const IS_GROUP: bool = #is_group;
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
        }
    })
}
