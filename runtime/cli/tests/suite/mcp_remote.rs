//! Remote MCP servers as governed tools (`"transport": "mcp-http"`), through the `escepine`
//! binary, against real remote servers on loopback that require OAuth access tokens from
//! oidc-provider for their own resource: one written with the TypeScript SDK (2025-11-25
//! sessions), one with the Python SDK 2.x's `MCPServer` (2026-07-28).
//!
//! For each: imported from its URL (`import mcp --url --oauth-client`), checked, called by
//! `escepine call`, inside an SOP run, and through `serve --oauth` by an MCP client — whose own
//! token is exchanged (RFC 8693) for the remote server, which then sees the user (`sub`). One
//! `serve` process fetches the client-credentials token once for many calls and again after it
//! expires (counted by the provider). No token appears in a ledger, an output or the logs.
//!
//! Against the TypeScript server's hostile controls: a changed definition is refused with no
//! `tools/call` (the server counts), a redirect to another origin is not followed (the other
//! server sees nothing), 429 with `Retry-After` is retried within the deadline, a JSON-RPC error
//! is not, and an origin outside the envelope is refused at registration.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use escepine_testkit::mcp::serve_http;
use escepine_testkit::oidc::{free_loopback_port, Keys, Provider, ProviderConfig};
use escepine_testkit::remote_servers::{RemoteSdk, RemoteServer};

const SECRET: &str = "notes-client-test-only-secret-0123456789";
const REDIRECT: &str = "http://127.0.0.1:1/callback";
/// The access tokens' lifetime: short, so that a cached token expires within a test.
const TTL_S: u64 = 6;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A remote server, its authorization server, and a folder of imported records.
struct Remote {
    provider: Provider,
    server: RemoteServer,
    /// Escepine's own resource (`serve --oauth`), on this port.
    own_port: u16,
    own: String,
    dir: tempfile::TempDir,
}

impl Remote {
    fn start(sdk: RemoteSdk) -> Self {
        let port = free_loopback_port();
        let own_port = free_loopback_port();
        let own = format!("http://127.0.0.1:{own_port}/mcp");
        let provider = Provider::start(
            &ProviderConfig::new(Keys::A, &own)
                .resource(&RemoteServer::url_on(port), "notes")
                .service("escepine-notes", SECRET, "notes")
                .exchanger("escepine-exchange", SECRET, "notes")
                .app("agent-app", REDIRECT)
                .account("ann", &["readers"])
                .access_token_ttl_s(TTL_S),
        );
        let server = RemoteServer::start_on(sdk, port, &provider.issuer, "notes");
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("secrets.env"),
            format!("NOTES_SECRET={SECRET}\n"),
        )
        .expect("secrets");
        std::fs::write(
            dir.path().join("notes-client.json"),
            json!({
                "token_endpoint": format!("{}/token", provider.issuer),
                "client_id": "escepine-notes",
                "client_secret": "NOTES_SECRET",
                "scopes": ["notes"],
                "resource": server.url,
            })
            .to_string(),
        )
        .expect("oauth client");
        std::fs::create_dir_all(dir.path().join("policies")).expect("policies");
        std::fs::write(
            dir.path().join("policies/remote.cedar"),
            "@id(\"ops-remote\")\n\
             permit(principal == Agent::\"ops\", action, resource);\n\
             @id(\"readers-remote\")\n\
             permit(principal in Team::\"readers\", action, resource);\n",
        )
        .expect("policy");
        std::fs::write(
            dir.path().join("policies/schema.cedarschema"),
            "entity Team;\nentity Agent in [Team];\n",
        )
        .expect("schema");
        Self {
            provider,
            server,
            own_port,
            own,
            dir,
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn escepine(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_escepine"));
        c.args(args);
        c
    }

    /// `escepine import mcp --url` with the client-credentials client.
    fn import(&self) -> Output {
        self.escepine(&["import", "mcp", "--url", &self.server.url, "--oauth-client"])
            .arg(self.path("notes-client.json"))
            .arg("--secrets")
            .arg(self.path("secrets.env"))
            .arg("--out")
            .arg(self.path("records"))
            .output()
            .expect("import")
    }

    fn record(&self, id: &str) -> Value {
        let text = std::fs::read_to_string(self.path(&format!("records/{id}.json")))
            .unwrap_or_else(|e| panic!("records/{id}.json: {e}"));
        serde_json::from_str(&text).expect("JSON")
    }

    fn write_record(&self, record: &Value) {
        let id = record["tool_id"].as_str().expect("tool_id");
        std::fs::write(
            self.path(&format!("records/{id}.json")),
            serde_json::to_string_pretty(record).expect("JSON"),
        )
        .expect("write");
    }

    /// A decided draft of `needs-decision/` moved to the records, read-only.
    fn decide(&self, id: &str) -> Value {
        let from = self.path(&format!("records/needs-decision/{id}.json"));
        let mut r: Value =
            serde_json::from_str(&std::fs::read_to_string(&from).expect("draft")).expect("JSON");
        r["side_effect_class"] = json!("read-only");
        r.as_object_mut().expect("object").remove("$comment");
        std::fs::remove_file(&from).expect("remove draft");
        self.write_record(&r);
        r
    }

    fn registry<'a>(&self, c: &'a mut Command) -> &'a mut Command {
        c.arg("--records")
            .arg(self.path("records"))
            .arg("--policies")
            .arg(self.path("policies"))
    }

    fn call(&self, tool: &str, input: &str, ledger: &str) -> Output {
        let mut c = self.escepine(&["call", "--principal", "Agent::\"ops\"", "--tool", tool]);
        self.registry(&mut c)
            .args(["--input", input, "--secrets"])
            .arg(self.path("secrets.env"))
            .arg("--ledger")
            .arg(self.path(ledger))
            .output()
            .expect("call")
    }

    fn shown(&self, ledger: &str) -> String {
        let out = self
            .escepine(&["ledger", "show"])
            .arg(self.path(ledger))
            .output()
            .expect("ledger show");
        text(&out.stdout)
    }

    /// A user's own access token for Escepine's resource.
    fn user_token(&self) -> String {
        self.provider
            .authorization_code("agent-app", REDIRECT, &self.own, "mcp:tools", "ann")
    }

    fn issued(&self, grant: &str) -> u64 {
        self.provider.token_counts()[grant]
            .as_u64()
            .expect("a count")
    }
}

