//! `pub mod actions`: one marker type per action of the generated Cedar schema.

use proc_macro2::TokenStream;
use quote::quote;

use super::collisions;
use super::contract::action_ident;
use super::error::BuildError;
use super::idents::action_marker;
use crate::cedar;
use crate::record::ToolRecord;

/// The `actions` module for `records`: the class groups, the custom groups and one action per
/// tool, as `crate::cedar::actions` lists them.
pub(crate) fn actions_module(records: &[&ToolRecord]) -> Result<TokenStream, BuildError> {
    let owned: Vec<ToolRecord> = records.iter().map(|r| (*r).clone()).collect();
    let actions = cedar::actions(&owned);

    let clashes = collisions(
        actions
            .iter()
            .map(|a| (action_marker(&a.id), a.id.as_str())),
    );
    if !clashes.is_empty() {
        let message =
            clashes
                .iter()
                .map(|(marker, ids)| {
                    format!(
                    "Cedar actions {} all map to the marker type `actions::{marker}`; rename one",
                    ids.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", ")
                )
                })
                .collect::<Vec<_>>()
                .join("\n");
        return Err(BuildError::Name { message });
    }

    let mut items = TokenStream::new();
    for action in &actions {
        let name = action_ident(&action.id)?;
        let id = action.id.as_str();
        let is_group = action.is_group;
        let doc = if action.is_group {
            let members: Vec<String> = records
                .iter()
                .filter(|r| {
                    r.side_effect_class.as_str() == id || r.action_groups.iter().any(|g| g == id)
                })
                .map(|r| format!("`{}`", r.tool_id))
                .collect();
            let members = if members.is_empty() {
                "no tool".to_string()
            } else {
                members.join(", ")
            };
            format!(" `Action::\"{id}\"`: an action group (tools: {members}).")
        } else {
            let groups: Vec<String> = action.groups.iter().map(|g| format!("`{g}`")).collect();
            format!(
                " `Action::\"{id}\"`: the action of tool `{id}`, in the groups {}.",
                groups.join(", ")
            )
        };
        items.extend(quote! {
            #[doc = #doc]
            #[allow(non_camel_case_types)]
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
            pub struct #name;

            impl ::escepine_contract::CedarAction for #name {
                const ACTION_ID: &'static str = #id;
                const IS_GROUP: bool = #is_group;
            }
        });
    }

    Ok(quote! {
        /// The actions of the generated Cedar schema, one marker type each: the class groups
        /// (`read_only`, `compensatable`, `supersede`), the groups the records name, and one
        /// action per tool. A tool's `Tool::Action` names its marker, so a policy binding or an
        /// SOP step that names an action the schema lacks does not compile.
        #[allow(dead_code)]
        pub mod actions {
            #items
        }
    })
}
