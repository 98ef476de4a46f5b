//! `escepine check` and `escepine cedar-schema` over the catalog and over broken copies of it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

fn escepine(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(args)
        .output()
        .unwrap()
}

fn check(records: &Path, policies: &Path, envelope: &Path) -> Output {
    escepine(&[
        "check",
        "--records",
        records.to_str().unwrap(),
        "--policies",
        policies.to_str().unwrap(),
        "--envelope",
        envelope.to_str().unwrap(),
    ])
}

/// A copy of the catalog in a temporary directory.
struct Copy {
    dir: tempfile::TempDir,
}

impl Copy {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["records", "policies"] {
            fs::create_dir(dir.path().join(sub)).unwrap();
            for e in fs::read_dir(workspace().join("tools").join(sub)).unwrap() {
                let p = e.unwrap().path();
                fs::copy(&p, dir.path().join(sub).join(p.file_name().unwrap())).unwrap();
            }
        }
        fs::copy(
            workspace().join("tools/envelope.json"),
            dir.path().join("envelope.json"),
        )
        .unwrap();
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn edit_record(&self, tool: &str, f: impl FnOnce(&mut Value)) -> PathBuf {
        let p = self.path(&format!("records/{tool}.json"));
        let mut v: Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
        f(&mut v);
        fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        p
    }

    fn check(&self) -> Output {
        check(
            &self.path("records"),
            &self.path("policies"),
            &self.path("envelope.json"),
        )
    }
}

