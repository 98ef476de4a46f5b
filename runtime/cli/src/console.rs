//! `escepine console --ledger PATH|URL --listen ADDR`: the ledger, runs, approvals and policies
//! in a browser ([`escepine_console`]).
//!
//! It takes `call`'s registry and runtime flags (an approval runs the call through the same
//! governed path), and who may look as `serve --mcp http` does: `--oauth FILE` (with
//! `--oidc-client FILE` for signing in through the identity provider) or, for development,
//! `--tokens FILE`. `--sop FILE` (repeatable) names the SOPs whose runs are drawn over their
//! state machine; `--what-if DIR` a candidate policy directory replayed against the ledger on
//! `/policies`. The chain and the latest `--checkpoint` are verified at start and every
//! `--verify-every` seconds. Once listening it prints `console on http://ADDR/` on stderr;
//! SIGINT or SIGTERM stops it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use escepine_console::oidc::{Oidc, OidcClient};
use escepine_console::{Console, ConsoleConfig, WhatIf};
use escepine_identity::config::OAuthConfig;
use escepine_identity::tokens::Tokens;
use escepine_identity::verify::Verifier;
use escepine_mcp::auth::{Authenticator, OAuth};
use escepine_policy::authorize::Authorizer;

use crate::args::{async_runtime, RegistryArgs, RuntimeArgs};
use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;

/// Arguments of `escepine console`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// Where the console listens (loopback by default; port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8790")]
    listen: SocketAddr,
    /// Development bearer tokens: JSON {"<token>": "Agent::\"id\""}, typed into /login or sent
    /// as `Authorization: Bearer`.
    #[arg(long, value_name = "FILE", conflicts_with = "oauth")]
    tokens: Option<PathBuf>,
    /// OAuth 2.1 resource server (as `serve --oauth`): bearer access tokens of its issuers.
    #[arg(long, value_name = "FILE")]
    oauth: Option<PathBuf>,
    /// Sign in through an identity provider (authorization code with PKCE): JSON with
    /// `issuer`, `client_id`, `client_secret` (a secret's name, optional), `redirect_uri`
    /// (`…/login/callback`), `scope` (optional). Needs --oauth, whose issuers verify the token.
    #[arg(long, value_name = "FILE", requires = "oauth")]
    oidc_client: Option<PathBuf>,
    /// An SOP file whose runs are drawn over its state machine (repeatable).
    #[arg(long = "sop", value_name = "FILE")]
    sops: Vec<PathBuf>,
    /// Candidate Cedar policies replayed against every recorded request on /policies.
    #[arg(long, value_name = "DIR")]
    what_if: Option<PathBuf>,
    /// How often the whole chain and the latest checkpoint are verified again, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    verify_every: u64,
    /// How long a browser session lasts at most, in seconds (an access token's expiry ends
    /// it sooner).
    #[arg(long, value_name = "SECONDS", default_value_t = 8 * 3600)]
    session_ttl: u64,
    /// Mark cookies `Secure` (the console is served over TLS, by a proxy in front).
    #[arg(long)]
    secure_cookies: bool,
}

/// Serve the console until a stop signal.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    let invalid = |e: &dyn std::fmt::Display| CliError::new(exit::INVALID, e);
    if args.tokens.is_none() && args.oauth.is_none() {
        return Err(CliError::new(
            exit::USAGE,
            "`console` needs --oauth FILE (an OAuth 2.1 resource server) or, for development, \
             --tokens FILE (JSON {\"<token>\": \"Agent::\\\"id\\\"\"})",
        ));
    }
    if args.verify_every == 0 {
        return Err(CliError::new(
            exit::USAGE,
            "--verify-every: must be at least 1 second",
        ));
    }
    let mut sources = args.registry.sources();
    for sop in &args.sops {
        sources = sources.sops(sop);
    }
    let registry = crate::args::load(&sources)?;
    let sops = registry.registry().sops().to_vec();
    let entities = args.runtime.entities()?;
    let what_if = match &args.what_if {
        None => None,
        Some(dir) => {
            let binding = crate::args::bind(&registry, dir)?;
            let authorizer = Authorizer::new(&binding, registry.records(), entities.as_ref())
                .map_err(|e| CliError::new(exit::INVALID, format!("{}: {e}", dir.display())))?;
            Some(WhatIf {
                dir: dir.clone(),
                authorizer,
            })
        }
    };
    let key = match &args.runtime.public_key {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| invalid(&format!("{}: {e}", path.display())))?;
            Some(
                escepine_ledger::checkpoint::VerifierKey::parse(&text)
                    .map_err(|e| invalid(&format!("{}: {e}", path.display())))?,
            )
        }
    };
    let oauth = args
        .oauth
        .as_deref()
        .map(OAuthConfig::load)
        .transpose()
        .map_err(|e| invalid(&e))?;
    let tokens = args
        .tokens
        .as_deref()
        .map(Tokens::load)
        .transpose()
        .map_err(|e| invalid(&e))?;
    let secrets = args.runtime.run.secrets().map_err(|e| invalid(&e))?;
    let oidc = match (&args.oidc_client, &oauth) {
        (Some(path), Some(config)) => {
            let client =
                OidcClient::load(path, &|name| secrets.get(name)).map_err(|e| invalid(&e))?;
            Some(Oidc::new(client, config.resource.as_str()).map_err(|e| invalid(&e))?)
        }
        _ => None,
    };
    let _watch = args.runtime.telemetry.start(crate::telemetry::Wants {
        logs: true,
        prometheus: false,
    })?;
    let rt = async_runtime(exit::INVALID)?;
    let result: CliResult = rt.block_on(async {
        let runtime = args.runtime.build(registry, exit::INVALID).await?;
        let auth = match (tokens, oauth) {
            (Some(tokens), _) => Authenticator::Tokens(Arc::new(tokens)),
            (None, Some(config)) => {
                let verifier = Verifier::new(config.clone()).map_err(|e| invalid(&e))?;
                verifier.start();
                Authenticator::OAuth(OAuth::new(config, verifier))
            }
            (None, None) => return Err(invalid(&"no authenticator")),
        };
        let config = ConsoleConfig {
            checkpoints: args.runtime.checkpoints.clone(),
            key,
            sops,
            what_if,
            verify_every: Duration::from_secs(args.verify_every),
            oidc,
            secure_cookies: args.secure_cookies,
            session_ttl: Duration::from_secs(args.session_ttl),
            ..ConsoleConfig::new(args.runtime.ledger.clone())
        };
        let calls_on = runtime.clone();
        let console = Console::new(runtime, auth, config);
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| invalid(&format!("cannot listen on {}: {e}", args.listen)))?;
        let addr = listener.local_addr().map_err(|e| invalid(&e))?;
        {
            let c = console.clone();
            tokio::task::spawn_blocking(move || c.start_checks())
                .await
                .map_err(|e| invalid(&e))?;
        }
        console.spawn_rechecks();
        if !addr.ip().is_loopback() {
            let _ = writeln!(
                io.err,
                "warning: listening on {addr}, which is not loopback: put TLS in front (and pass --secure-cookies)"
            );
        }
        let _ = writeln!(io.err, "escepine console: {}; console on http://{addr}/", console.describe());
        let _ = io.err.flush();
        let served = console.serve(listener, crate::serve::stop_signal()).await;
        crate::args::settle(&calls_on).await;
        served.map_err(|e| invalid(&e))
    });
    rt.shutdown_timeout(Duration::from_secs(2));
    result
}
