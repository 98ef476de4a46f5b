//! The Cedar types `escepine import mcp` drafts get for MCP tool schemas of the strands-agents
//! kind (docs/cedar-types.md compares them with cedar-for-agents' generated schemas): string
//! enums keep their values, nullable enums (`anyOf` with `null`) too once normalized, formats
//! become Cedar extension types.
//!
//! `the_strands_tools_get_cedar_types` runs over the 46 tools of cedar-for-agents'
//! `rust/cedar-policy-mcp-schema-generator/examples/strands/strands_tools.json`, which is not
//! part of this repository: it is ignored unless asked for, with the file's path in
//! `STRANDS_TOOLS_JSON` (`cargo test -p escepine-mcp --test suite strands_schemas -- --ignored
//! --nocapture`).

use std::path::Path;

use escepine_mcp::import::{draft, Draft, EndpointDraft, ServerTools};
use escepine_policy::cedar::types::input_type;
use escepine_policy::cedar::types::CedarType;
use serde_json::{json, Value};

/// The draft of one tool and the Cedar type of its input (when the draft's schema has one).
fn ours(tool: &Value) -> (Draft, Option<CedarType>) {
    let server = ServerTools {
        name: Some("strands".into()),
        version: Some("1.0.0".into()),
        tools: vec![tool.clone()],
    };
    let endpoint =
        EndpointDraft::for_command(&["/bin/true".into()], Path::new("/"), None).expect("endpoint");
    let d = draft(tool, &server, &endpoint, &[]);
    let ty = input_type(&d.record["input_schema"]).ok();
    (d, ty)
}

fn attribute<'a>(ty: &'a CedarType, name: &str) -> Option<&'a CedarType> {
    match ty {
        CedarType::Record(attributes) => attributes.iter().find(|a| a.name == name).map(|a| &a.ty),
        _ => None,
    }
}

/// How many enum-valued attributes (or set elements) a type has, at any depth.
fn enums_in(ty: &CedarType) -> usize {
    match ty {
        CedarType::Enum(_) => 1,
        CedarType::Set(inner) => enums_in(inner),
        CedarType::Record(attributes) => attributes.iter().map(|a| enums_in(&a.ty)).sum(),
        _ => 0,
    }
}

fn enum_of(values: &[&str]) -> CedarType {
    CedarType::Enum(values.iter().map(|v| v.to_string()).collect())
}

#[test]
fn enums_and_formats_of_an_imported_tool_reach_cedar_sharply() {
    // A search tool written as strands-agents writes its schemas (pydantic: nullable fields as
    // `anyOf` with `null`), with two formatted fields added.
    let tool = json!({
        "name": "search",
        "description": "Search the web.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "search_depth": {"type": "string", "enum": ["basic", "advanced"], "default": "basic"},
                "time_range": {"anyOf": [{"type": "string", "enum": ["day", "week"]}, {"type": "null"}],
                               "default": null},
                "start_date": {"type": "string", "description": "YYYY-MM-DD"},
                "since": {"type": "string", "format": "date-time"},
                "budget": {"type": "string", "format": "duration"}
            },
            "required": ["query"]
        }
    });
    let (d, ty) = ours(&tool);
    let ty = ty.unwrap_or_else(|| panic!("no Cedar type: {:#?}", d.decisions));
    assert_eq!(attribute(&ty, "query"), Some(&CedarType::String));
    assert_eq!(
        attribute(&ty, "search_depth"),
        Some(&enum_of(&["basic", "advanced"]))
    );
    assert_eq!(
        attribute(&ty, "time_range"),
        Some(&enum_of(&["day", "week"])),
        "{}",
        d.record["input_schema"]
    );
    assert_eq!(attribute(&ty, "start_date"), Some(&CedarType::String));
    assert_eq!(attribute(&ty, "since"), Some(&CedarType::DateTime));
    assert_eq!(attribute(&ty, "budget"), Some(&CedarType::Duration));
}

/// Every string `enum` property (top level) of a schema.
fn enum_properties(schema: &Value) -> Vec<String> {
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(_, p)| {
            p.get("enum").is_some()
                || p.get("anyOf")
                    .and_then(Value::as_array)
                    .is_some_and(|alts| alts.iter().any(|a| a.get("enum").is_some()))
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// How many string schemas name a `format` (a property called `format` is not one).
fn count_formats(v: &Value) -> usize {
    match v {
        Value::Object(m) => {
            let here = usize::from(
                m.get("type").and_then(Value::as_str) == Some("string")
                    && m.get("format").is_some_and(Value::is_string),
            );
            here + m.values().map(count_formats).sum::<usize>()
        }
        Value::Array(a) => a.iter().map(count_formats).sum(),
        _ => 0,
    }
}

#[test]
#[ignore = "needs cedar-for-agents' strands_tools.json, named by STRANDS_TOOLS_JSON"]
fn the_strands_tools_get_cedar_types() {
    let path = std::env::var("STRANDS_TOOLS_JSON").expect("STRANDS_TOOLS_JSON names the file");
    let text = std::fs::read_to_string(&path).expect("readable");
    let listing: Value = serde_json::from_str(&text).expect("JSON");
    let tools = listing["result"]["tools"].as_array().expect("result.tools");
    let (mut typed, mut enums_total, mut enums_kept, mut formats) = (0, 0, 0, 0);
    let (mut enums_anywhere, mut settled) = (0, 0);
    for tool in tools {
        // strands-agents wraps each input schema as `{"json": …}`.
        let mut tool = tool.clone();
        let schema = tool["inputSchema"]["json"].clone();
        tool["inputSchema"] = schema.clone();
        let name = tool["name"].as_str().unwrap_or("?").to_string();
        let (d, ty) = ours(&tool);
        let input_decisions: Vec<String> = d
            .decisions
            .iter()
            .filter(|x| x.pointer.starts_with("/input_schema"))
            .map(|x| x.pointer.clone())
            .collect();
        if input_decisions.is_empty() {
            settled += 1;
        }
        let wanted = enum_properties(&schema);
        enums_total += wanted.len();
        formats += count_formats(&schema);
        match &ty {
            Some(ty) => {
                typed += 1;
                enums_anywhere += enums_in(ty);
                let kept: Vec<&String> = wanted
                    .iter()
                    .filter(|p| matches!(attribute(ty, p), Some(CedarType::Enum(_))))
                    .collect();
                enums_kept += kept.len();
                println!(
                    "{name}: typed; top-level enum properties kept {}/{}; enums at any depth {}; \
                     input schema decisions {input_decisions:?}",
                    kept.len(),
                    wanted.len(),
                    enums_in(ty)
                );
                for p in wanted.iter().filter(|p| !kept.contains(p)) {
                    println!(
                        "  {p}: drafted as {} -> {}",
                        d.record["input_schema"]["properties"][p.as_str()],
                        attribute(ty, p).map_or("absent".into(), |t| t.to_cedar(2))
                    );
                }
            }
            None => println!(
                "{name}: no Cedar type until decided (input schema decisions {input_decisions:?})"
            ),
        }
    }
    println!(
        "{} tools; {settled} with nothing to decide in the input schema; {typed} typed; top-level string-enum properties kept \
         {enums_kept}/{enums_total}; enum-valued attributes at any depth {enums_anywhere}; \
         `format` keywords {formats}",
        tools.len()
    );
    assert_eq!(tools.len(), 46);
}