/// Nothing that looks like a JWT (`eyJ…` base64url of `{"`), or the client secret, in `text`.
fn assert_no_token(what: &str, text: &str) {
    assert!(!text.contains("eyJ"), "{what} holds a token:\n{text}");
    assert!(!text.contains(SECRET), "{what} holds the client secret");
}

/// Every byte of the SQLite ledger file (its JSON entries are stored as text).
fn ledger_bytes(path: &Path) -> String {
    let mut all = String::new();
    for suffix in ["", "-wal"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        if let Ok(b) = std::fs::read(&p) {
            all.push_str(&String::from_utf8_lossy(&b));
        }
    }
    assert!(!all.is_empty(), "no ledger at {}", path.display());
    all
}

async fn mcp_client(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token),
    );
    ().serve(transport).await.expect("initialize over HTTP")
}

async fn tool(c: &RunningService<RoleClient, ()>, name: &str, args: Value) -> Value {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = args.as_object().cloned();
    let r = c.call_tool(params).await.expect("tools/call");
    assert_ne!(r.is_error, Some(true), "{name}: {r:?}");
    r.structured_content
        .clone()
        .unwrap_or_else(|| json!({ "content": r.content }))
}

fn governed_round(sdk: RemoteSdk) {
    let remote = Remote::start(sdk);

    // Import from the URL: the read-only tools are drafted ready, the others wait for a class.
    let out = remote.import();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_no_token(
        "the import's output",
        &(text(&out.stdout) + &text(&out.stderr)),
    );
    let whoami = remote.record("whoami");
    let ep = &whoami["endpoint"];
    assert_eq!(ep["transport"], "mcp-http", "{whoami}");
    assert_eq!(ep["url"], remote.server.url.as_str());
    assert_eq!(ep["tool"], "whoami");
    assert_eq!(ep["auth"]["oauth"]["client_secret"], "NOTES_SECRET");
    assert!(ep["definition_sha256"].is_string());
    assert_eq!(whoami["auth"]["secrets"], json!(["NOTES_SECRET"]));
    let egress = whoami["sandbox_profile"]["egress"].clone();
    assert!(
        egress
            .as_array()
            .expect("egress")
            .iter()
            .any(|e| e == &json!(remote.server.authority())),
        "{egress}"
    );
    let search = remote.record("note_search");
    assert_eq!(
        search["output_schema"]["required"],
        json!(["text"]),
        "{search}"
    );
    remote.decide("echo");

    // The same tool, on behalf of the caller: its token exchanged for the remote server.
    let mut as_caller = whoami.clone();
    as_caller["tool_id"] = json!("whoami_as_caller");
    as_caller["endpoint"]["auth"] = json!({ "token_exchange": {
        "token_endpoint": format!("{}/token", remote.provider.issuer),
        "client_id": "escepine-exchange",
        "client_secret": "NOTES_SECRET",
        "audience": remote.server.url,
        "scopes": ["notes"],
    }});
    remote.write_record(&as_caller);

    let mut check = remote.escepine(&["check"]);
    let out = remote.registry(&mut check).output().expect("check");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );

    // `escepine call`: the server sees the service client; the caller gets the output only.
    let out = remote.call("whoami", "{}", "call.db");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("escepine-notes"), "{stdout}");
    assert_no_token("call's output", &(stdout.clone() + &text(&out.stderr)));
    let out = remote.call("note_search", r#"{"query":"tides"}"#, "call.db");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("found: tides"),
        "{}",
        text(&out.stdout)
    );
    // A token exchange needs a caller's token: `call` has none, and says so.
    let out = remote.call("whoami_as_caller", "{}", "call.db");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("caller's own access token"),
        "{}",
        text(&out.stderr)
    );
    let shown = remote.shown("call.db");
    assert!(
        shown.contains("credential client_credentials for sub \"escepine-notes\""),
        "{shown}"
    );
    // The revision each server speaks: the Python SDK 2.x answers `server/discover` with
    // 2026-07-28 (no session); the TypeScript SDK 1.x does not, and gets `initialize`.
    assert!(shown.contains("(server/discover)"), "{shown}");
    match sdk {
        RemoteSdk::Python => assert!(!shown.contains("(initialize)"), "{shown}"),
        RemoteSdk::TypeScript => assert!(shown.contains("(initialize)"), "{shown}"),
    }
    assert!(shown.contains("(tools/call)"), "{shown}");
    assert_no_token("ledger show", &shown);
    assert_no_token("the call ledger", &ledger_bytes(&remote.path("call.db")));

    // Inside an SOP run.
    std::fs::create_dir_all(remote.path("sops")).expect("sops");
    std::fs::write(
        remote.path("sops/lookup.json"),
        json!({ "sop_id": "lookup", "version": "1.0.0", "description": "Search the notes.",
                "start": "search",
                "states": { "search": { "kind": "execution", "tool": "note_search",
                                        "on_failure": "halt", "next": "done" },
                            "done": { "kind": "terminal" } } })
        .to_string(),
    )
    .expect("sop");
    std::fs::write(
        remote.path("proposals.json"),
        json!({ "search": { "query": "sop" } }).to_string(),
    )
    .expect("proposals");
    let mut run = remote.escepine(&["run"]);
    run.arg(remote.path("sops/lookup.json"))
        .args(["--principal", "Agent::\"ops\"", "--proposals"])
        .arg(remote.path("proposals.json"));
    let out = remote
        .registry(&mut run)
        .arg("--secrets")
        .arg(remote.path("secrets.env"))
        .arg("--ledger")
        .arg(remote.path("run.db"))
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let shown = remote.shown("run.db");
    assert!(shown.contains("note_search@1.0.0"), "{shown}");
    assert!(shown.contains("(tools/call)"), "{shown}");
    assert!(
        shown.contains("run_completed") || shown.contains("completed"),
        "{shown}"
    );

    // Through `serve --oauth`: one client-credentials token for many calls, until it expires.
    std::fs::write(
        remote.path("oauth.json"),
        json!({ "resource": remote.own, "issuers": [{
            "issuer": remote.provider.issuer, "scopes": ["mcp:tools"],
            "principal": { "type": "Agent", "claim": "sub" },
            "parents": [{ "claim": "groups", "type": "Team" }] }] })
        .to_string(),
    )
    .expect("oauth.json");
    let mut serve = remote.escepine(&[
        "serve",
        "--mcp",
        "http",
        "--listen",
        &format!("127.0.0.1:{}", remote.own_port),
    ]);
    remote
        .registry(&mut serve)
        .arg("--oauth")
        .arg(remote.path("oauth.json"))
        .arg("--secrets")
        .arg(remote.path("secrets.env"))
        .arg("--ledger")
        .arg(remote.path("serve.db"));
    let serve = serve_http(serve);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let before = remote.issued("client_credentials");
    let calls_before = remote.server.counts()["tools_call"]
        .as_u64()
        .expect("count");
    let user = remote.user_token();
    rt.block_on(async {
        let c = mcp_client(&serve.url, &user).await;
        for _ in 0..3 {
            let who = tool(&c, "whoami", json!({})).await;
            assert_eq!(who["sub"], "escepine-notes", "{who}");
        }
        // The user's token exchanged: the remote server sees the user, acted for by Escepine.
        let who = tool(&c, "whoami_as_caller", json!({})).await;
        assert_eq!(who["sub"], "ann", "{who}");
        assert_eq!(who["act"], "escepine-exchange", "{who}");
        let _ = c.cancel().await;
    });
    assert_eq!(
        remote.issued("client_credentials") - before,
        1,
        "one token for three calls"
    );
    assert_eq!(remote.issued("token_exchange"), 1);
    assert_eq!(
        remote.server.counts()["tools_call"]
            .as_u64()
            .expect("count")
            - calls_before,
        4
    );
    // After the token's lifetime (less its margin), the next call fetches another.
    std::thread::sleep(Duration::from_secs(TTL_S));
    let user = remote.user_token();
    rt.block_on(async {
        let c = mcp_client(&serve.url, &user).await;
        let who = tool(&c, "whoami", json!({})).await;
        assert_eq!(who["sub"], "escepine-notes", "{who}");
        let _ = c.cancel().await;
    });
    assert_eq!(
        remote.issued("client_credentials") - before,
        2,
        "fetched again after expiry"
    );
    let subs = remote.server.counts()["subs"].clone();
    assert!(
        subs.as_array().expect("subs").contains(&json!("ann")),
        "{subs}"
    );
    assert_no_token("serve's log", &serve.log());
    drop(serve);
    let shown = remote.shown("serve.db");
    assert!(
        shown.contains("credential token_exchange for sub \"ann\""),
        "{shown}"
    );
    assert_no_token("the serve ledger", &ledger_bytes(&remote.path("serve.db")));
}

