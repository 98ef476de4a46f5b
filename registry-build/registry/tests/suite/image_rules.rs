//! The rules of images, read-only host paths, pinned definitions, titles and reviewed
//! credential exemptions: the envelope's `images` and `read_only`, what each record field
//! becomes, and the warnings and notes that do not refuse a record.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use escepine_contract::{ImageRef, Transport};
use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::diagnostic::Severity;
use escepine_registry::diagnostic::SourceFile;
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::envelope::Envelope;
use escepine_registry::envelope::ImageSourceEntry;
use escepine_registry::record::CredentialExemption;
use escepine_registry::record::ResolvedCommand;
use escepine_registry::record::ToolRecord;
use escepine_registry::registry::check_records;
use escepine_registry::registry::Sources;
use escepine_registry::rule::Rule;
use escepine_registry::rules::record::Context;
use serde_json::{json, Value};

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn base() -> Value {
    let text = fs::read_to_string(fixtures().join("context/valid_base.json")).expect("fixture");
    serde_json::from_str(&text).expect("JSON")
}

fn envelope(v: Value) -> Result<Envelope, Diagnostics> {
    Envelope::parse(&SourceFile::new("deploy/envelope.json", v.to_string()))
}

fn env() -> Envelope {
    envelope(json!({
        "egress": ["example.com"],
        "images": ["registry.example.com:5000", "http://127.0.0.1:5000", "oci:/var/lib/images"],
        "read_only": ["/usr", "/bin"],
    }))
    .expect("a valid envelope")
}

/// Check one record (with or without an envelope).
fn check(record: &Value, envelope: Option<&Envelope>) -> (Vec<ToolRecord>, Diagnostics) {
    let files = [SourceFile::new(
        "records/page_read.json",
        serde_json::to_string_pretty(record).expect("JSON"),
    )];
    let bins = WorkspaceBins::default();
    check_records(
        &files,
        &Context {
            envelope,
            bins: &bins,
        },
    )
}

fn accepted(record: &Value, envelope: Option<&Envelope>) -> (ToolRecord, Diagnostics) {
    let (mut records, diags) = check(record, envelope);
    assert!(!diags.has_errors(), "{}", diags.render());
    assert_eq!(records.len(), 1, "{}", diags.render());
    (records.remove(0), diags)
}

fn refused(record: &Value, envelope: Option<&Envelope>, rule: Rule, pointer: &str) -> String {
    let (records, diags) = check(record, envelope);
    assert!(records.is_empty(), "registered despite {}", rule.id());
    let d = diags
        .iter()
        .find(|d| d.rule == rule)
        .unwrap_or_else(|| panic!("no [{}]:\n{}", rule.id(), diags.render()));
    assert_eq!(d.pointer.as_deref(), Some(pointer), "{}", diags.render());
    assert!(d.is_error());
    let rendered = diags.render();
    assert!(rendered.contains("page_read.json") && rendered.contains(rule.id()));
    d.to_string()
}

fn with_endpoint(endpoint: Value) -> Value {
    let mut r = base();
    r["endpoint"] = endpoint;
    r
}

fn image_record(image: &str) -> Value {
    with_endpoint(json!({"transport": "mcp-stdio", "image": image}))
}

// --- The envelope ----------------------------------------------------------------------------

#[test]
fn envelope_images_and_read_only_are_parsed() {
    let e = env();
    assert_eq!(
        e.images,
        [
            ImageSourceEntry::Https {
                registry: "registry.example.com:5000".into()
            },
            ImageSourceEntry::Http {
                registry: "127.0.0.1:5000".into()
            },
            ImageSourceEntry::Layout {
                prefix: "/var/lib/images".into()
            },
        ]
    );
    assert_eq!(e.read_only, [PathBuf::from("/usr"), PathBuf::from("/bin")]);
    // Both stay optional: an envelope of `egress` alone admits no image and no host path.
    let bare = envelope(json!({"egress": []})).expect("valid");
    assert!(bare.images.is_empty() && bare.read_only.is_empty());
    for loopback in [
        "http://localhost:5000",
        "http://[::1]:5000",
        "http://127.9.0.1",
    ] {
        assert!(
            envelope(json!({"egress": [], "images": [loopback]})).is_ok(),
            "{loopback}"
        );
    }
}

