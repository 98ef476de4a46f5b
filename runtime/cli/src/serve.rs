//! `escepine serve --mcp stdio|http`: the governed tools over MCP ([`escepine_mcp::server`]).
//!
//! The registry is loaded once (every rule applied) and frozen, as for `escepine call`. Without
//! `--records`, the built-in catalog is served: `tools/records`, `tools/policies` and
//! `tools/envelope.json` of the workspace the command runs in (found upwards from the working
//! directory), else of the workspace this binary was built from (its path compiled in). With
//! `--records`, `--policies` and `--envelope` are whatever is given (no policies: every call is
//! denied and nothing is listed).
//!
//! - `--mcp stdio` serves this process's stdin and stdout for `--principal` (required); logs go
//!   to stderr only.
//! - `--mcp http` serves streamable HTTP at `http://<listen>/mcp` (`--listen`, loopback
//!   `127.0.0.1:8787` by default; port 0 picks a free one). Every request needs
//!   `Authorization: Bearer <token>`, checked by one of ([`escepine_mcp::auth`]):
//!   - `--oauth FILE`: an OAuth 2.1 resource server. The token is a JWT access token of an
//!     issuer the file configures, verified against its JWKS; the principal and its parents
//!     come from the token's claims ([`escepine_identity::config`] describes the file). The
//!     file is checked before anything starts: its rules, and that the Cedar schema can hold
//!     the principals and parents it maps (a type no action accepts, or a parent type the
//!     principal type cannot be a member of, is an error). An issuer that cannot be reached
//!     yet is retried in the background; its tokens are answered `503` until then.
//!   - `--tokens FILE` (development): JSON `{"<token>": "Agent::\"id\""}`.
//!
//!   A refused request gets `401` (`403` for a missing scope) with a `WWW-Authenticate`
//!   challenge. Each 2025-era MCP session serves only the principal whose token opened it;
//!   another principal naming its `Mcp-Session-Id` gets `404` ([`escepine_mcp::sessions`]).
//!   Once listening it prints `listening on http://<addr>/mcp` on stderr. SIGINT or SIGTERM
//!   stops it.
//!
//! `--listing partial-eval|scope` chooses how tools are listed ([`escepine_mcp::listing`]; the
//! default is the most precise one built in).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use escepine_contract::Principal;
use escepine_registry::endpoint::WorkspaceBins;

use escepine_identity::config::OAuthConfig;
use escepine_identity::tokens::Tokens;
use escepine_identity::verify::Verifier;
use escepine_mcp::auth::{Authenticator, OAuth};
use escepine_mcp::listing::{Analysis, Listing};
use escepine_mcp::server::{self, GovernedServer, HTTP_PATH};

use crate::args::{async_runtime, RuntimeArgs};
use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;
use crate::telemetry::Wants;

/// The catalog directory of the workspace this binary was built from.
const BUILT_CATALOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tools");

/// The MCP transports `escepine serve` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Transport {
    /// This process's stdin and stdout, for `--principal`.
    Stdio,
    /// Streamable HTTP on `--listen`, principals from bearer tokens.
    Http,
}

/// How `tools/list` decides what a principal sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ListingArg {
    /// Cedar partial evaluation (needs the crate feature `mcp-partial-eval`).
    PartialEval,
    /// The conservative scope analysis.
    Scope,
}

/// Arguments of `escepine serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The MCP transport.
    #[arg(long, value_enum, value_name = "stdio|http")]
    mcp: Transport,
    /// Directory of tool records (the built-in catalog's when omitted).
    #[arg(long, value_name = "DIR")]
    records: Option<PathBuf>,
    /// Directory of Cedar policies (the catalog's when --records is omitted).
    #[arg(long, value_name = "DIR")]
    policies: Option<PathBuf>,
    /// Deployment envelope (the catalog's when --records is omitted).
    #[arg(long, value_name = "FILE")]
    envelope: Option<PathBuf>,
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// The principal served over stdio, e.g. 'Agent::"researcher"'.
    #[arg(long)]
    principal: Option<String>,
    /// Development bearer tokens for HTTP: JSON {"<token>": "Agent::\"id\""}.
    #[arg(long, value_name = "FILE", conflicts_with = "oauth")]
    tokens: Option<PathBuf>,
    /// OAuth 2.1 resource server for HTTP: the resource, its issuers and how their tokens'
    /// claims map to principals (JSON; see README, "Putting Escepine behind an identity
    /// provider").
    #[arg(long, value_name = "FILE")]
    oauth: Option<PathBuf>,
    /// Where HTTP listens (loopback by default).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// How tools/list decides what a principal sees (default: the most precise built in).
    #[arg(long, value_enum)]
    listing: Option<ListingArg>,
    /// Serve the metrics in the Prometheus text format at `http://ADDR/metrics`
    /// (unauthenticated: keep it on loopback or a scrape network).
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
}

