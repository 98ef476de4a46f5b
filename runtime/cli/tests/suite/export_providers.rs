//! Exports of the catalog and of synthetic records, checked against each provider's documented
//! rules by independent checkers, plus the round-trip facts that make an export safe to use.

use crate::export_rules;

use escepine_export::anthropic;
use escepine_export::gemini;
use escepine_export::mcp;
use escepine_export::openai;
use escepine_export::ExportError;
use escepine_export::Format;
use escepine_policy::gate::{drop_null_optionals, SchemaGate};
use export_rules as rules;
use serde_json::{json, Value};

const PAYLOADS_PER_TOOL: usize = 96;

fn checker(format: Format) -> fn(&Value) -> Vec<String> {
    match format {
        Format::Mcp => rules::mcp,
        Format::OpenAi => rules::openai,
        Format::Anthropic => rules::anthropic,
        Format::Gemini => rules::gemini,
    }
}

#[test]
fn every_format_of_the_catalog_and_the_fixtures_follows_the_documented_rules() {
    let records = rules::all_records();
    assert!(
        records.len() >= 12,
        "catalog and fixtures: {}",
        records.len()
    );
    for format in Format::ALL {
        let tools = escepine_export::export(&records, format)
            .unwrap_or_else(|e| panic!("{format} export failed:\n{e}"));
        let tools = tools.as_array().expect("an array");
        assert_eq!(
            tools.len(),
            records.len(),
            "{format}: one definition per record"
        );
        for (tool, record) in tools.iter().zip(&records) {
            let violations = checker(format)(tool);
            assert!(
                violations.is_empty(),
                "{format} definition of {} breaks documented rules:\n{}\n{}",
                record.tool_id(),
                violations.join("\n"),
                serde_json::to_string_pretty(tool).unwrap_or_default()
            );
            assert_eq!(
                tool["name"],
                json!(record.tool_id()),
                "{format}: names are tool ids"
            );
        }
    }
}

#[test]
fn openai_strict_payloads_map_back_to_payloads_the_input_gate_accepts() {
    for record in rules::all_records() {
        let tool = openai::tool(&record).expect("exports");
        let strict = rules::validator(&tool["parameters"], true);
        let gate = SchemaGate::new(record.input_schema()).expect("compiles");
        let mut gen = rules::Gen::new(7);
        for _ in 0..PAYLOADS_PER_TOOL {
            let payload = gen.instance(record.input_schema());
            if let Err(v) = gate.check(&payload) {
                panic!(
                    "generator made an invalid {} payload {payload}: {v:?}",
                    record.tool_id()
                );
            }
            // What a strict-mode model sends: every field, `null` for the ones left out.
            let dialect = rules::to_strict(record.input_schema(), &payload);
            assert!(
                strict.is_valid(&dialect),
                "{}: the strict schema rejects {dialect}:\n{}",
                record.tool_id(),
                rules::errors(&strict, &dialect)
            );
            // The runtime's JSON entry maps the dialect back, and the gate accepts the result.
            let mut back = dialect.clone();
            drop_null_optionals(record.input_schema(), &mut back);
            assert_eq!(back, payload, "{}: the mapping is exact", record.tool_id());
            assert!(gate.check(&back).is_ok());
            // Strict means strict: an optional field left out entirely, or an unknown field, is
            // invalid in the dialect.
            if dialect != payload {
                assert!(
                    !strict.is_valid(&payload),
                    "{}: leaving a field out is invalid in strict mode: {payload}",
                    record.tool_id()
                );
            }
            let mut extra = dialect.clone();
            extra["zz_unknown"] = json!(1);
            assert!(
                !strict.is_valid(&extra),
                "{}: unknown fields are refused",
                record.tool_id()
            );
        }
    }
}