#[test]
fn envelope_entries_that_break_a_rule_name_file_pointer_and_rule() {
    let cases = [
        (
            json!({"egress": [], "images": ["registry.example.com", "http://10.0.0.5:5000"]}),
            Rule::EnvelopeImages,
            "/images/1",
            "loopback",
        ),
        (
            json!({"egress": [], "images": ["https://registry.example.com"]}),
            Rule::EnvelopeImages,
            "/images/0",
            "host:port",
        ),
        (
            json!({"egress": [], "images": ["registry.example.com:5000/path"]}),
            Rule::EnvelopeImages,
            "/images/0",
            "nothing else",
        ),
        (
            json!({"egress": [], "images": ["oci:layouts"]}),
            Rule::EnvelopeImages,
            "/images/0",
            "absolute",
        ),
        (
            json!({"egress": [], "read_only": ["/usr", "usr/lib"]}),
            Rule::EnvelopeReadOnly,
            "/read_only/1",
            "absolute",
        ),
        (
            json!({"egress": [], "read_only": ["/usr/../etc"]}),
            Rule::EnvelopeReadOnly,
            "/read_only/0",
            "lexically normal",
        ),
        (
            json!({"egress": [], "read_only": "/usr"}),
            Rule::Envelope,
            "/read_only",
            "array",
        ),
    ];
    for (text, rule, pointer, says) in cases {
        let diags = envelope(text.clone()).expect_err("refused");
        let d = diags.iter().next().expect("one problem");
        assert_eq!(d.rule, rule, "{text}: {}", diags.render());
        assert_eq!(d.pointer.as_deref(), Some(pointer), "{text}");
        assert_eq!(d.file, Path::new("deploy/envelope.json"));
        assert!(d.message.contains(says), "{text}: {}", d.message);
    }
}

#[test]
fn the_envelope_is_closed_with_a_did_you_mean() {
    let diags = envelope(json!({"egress": [], "image": []})).expect_err("closed");
    let d = diags.iter().next().expect("one problem");
    assert_eq!(
        (d.rule, d.pointer.as_deref()),
        (Rule::Envelope, Some("/image"))
    );
    assert_eq!(d.help.as_deref(), Some("did you mean `images`?"));
}

#[test]
fn image_entries_match_registries_exactly_and_layouts_by_component() {
    let e = env();
    let image = |r: &str| ImageRef::parse(&format!("{r}@{DIGEST}")).expect("pinned");
    let https = image("REGISTRY.example.com:5000/tools/echo");
    assert_eq!(
        e.image_entry(&https),
        Some(&ImageSourceEntry::Https {
            registry: "registry.example.com:5000".into()
        })
    );
    assert!(!e.plain_http(&https));
    let http = image("127.0.0.1:5000/mcp/python");
    assert!(e.plain_http(&http));
    // Another port, another host: not admitted.
    assert_eq!(
        e.image_entry(&image("registry.example.com:5001/tools/echo")),
        None
    );
    assert_eq!(e.image_entry(&image("127.0.0.1/mcp/python")), None);
    assert!(!e.plain_http(&image("127.0.0.2:5000/mcp/python")));
    // Layouts: a path-component prefix, never a string prefix, never through `..`.
    assert!(e.image_entry(&image("oci:/var/lib/images/py")).is_some());
    assert!(e.image_entry(&image("oci:/var/lib/images")).is_some());
    assert_eq!(e.image_entry(&image("oci:/var/lib/imagesx/py")), None);
    assert_eq!(e.image_entry(&image("oci:/var/lib/images/../../etc")), None);
}

// --- Images as endpoints ---------------------------------------------------------------------

