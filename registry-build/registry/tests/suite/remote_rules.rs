//! Remote endpoints (`mcp-http`): what a valid one becomes, how it reads back, and the refusals
//! that name the pointer and the rule — the URL, the fields of local endpoints, `auth`, the
//! origins the profile's egress must cover, and the envelope's `remote_ca_files`.

use std::fs;
use std::path::{Path, PathBuf};

use escepine_contract::Transport;
use escepine_registry::diagnostic::{Diagnostics, SourceFile};
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::envelope::Envelope;
use escepine_registry::record::{ResolvedCommand, ToolRecord};
use escepine_registry::registry::check_records;
use escepine_registry::remote::RemoteAuth;
use escepine_registry::rule::Rule;
use escepine_registry::rules::record::Context;
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn base() -> Value {
    let text = fs::read_to_string(fixtures().join("context/valid_base.json")).expect("fixture");
    serde_json::from_str(&text).expect("JSON")
}

/// `base()` as a remote tool of `https://notes.example.com/mcp`, with `auth` when given and the
/// secret `NOTES_SECRET` declared.
fn remote(auth: Option<Value>) -> Value {
    let mut r = base();
    let mut ep = json!({
        "transport": "mcp-http",
        "url": "https://notes.example.com/mcp",
        "tool": "page-read",
        "definition_sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    });
    if let Some(a) = auth {
        ep["auth"] = a;
    }
    r["endpoint"] = ep;
    r["auth"] = json!({ "secrets": ["NOTES_SECRET"] });
    r["sandbox_profile"] = json!({
        "egress": ["notes.example.com:443", "id.example.com:443"],
        "filesystem": "workspace",
    });
    r
}

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

fn refused(record: &Value, rule: Rule, pointer: &str) -> String {
    let (records, diags) = check(record, None);
    assert!(records.is_empty(), "registered despite {}", rule.id());
    let d = diags
        .iter()
        .find(|d| d.rule == rule)
        .unwrap_or_else(|| panic!("no [{}]:\n{}", rule.id(), diags.render()));
    assert_eq!(d.pointer.as_deref(), Some(pointer), "{}", diags.render());
    diags.render()
}

#[test]
fn a_remote_endpoint_registers_and_reads_back_the_same() {
    let oauth = json!({ "oauth": {
        "token_endpoint": "https://id.example.com/token",
        "client_id": "escepine",
        "client_secret": "NOTES_SECRET",
        "scopes": ["notes.read"],
        "resource": "https://notes.example.com/mcp",
    }});
    let exchange = json!({ "token_exchange": {
        "token_endpoint": "https://id.example.com/token",
        "client_id": "escepine",
        "client_secret": "NOTES_SECRET",
        "audience": "https://notes.example.com/mcp",
    }});
    for auth in [
        None,
        Some(json!({"bearer": "NOTES_SECRET"})),
        Some(oauth),
        Some(exchange),
    ] {
        let record = remote(auth.clone());
        let (mut records, diags) = check(&record, None);
        assert!(!diags.has_errors(), "{}", diags.render());
        let rec = records.remove(0);
        let ep = rec.endpoint();
        assert_eq!(ep.transport, Transport::McpHttp);
        assert_eq!(ep.resolved, ResolvedCommand::Remote);
        let r = ep.remote.as_ref().expect("remote");
        assert_eq!(r.url.authority(), "notes.example.com:443");
        assert_eq!(r.tool, "page-read");
        match (&auth, &r.auth) {
            (None, RemoteAuth::None) | (Some(_), RemoteAuth::Bearer { .. }) => {}
            (Some(_), RemoteAuth::ClientCredentials(g)) => {
                assert_eq!(g.scopes, ["notes.read"]);
                assert_eq!(g.resource.as_deref(), Some("https://notes.example.com/mcp"));
            }
            (Some(_), RemoteAuth::TokenExchange(g)) => {
                assert_eq!(g.audience.as_deref(), Some("https://notes.example.com/mcp"));
            }
            other => panic!("{other:?}"),
        }
        // What the registry writes back registers as the same record.
        let again = rec.to_json();
        assert_eq!(again["endpoint"]["url"], "https://notes.example.com/mcp");
        assert!(again["endpoint"].get("command").is_none(), "{again}");
        let (mut back, diags) = check(&again, None);
        assert!(!diags.has_errors(), "{}", diags.render());
        assert_eq!(back.remove(0).endpoint(), rec.endpoint());
    }
}

#[test]
fn plain_http_is_for_loopback_only() {
    let mut r = remote(None);
    r["endpoint"]["url"] = json!("http://127.0.0.1:8931/mcp");
    r["sandbox_profile"]["egress"] = json!(["127.0.0.1:8931"]);
    let (records, diags) = check(&r, None);
    assert_eq!(records.len(), 1, "{}", diags.render());
    r["endpoint"]["url"] = json!("http://notes.example.com/mcp");
    let text = refused(&r, Rule::EndpointRemoteUrl, "/endpoint/url");
    assert!(text.contains("loopback"), "{text}");
}

#[test]
fn refusals_name_the_pointer_and_what_to_write() {
    // The profile must cover the server's origin: the help names the entry to add.
    let mut r = remote(None);
    r["sandbox_profile"]["egress"] = json!(["id.example.com:443"]);
    let text = refused(&r, Rule::EndpointRemoteEgress, "/endpoint/url");
    assert!(text.contains("\"notes.example.com:443\""), "{text}");
    // An `auth` secret must be declared.
    let mut r = remote(Some(json!({"bearer": "OTHER"})));
    r["auth"] = json!({"secrets": []});
    refused(&r, Rule::EndpointRemoteAuth, "/endpoint/auth/bearer");
    // A secret is named, never written: an object where a name belongs is refused.
    let r = remote(Some(json!({"bearer": {"value": "s3cr3t"}})));
    refused(&r, Rule::EndpointRemoteAuth, "/endpoint/auth/bearer");
    // An unknown key in a grant.
    let r = remote(Some(json!({"oauth": {
        "token_endpoint": "https://id.example.com/token", "client_id": "c",
        "client_secret": "NOTES_SECRET", "client_secret_value": "s3cr3t"}})));
    let (records, diags) = check(&r, None);
    assert!(records.is_empty());
    assert!(
        diags
            .iter()
            .any(|d| d.pointer.as_deref() == Some("/endpoint/auth/oauth/client_secret_value")),
        "{}",
        diags.render()
    );
    // The envelope covers the profile, and so the remote origin.
    let env = Envelope::parse(&SourceFile::new(
        "deploy/envelope.json",
        json!({"egress": ["id.example.com"]}).to_string(),
    ))
    .expect("envelope");
    let (records, diags) = check(&remote(None), Some(&env));
    assert!(records.is_empty());
    assert!(
        diags.iter().any(|d| d.rule == Rule::EgressEnvelope),
        "{}",
        diags.render()
    );
}

#[test]
fn the_envelope_names_ca_files_by_absolute_path() {
    let parse = |v: Value| Envelope::parse(&SourceFile::new("deploy/envelope.json", v.to_string()));
    let env = parse(json!({"egress": [], "remote_ca_files": ["/etc/escepine/ca.pem"]}))
        .expect("envelope");
    assert_eq!(env.remote_ca_files, [PathBuf::from("/etc/escepine/ca.pem")]);
    let diags = parse(json!({"egress": [], "remote_ca_files": ["ca.pem"]})).expect_err("relative");
    let d = diags.iter().next().expect("a diagnostic");
    assert_eq!(d.rule, Rule::EnvelopeRemoteCa);
    assert_eq!(d.pointer.as_deref(), Some("/remote_ca_files/0"));
}