#[test]
fn anthropic_and_gemini_schemas_accept_every_payload_the_gate_accepts() {
    for record in rules::all_records() {
        let a = anthropic::tool(&record).expect("exports");
        let g = gemini::tool(&record).expect("exports");
        let anthropic_v = rules::validator(&a["input_schema"], true);
        // Gemini's `format: "enum"` is not a JSON Schema format; its other keywords are.
        let gemini_v = match (g.get("parameters"), g.get("parametersJsonSchema")) {
            (Some(p), _) => Some(rules::validator(p, false)),
            (None, Some(j)) => Some(rules::validator(j, true)),
            (None, None) => None,
        };
        let mut gen = rules::Gen::new(11);
        for _ in 0..PAYLOADS_PER_TOOL {
            let payload = gen.instance(record.input_schema());
            assert!(
                anthropic_v.is_valid(&payload),
                "{}: Anthropic schema rejects {payload}:\n{}",
                record.tool_id(),
                rules::errors(&anthropic_v, &payload)
            );
            match &gemini_v {
                Some(v) => assert!(
                    v.is_valid(&payload),
                    "{}: Gemini parameters reject {payload}:\n{}",
                    record.tool_id(),
                    rules::errors(v, &payload)
                ),
                None => assert_eq!(payload, json!({}), "no parameters means no input"),
            }
        }
    }
}

#[test]
fn anthropic_keeps_the_registered_schema_and_mcp_passes_it_verbatim() {
    for record in rules::all_records() {
        let a = anthropic::tool(&record).expect("exports");
        assert_eq!(
            rules::without_prose(&a["input_schema"]),
            rules::without_prose(record.input_schema()),
            "{}: Anthropic gets the registered schema, minus our extensions",
            record.tool_id()
        );
        let m = mcp::tool(&record);
        let v = rules::mcp_matches(&m, &record);
        assert!(v.is_empty(), "{}: {}", record.tool_id(), v.join("\n"));
        assert_eq!(m["description"], json!(record.description()));
    }
}

#[test]
fn lost_constraints_are_described_where_the_model_reads_them() {
    let records = rules::all_records();
    let get = |id: &str| {
        records
            .iter()
            .find(|r| r.tool_id() == id)
            .unwrap_or_else(|| panic!("{id} is loaded"))
    };
    let o = openai::tool(get("firecrawl_scrape")).expect("exports");
    let url = &o["parameters"]["properties"]["url"];
    assert!(url.get("format").is_none() && url.get("maxLength").is_none());
    let d = url["description"].as_str().unwrap_or_default();
    assert!(
        d.starts_with("The page to read")
            && d.contains("format: uri")
            && d.contains("at most 2048 characters"),
        "{d}"
    );

    let o = openai::tool(get("x_order_place")).expect("exports");
    let p = &o["parameters"]["properties"];
    assert_eq!(
        p["priority"]["description"],
        json!("1 is the most urgent. (default: 2)")
    );
    assert!(p["notes"]["description"]
        .as_str()
        .is_some_and(|d| d.contains("\"Ring twice\"")));
    assert_eq!(p["express"]["description"], json!("deprecated"));
    // `const` is a one-value enum; formats OpenAI lists stay.
    assert_eq!(p["kind"]["anyOf"][0]["enum"], json!(["order"]));
    assert_eq!(p["reference"]["format"], json!("uuid"));
    // The `$ref` with a sibling description is inlined; bare ones stay references.
    assert_eq!(p["customer"]["description"], json!("Who orders."));
    assert_eq!(p["items"]["items"], json!({"$ref": "#/$defs/line"}));

    let g = gemini::tool(get("x_order_place")).expect("exports");
    let p = &g["parameters"]["properties"];
    assert_eq!(
        p["priority"]["description"],
        json!("1 is the most urgent. (one of: 1, 2, 3)")
    );
    assert_eq!(
        p["priority"]["default"],
        json!(2),
        "`default` is a Gemini Schema field"
    );
    assert!(
        p["priority"].get("enum").is_none(),
        "integer enums are not Gemini's"
    );
    assert_eq!(p["api_version"]["description"], json!("always 2"));
    assert_eq!(p["tracking_page"]["description"], json!("format: uri"));
    assert_eq!(p["tracking_page"]["maxLength"], json!(2048));
    assert_eq!(
        p["items"]["items"]["properties"]["unit"]["format"],
        json!("enum")
    );
    let l = gemini::tool(get("x_link_check")).expect("exports");
    let links = l["parameters"]["properties"]["links"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(links.contains("authorized on its own"), "{links}");
    assert_eq!(
        l["parameters"]["properties"]["timeout_factor"]["description"],
        json!("Scale of the per-link timeout. (one of: 0.5, 1, 2)")
    );

    // A tool without input has no Gemini `parameters` (an empty OBJECT is refused).
    let ping = gemini::tool(get("x_ping")).expect("exports");
    assert!(ping.get("parameters").is_none());
}

#[test]
fn mcp_annotations_follow_the_side_effect_class() {
    let records = rules::all_records();
    let hints = |id: &str| {
        mcp::tool(records.iter().find(|r| r.tool_id() == id).expect("loaded"))["annotations"]
            .clone()
    };
    assert_eq!(hints("web_search"), json!({"readOnlyHint": true}));
    assert_eq!(
        hints("x_order_place"),
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false})
    );
    assert_eq!(
        hints("x_order_cancel"),
        json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true})
    );
    // Our extension stays in MCP (and only there).
    let bulk = mcp::tool(
        records
            .iter()
            .find(|r| r.tool_id() == "web_fetch_exa")
            .expect("loaded"),
    );
    assert_eq!(
        bulk["inputSchema"]["properties"]["urls"]["x-authorize-each"],
        json!(true)
    );
}

