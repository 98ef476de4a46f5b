//! `escepine-catalog <tool_id>`: one catalog tool over `stdio-json`, the process's stdin and
//! stdout (see the [crate documentation](crate) for the tools, their configuration and their
//! exit statuses).

use std::io::{Read, Write};
use std::process::ExitCode;

use crate::{run, Context, ToolError, TOOLS};

/// The largest payload read from stdin.
const STDIN_LIMIT: u64 = 32 * 1024 * 1024;

/// `escepine-catalog <tool_id>` with the process's arguments: reads the payload from stdin,
/// runs the tool, writes its output to stdout; the exit code says how it ended.
pub fn main() -> ExitCode {
    main_with(std::env::args().skip(1))
}

/// [`main`] with `args` (the arguments after the program name): what a program that serves
/// the catalog's tools from its own binary calls, when started as `escepine-catalog`.
pub fn main_with(args: impl IntoIterator<Item = String>) -> ExitCode {
    let mut args = args.into_iter();
    let tool = args.next().unwrap_or_default();
    if tool.is_empty() || tool == "--help" || tool == "-h" {
        eprintln!(
            "usage: escepine-catalog <tool_id> < payload.json\ntools: {}",
            TOOLS.join(", ")
        );
        return exit(&ToolError::Usage("no tool named".into()));
    }
    if let Some(extra) = args.next() {
        return fail(
            &tool,
            &ToolError::Usage(format!("unexpected argument `{extra}`")),
        );
    }
    match serve(&tool) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&tool, &e),
    }
}

fn serve(tool: &str) -> Result<(), ToolError> {
    if !TOOLS.contains(&tool) {
        return Err(ToolError::Usage(format!(
            "unknown tool `{tool}` (one of: {})",
            TOOLS.join(", ")
        )));
    }
    let mut text = Vec::new();
    std::io::stdin()
        .take(STDIN_LIMIT + 1)
        .read_to_end(&mut text)
        .map_err(|e| ToolError::Input(format!("cannot read stdin: {e}")))?;
    if text.len() as u64 > STDIN_LIMIT {
        return Err(ToolError::Input(format!(
            "the payload is larger than {STDIN_LIMIT} bytes"
        )));
    }
    let payload = serde_json::from_slice(&text)
        .map_err(|e| ToolError::Input(format!("the payload is not JSON: {e}")))?;
    let ctx = Context::from_env()?;
    let output = run(tool, payload, &ctx)?;
    let mut out = serde_json::to_vec(&output)
        .map_err(|e| ToolError::Permanent(format!("cannot encode the output: {e}")))?;
    out.push(b'\n');
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(&out)
        .and_then(|()| stdout.flush())
        .map_err(|e| ToolError::Permanent(format!("cannot write stdout: {e}")))
}

fn fail(tool: &str, e: &ToolError) -> ExitCode {
    eprintln!("escepine-catalog {tool}: {e}");
    exit(e)
}

fn exit(e: &ToolError) -> ExitCode {
    // Exit codes are 1..=78, so they fit in a u8.
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(1))
}
