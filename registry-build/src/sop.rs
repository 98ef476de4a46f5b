//! `pub mod sops`: one typed state machine per checked SOP.
//!
//! For an SOP `research` whose execution state `read` binds `firecrawl_scrape`:
//!
//! ```text
//! pub mod sops {
//!     pub mod research {
//!         pub struct Sop;                       // impl escepine_contract::SopDefinition
//!         pub enum State { Assemble, Decide, Done, Read, Search, … }
//!         pub struct Read;                      // impl escepine_contract::SopStep
//!         //  type Tool = super::super::firecrawl_scrape::Tool;
//!     }
//! }
//! ```
//!
//! A step's payload type is `<Step::Tool as Tool>::Input`, so Rust code driving the SOP through
//! a function generic over [`escepine_contract::SopStep`] cannot hand a step another tool's
//! payload.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::docs::{doc_attrs, summary};
use super::error::BuildError;
use super::idents::{ident, ToolNames};
use escepine_registry::record::ToolRecord;
use escepine_registry::sop::{type_name, Sop, State, RESERVED_TYPE_NAMES};

/// `pub mod sops { … }` for every SOP (sorted by id).
pub(crate) fn sops_module(
    sops: &[Sop],
    records: &[&ToolRecord],
    names: &ToolNames,
    c: &syn::Path,
) -> Result<TokenStream, BuildError> {
    if let Some(r) = records.iter().find(|r| r.tool_id() == "sops") {
        return Err(BuildError::Name {
            message: format!(
                "{}: tool id `sops` clashes with the generated module `sops` of the SOPs; rename \
                 the tool",
                r.source().display()
            ),
        });
    }
    let mut sorted: Vec<&Sop> = sops.iter().collect();
    sorted.sort_by(|a, b| a.sop_id.cmp(&b.sop_id));
    let mut modules = TokenStream::new();
    for sop in sorted {
        modules.extend(sop_module(sop, records, names, c)?);
    }
    Ok(quote! {
        /// The SOPs of this registry as typed state machines: per SOP, a `Sop` marker
        /// (implementing `SopDefinition`), a `State`
        /// enum of every state with its declared transitions, and one step type per execution
        /// state (implementing `SopStep`) whose payload is its
        /// tool's `Input`.
        #[allow(dead_code)]
        pub mod sops {
            #modules
        }
    })
}

fn name_error(sop: &Sop, e: String) -> BuildError {
    BuildError::Name {
        message: format!("{}: {e}", sop.source.display()),
    }
}

/// `pub mod <sop_id> { … }`.
fn sop_module(
    sop: &Sop,
    records: &[&ToolRecord],
    names: &ToolNames,
    c: &syn::Path,
) -> Result<TokenStream, BuildError> {
    let id = sop.sop_id.as_str();
    let module = ident(id).map_err(|e| name_error(sop, format!("SOP id {e}")))?;
    let variant = |state: &str| -> Result<proc_macro2::Ident, BuildError> {
        let ty = type_name(state);
        if RESERVED_TYPE_NAMES.contains(&ty.as_str()) {
            return Err(name_error(
                sop,
                format!("state `{state}` maps to the reserved Rust name `{ty}`"),
            ));
        }
        ident(&ty).map_err(|e| name_error(sop, format!("state {e}")))
    };
    let tool_module = |tool: &str| -> Result<&proc_macro2::Ident, BuildError> {
        records
            .iter()
            .position(|r| r.tool_id() == tool)
            .and_then(|i| names.tools.get(i))
            .map(|n| &n.module)
            .ok_or_else(|| {
                name_error(
                    sop,
                    format!("the SOP binds `{tool}`, which is not a tool of this registry"),
                )
            })
    };
    let tool_variant = |tool: &str| -> Option<&proc_macro2::Ident> {
        records
            .iter()
            .position(|r| r.tool_id() == tool)
            .and_then(|i| names.tools.get(i))
            .map(|n| &n.variant)
    };

    let version = sop.version.to_string();
    let start_name = sop.start.as_str();
    let start = variant(start_name)?;
    let document =
        super::literal::raw_str(&serde_json::to_string(&sop.to_json()).unwrap_or_default());
    let file = sop
        .source
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| sop.source.display().to_string());
    let module_doc = doc_attrs(&format!(
        "{}\n\nSOP `{id}`, version {version}, starting at `{start_name}`: {} state{}. \
         Generated from `{file}`.",
        sop.description,
        sop.states.len(),
        if sop.states.len() == 1 { "" } else { "s" },
    ));

    let state_names: Vec<&str> = sop.states.keys().map(String::as_str).collect();
    let mut variants = Vec::new();
    let mut variant_docs = Vec::new();
    let mut successors = Vec::new();
    let mut terminal = Vec::new();
    let mut tools = Vec::new();
    let mut steps = TokenStream::new();
    for (name, state) in &sop.states {
        let v = variant(name)?;
        let next: Vec<proc_macro2::Ident> = state
            .successors()
            .into_iter()
            .map(variant)
            .collect::<Result<_, _>>()?;
        successors.push(quote! { Self::#v => &[#(State::#next),*] });
        terminal.push(matches!(state, State::Terminal));
        match state {
            State::Execution(e) => {
                variant_docs.push(format!(
                    " `{name}`: execution step calling `{}`; on success `{}`, on failure `{}`.",
                    e.tool,
                    e.next,
                    e.on_failure.as_str()
                ));
                let tv = tool_variant(&e.tool);
                tools.push(match tv {
                    Some(tv) => {
                        quote! { ::core::option::Option::Some(super::super::ToolId::#tv) }
                    }
                    None => quote! { ::core::option::Option::None },
                });
                steps.extend(step(sop, name, &v, e, tool_module(&e.tool)?, records, c));
            }
            State::Decision(d) => {
                let targets: Vec<String> = state
                    .successors()
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect();
                variant_docs.push(format!(
                    " `{name}`: decision over {} branch{}, to {}.",
                    d.branches.len(),
                    if d.branches.len() == 1 { "" } else { "es" },
                    targets.join(", ")
                ));
                tools.push(quote! { ::core::option::Option::None });
            }
            State::Terminal => {
                variant_docs.push(format!(" `{name}`: terminal; the run ends successfully."));
                tools.push(quote! { ::core::option::Option::None });
            }
        }
        variants.push(v);
    }

    let sop_doc = format!(
        " The SOP `{id}` as a type: its id, version, start state, states and canonical document."
    );
    let state_doc =
        format!(" Every state of the SOP `{id}` (sorted by name), with its declared transitions.");
    Ok(quote! {
        #module_doc
        pub mod #module {
            #[doc = #sop_doc]
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
            pub struct Sop;

            impl #c::SopDefinition for Sop {
                const ID: &'static str = #id;
                const VERSION: &'static str = #version;
                const START: &'static str = #start_name;
                const STATES: &'static [&'static str] = &[#(#state_names),*];
                const DOCUMENT: &'static str = #document;
            }

            #[doc = #state_doc]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum State {
                #(#[doc = #variant_docs] #variants,)*
            }

            impl State {
                /// Every state, sorted by name.
                pub const ALL: &'static [State] = &[#(State::#variants),*];

                /// The start state.
                pub const START: State = State::#start;

                /// The state's name in the SOP file.
                pub const fn name(self) -> &'static str {
                    match self {
                        #(Self::#variants => #state_names,)*
                    }
                }

                /// The state called `name`, if the SOP has one.
                pub fn from_name(name: &str) -> ::core::option::Option<State> {
                    Self::ALL.iter().copied().find(|s| s.name() == name)
                }

                /// Whether the run ends successfully in this state.
                pub const fn is_terminal(self) -> bool {
                    match self {
                        #(Self::#variants => #terminal,)*
                    }
                }

                /// The tool an execution state calls (`None` for decisions and terminals).
                pub const fn tool(self) -> ::core::option::Option<super::super::ToolId> {
                    match self {
                        #(Self::#variants => #tools,)*
                    }
                }

                /// The states a run may move to from this one: `next` of an execution step;
                /// the branches' `next`, then `otherwise`, of a decision; none of a terminal.
                pub const fn successors(self) -> &'static [State] {
                    match self {
                        #(#successors,)*
                    }
                }

                /// Whether `next` is a declared transition from this state.
                pub fn can_move_to(self, next: State) -> bool {
                    self.successors().contains(&next)
                }
            }

            impl ::core::fmt::Display for State {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.pad(self.name())
                }
            }

            #steps
        }
    })
}