#[test]
fn an_image_endpoint_needs_no_command_and_round_trips() {
    let raw = format!("registry.example.com:5000/tools/echo@{DIGEST}");
    let (record, _) = accepted(&image_record(&raw), Some(&env()));
    let e = record.endpoint();
    assert_eq!(e.image.as_ref().map(|i| i.raw.as_str()), Some(raw.as_str()));
    assert_eq!(e.command, "");
    assert_eq!(e.resolved, ResolvedCommand::InImage(None));
    let json = record.to_json();
    assert_eq!(
        json["endpoint"],
        json!({"transport": "mcp-stdio", "image": raw})
    );
    // The canonical form registers again, as the same record.
    let (again, _) = accepted(&json, Some(&env()));
    assert_eq!(again.to_json(), json);
}

#[test]
fn a_command_inside_an_image_is_absolute_or_a_bare_name_never_resolved_on_the_host() {
    let raw = format!("oci:/var/lib/images/py@{DIGEST}");
    for command in ["/usr/local/bin/not-on-this-host", "server-not-on-this-host"] {
        let r = with_endpoint(json!({"transport": "stdio-json", "image": raw, "command": command}));
        let (record, _) = accepted(&r, Some(&env()));
        assert_eq!(
            record.endpoint().resolved,
            ResolvedCommand::InImage(Some(command.into()))
        );
        assert_eq!(record.to_json()["endpoint"]["command"], json!(command));
    }
    let r = with_endpoint(json!({"transport": "stdio-json", "image": raw, "command": "./srv"}));
    refused(
        &r,
        Some(&env()),
        Rule::EndpointImageCommand,
        "/endpoint/command",
    );
}

#[test]
fn without_an_image_the_command_is_still_required() {
    let r = with_endpoint(json!({"transport": "stdio-json"}));
    let (records, diags) = check(&r, None);
    assert!(records.is_empty());
    let d = diags.iter().next().expect("a problem");
    assert_eq!(
        (d.rule, d.pointer.as_deref()),
        (Rule::MissingField, Some("/endpoint"))
    );
    assert!(d.message.contains("`command`"), "{}", d.message);
}

#[test]
fn unpinned_and_malformed_images_are_refused_by_their_own_rules() {
    let e = env();
    let msg = refused(
        &image_record("registry.example.com:5000/tools/echo:latest"),
        Some(&e),
        Rule::EndpointImagePinned,
        "/endpoint/image",
    );
    assert!(msg.contains("not pinned by digest"), "{msg}");
    refused(
        &image_record("registry.example.com:5000/tools/echo"),
        None,
        Rule::EndpointImagePinned,
        "/endpoint/image",
    );
    for bad in [
        "registry.example.com:5000/tools/echo@sha256:abc".to_string(),
        format!("echo@{DIGEST}"),
        format!("oci:relative/dir@{DIGEST}"),
        format!("oci:/var/lib/images/./py@{DIGEST}"),
    ] {
        refused(
            &image_record(&bad),
            Some(&e),
            Rule::EndpointImage,
            "/endpoint/image",
        );
    }
    let r = with_endpoint(json!({"transport": "mcp-stdio", "image": 7}));
    refused(&r, None, Rule::FieldType, "/endpoint/image");
}

#[test]
fn an_image_from_a_source_the_envelope_does_not_admit_is_refused_and_skipped_without_one() {
    let raw = format!("other.example.net:5000/tools/echo@{DIGEST}");
    let (records, diags) = check(&image_record(&raw), Some(&env()));
    assert!(records.is_empty());
    let d = diags
        .iter()
        .find(|d| d.rule == Rule::EndpointImageSource)
        .expect("refused");
    assert_eq!(d.pointer.as_deref(), Some("/endpoint/image"));
    assert!(d.message.contains("deploy/envelope.json"), "{}", d.message);
    assert!(
        d.help
            .as_deref()
            .is_some_and(|h| h.contains("\"other.example.net:5000\"") && h.contains("`images`")),
        "{:?}",
        d.help
    );
    // Without an envelope the rule is skipped, and loading says so.
    accepted(&image_record(&raw), None);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("page_read.json");
    fs::write(&file, image_record(&raw).to_string()).expect("write");
    let reg = escepine_registry::registry::load(&Sources::new().records(&file)).expect("loads");
    assert!(
        reg.notes()
            .iter()
            .any(|n| n.contains("no envelope") && n.contains("endpoint/image-source")),
        "{:?}",
        reg.notes()
    );
}

