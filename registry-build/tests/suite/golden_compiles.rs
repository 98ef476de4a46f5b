//! The generator's golden fixtures (`tests/golden/fixtures.rs`, `tests/golden/empty.rs`)
//! compiled, and their behaviour checked: closed structs at every depth, URLs as `Url`, string
//! bounds left to the gates, shared enums, the contract constants, the action markers, `ToolId`
//! and the typed `Client`. The catalog's golden file is compiled by the examples that include
//! the same generated text.

use std::future::Future;

use escepine_contract::{CedarAction, Invoke, Principal, Tool};
use serde_json::json;

#[allow(clippy::all)]
mod fixtures {
    include!("../golden/fixtures.rs");
}

#[allow(clippy::all)]
mod empty {
    include!("../golden/empty.rs");
}

use fixtures::{clash, firecrawl_scrape, note_publish, srv_time, ToolId};

#[test]
fn every_struct_is_closed_and_uris_are_urls() {
    let ok: firecrawl_scrape::Input = serde_json::from_value(json!({
        "url": "https://example.com/a", "formats": ["markdown"],
        "options": {"wait_ms": 5, "tag": "x"}
    }))
    .unwrap();
    let url: &escepine_contract::url::Url = &ok.url;
    assert_eq!(url.host_str(), Some("example.com"));

    for (what, payload) in [
        ("root", json!({"url": "https://example.com", "extra": 1})),
        (
            "nested",
            json!({"url": "https://example.com", "options": {"wait_ms": 1, "retries": 2}}),
        ),
        ("not a URL", json!({"url": "not a url"})),
    ] {
        assert!(
            serde_json::from_value::<firecrawl_scrape::Input>(payload).is_err(),
            "{what} accepted"
        );
    }
    let nested_output = json!({"url": "https://e.com", "markdown": "m",
        "links": [{"href": "https://e.com/b", "rel": "x"}]});
    assert!(serde_json::from_value::<firecrawl_scrape::Output>(nested_output).is_err());
}

#[test]
fn string_bounds_are_the_gates_not_the_types() {
    // `query` has `maxLength: 200` in the schema: the type is a plain `String`, and the schema
    // text the gate validates against keeps the bound.
    let input = firecrawl_scrape::Input {
        url: "https://example.com".parse().unwrap(),
        query: Some("x".repeat(500)),
        formats: vec![],
        options: None,
    };
    assert_eq!(input.query.as_deref().map(str::len), Some(500));
    let schema: serde_json::Value = serde_json::from_str(firecrawl_scrape::INPUT_SCHEMA).unwrap();
    assert_eq!(schema["properties"]["query"]["maxLength"], 200);
    assert_eq!(schema["properties"]["options"]["$ref"], "#/$defs/Options");
}

#[test]
fn one_enum_for_input_and_output_and_one_error_type() {
    let input: firecrawl_scrape::Input =
        serde_json::from_value(json!({"url": "https://e.com", "formats": ["html"]})).unwrap();
    let output = firecrawl_scrape::Output {
        url: "https://e.com".parse().unwrap(),
        markdown: String::new(),
        formats: input.formats.clone(),
        links: vec![],
        fetched: None,
    };
    assert_eq!(output.formats, vec![firecrawl_scrape::Formats::Html]);
    let err: fixtures::error::ConversionError =
        "pdf".parse::<firecrawl_scrape::Formats>().unwrap_err();
    assert_eq!(err.to_string(), "invalid value");
}

#[test]
fn a_string_enum_has_its_four_conversions() {
    use firecrawl_scrape::Formats;
    assert_eq!(Formats::Markdown.to_string(), "markdown");
    assert_eq!("html".parse::<Formats>().ok(), Some(Formats::Html));
    assert_eq!(Formats::try_from("markdown").ok(), Some(Formats::Markdown));
    assert_eq!(
        Formats::try_from(String::from("html")).ok(),
        Some(Formats::Html)
    );
    assert!(Formats::try_from("Markdown").is_err());
    // The serde names and the conversions' strings are the same.
    assert_eq!(serde_json::to_value(Formats::Html).unwrap(), json!("html"));
}