/// The step type of one execution state.
fn step(
    sop: &Sop,
    name: &str,
    v: &proc_macro2::Ident,
    e: &escepine_registry::sop::ExecutionState,
    tool_module: &proc_macro2::Ident,
    records: &[&ToolRecord],
    c: &syn::Path,
) -> TokenStream {
    let sop_id = sop.sop_id.as_str();
    let tool = e.tool.as_str();
    let next = e.next.as_str();
    let per_url = e.require_per_url_authorization;
    let on_failure = format_ident!(
        "{}",
        match e.on_failure {
            escepine_contract::FailureOutcome::Halt => "Halt",
            escepine_contract::FailureOutcome::HaltAndEscalate => "HaltAndEscalate",
            escepine_contract::FailureOutcome::Compensate => "Compensate",
        }
    );
    let pointers = e.constraints.keys().map(String::as_str);
    let fragments = e
        .constraints
        .values()
        .map(|f| serde_json::to_string(f).unwrap_or_default());
    let tool_summary = records
        .iter()
        .find(|r| r.tool_id() == tool)
        .map(|r| summary(r.description()))
        .unwrap_or_default();
    let mut doc = format!(
        "Step `{name}` of the SOP `{sop_id}`: one governed call of `{tool}`, whose payload is a \
         `{tool_module}::Input`. On success the run moves to `{next}`; on failure it ends by \
         `{}`.\n\nThe tool: {tool_summary}",
        e.on_failure.as_str()
    );
    if per_url {
        doc.push_str("\n\nEvery URL of the payload is authorized on its own.");
    }
    if !e.constraints.is_empty() {
        doc.push_str("\n\nThe proposal must also satisfy the constraints:\n");
        for (p, f) in &e.constraints {
            doc.push_str(&format!("\n- `{p}`: `{f}`"));
        }
    }
    let doc = doc_attrs(&doc);
    quote! {
        #doc
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct #v;

        impl #c::SopStep for #v {
            type Tool = super::super::#tool_module::Tool;
            const SOP_ID: &'static str = #sop_id;
            const STATE: &'static str = #name;
            const ON_FAILURE: #c::FailureOutcome =
                #c::FailureOutcome::#on_failure;
            const NEXT: &'static str = #next;
            const REQUIRE_PER_URL_AUTHORIZATION: bool = #per_url;
            const CONSTRAINTS: &'static [(&'static str, &'static str)] =
                &[#((#pointers, #fragments)),*];
        }

        impl ::core::convert::From<#v> for State {
            fn from(_: #v) -> State {
                State::#v
            }
        }
    }
}
