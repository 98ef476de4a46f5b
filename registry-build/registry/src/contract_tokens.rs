//! The one Rust rendering of a tool's contract: the `Contract { … }` constant expression that
//! the `build.rs` generator writes for every record and the `#[tool]` macro writes for every
//! Rust-first tool.
//!
//! Fields equal to `Contract::OMITTED` (or `Endpoint::OMITTED`) are not written: the expression
//! ends with `..Contract::OMITTED`, so the text names only what the contract declares.

use escepine_contract::{FailureOutcome, Filesystem, Isolation, SideEffectClass, Transport};
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote, ToTokens};

use crate::record::ToolRecord;

/// Where the contract's schema texts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaTexts {
    /// The constants `INPUT_SCHEMA` and `OUTPUT_SCHEMA` in scope (a generated tool module).
    Constants,
    /// Empty: derived from the payload types when the program runs (a Rust-first tool).
    Derived,
}

/// A tool's contract, as the `Contract { … }` constant expression it is written as
/// ([`ToTokens`]). Build it from a checked record ([`ContractTokens::from_record`]) or field by
/// field from arguments that passed the same rules.
#[derive(Debug, Clone)]
pub struct ContractTokens {
    /// The path of the contract crate (`::escepine_contract` by default).
    pub path: TokenStream,
    /// The tool id.
    pub id: String,
    /// The semver version, as written.
    pub version: String,
    /// The short human-readable name.
    pub title: Option<String>,
    /// The description.
    pub description: String,
    /// The `open_world` hint.
    pub open_world: Option<bool>,
    /// The Cedar action id.
    pub cedar_action: String,
    /// The extra action groups.
    pub action_groups: Vec<String>,
    /// The side-effect class.
    pub class: SideEffectClass,
    /// The inverse's tool id and its map (inverse field, JSON pointer), in declaration order.
    pub compensation: Option<(String, Vec<(String, String)>)>,
    /// Bound of each attempt, in milliseconds.
    pub timeout_ms: u64,
    /// Attempts at most.
    pub max_attempts: u32,
    /// Backoff between attempts, in milliseconds.
    pub backoff_ms: u64,
    /// The outcomes an SOP step may choose on failure.
    pub on_failure: Vec<FailureOutcome>,
    /// The endpoint's transport.
    pub transport: Transport,
    /// The endpoint's command; `None`: the binary of the crate being compiled (`CARGO_BIN_NAME`,
    /// else `CARGO_PKG_NAME`).
    pub command: Option<String>,
    /// The endpoint's arguments.
    pub args: Vec<String>,
    /// The binary's SHA-256.
    pub sha256: Option<String>,
    /// The endpoint's image reference, as written.
    pub image: Option<String>,
    /// The MCP tool definition's SHA-256.
    pub definition_sha256: Option<String>,
    /// A remote endpoint's URL.
    pub url: Option<String>,
    /// A remote endpoint's name for the tool.
    pub remote_tool: Option<String>,
    /// The secret names.
    pub secrets: Vec<String>,
    /// The egress entries, as written.
    pub egress: Vec<String>,
    /// The read-only host paths.
    pub read_only: Vec<String>,
    /// The sandbox's file-system access.
    pub filesystem: Filesystem,
    /// The sandbox's isolation tier.
    pub isolation: Isolation,
    /// Where the schema texts come from.
    pub schemas: SchemaTexts,
}