#[test]
fn titles_and_open_world_reach_mcp_only() {
    let records = rules::all_records();
    let get = |id: &str| records.iter().find(|r| r.tool_id() == id).expect("loaded");
    let link = mcp::tool(get("x_link_check"));
    assert_eq!(link["title"], json!("Link check"));
    assert_eq!(link["annotations"]["openWorldHint"], json!(true));
    // A record without them: no title, and the specification's default for the hint.
    let ping = mcp::tool(get("x_ping"));
    assert!(ping.get("title").is_none(), "{ping}");
    assert!(ping["annotations"].get("openWorldHint").is_none(), "{ping}");
    // The other formats document no title field: it is left out.
    let o = openai::tool(get("x_link_check")).expect("exports");
    let a = anthropic::tool(get("x_link_check")).expect("exports");
    let g = gemini::tool(get("x_link_check")).expect("exports");
    for (format, t) in [("openai", &o), ("anthropic", &a), ("gemini", &g)] {
        assert!(t.get("title").is_none(), "{format}: {t}");
        assert!(!t.to_string().contains("Link check"), "{format}: {t}");
    }
}

#[test]
fn chat_completions_shape_wraps_the_same_function() {
    let records = rules::all_records();
    let tool = openai::tool(&records[0]).expect("exports");
    let chat = openai::to_chat_completions(&tool);
    assert_eq!(chat["type"], json!("function"));
    assert_eq!(chat["function"]["name"], tool["name"]);
    assert_eq!(chat["function"]["parameters"], tool["parameters"]);
    assert_eq!(chat["function"]["strict"], json!(true));
    assert!(chat["function"].get("type").is_none());
}

fn closed(props: Value) -> Value {
    let required: Vec<String> = props
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "properties": props, "required": required})
}

#[test]
fn a_name_a_provider_refuses_fails_the_export_with_the_rule() {
    let long = "a".repeat(65);
    let record = rules::load_text(&rules::record_json(
        &long,
        closed(json!({"q": {"type": "string"}})),
    ));
    for format in [Format::OpenAi, Format::Anthropic, Format::Gemini] {
        let e =
            escepine_export::export(std::slice::from_ref(&record), format).expect_err("too long");
        assert!(matches!(e, ExportError::ToolName { .. }), "{e}");
        assert!(
            e.to_string().contains(&long) && e.to_string().contains("tool-name rule"),
            "{e}"
        );
    }
    // 65 characters are within MCP's 128.
    let ok = escepine_export::export(std::slice::from_ref(&record), Format::Mcp).expect("fits MCP");
    assert!(rules::mcp(&ok[0]).is_empty());
}

#[test]
fn parameter_names_follow_each_providers_rule() {
    let record = rules::load_text(&rules::record_json(
        "x_names",
        closed(json!({"page-size": {"type": "integer"}, "sort.order": {"type": "string"}})),
    ));
    // Gemini: letters, digits and underscores only; both names fail, each reported.
    let e = gemini::tool(&record).expect_err("Gemini refuses");
    let problems: Vec<String> = e.problems().iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("\"page-size\"") && problems[0].contains("/properties/page-size"));
    // Anthropic accepts dots and dashes; OpenAI and MCP document no rule.
    assert!(rules::anthropic(&anthropic::tool(&record).expect("fits")).is_empty());
    assert!(rules::openai(&openai::tool(&record).expect("fits")).is_empty());

    let spaced = rules::load_text(&rules::record_json(
        "x_spaced",
        closed(json!({"page size": {"type": "integer"}})),
    ));
    let e = anthropic::tool(&spaced).expect_err("Anthropic refuses");
    assert!(e.to_string().contains("^[a-zA-Z0-9_.-]{1,64}$"), "{e}");
}

