//! The MCP edge the benchmarks call: `escepine serve`'s HTTP router in process, over the edge
//! fixture's registry (`runtime/tests/fixtures/mcp-edge`), its `e_echo` run in process.

use std::sync::Arc;

use escepine_mcp::auth::Authenticator;
use escepine_mcp::listing::Listing;
use escepine_mcp::server::{allowed_hosts, http_router, nodelay, GovernedServer};
use escepine_runtime::executor::InProcessExecutor;
use escepine_runtime::Runtime;
use escepine_testkit::bins::workspace_root;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// The edge fixture's registry, its `e_echo` run in process.
fn runtime(entities: Option<Value>) -> (Runtime, Arc<Listing>) {
    let fixture = workspace_root().join("runtime/tests/fixtures/mcp-edge");
    let registry = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(fixture.join("records"))
            .policies(fixture.join("policies"))
            .workspace_root(workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let listing = Arc::new(Listing::new(&registry, entities.as_ref()).expect("listing"));
    let exec = InProcessExecutor::new().with_tool("e_echo", |input: &Value| {
        Ok(json!({ "echo": { "text": input["text"].clone() } }))
    });
    let mut builder = Runtime::builder(registry)
        .ledger(Arc::new(escepine_ledger::memory::MemoryLedger::new()))
        .executor(Arc::new(exec));
    if let Some(e) = entities {
        builder = builder.entities(e);
    }
    (builder.build().expect("runtime"), listing)
}

/// Serve `auth` on loopback `port` (0: any free one); returns the endpoint's URL.
pub async fn serve(port: u16, auth: Authenticator, entities: Option<Value>) -> String {
    let (rt, listing) = runtime(entities);
    let server = GovernedServer::new(rt, listing);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = http_router(
        server,
        Arc::new(auth),
        allowed_hosts(addr),
        CancellationToken::new(),
    );
    tokio::spawn(async move {
        let _ = axum::serve(nodelay(listener), app).await;
    });
    format!("http://{addr}/mcp")
}