/// `tavily_search` made a `#!/bin/sh` script that pipes through `sed`.
fn script_tool(c: &Copy) {
    let script = c.path("tool.sh");
    fs::write(&script, "#!/bin/sh\nsed -e s/a/b/\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    }
    c.edit_record("tavily_search", |v| {
        v["endpoint"]["command"] = script.to_str().unwrap().into();
        v["endpoint"].as_object_mut().unwrap().remove("sha256");
        v["endpoint"].as_object_mut().unwrap().remove("args");
    });
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_catalog_is_accepted() {
    let w = workspace();
    let out = check(
        &w.join("tools/records"),
        &w.join("tools/policies"),
        &w.join("tools/envelope.json"),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("firecrawl_scrape"));
}

#[test]
fn a_single_violation_in_a_copy_is_rejected_naming_the_file() {
    type Edit = fn(&mut Value);
    let cases: &[(&str, &str, Edit)] = &[
        ("firecrawl_scrape", "record/unknown-field", |v| {
            v["retries"] = 3.into();
        }),
        ("web_search", "timeout-ms/positive", |v| {
            v["timeout_ms"] = 0.into();
        }),
        ("tavily_search", "retry/budget", |v| {
            v["retry"]["max_attempts"] = 0.into();
        }),
        ("tavily_search", "sandbox/egress-entry", |v| {
            v["sandbox_profile"]["egress"] = serde_json::json!(["https://api.tavily.com/search"]);
        }),
        ("tavily_search", "sandbox/within-envelope", |v| {
            v["sandbox_profile"]["egress"] = serde_json::json!(["evil.example:443"]);
        }),
        ("web_fetch_exa", "input/credential-free", |v| {
            v["input_schema"]["properties"]["session_cookie"] =
                serde_json::json!({"type": "string"});
        }),
        ("firecrawl_scrape", "schema/closed", |v| {
            v["input_schema"]
                .as_object_mut()
                .unwrap()
                .remove("additionalProperties");
        }),
        ("note_publish", "compensation/required", |v| {
            v.as_object_mut().unwrap().remove("compensation");
        }),
        ("note_publish", "compensation/inverse-registered", |v| {
            v["compensation"]["tool"] = "note_delete".into();
        }),
        ("deliverable_assemble", "accepts-credentials/false", |v| {
            v["accepts_credentials"] = true.into();
        }),
        ("web_search", "auth/names-only", |v| {
            v["auth"]["token"] = "abc".into();
        }),
        ("web_search", "endpoint/resolvable", |v| {
            v["endpoint"]["command"] = "no-such-binary-anywhere".into();
        }),
        ("web_search", "version/semver", |v| {
            v["version"] = "one".into();
        }),
        ("tavily_search", "retry/max-attempts-bound", |v| {
            v["retry"]["max_attempts"] = 4_294_967_295u64.into();
        }),
        ("tavily_search", "retry/backoff-bound", |v| {
            v["retry"]["backoff_ms"] = 3_600_000.into();
        }),
        // A `format` beside `$ref`: the gate would enforce it, the per-URL analysis would not
        // see it, and the LinkedIn forbid would never fire.
        ("firecrawl_scrape", "schema/ref-siblings", |v| {
            v["input_schema"]["$defs"] = serde_json::json!({"u": {"type": "string"}});
            v["input_schema"]["properties"]["url"] =
                serde_json::json!({"$ref": "#/$defs/u", "format": "uri"});
        }),
        // A page reader with a second URL field, which `context.url` would never carry.
        ("firecrawl_scrape", "input/per-url-shape", |v| {
            v["input_schema"]["properties"]["mirror"] =
                serde_json::json!({"type": "string", "format": "uri"});
        }),
        // `public` is the envelope's word, not a profile entry.
        ("tavily_search", "egress/reserved-word", |v| {
            v["sandbox_profile"]["egress"] = serde_json::json!(["public"]);
        }),
        // `authorized-urls` on a tool whose input has no URL to authorize.
        ("web_search", "sandbox/authorized-urls-field", |v| {
            v["sandbox_profile"]["egress"] = serde_json::json!(["authorized-urls"]);
        }),
        // URLs in a list of objects, not marked: no element would be authorized.
        ("web_fetch_exa", "input/per-url-shape", |v| {
            v["input_schema"]["properties"]["also"] = serde_json::json!({
                "type": "array", "maxItems": 4, "items": {"type": "object",
                "additionalProperties": false, "properties": {"link": {"type": "string"}}}});
        }),
    ];
    for (tool, rule, edit) in cases {
        let copy = Copy::new();
        let file = copy.edit_record(tool, edit);
        let out = copy.check();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{tool}/{rule}: {err}");
        assert!(
            err.contains(file.to_str().unwrap()),
            "{rule}: file not named:\n{err}"
        );
        assert!(err.contains(rule), "{rule} not named:\n{err}");
    }
}

#[test]
fn authorized_urls_needs_the_envelopes_public_and_each_word_stays_in_its_file() {
    let copy = Copy::new();
    let envelope = copy.path("envelope.json");
    let mut env: Value = serde_json::from_str(&fs::read_to_string(&envelope).unwrap()).unwrap();
    let without_public: Vec<Value> = env["egress"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| *e != "public")
        .cloned()
        .collect();
    env["egress"] = Value::from(without_public.clone());
    fs::write(&envelope, env.to_string()).unwrap();
    let out = copy.check();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for page_reader in ["firecrawl_scrape.json", "web_fetch_exa.json"] {
        assert!(err.contains(page_reader), "{page_reader} not named:\n{err}");
    }
    assert!(err.contains("sandbox/authorized-urls-public"), "{err}");

    let mut with_word = without_public;
    with_word.push(Value::from("authorized-urls"));
    env["egress"] = Value::from(with_word);
    fs::write(&envelope, env.to_string()).unwrap();
    let out = copy.check();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("egress/reserved-word") && err.contains(envelope.to_str().unwrap()),
        "{err}"
    );
}

#[test]
fn a_tool_below_the_envelopes_isolation_tier_fails_the_check() {
    let c = Copy::new();
    let envelope = c.path("envelope.json");
    let mut env: Value = serde_json::from_str(&fs::read_to_string(&envelope).unwrap()).unwrap();
    env["isolation"] = serde_json::json!({ "min": "gvisor", "for": ["compensatable"] });
    fs::write(&envelope, env.to_string()).unwrap();
    // `note_publish` is compensatable: on the default tier (and written as `namespaces`) the
    // check fails, naming the record, the pointer and the rule.
    for explicit in [false, true] {
        let record = c.edit_record("note_publish", |v| {
            if explicit {
                v["sandbox_profile"]["isolation"] = "namespaces".into();
            }
        });
        let out = c.check();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains("sandbox/isolation-within-envelope"), "{err}");
        assert!(
            err.contains(record.file_name().unwrap().to_str().unwrap()),
            "{err}"
        );
        assert!(err.contains("compensatable"), "{err}");
    }
    // On gVisor it passes.
    c.edit_record("note_publish", |v| {
        v["sandbox_profile"]["isolation"] = "gvisor".into();
    });
    let out = c.check();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_bad_policy_is_rejected_naming_the_policy_file() {
    let copy = Copy::new();
    let bad = copy.path("policies/zz_bad.cedar");
    fs::write(
        &bad,
        "permit(principal, action == Action::\"no_such_tool\", resource);\n",
    )
    .unwrap();
    let out = copy.check();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("zz_bad.cedar"), "{err}");
}