#[test]
fn what_gemini_parameters_cannot_say_goes_through_parameters_json_schema() {
    let record = rules::load_text(&rules::record_json(
        "x_empty_nested",
        closed(
            json!({"opts": {"type": "object", "additionalProperties": false},
                      "urls": {"type": "array", "x-authorize-each": true,
                               "items": {"type": "string", "format": "uri"}}}),
        ),
    ));
    let g = gemini::tool(&record).expect("exports");
    assert!(g.get("parameters").is_none(), "{g}");
    let schema = &g["parametersJsonSchema"];
    assert_eq!(
        schema["properties"]["opts"],
        record.input_schema()["properties"]["opts"]
    );
    assert!(schema["properties"]["urls"]
        .get("x-authorize-each")
        .is_none());
    assert!(rules::gemini(&g).is_empty(), "{:?}", rules::gemini(&g));
    let v = rules::validator(schema, true);
    assert!(v.is_valid(&json!({"opts": {}, "urls": ["https://example.com/"]})));
    assert!(
        !v.is_valid(&json!({"opts": {"x": 1}, "urls": []})),
        "still closed"
    );
    // The other providers express it directly.
    for format in [Format::OpenAi, Format::Anthropic, Format::Mcp] {
        let tools =
            escepine_export::export(std::slice::from_ref(&record), format).expect("exports");
        assert!(checker(format)(&tools[0]).is_empty());
    }
    // Names still have to fit.
    let dashed = rules::load_text(&rules::record_json(
        "x_empty_dashed",
        closed(json!({"my-opts": {"type": "object", "additionalProperties": false}})),
    ));
    assert!(matches!(
        gemini::tool(&dashed),
        Err(ExportError::ParameterName { .. })
    ));
}

#[test]
fn openai_limits_are_enforced() {
    // Eleven levels of nesting (the root object is level 1).
    let mut schema = json!({"type": "string"});
    for _ in 0..11 {
        schema = closed(json!({"a": schema}));
    }
    let deep = rules::load_text(&rules::record_json("x_deep", schema));
    let e = openai::tool(&deep).expect_err("too deep");
    assert!(
        matches!(e, ExportError::Limit { .. }) && e.to_string().contains("11 levels"),
        "{e}"
    );
    // Other providers document no depth limit.
    assert!(rules::gemini(&gemini::tool(&deep).expect("exports")).is_empty());

    // More than 1000 enum values in all.
    let mut props = serde_json::Map::new();
    for i in 0..3 {
        let values: Vec<Value> = (0..400).map(|n| json!(format!("v{i}_{n}"))).collect();
        props.insert(format!("e{i}"), json!({"type": "string", "enum": values}));
    }
    let enums = rules::load_text(&rules::record_json("x_enums", closed(Value::Object(props))));
    let e = openai::tool(&enums).expect_err("too many enum values");
    assert!(e.to_string().contains("1200 enum values"), "{e}");
}

#[test]
fn all_problems_of_all_records_come_at_once() {
    let long = rules::load_text(&rules::record_json(
        &"b".repeat(70),
        closed(json!({"q": {"type": "string"}})),
    ));
    let dashed = rules::load_text(&rules::record_json(
        "x_dashed",
        closed(json!({"a-b": {"type": "string"}})),
    ));
    let e = escepine_export::export(&[long, dashed], Format::Gemini).expect_err("two problems");
    assert!(
        matches!(e, ExportError::Several(ref all) if all.len() == 2),
        "{e}"
    );
    assert_eq!(e.to_string().lines().count(), 2);
}