impl ContractTokens {
    /// The contract of a record that passed every registration rule, its schema texts the
    /// module's `INPUT_SCHEMA` and `OUTPUT_SCHEMA`.
    pub fn from_record(record: &ToolRecord, path: TokenStream) -> Self {
        Self {
            path,
            id: record.tool_id.clone(),
            version: record.version.to_string(),
            title: record.title.clone(),
            description: record.description.clone(),
            open_world: record.open_world,
            cedar_action: record.cedar_action.clone(),
            action_groups: record.action_groups.clone(),
            class: record.side_effect_class,
            compensation: record
                .compensation
                .as_ref()
                .map(|c| (c.tool.clone(), c.map.clone())),
            timeout_ms: record.timeout_ms,
            max_attempts: record.retry.max_attempts,
            backoff_ms: record.retry.backoff_ms,
            on_failure: record.on_failure.clone(),
            transport: record.endpoint.transport,
            command: Some(record.endpoint.command.clone()),
            args: record.endpoint.args.clone(),
            sha256: record.endpoint.sha256.clone(),
            image: record.endpoint.image.as_ref().map(|i| i.raw.clone()),
            definition_sha256: record.endpoint.definition_sha256.clone(),
            url: record.endpoint.remote.as_ref().map(|r| r.url.to_string()),
            remote_tool: record.endpoint.remote.as_ref().map(|r| r.tool.clone()),
            secrets: record.secrets.clone(),
            egress: record
                .sandbox_profile
                .egress
                .iter()
                .map(ToString::to_string)
                .chain(
                    record
                        .sandbox_profile
                        .authorized_urls
                        .then(|| crate::egress::AUTHORIZED_URLS.to_string()),
                )
                .collect(),
            read_only: record
                .sandbox_profile
                .read_only
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            filesystem: record.sandbox_profile.filesystem,
            isolation: record.sandbox_profile.isolation,
            schemas: SchemaTexts::Constants,
        }
    }
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

fn some_str(v: Option<&str>) -> Option<TokenStream> {
    v.map(|s| quote! { ::core::option::Option::Some(#s) })
}

/// A non-empty list as a `&'static [&'static str]` expression.
fn list(items: &[String]) -> Option<TokenStream> {
    (!items.is_empty()).then(|| quote! { &[#(#items),*] })
}

fn class_variant(class: SideEffectClass) -> Ident {
    ident(match class {
        SideEffectClass::ReadOnly => "ReadOnly",
        SideEffectClass::Compensatable => "Compensatable",
        SideEffectClass::Supersede => "Supersede",
    })
}

fn outcome_variant(outcome: FailureOutcome) -> Ident {
    ident(match outcome {
        FailureOutcome::Halt => "Halt",
        FailureOutcome::HaltAndEscalate => "HaltAndEscalate",
        FailureOutcome::Compensate => "Compensate",
    })
}

fn transport_variant(transport: Transport) -> Ident {
    ident(match transport {
        Transport::StdioJson => "StdioJson",
        Transport::McpStdio => "McpStdio",
        Transport::McpHttp => "McpHttp",
    })
}

fn filesystem_variant(filesystem: Filesystem) -> Ident {
    ident(match filesystem {
        Filesystem::Workspace => "Workspace",
    })
}

impl ContractTokens {
    fn endpoint(&self) -> TokenStream {
        let c = &self.path;
        let transport = transport_variant(self.transport);
        let command = match &self.command {
            Some(command) => quote! { #command },
            None => quote! {
                match ::core::option_env!("CARGO_BIN_NAME") {
                    ::core::option::Option::Some(bin) => bin,
                    ::core::option::Option::None => ::core::env!("CARGO_PKG_NAME"),
                }
            },
        };
        let mut fields = vec![
            quote! { transport: #c::Transport::#transport },
            quote! { command: #command },
        ];
        let optional = [
            ("args", list(&self.args)),
            ("sha256", some_str(self.sha256.as_deref())),
            ("image", some_str(self.image.as_deref())),
            (
                "definition_sha256",
                some_str(self.definition_sha256.as_deref()),
            ),
            ("url", some_str(self.url.as_deref())),
            ("tool", some_str(self.remote_tool.as_deref())),
        ];
        for (field, value) in optional {
            if let Some(v) = value {
                let f = ident(field);
                fields.push(quote! { #f: #v });
            }
        }
        quote! { #c::Endpoint { #(#fields,)* ..#c::Endpoint::OMITTED } }
    }
}

impl ToTokens for ContractTokens {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let c = &self.path;
        let id = &self.id;
        let version = &self.version;
        let description = &self.description;
        let cedar_action = &self.cedar_action;

        let mut fields = vec![quote! { id: #id }, quote! { version: #version }];
        if let Some(t) = some_str(self.title.as_deref()) {
            fields.push(quote! { title: #t });
        }
        fields.push(quote! { description: #description });
        if let Some(b) = self.open_world {
            fields.push(quote! { open_world: ::core::option::Option::Some(#b) });
        }
        fields.push(quote! { cedar_action: #cedar_action });
        if let Some(groups) = list(&self.action_groups) {
            fields.push(quote! { action_groups: #groups });
        }
        let class = class_variant(self.class);
        fields.push(quote! { class: #c::SideEffectClass::#class });
        if let Some((tool, map)) = &self.compensation {
            let keys = map.iter().map(|(k, _)| k);
            let pointers = map.iter().map(|(_, v)| v);
            fields.push(quote! {
                compensation: ::core::option::Option::Some(#c::Compensation {
                    tool: #tool,
                    map: &[#((#keys, #pointers)),*],
                })
            });
        }
        let timeout_ms = Literal::u64_unsuffixed(self.timeout_ms);
        let max_attempts = Literal::u32_unsuffixed(self.max_attempts);
        let backoff_ms = Literal::u64_unsuffixed(self.backoff_ms);
        fields.push(quote! { timeout_ms: #timeout_ms });
        fields.push(quote! { retry: #c::RetryPolicy::new(#max_attempts, #backoff_ms) });
        if self.on_failure == FailureOutcome::ALL {
            fields.push(quote! { on_failure: &#c::FailureOutcome::ALL });
        } else {
            let outcomes = self.on_failure.iter().map(|o| outcome_variant(*o));
            fields.push(quote! { on_failure: &[#(#c::FailureOutcome::#outcomes),*] });
        }
        let endpoint = self.endpoint();
        fields.push(quote! { endpoint: #endpoint });
        let optional = [
            ("secrets", list(&self.secrets)),
            ("egress", list(&self.egress)),
            ("read_only", list(&self.read_only)),
        ];
        for (field, value) in optional {
            if let Some(v) = value {
                let f = ident(field);
                fields.push(quote! { #f: #v });
            }
        }
        let filesystem = filesystem_variant(self.filesystem);
        fields.push(quote! { filesystem: #c::Filesystem::#filesystem });
        if self.isolation != Isolation::default() {
            let tier = match self.isolation {
                Isolation::Namespaces => quote!(Namespaces),
                Isolation::Gvisor => quote!(Gvisor),
            };
            fields.push(quote! { isolation: #c::Isolation::#tier });
        }
        if self.schemas == SchemaTexts::Constants {
            fields.push(quote! { input_schema: INPUT_SCHEMA });
            fields.push(quote! { output_schema: OUTPUT_SCHEMA });
        }
        tokens.extend(quote! {
            #c::Contract { #(#fields,)* ..#c::Contract::OMITTED }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rust_first() -> ContractTokens {
        ContractTokens {
            path: quote!(::escepine_contract),
            id: "text_stats".into(),
            version: "1.0.0".into(),
            title: None,
            description: "Count.".into(),
            open_world: None,
            cedar_action: "text_stats".into(),
            action_groups: vec![],
            class: SideEffectClass::ReadOnly,
            compensation: None,
            timeout_ms: 5000,
            max_attempts: 2,
            backoff_ms: 10,
            on_failure: vec![FailureOutcome::Halt],
            transport: Transport::StdioJson,
            command: None,
            args: vec!["text_stats".into()],
            sha256: None,
            image: None,
            definition_sha256: None,
            url: None,
            remote_tool: None,
            secrets: vec![],
            egress: vec!["api.example.com:443".into()],
            read_only: vec![],
            filesystem: Filesystem::Workspace,
            isolation: Isolation::Namespaces,
            schemas: SchemaTexts::Derived,
        }
    }

    fn text(t: &ContractTokens) -> String {
        t.to_token_stream().to_string()
    }

    #[test]
    fn omitted_fields_are_left_to_the_omitted_constant() {
        let s = text(&rust_first());
        assert!(s.starts_with(":: escepine_contract :: Contract {"), "{s}");
        assert!(
            s.ends_with(".. :: escepine_contract :: Contract :: OMITTED }"),
            "{s}"
        );
        for absent in [
            "title",
            "open_world",
            "action_groups",
            "compensation",
            "secrets",
        ] {
            assert!(!s.contains(&format!("{absent} :")), "{absent} in {s}");
        }
        assert!(s.contains("egress : & [\"api.example.com:443\"]"), "{s}");
        assert!(s.contains("RetryPolicy :: new (2 , 10)"), "{s}");
        assert!(!s.contains("input_schema"), "{s}");
    }

    #[test]
    fn the_crate_binary_is_the_default_command() {
        let s = text(&rust_first());
        assert!(s.contains("option_env ! (\"CARGO_BIN_NAME\")"), "{s}");
        let mut t = rust_first();
        t.command = Some("/bin/tool".into());
        t.schemas = SchemaTexts::Constants;
        t.on_failure = FailureOutcome::ALL.to_vec();
        let s = text(&t);
        assert!(s.contains("command : \"/bin/tool\""), "{s}");
        assert!(s.contains("input_schema : INPUT_SCHEMA"), "{s}");
        assert!(s.contains("on_failure : & :: escepine_contract :: FailureOutcome :: ALL"));
    }
}