#[test]
fn a_misspelled_enum_literal_fails_the_check_naming_file_line_and_allowed_values() {
    let copy = Copy::new();
    let policy = "// Deep searches only for editors.\n\
                  @id(\"deep-search-editors\")\n\
                  forbid(principal, action == Action::\"tavily_search\", resource)\n\
                  when { context.input has search_depth && context.input.search_depth == \"advnced\" }\n\
                  unless { principal in Team::\"editors\" };\n";
    let file = copy.path("policies/zz_depth.cedar");
    fs::write(&file, policy).unwrap();
    let out = copy.check();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let col = policy.lines().nth(3).unwrap().find("\"advnced\"").unwrap() + 1;
    assert!(
        err.contains(&format!("{}:4:{col}", file.display())),
        "{err}"
    );
    // The report wraps its header at 100 columns, continuing it after `│`.
    let header = err.replace("\n  │ ", " ");
    assert!(
        header.contains(
            "\"advnced\" is not a value of context.input.search_depth (allowed: \"basic\", \"advanced\")"
        ),
        "{err}"
    );
    assert!(err.contains("cedar/enum-literal"), "{err}");
    assert!(err.contains("error: 1 problem in 1 file"), "{err}");

    // The allowed value passes.
    fs::write(&file, policy.replace("advnced", "advanced")).unwrap();
    let out = copy.check();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn every_problem_in_every_file_is_reported_at_once() {
    let copy = Copy::new();
    let a = copy.edit_record("web_search", |v| v["timeout_ms"] = 0.into());
    let b = copy.edit_record("tavily_crawl", |v| v["retry"]["max_attempts"] = 0.into());
    let out = copy.check();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains(a.to_str().unwrap()) && err.contains(b.to_str().unwrap()),
        "{err}"
    );
    assert!(err.contains("error: 2 problems in 2 files"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(escepine(&["check"]).status.code(), Some(2));
    assert_eq!(
        escepine(&["check", "--records", "x", "--bogus"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(escepine(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn without_envelope_the_coverage_rule_is_skipped_and_said() {
    let w = workspace();
    let out = escepine(&[
        "check",
        "--records",
        w.join("tools/records").to_str().unwrap(),
        "--policies",
        w.join("tools/policies").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("sandbox/within-envelope"));
}

#[test]
fn cedar_schema_prints_the_generated_schema() {
    let w = workspace();
    let out = escepine(&[
        "cedar-schema",
        "--records",
        w.join("tools/records").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let schema = text(&out.stdout);
    for needle in [
        "entity Tool",
        "\"firecrawl_scrape\"",
        "\"page-read\"",
        "\"read-only\"",
    ] {
        assert!(schema.contains(needle), "{needle} missing from:\n{schema}");
    }
}

#[test]
fn warnings_and_notes_are_printed_labelled_and_do_not_fail_the_check() {
    let c = Copy::new();
    c.edit_record("web_search", |v| {
        v["input_schema"]["properties"]["session_name"] = serde_json::json!({
            "type": "string",
            "x-not-credential": "the name of a saved search session, chosen by the user"
        });
    });
    script_tool(&c);
    let out = c.check();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}{err}", text(&out.stdout));
    assert!(err.contains("input/credential-exemption"), "{err}");
    assert!(
        err.contains("note: ") && err.contains("web_search.json"),
        "{err}"
    );
    assert!(
        err.contains("the name of a saved search session, chosen by the user"),
        "{err}"
    );
    assert!(err.contains("endpoint/script-runtime"), "{err}");
    assert!(
        err.contains("warning: ") && err.contains("tavily_search.json"),
        "{err}"
    );
    assert!(
        text(&out.stdout).starts_with("ok: "),
        "{}",
        text(&out.stdout)
    );

    // The same warning beside an error: the error fails the check, the summary counts both.
    c.edit_record("web_search", |v| {
        v["timeout_ms"] = 0.into();
    });
    let out = c.check();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error: 1 problem in 1 file"), "{err}");
    assert!(err.contains("1 warning") && err.contains("1 note"), "{err}");
}

#[test]
fn show_root_lists_what_a_script_gets_and_what_its_read_only_paths_add() {
    let c = Copy::new();
    script_tool(&c);
    let show = |c: &Copy, tool: &str| {
        escepine(&[
            "check",
            "--records",
            c.path("records").to_str().unwrap(),
            "--policies",
            c.path("policies").to_str().unwrap(),
            "--show-root",
            tool,
        ])
    };
    let out = show(&c, "tavily_search");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    let copied: Vec<&str> = listing
        .lines()
        .filter(|l| l.ends_with("(copied from the host)"))
        .collect();
    // The script and its interpreter with the interpreter's libraries: no `sed`.
    assert!(copied.iter().any(|l| l.contains("tool.sh")), "{listing}");
    assert!(
        copied
            .iter()
            .any(|l| l.contains("/bin/sh") || l.contains("dash")),
        "{listing}"
    );
    assert!(!listing.contains("/sed"), "{listing}");
    assert!(
        listing.contains("/workspace  (made for every sandbox)"),
        "{listing}"
    );
    // The interpreter's libraries through a cache of the image's own (this host has glibc).
    assert!(
        listing.contains("/etc/ld.so.cache  (made for every sandbox)"),
        "{listing}"
    );

    // With `sed` listed read-only, it is bound at its own path.
    c.edit_record("tavily_search", |v| {
        v["sandbox_profile"]["read_only"] = serde_json::json!(["/usr/bin/sed"]);
    });
    let out = show(&c, "tavily_search");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    assert!(
        listing.contains("/usr/bin/sed  (bound read-only from the host)"),
        "{listing}"
    );
    // An unknown tool is a usage error.
    let out = show(&c, "no_such_tool");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn workspace_root_names_the_workspace_of_a_tool_host_outside_it() {
    // Run from the copy's directory, outside any workspace: `escepine-catalog` (a `[[bin]]` of
    // this workspace) resolves only when `--workspace-root` names the workspace.
    let c = Copy::new();
    let args = |root: Option<&Path>| {
        let mut a = vec![
            "check".to_string(),
            "--records".into(),
            "records".into(),
            "--policies".into(),
            "policies".into(),
            "--envelope".into(),
            "envelope.json".into(),
        ];
        if let Some(r) = root {
            a.push("--workspace-root".into());
            a.push(r.display().to_string());
        }
        a
    };
    let run = |root: Option<&Path>| {
        Command::new(env!("CARGO_BIN_EXE_escepine"))
            .args(args(root))
            .current_dir(c.dir.path())
            .output()
            .unwrap()
    };
    let without = run(None);
    assert_eq!(without.status.code(), Some(1), "{}", text(&without.stdout));
    assert!(
        text(&without.stderr).contains("endpoint/resolvable"),
        "{}",
        text(&without.stderr)
    );
    let with = run(Some(&workspace()));
    assert_eq!(
        with.status.code(),
        Some(0),
        "{}{}",
        text(&with.stdout),
        text(&with.stderr)
    );
}

#[test]
fn a_tool_id_with_no_rust_name_is_rejected_with_file_line_and_rule() {
    let c = Copy::new();
    let record = c.edit_record("url_normalize", |v| v["tool_id"] = "crate".into());
    let out = c.check();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("tool-id/rust-name"), "{err}");
    assert!(
        err.contains(&format!("{}:2:", record.display())),
        "file and line: {err}"
    );
}

/// `text` without whitespace and the renderer's gutter, so that a wrapped line reads whole.
fn compact(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect()
}

#[test]
fn recognised_non_credential_shapes_register_with_their_notes() {
    let c = Copy::new();
    c.edit_record("web_search", |v| {
        v["input_schema"]["properties"]["session_name"] = serde_json::json!({"type": "string"});
    });
    c.edit_record("firecrawl_scrape", |v| {
        let props = &mut v["input_schema"]["properties"];
        props["next_token"] = serde_json::json!({"type": "string"});
        props["limit"] = serde_json::json!({"type": "integer", "minimum": 1});
    });
    c.edit_record("url_normalize", |v| {
        v["input_schema"]["properties"]["username"] = serde_json::json!({"type": "string"});
    });
    let out = c.check();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}{err}", text(&out.stdout));
    assert!(
        text(&out.stdout).starts_with("ok: 9 tools"),
        "{}",
        text(&out.stdout)
    );
    let read = compact(&err);
    for (file, rule, pointer, shape) in [
        (
            "web_search.json",
            "input/recognised-session-name",
            "/input_schema/properties/session_name",
            "a session's name",
        ),
        (
            "firecrawl_scrape.json",
            "input/recognised-pagination-token",
            "/input_schema/properties/next_token",
            "a pagination token: a string beside the pagination field `limit`",
        ),
        (
            "url_normalize.json",
            "input/recognised-user-lookup",
            "/input_schema/properties/username",
            "a user name to look up",
        ),
    ] {
        assert!(err.contains(rule), "{rule}: {err}");
        assert!(read.contains(&compact(file)), "{file}: {err}");
        assert!(read.contains(&format!("(at{pointer})")), "{pointer}: {err}");
        assert!(
            read.contains(&compact(&format!("recognised as {shape}"))),
            "{shape}: {err}"
        );
    }
    assert_eq!(err.matches("note: ").count(), 3, "{err}");
    assert!(!err.contains("input/credential-free"), "{err}");

    // Near misses fail the check: a session id, a token with no pagination field beside it,
    // an access token beside one, a user name beside a password field.
    for (tool, props) in [
        (
            "web_search",
            serde_json::json!({"session_id": {"type": "string"}}),
        ),
        (
            "firecrawl_scrape",
            serde_json::json!({"next_token": {"type": "string"}}),
        ),
        (
            "firecrawl_scrape",
            serde_json::json!({"access_token": {"type": "string"}, "page": {"type": "integer"}}),
        ),
        (
            "url_normalize",
            serde_json::json!({
                "username": {"type": "string"},
                "pass": {"type": "string", "writeOnly": true}
            }),
        ),
    ] {
        let c = Copy::new();
        c.edit_record(tool, |v| {
            for (k, p) in props.as_object().unwrap() {
                v["input_schema"]["properties"][k] = p.clone();
            }
        });
        let out = c.check();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{props}: {err}");
        assert!(err.contains("input/credential-free"), "{props}: {err}");
        assert!(
            compact(&err).contains(&compact(&format!("{tool}.json"))),
            "{props}: {err}"
        );
    }
}