#[test]
fn schema_text_is_the_canonical_record_schema() {
    let c = <firecrawl_scrape::Tool as Tool>::CONTRACT;
    assert!(std::ptr::eq(c.input_schema, firecrawl_scrape::INPUT_SCHEMA));
    assert!(std::ptr::eq(
        c.output_schema,
        firecrawl_scrape::OUTPUT_SCHEMA
    ));
    // Compact JSON in the record's key order.
    assert!(
        c.input_schema.starts_with(r#"{"$schema":"#),
        "{}",
        c.input_schema
    );
    let parsed: serde_json::Value = serde_json::from_str(c.input_schema).unwrap();
    assert_eq!(serde_json::to_string(&parsed).unwrap(), c.input_schema);
}

#[test]
fn the_contract_constants_are_the_records() {
    let c = <firecrawl_scrape::Tool as Tool>::CONTRACT;
    assert_eq!(
        (c.id, c.version, c.cedar_action),
        ("firecrawl_scrape", "1.2.0", "firecrawl_scrape")
    );
    assert_eq!(c.action_groups, ["page-read"]);
    assert_eq!(c.timeout_ms, 30_000);
    assert_eq!((c.retry.max_attempts, c.retry.backoff_ms), (3, 2_000));
    assert_eq!(c.egress, ["api.example.com:443"]);
    assert_eq!(c.secrets, ["API_KEY"]);
    assert_eq!(c.endpoint.command, "escepine-catalog");
    assert_eq!(c.endpoint.args, ["firecrawl_scrape"]);
    assert_eq!(c.endpoint.image, None);
    assert_eq!(c.title, None);
    assert_eq!(c.read_only, [] as [&str; 0]);
    assert_eq!(
        c.on_failure,
        [
            escepine_contract::FailureOutcome::Halt,
            escepine_contract::FailureOutcome::HaltAndEscalate
        ]
    );

    let p = <note_publish::Tool as Tool>::CONTRACT;
    assert_eq!(p.class, escepine_contract::SideEffectClass::Compensatable);
    let inverse = p.compensation.unwrap();
    assert_eq!(inverse.tool, "note_retract");
    assert_eq!(inverse.map, [("note_id", "/output/note_id")]);
    assert_eq!(p.on_failure, escepine_contract::FailureOutcome::ALL);
    assert!(p.egress.is_empty() && p.secrets.is_empty());
    assert!(p.description.starts_with("Does note_publish."));
}

#[test]
fn image_definition_read_only_title_and_open_world_reach_the_contract() {
    let c = <srv_time::Tool as Tool>::CONTRACT;
    assert_eq!(c.endpoint.transport, escepine_contract::Transport::McpStdio);
    assert_eq!(
        c.endpoint.image,
        Some("127.0.0.1:5000/mcp/time@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
    );
    let digest = "ab".repeat(32);
    assert_eq!(c.endpoint.definition_sha256, Some(digest.as_str()));
    assert_eq!(c.endpoint.command, "");
    assert_eq!(c.read_only, ["/usr/lib/python3"]);
    assert_eq!(c.title, Some("Time"));
    assert_eq!(c.open_world, Some(false));
}

#[test]
fn actions_ids_and_keyword_names() {
    assert_eq!(
        <<firecrawl_scrape::Tool as Tool>::Action as CedarAction>::ACTION_ID,
        "firecrawl_scrape"
    );
    assert_eq!(
        <fixtures::actions::page_read as CedarAction>::ACTION_ID,
        "page-read"
    );
    const { assert!(<fixtures::actions::read_only as CedarAction>::IS_GROUP) };
    const { assert!(!<fixtures::actions::r#type as CedarAction>::IS_GROUP) };
    assert_eq!(<fixtures::r#type::Tool as Tool>::CONTRACT.id, "type");

    assert_eq!("note_publish".parse::<ToolId>(), Ok(ToolId::NotePublish));
    assert_eq!(ToolId::FirecrawlScrape.as_str(), "firecrawl_scrape");
    assert_eq!(ToolId::Type.contract().id, "type");
    assert_eq!(ToolId::ALL.len(), 6);
    let unknown = "nope".parse::<ToolId>().unwrap_err();
    assert!(unknown.to_string().contains("nope"));
    assert!(empty::ToolId::ALL.is_empty());
    assert!("firecrawl_scrape".parse::<empty::ToolId>().is_err());
}

#[test]
fn defs_that_would_clash_are_renamed() {
    let input: clash::Input =
        serde_json::from_value(json!({"a": {"x": 1}, "b": "https://e.com", "t": {"name": "n"}}))
            .unwrap();
    let _: Option<clash::InputDef> = input.a;
    let _: Option<clash::ToolDef> = input.t;
    let link: clash::Link = input.b.unwrap();
    assert_eq!(link.0.as_str(), "https://e.com/");
    // The output's `Link` is an object of its own.
    let output: clash::Output = serde_json::from_value(json!({"l": {"href": "h"}})).unwrap();
    let _: Option<clash::OutputLink> = output.l;
}

/// An [`Invoke`] that answers every call with the tool's id, to show the typed client's shape.
struct Echo;

impl Invoke for Echo {
    type Error = String;

    fn invoke_with_files<T: Tool>(
        &self,
        _principal: &Principal,
        input: T::Input,
        files: escepine_contract::WorkspaceFiles,
    ) -> impl Future<Output = Result<T::Output, Self::Error>> + Send {
        let payload = serde_json::to_value(&input).map_err(|e| e.to_string());
        // The id, then each file given as `name=size`.
        let mut note_id = T::CONTRACT.id.to_string();
        for (name, file) in files.iter() {
            note_id.push_str(&format!(" {name}={}", file.len()));
        }
        async move {
            let _ = payload?;
            serde_json::from_value(json!({ "note_id": note_id })).map_err(|e| e.to_string())
        }
    }
}

/// The value of a future that is ready at once.
fn ready<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("the echo is ready at once"),
    }
}

#[test]
fn a_tool_with_workspace_inputs_takes_its_files_in_the_typed_call() {
    use fixtures::{note_attach, Client};
    let principal = Principal::agent("a");
    let input = || note_attach::Input {
        title: Some("t".into()),
    };
    // The required input is a field of `Files` (a name that is no identifier becomes one); the
    // optional one, named like a keyword, an `Option`.
    let files = note_attach::Files {
        draft_md: "# draft".into(),
        r#type: None,
    };
    let out = ready(Echo.note_attach(&principal, input(), files)).unwrap();
    assert_eq!(out.note_id.as_deref(), Some("note_attach draft.md=7"));
    let files = note_attach::Files {
        draft_md: "x".into(),
        r#type: Some("md".into()),
    };
    let out = ready(Echo.note_attach(&principal, input(), files)).unwrap();
    assert_eq!(
        out.note_id.as_deref(),
        Some("note_attach draft.md=1 type=2")
    );
}

#[test]
fn the_typed_client_calls_through_invoke() {
    use fixtures::Client;
    let principal = Principal::agent("a");
    let call = Echo.note_publish(
        &principal,
        note_publish::Input {
            title: Some("t".into()),
        },
    );
    let mut call = std::pin::pin!(call);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match call.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => {
            assert_eq!(out.unwrap().note_id.as_deref(), Some("note_publish"))
        }
        std::task::Poll::Pending => panic!("the echo is ready at once"),
    }
}