#[test]
fn a_typescript_sdk_server_is_governed_end_to_end() {
    governed_round(RemoteSdk::TypeScript);
}

#[test]
fn a_python_sdk_server_is_governed_end_to_end() {
    governed_round(RemoteSdk::Python);
}

#[test]
fn hostile_answers_are_refused_or_retried_as_the_contract_says() {
    let remote = Remote::start(RemoteSdk::TypeScript);
    let out = remote.import();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut echo = remote.decide("echo");
    echo["retry"] = json!({ "max_attempts": 3, "backoff_ms": 10 });
    echo["timeout_ms"] = json!(5000);
    remote.write_record(&echo);
    let mut whoami = remote.record("whoami");
    whoami["retry"] = json!({ "max_attempts": 3, "backoff_ms": 10 });
    whoami["timeout_ms"] = json!(5000);
    remote.write_record(&whoami);
    let ok = remote.call("echo", r#"{"text":"hi"}"#, "h.db");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));

    // 429 with Retry-After: 1 — retried no sooner than a second later, then answered.
    remote.server.reset();
    remote.server.fail_next(429, Some("1"), 1);
    let started = Instant::now();
    let out = remote.call("whoami", "{}", "h.db");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let shown = remote.shown("h.db");
    assert!(shown.contains("429"), "{shown}");

    // A 401 to an OAuth token: one new token, the call made again within the same attempt.
    remote.server.reset();
    let before = remote.issued("client_credentials");
    remote.server.fail_next(401, None, 1);
    let out = remote.call("whoami", "{}", "u.db");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        remote.issued("client_credentials") - before,
        2,
        "the first token, then one more"
    );
    let shown = remote.shown("u.db");
    assert!(!shown.contains("attempt 2"), "{shown}");

    // A JSON-RPC error is permanent: one attempt, although three are allowed.
    remote.server.reset();
    remote.server.jsonrpc_error_next(1);
    let out = remote.call("whoami", "{}", "j.db");
    assert_ne!(out.status.code(), Some(0));
    let shown = remote.shown("j.db");
    assert!(shown.contains("attempt 1"), "{shown}");
    assert!(
        !shown.contains("attempt 2"),
        "a JSON-RPC error is not retried: {shown}"
    );
    assert_eq!(remote.server.counts()["tools_call"], 0);

    // A redirect to another origin is not followed: the other server sees nothing.
    let other = RemoteServer::start(RemoteSdk::TypeScript, &remote.provider.issuer, "notes");
    remote.server.reset();
    remote.server.redirect_to(&other.url);
    let out = remote.call("whoami", "{}", "r.db");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("redirect"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(other.counts()["requests"], 0, "{}", other.counts());
    remote.server.redirect_to("");

    // A changed definition: refused before any tools/call.
    remote.server.reset();
    remote.server.change_definition();
    let out = remote.call("echo", r#"{"text":"hi"}"#, "c.db");
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("description"), "{err}");
    let counts = remote.server.counts();
    assert_eq!(counts["tools_call"], 0, "{counts}");
    assert!(
        counts["tools_list"].as_u64().expect("count") >= 1,
        "{counts}"
    );

    // Imported with a bearer secret instead: the drafts name it, never its value.
    let bearer =
        remote
            .provider
            .client_credentials("escepine-notes", SECRET, &remote.server.url, "notes");
    std::fs::write(remote.path("bearer.env"), format!("NOTES_TOKEN={bearer}\n")).expect("secrets");
    let out = remote
        .escepine(&[
            "import",
            "mcp",
            "--url",
            &remote.server.url,
            "--bearer-secret",
            "NOTES_TOKEN",
        ])
        .arg("--secrets")
        .arg(remote.path("bearer.env"))
        .arg("--out")
        .arg(remote.path("bearer-records"))
        .output()
        .expect("import");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let draft = std::fs::read_to_string(remote.path("bearer-records/whoami.json")).expect("draft");
    let draft: Value = serde_json::from_str(&draft).expect("JSON");
    assert_eq!(
        draft["endpoint"]["auth"],
        json!({ "bearer": "NOTES_TOKEN" })
    );
    assert_eq!(draft["auth"]["secrets"], json!(["NOTES_TOKEN"]));
    assert!(!draft.to_string().contains(&bearer));

    // An origin outside the envelope: refused at registration, nothing sent.
    remote.server.reset();
    std::fs::write(
        remote.path("envelope.json"),
        json!({ "egress": ["127.0.0.1:1"] }).to_string(),
    )
    .expect("envelope");
    let mut check = remote.escepine(&["check"]);
    let out = remote
        .registry(&mut check)
        .arg("--envelope")
        .arg(remote.path("envelope.json"))
        .output()
        .expect("check");
    assert_ne!(out.status.code(), Some(0));
    let all = text(&out.stdout) + &text(&out.stderr);
    assert!(all.contains("egress"), "{all}");
    assert_eq!(remote.server.counts()["requests"], 0);
}

#[test]
fn an_import_from_a_bad_url_or_client_file_is_refused_naming_what_is_wrong() {
    let dir = tempfile::tempdir().expect("tempdir");
    let import = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_escepine"))
            .args(["import", "mcp", "--out"])
            .arg(dir.path().join("out"))
            .args(args)
            .output()
            .expect("import")
    };
    // Plain HTTP to a host that is not loopback: refused before any connection.
    let out = import(&["--url", "http://notes.example.com/mcp"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("loopback"),
        "{}",
        text(&out.stderr)
    );
    // A client file with a secret's value where its name belongs, under an unknown key.
    let client = dir.path().join("client.json");
    std::fs::write(
        &client,
        json!({ "token_endpoint": "http://127.0.0.1:1/token", "client_id": "c",
                "client_secret": "NOTES_SECRET", "client_secret_value": "s3cr3t" })
        .to_string(),
    )
    .expect("client file");
    let out = import(&[
        "--url",
        "http://127.0.0.1:1/mcp",
        "--oauth-client",
        client.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("/client_secret_value") && err.contains("client.json"),
        "{err}"
    );
    assert!(!err.contains("s3cr3t"), "{err}");
    // A secret without a value.
    std::fs::write(
        &client,
        json!({ "token_endpoint": "http://127.0.0.1:1/token", "client_id": "c",
                "client_secret": "NO_SUCH_SECRET_NAME" })
        .to_string(),
    )
    .expect("client file");
    let out = import(&[
        "--url",
        "http://127.0.0.1:1/mcp",
        "--oauth-client",
        client.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("NO_SUCH_SECRET_NAME"),
        "{}",
        text(&out.stderr)
    );
    // A command beside --url.
    let out = import(&["--url", "http://127.0.0.1:1/mcp", "--", "python3"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!dir.path().join("out").exists(), "nothing is written");
}