#[test]
fn sha256_beside_an_image_is_refused() {
    let r = with_endpoint(json!({
        "transport": "mcp-stdio",
        "image": format!("registry.example.com:5000/tools/echo@{DIGEST}"),
        "sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    }));
    refused(
        &r,
        Some(&env()),
        Rule::EndpointDigestWithImage,
        "/endpoint/sha256",
    );
}

// --- Pinned definitions, titles, open world --------------------------------------------------

#[test]
fn definition_sha256_is_a_digest_on_mcp_stdio_only() {
    let digest = "ab".repeat(32);
    let mcp = with_endpoint(
        json!({"transport": "mcp-stdio", "command": "/bin/sh", "definition_sha256": digest}),
    );
    let (record, _) = accepted(&mcp, None);
    assert_eq!(record.endpoint().transport, Transport::McpStdio);
    assert_eq!(
        record.endpoint().definition_sha256.as_deref(),
        Some(digest.as_str())
    );
    assert_eq!(
        record.to_json()["endpoint"]["definition_sha256"],
        json!(digest)
    );

    let stdio = with_endpoint(
        json!({"transport": "stdio-json", "command": "/bin/sh", "definition_sha256": digest}),
    );
    let msg = refused(
        &stdio,
        None,
        Rule::EndpointDefinitionDigest,
        "/endpoint/definition_sha256",
    );
    assert!(msg.contains("mcp-stdio"), "{msg}");
    for bad in [json!("AB".repeat(32)), json!("ab"), json!(5)] {
        let r = with_endpoint(
            json!({"transport": "mcp-stdio", "command": "/bin/sh", "definition_sha256": bad}),
        );
        refused(
            &r,
            None,
            Rule::EndpointDefinitionDigest,
            "/endpoint/definition_sha256",
        );
    }
}

#[test]
fn title_and_open_world_are_kept() {
    let mut r = base();
    r["title"] = json!("Page reader");
    r["open_world"] = json!(true);
    let (record, _) = accepted(&r, None);
    assert_eq!(record.title(), Some("Page reader"));
    assert_eq!(record.open_world(), Some(true));
    let j = record.to_json();
    assert_eq!(
        (&j["title"], &j["open_world"]),
        (&json!("Page reader"), &json!(true))
    );
    let (plain, _) = accepted(&base(), None);
    assert!(plain.to_json().get("title").is_none() && plain.open_world().is_none());

    r["title"] = json!(3);
    refused(&r, None, Rule::Title, "/title");
    let mut typo = base();
    typo["titel"] = json!("Page reader");
    let (_, diags) = check(&typo, None);
    let d = diags.iter().next().expect("unknown field");
    assert_eq!(d.rule, Rule::UnknownField);
    assert_eq!(d.help.as_deref(), Some("did you mean `title`?"));
}

// --- Read-only host paths --------------------------------------------------------------------

fn with_read_only(paths: Value) -> Value {
    let mut r = base();
    r["sandbox_profile"]["read_only"] = paths;
    r
}

#[test]
fn read_only_paths_under_the_envelope_that_exist_are_kept() {
    let (record, _) = accepted(&with_read_only(json!(["/usr/lib", "/bin"])), Some(&env()));
    assert_eq!(
        record.sandbox_profile().read_only,
        [PathBuf::from("/usr/lib"), PathBuf::from("/bin")]
    );
    assert_eq!(
        record.to_json()["sandbox_profile"]["read_only"],
        json!(["/usr/lib", "/bin"])
    );
}

#[test]
fn read_only_paths_are_checked_against_the_envelope_by_component() {
    // `/usrx` is not under `/usr`, although the string starts so.
    let dir = tempfile::Builder::new()
        .prefix("usrx")
        .tempdir_in("/tmp")
        .expect("tempdir");
    let e = envelope(json!({"egress": [], "read_only": ["/tmp/usr"]})).expect("valid");
    let outside = dir.path().display().to_string();
    let msg = refused(
        &with_read_only(json!([outside])),
        Some(&e),
        Rule::ReadOnlyEnvelope,
        "/sandbox_profile/read_only/0",
    );
    assert!(msg.contains("deploy/envelope.json"), "{msg}");
    // Without an envelope the prefix rule is skipped; existence still counts.
    accepted(&with_read_only(json!([outside])), None);
    refused(
        &with_read_only(json!(["/bin", "/no/such/runtime"])),
        None,
        Rule::ReadOnlyExists,
        "/sandbox_profile/read_only/1",
    );
    refused(
        &with_read_only(json!(["/bin", "/bin"])),
        None,
        Rule::ReadOnlyPath,
        "/sandbox_profile/read_only/1",
    );
    refused(
        &with_read_only(json!("/bin")),
        None,
        Rule::FieldType,
        "/sandbox_profile/read_only",
    );
}

// --- Script endpoints ------------------------------------------------------------------------

fn script(dir: &Path) -> PathBuf {
    let path = dir.join("tool.sh");
    fs::write(&path, "#!/bin/sh\nsed -e s/a/b/\n").expect("write");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[test]
fn a_script_without_a_runtime_is_accepted_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = script(dir.path());
    let r = with_endpoint(json!({"transport": "stdio-json", "command": path}));
    let (_, diags) = accepted(&r, None);
    let warnings: Vec<_> = diags
        .iter()
        .filter(|d| d.rule == Rule::EndpointScriptRuntime)
        .collect();
    assert_eq!(warnings.len(), 1, "{}", diags.render());
    let w = warnings[0];
    assert_eq!(w.severity, Severity::Warning);
    assert_eq!(w.pointer.as_deref(), Some("/endpoint/command"));
    assert!(
        w.message.contains("sed") && w.message.contains("interpreter"),
        "{}",
        w.message
    );
    assert!(
        w.to_string().contains("warning: [endpoint/script-runtime]"),
        "{w}"
    );
    assert!(w.render().contains("warning:"), "{}", w.render());
    assert!(
        diags.summary().starts_with("error: 0 problems"),
        "{}",
        diags.summary()
    );
    assert!(diags.summary().contains("1 warning"), "{}", diags.summary());

    // Declaring a runtime silences it; so does a binary (not a script).
    let mut with_runtime = r.clone();
    with_runtime["sandbox_profile"]["read_only"] = json!(["/usr"]);
    let (_, d) = accepted(&with_runtime, None);
    assert!(d.is_empty(), "{}", d.render());
    let (_, d) = accepted(&base(), None);
    assert!(d.is_empty(), "{}", d.render());

    // A loaded registry keeps it among its remarks.
    let file = dir.path().join("page_read.json");
    fs::write(&file, r.to_string()).expect("write");
    let reg =
        escepine_registry::registry::load(&Sources::new().records(&file)).expect("a warning loads");
    assert!(reg.remarks().has(Rule::EndpointScriptRuntime));
    assert!(!reg.remarks().has_errors());
}

// --- Reviewed credential exemptions ----------------------------------------------------------

fn with_input(properties: Value, defs: Option<Value>) -> Value {
    let mut r = base();
    let mut schema = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": properties,
    });
    if let Some(d) = defs {
        schema["$defs"] = d;
    }
    r["input_schema"] = schema;
    r
}

#[test]
fn an_exemption_with_its_reason_admits_that_one_property_and_is_noted() {
    let why = "the display name of a browser session, not a session id";
    let r = with_input(
        json!({
            "session_name": {"type": "string", "x-not-credential": why},
            "pages": {"type": "array", "items": {"$ref": "#/$defs/Page"}},
        }),
        Some(
            json!({"Page": {"type": "object", "additionalProperties": false, "properties": {
            "session_name": {"type": "string", "x-not-credential": why},
            "username": {"$ref": "#/$defs/Name", "x-not-credential": "a GitHub user to look up"},
        }}, "Name": {"type": "string"}}),
        ),
    );
    let (record, diags) = accepted(&r, None);
    assert_eq!(
        record.credential_exemptions(),
        [
            CredentialExemption {
                pointer: "/session_name".into(),
                reason: why.into()
            },
            CredentialExemption {
                pointer: "/pages/-/session_name".into(),
                reason: why.into()
            },
            CredentialExemption {
                pointer: "/pages/-/username".into(),
                reason: "a GitHub user to look up".into()
            },
        ]
    );
    let notes: Vec<_> = diags
        .iter()
        .filter(|d| d.rule == Rule::CredentialExemption)
        .collect();
    assert_eq!(notes.len(), 3, "{}", diags.render());
    assert!(notes.iter().all(|d| d.severity == Severity::Note));
    assert_eq!(
        notes[0].pointer.as_deref(),
        Some("/input_schema/properties/session_name/x-not-credential")
    );
    assert!(notes[0].message.contains(why), "{}", notes[0].message);
    assert!(notes[0]
        .to_string()
        .contains("note: [input/credential-exemption]"));
}

#[test]
fn an_exemption_exempts_only_the_property_it_is_on() {
    let r = with_input(
        json!({
            "session_name": {"type": "string", "x-not-credential": "a display name"},
            "session_id": {"type": "string"},
        }),
        None,
    );
    refused(
        &r,
        None,
        Rule::CredentialName,
        "/input_schema/properties/session_id",
    );
    // On a `$defs` entry it is not on a property: it exempts nothing and is refused.
    let r = with_input(
        json!({"session": {"$ref": "#/$defs/S"}}),
        Some(json!({"S": {"type": "string", "x-not-credential": "shared"}})),
    );
    let (records, diags) = check(&r, None);
    assert!(records.is_empty());
    assert!(diags.has(Rule::NotCredential), "{}", diags.render());
    assert!(diags.has(Rule::CredentialName), "{}", diags.render());
}

#[test]
fn only_a_non_empty_reason_counts() {
    for bad in [json!(""), json!("   "), json!(true), json!({"why": "x"})] {
        let r = with_input(
            json!({"session_id": {"type": "string", "x-not-credential": bad}}),
            None,
        );
        let (records, diags) = check(&r, None);
        assert!(records.is_empty(), "{bad}");
        let d = diags
            .iter()
            .find(|d| d.rule == Rule::NotCredential)
            .unwrap_or_else(|| panic!("{bad}: {}", diags.render()));
        assert_eq!(
            d.pointer.as_deref(),
            Some("/input_schema/properties/session_id/x-not-credential")
        );
        assert!(d.is_error());
        // The credential rule still applies to the property.
        assert!(diags.has(Rule::CredentialName), "{bad}");
        // On a recognised shape, the bad reason alone refuses the record.
        let r = with_input(
            json!({"session_name": {"type": "string", "x-not-credential": bad}}),
            None,
        );
        let (records, diags) = check(&r, None);
        assert!(records.is_empty(), "{bad}");
        assert!(diags.has(Rule::NotCredential), "{bad}");
    }
}

#[test]
fn an_exemption_of_a_name_the_rule_does_not_catch_is_a_warning() {
    let r = with_input(
        json!({"query": {"type": "string", "x-not-credential": "just a query"}}),
        None,
    );
    let (record, diags) = accepted(&r, None);
    assert!(record.credential_exemptions().is_empty());
    let d = diags.iter().next().expect("a warning");
    assert_eq!(
        (d.rule, d.severity),
        (Rule::NotCredential, Severity::Warning)
    );
    assert!(d.message.contains("exempts nothing"), "{}", d.message);
}
