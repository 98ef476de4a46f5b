//! Tool crates linked into the program that runs their tools, instead of built as binaries of
//! their own (see [`escepine_contract::linked`]).
//!
//! The tool crate exports its registrations (`pub const TOOLS: &[Registration]`); the agent
//! depends on it twice, as a dependency and a build-dependency:
//!
//! ```ignore
//! // build.rs: the linked tools become records of the agent's registry.
//! escepine_registry_build::Builder::new()
//!     .linked_tools(escepine_toolhost::linked::contracts(word_tools::TOOLS))
//!     .policies("policies")
//!     .compile()?;
//!
//! // main.rs, first thing: a call the runtime started this program for is served here.
//! escepine_toolhost::linked::dispatch(&[word_tools::TOOLS]);
//! ```

use escepine_contract::Contract;

use crate::registration::Registration;

/// The contracts of `tools`, for `Builder::linked_tools` in the agent's `build.rs`.
pub fn contracts(tools: &[Registration]) -> Vec<Contract> {
    tools.iter().map(Registration::contract).collect()
}

/// The tools among `sets` whose endpoint names `host`.
pub(crate) fn served_by(host: &str, sets: &[&[Registration]]) -> Vec<Registration> {
    sets.iter()
        .flat_map(|set| set.iter())
        .filter(|t| t.contract().endpoint.command == host)
        .copied()
        .collect()
}

/// When this process was started to serve a linked tool host (its first argument is
/// [`escepine_contract::linked::FLAG`], the host's name second), serve that one call with the
/// tools of `sets` the host names, and exit with the call's status. Otherwise return at once.
///
/// Call it first in `main` (after `escepine_sandbox::init::dispatch`, before anything else
/// starts): the executors start the program this way for every call of a linked tool, in its
/// sandbox.
#[cfg(feature = "host")]
pub fn dispatch(sets: &[&[Registration]]) {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(escepine_contract::linked::FLAG)) {
        return;
    }
    let host = args
        .next()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    std::process::exit(i32::from(serve_linked(&host, &rest, sets)));
}

/// One call of the linked host `host`: the status [`dispatch`] exits with.
#[cfg(feature = "host")]
pub(crate) fn serve_linked(host: &str, args: &[String], sets: &[&[Registration]]) -> u8 {
    use std::io::{self, Write};
    let tools = served_by(host, sets);
    if tools.is_empty() {
        let _ = writeln!(
            io::stderr(),
            "{}: this program links no tool host named `{host}`",
            escepine_contract::linked::FLAG
        );
        return crate::EXIT_USAGE;
    }
    crate::Host::new(&tools).program(host).run(
        args,
        &mut io::stdin().lock(),
        &mut io::stdout().lock(),
        &mut io::stderr().lock(),
        escepine_contract::CallContext::from_env(),
    )
}
