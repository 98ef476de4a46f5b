//! The catalog's typed client, generated at build time.
//!
//! `build.rs` runs `escepine_registry_build::Builder` over `tools/records`, `tools/policies` and
//! `tools/envelope.json`: every registration rule and Cedar strict validation apply, and a
//! rejected record fails this crate's build. The generated file gives one module per tool
//! (`firecrawl_scrape::Input`, `firecrawl_scrape::Output`, `firecrawl_scrape::Tool`), the Cedar
//! action markers (`actions::page_read`), `ToolId`, and the `Client` trait with one typed method
//! per tool. A call site that names a field the record does not declare does not compile.
//!
//! The calls below go through [`DryRun`], an [`Invoke`] that prints what would be called and
//! executes nothing: the governed runtime (Cedar, sandbox, ledger) plugs in at the same seam.
//!
//! The registry itself is compiled in as `catalog::REGISTRY` (every record, policy, schema,
//! envelope and SOP file the build checked, embedded), so nothing under `tools/` is read at
//! run time. The catalog's SOPs (`tools/sops`) are compiled too: `sops::research` has a `State` enum with
//! the declared transitions and one step type per execution state, whose payload is its tool's
//! `Input`. [`propose`] is generic over the step, so handing the step `research::Read` a
//! `web_search::Input` instead of a `firecrawl_scrape::Input` does not compile.

#![deny(warnings, missing_docs)]

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use escepine_contract::{CedarAction, Invoke, Principal, SopDefinition, SopStep, Tool};

/// The code `registry-build` generated from `tools/records`.
mod catalog {
    escepine_contract::include_tools!();
}

use catalog::sops::research;
use catalog::{firecrawl_scrape, web_search, Client, ToolId};

/// An [`Invoke`] that prints the call it would make — tool, version, Cedar action, principal,
/// payload JSON — and executes nothing.
struct DryRun;

/// Why a dry-run call ended without an output.
#[derive(Debug)]
enum DryRunError {
    /// The payload did not serialize (generated types always do; kept for honesty).
    Serialize(serde_json::Error),
    /// A dry run never executes: there is no output to return.
    NotExecuted {
        /// The tool that would have been called.
        tool: &'static str,
    },
}

impl fmt::Display for DryRunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Serialize(e) => write!(f, "payload does not serialize: {e}"),
            Self::NotExecuted { tool } => write!(f, "dry run: `{tool}` was not executed"),
        }
    }
}

impl Error for DryRunError {}

impl Invoke for DryRun {
    type Error = DryRunError;

    fn invoke_with_files<T: Tool>(
        &self,
        principal: &Principal,
        input: T::Input,
        _files: escepine_contract::WorkspaceFiles,
    ) -> impl Future<Output = Result<T::Output, Self::Error>> + Send {
        let contract = T::CONTRACT;
        let payload = serde_json::to_string(&input);
        let principal = principal.to_string();
        async move {
            let payload = payload.map_err(DryRunError::Serialize)?;
            println!(
                "[dry run] would call {} {} as {principal} (Cedar action Action::{:?}, class {}, \
                 timeout {} ms, {} attempt(s))",
                contract.id,
                contract.version,
                <T::Action as CedarAction>::ACTION_ID,
                contract.class.as_str(),
                contract.timeout_ms,
                contract.retry.max_attempts,
            );
            println!("[dry run]   payload {payload}");
            Err(DryRunError::NotExecuted { tool: contract.id })
        }
    }
}

/// Drive a future to completion on this thread (the dry run's futures are ready at once).
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}

/// Propose the payload of one SOP step: typed by the step, so only its tool's `Input` fits.
/// Prints the proposal (a dry run: nothing is executed).
fn propose<S: SopStep>(_step: S, input: <S::Tool as Tool>::Input) -> Result<(), Box<dyn Error>> {
    let payload = serde_json::to_string(&input)?;
    println!(
        "[dry run] SOP {} step `{}` would propose to {} {payload} (on failure: {}, then `{}`)",
        S::SOP_ID,
        S::STATE,
        <S::Tool as Tool>::CONTRACT.id,
        S::ON_FAILURE.as_str(),
        S::NEXT,
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    // The registry itself is compiled in too: the very files the build checked, read from
    // the binary, not from `tools/` (`escepine_policy::embedded::load` makes it a registry).
    let embedded = &catalog::REGISTRY;
    println!(
        "registry compiled in: {} records, {} policy and schema files, {} SOP(s), envelope {}",
        embedded.records.len(),
        embedded.policies.len(),
        embedded.sops.len(),
        if embedded.envelope.is_some() {
            "yes"
        } else {
            "no"
        },
    );
    println!("{} tools compiled from tools/records:", ToolId::ALL.len());
    for id in ToolId::ALL {
        let c = id.contract();
        println!("  {id:<22} {:<8} {}", c.version, c.class.as_str());
    }

    let client = DryRun;
    let researcher = Principal::agent("researcher");

    // The payload types are the records' schemas: `url` is a parsed URL, and a misspelled or
    // renamed field is a compile error here, not a rejected call at run time.
    let page = block_on(client.firecrawl_scrape(
        &researcher,
        firecrawl_scrape::Input {
            url: "https://example.com".parse()?,
        },
    ));
    match page {
        Ok(page) => println!("{} ({} bytes)", page.url, page.markdown.len()),
        Err(e) => println!("{e}"),
    }

    let results = block_on(client.web_search(
        &researcher,
        web_search::Input {
            query: "rust sandboxing".into(),
            max_results: std::num::NonZeroU64::new(5),
        },
    ));
    match results {
        Ok(found) => {
            for r in found.results {
                println!("{} — {}", r.title, r.url);
            }
        }
        Err(e) => println!("{e}"),
    }

    println!(
        "SOP {} {} starts at `{}`:",
        research::Sop::ID,
        research::Sop::VERSION,
        research::State::START
    );
    for state in research::State::ALL {
        let next: Vec<&str> = state.successors().iter().map(|s| s.name()).collect();
        println!("  {state:<12} -> {}", next.join(", "));
    }
    // Each step takes exactly its tool's payload type.
    propose(
        research::Search,
        web_search::Input {
            query: "rust sandboxing".into(),
            max_results: std::num::NonZeroU64::new(5),
        },
    )?;
    propose(
        research::Read,
        firecrawl_scrape::Input {
            url: "https://example.com".parse()?,
        },
    )?;
    Ok(())
}