/// The records, policies and envelope to load: as given, or the built-in catalog's.
fn sources(args: &Args) -> escepine_registry::registry::Sources {
    let mut s = escepine_registry::registry::Sources::new();
    match &args.records {
        Some(records) => {
            s = s.records(records);
            if let Some(p) = &args.policies {
                s = s.policies(p);
            }
            if let Some(e) = &args.envelope {
                s = s.envelope(e);
            }
        }
        None => {
            let catalog = catalog_dir();
            s = s.records(catalog.join("records"));
            s = s.policies(
                args.policies
                    .clone()
                    .unwrap_or_else(|| catalog.join("policies")),
            );
            s = s.envelope(
                args.envelope
                    .clone()
                    .unwrap_or_else(|| catalog.join("envelope.json")),
            );
        }
    }
    s
}

/// `tools/` of the workspace above the working directory, else of the one this binary was
/// built from.
pub(crate) fn catalog_dir() -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|d| WorkspaceBins::find_root(&d))
        .map(|root| root.join("tools"))
        .filter(|t| t.join("records").is_dir())
        .unwrap_or_else(|| PathBuf::from(BUILT_CATALOG))
}

/// Serve until the transport ends (stdio) or a stop signal (HTTP).
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    let usage = |m: &str| CliError::new(exit::USAGE, m);
    let principal: Option<Principal> = args
        .principal
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| CliError::new(exit::USAGE, e))?;
    let auth = match (args.mcp, &principal, &args.tokens, &args.oauth) {
        (Transport::Stdio, None, _, _) => {
            return Err(usage("`--mcp stdio` needs --principal 'Agent::\"id\"'"))
        }
        (Transport::Stdio, Some(_), None, None) => None,
        (Transport::Stdio, Some(_), _, _) => {
            return Err(usage(
                "--tokens and --oauth authenticate HTTP requests; over stdio the principal is \
                 --principal",
            ))
        }
        (Transport::Http, Some(_), _, _) => {
            return Err(usage(
                "over HTTP each request's principal comes from its bearer token; \
                 --principal is for stdio",
            ))
        }
        (Transport::Http, None, None, None) => {
            return Err(usage(
                "`--mcp http` needs --oauth FILE (an OAuth 2.1 resource server) or, for \
                 development, --tokens FILE (JSON {\"<token>\": \"Agent::\\\"id\\\"\"})",
            ))
        }
        (Transport::Http, None, Some(path), _) => Some(HttpAuth::Tokens(Arc::new(
            Tokens::load(path).map_err(|e| CliError::new(exit::INVALID, e))?,
        ))),
        (Transport::Http, None, None, Some(path)) => Some(HttpAuth::OAuth(
            OAuthConfig::load(path).map_err(|e| CliError::new(exit::INVALID, e))?,
        )),
    };
    let analysis = match args.listing {
        None => Analysis::best(),
        Some(ListingArg::Scope) => Analysis::Scope,
        #[cfg(feature = "mcp-partial-eval")]
        Some(ListingArg::PartialEval) => Analysis::PartialEval,
        #[cfg(not(feature = "mcp-partial-eval"))]
        Some(ListingArg::PartialEval) => {
            return Err(usage(
                "--listing partial-eval needs escepine built with the feature \
                 `mcp-partial-eval`",
            ))
        }
    };
    let registry = crate::args::load(&sources(args))?;
    for note in registry.notes() {
        let _ = writeln!(io.err, "note: {note}");
    }
    let entities = args.runtime.entities()?;
    let listing = Listing::new(&registry, entities.as_ref())
        .map(|l| Arc::new(l.with_analysis(analysis)))
        .map_err(|e| CliError::new(exit::INVALID, e))?;
    // Logs (RUST_LOG) on standard error, spans and metrics as the telemetry flags say; started
    // before the runtime is built, flushed when serve ends.
    let watch = args.runtime.telemetry.start(Wants {
        logs: true,
        prometheus: args.metrics_listen.is_some(),
    })?;
    let rt = async_runtime(exit::INVALID)?;
    let tools = registry.records().len();
    let result: CliResult = rt.block_on(async {
        if let (Some(addr), Some(telemetry)) = (args.metrics_listen, watch.telemetry()) {
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
                CliError::new(exit::INVALID, format!("--metrics-listen {addr}: {e}"))
            })?;
            let bound = listener
                .local_addr()
                .map_err(|e| CliError::new(exit::INVALID, e))?;
            let _ = writeln!(io.err, "escepine serve: metrics on http://{bound}/metrics");
            let telemetry = Arc::clone(telemetry);
            tokio::spawn(async move {
                if let Err(e) = telemetry.serve_metrics(listener, stop_signal()).await {
                    tracing::warn!("the metrics endpoint stopped: {e}");
                }
            });
        }
        let runtime = args.runtime.build(registry, exit::INVALID).await?;
        let failed = |e: &dyn std::fmt::Display| CliError::new(exit::INVALID, e);
        let auth = match auth {
            None => None,
            Some(HttpAuth::Tokens(tokens)) => Some(Authenticator::Tokens(tokens)),
            Some(HttpAuth::OAuth(config)) => {
                check_mapping(&config, &runtime, args.oauth.as_deref())?;
                let verifier = Verifier::new(config.clone()).map_err(|e| failed(&e))?;
                verifier.start();
                Some(Authenticator::OAuth(OAuth::new(config, verifier)))
            }
        };
        let calls_on = runtime.clone();
        let server = GovernedServer::new(runtime, listing);
        let served = match (principal, auth) {
            (Some(p), _) => {
                let _ = writeln!(
                    io.err,
                    "escepine serve: {tools} tools over MCP stdio for {p} (listing: {})",
                    analysis.as_str()
                );
                server::serve_stdio(server.for_principal(p))
                    .await
                    .map_err(|e| failed(&e))
            }
            (None, Some(auth)) => {
                let listener = tokio::net::TcpListener::bind(args.listen)
                    .await
                    .map_err(|e| failed(&format!("cannot listen on {}: {e}", args.listen)))?;
                let addr = listener.local_addr().map_err(|e| failed(&e))?;
                if !addr.ip().is_loopback() {
                    let _ = writeln!(
                        io.err,
                        "warning: listening on {addr}, which is not loopback: put TLS in front"
                    );
                }
                let _ = writeln!(
                    io.err,
                    "escepine serve: {tools} tools over MCP streamable HTTP, {} \
                     (listing: {}); listening on http://{addr}{HTTP_PATH}",
                    auth.describe(),
                    analysis.as_str()
                );
                let _ = io.err.flush();
                server::serve_http(server, listener, Arc::new(auth), stop_signal())
                    .await
                    .map_err(|e| failed(&e))
            }
            (None, None) => Err(failed(&"no principal and no tokens")),
        };
        crate::args::settle(&calls_on).await;
        served
    });
    rt.shutdown_timeout(Duration::from_secs(2));
    drop(watch);
    result
}

/// How HTTP callers are known, as read from the command line (the verifier starts inside the
/// async runtime).
enum HttpAuth {
    Tokens(Arc<Tokens>),
    OAuth(OAuthConfig),
}

/// Whether the Cedar schema can hold the principals and parents `config` maps claims to: each
/// issuer's principal type is a principal type of some action, and can be a member of each of
/// its parent types.
fn check_mapping(
    config: &OAuthConfig,
    runtime: &escepine_runtime::Runtime,
    file: Option<&std::path::Path>,
) -> Result<(), CliError> {
    let file = file.map_or_else(String::new, |f| format!("{}: ", f.display()));
    let mut problems = Vec::new();
    for (n, issuer) in config.issuers.iter().enumerate() {
        let parents: Vec<&str> = issuer
            .parents
            .iter()
            .map(|p| p.entity_type.as_str())
            .collect();
        if let Err(e) = runtime
            .authorizer()
            .check_membership(&issuer.principal.entity_type, &parents)
        {
            problems.push(format!("{file}/issuers/{n}/principal: {e}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CliError::new(exit::INVALID, problems.join("\n")))
    }
}

/// Completes on SIGINT or SIGTERM.
pub(crate) async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let term = async {
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}