#[test]
fn the_checkers_are_not_vacuous() {
    let records = rules::all_records();
    let bulk = records
        .iter()
        .find(|r| r.tool_id() == "web_fetch_exa")
        .expect("loaded");
    let order = records
        .iter()
        .find(|r| r.tool_id() == "x_order_place")
        .expect("loaded");
    // The registered schemas themselves break OpenAI strict mode and Gemini's subset.
    let raw_openai = json!({"type": "function", "name": order.tool_id(), "description": "d",
                            "parameters": order.input_schema(), "strict": true});
    let v = rules::openai(&raw_openai).join("\n");
    for expected in [
        "`required`",
        "format \"uri\"",
        "`maxLength`",
        "`$ref` has sibling",
        "`const`",
        "`default`",
        "`x-owner`",
    ] {
        assert!(
            v.contains(expected),
            "OpenAI checker misses {expected}:\n{v}"
        );
    }
    let raw_gemini =
        json!({"name": order.tool_id(), "description": "d", "parameters": order.input_schema()});
    let v = rules::gemini(&raw_gemini).join("\n");
    for expected in [
        "`additionalProperties`",
        "`$defs`",
        "no `type`",
        "enum on a integer",
    ] {
        assert!(
            v.contains(expected),
            "Gemini checker misses {expected}:\n{v}"
        );
    }
    let raw_anthropic =
        json!({"name": bulk.tool_id(), "description": "d", "input_schema": bulk.input_schema()});
    assert!(rules::anthropic(&raw_anthropic)
        .join("\n")
        .contains("x-authorize-each"));
    let mut bad_mcp = mcp::tool(bulk);
    bad_mcp["annotations"]["destructiveHint"] = json!(true);
    bad_mcp["annotations"]["colour"] = json!("red");
    assert_eq!(rules::mcp(&bad_mcp).len(), 2, "{:?}", rules::mcp(&bad_mcp));
    let mut wrong = mcp::tool(order);
    wrong["annotations"]["destructiveHint"] = json!(false);
    assert_eq!(rules::mcp_matches(&wrong, order).len(), 1);
}

#[test]
fn random_records_of_the_subset_export_within_every_providers_rules() {
    let mut schemas = rules::SchemaGen::new(2024);
    let mut exported = 0;
    for i in 0..120 {
        let schema = schemas.schema();
        let record =
            match rules::try_load_text(&rules::record_json(&format!("x_rand_{i}"), schema.clone()))
            {
                Ok(r) => r,
                Err(d) => {
                    panic!("the generator made a schema registration rejects:\n{schema:#}\n{d}")
                }
            };
        let mut payloads = rules::Gen::new(i);
        let samples: Vec<Value> = (0..16)
            .map(|_| payloads.instance(record.input_schema()))
            .collect();
        for format in Format::ALL {
            let tools = escepine_export::export(std::slice::from_ref(&record), format)
                .unwrap_or_else(|e| panic!("{format} refuses a valid record: {e}\n{schema:#}"));
            let tool = &tools[0];
            let v = checker(format)(tool);
            assert!(
                v.is_empty(),
                "{format}:\n{}\n{schema:#}\n{tool:#}",
                v.join("\n")
            );
            let (exported_schema, formats) = match format {
                Format::OpenAi => (tool["parameters"].clone(), true),
                Format::Anthropic => (tool["input_schema"].clone(), true),
                Format::Mcp => (tool["inputSchema"].clone(), true),
                Format::Gemini => {
                    match (tool.get("parameters"), tool.get("parametersJsonSchema")) {
                        (Some(p), _) => (p.clone(), false),
                        (None, Some(j)) => (j.clone(), true),
                        (None, None) => (json!({"type": "object", "maxProperties": 0}), false),
                    }
                }
            };
            let validator = rules::validator(&exported_schema, formats);
            for payload in &samples {
                let sent = if format == Format::OpenAi {
                    rules::to_strict(record.input_schema(), payload)
                } else {
                    payload.clone()
                };
                assert!(
                    validator.is_valid(&sent),
                    "{format} rejects a valid payload {sent}:\n{}\n{schema:#}\n{tool:#}",
                    rules::errors(&validator, &sent)
                );
                if format == Format::OpenAi {
                    let mut back = sent.clone();
                    drop_null_optionals(record.input_schema(), &mut back);
                    assert_eq!(&back, payload);
                }
            }
            exported += 1;
        }
    }
    assert_eq!(exported, 480);
}
