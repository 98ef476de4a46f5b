//! The host's command line: one `stdio-json` call, or `--describe`.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use escepine_contract::CallContext;
use serde_json::Value;

use crate::exit::{EXIT_BAD_PAYLOAD, EXIT_INTERNAL, EXIT_PERMANENT, EXIT_TRANSIENT, EXIT_USAGE};
use crate::registration::{Failure, Registration};

/// Serve `tools` as this process's `main`: the command line from the environment, the payload
/// from stdin, the output on stdout, the call context from `ESCEPINE_CALL_ID` and
/// `ESCEPINE_IDEMPOTENCY_KEY`. See the [crate documentation](crate) for the protocol.
pub fn serve(tools: &[Registration]) -> ExitCode {
    let mut args = std::env::args_os();
    let program = args
        .next()
        .as_deref()
        .map(Path::new)
        .and_then(Path::file_name)
        .map_or_else(
            || "tool-host".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
    let args: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    let code = Host::new(tools).program(program).run(
        &args,
        &mut io::stdin().lock(),
        &mut io::stdout().lock(),
        &mut io::stderr().lock(),
        CallContext::from_env(),
    );
    ExitCode::from(code)
}

/// A tool host over a set of registrations, with its I/O given (so it can be driven in tests).
#[derive(Debug, Clone)]
pub struct Host<'a> {
    tools: &'a [Registration],
    program: String,
}

enum Command {
    Help,
    Describe(Option<PathBuf>),
    Call(String),
}

impl<'a> Host<'a> {
    /// A host serving `tools`.
    pub fn new(tools: &'a [Registration]) -> Self {
        Self {
            tools,
            program: "tool-host".to_string(),
        }
    }

    /// Name the program in messages (default `tool-host`).
    pub fn program(mut self, name: impl Into<String>) -> Self {
        self.program = name.into();
        self
    }

    /// Run the command line `args` (without the program name); returns the exit status.
    pub fn run(
        &self,
        args: &[String],
        stdin: &mut dyn Read,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
        cx: CallContext,
    ) -> u8 {
        let prog = &self.program;
        let mut seen = BTreeSet::new();
        for t in self.tools {
            if !seen.insert(t.id()) {
                let _ = writeln!(
                    stderr,
                    "{prog}: two tools have the id `{}`; a host serves each tool id once",
                    t.id()
                );
                return EXIT_INTERNAL;
            }
        }
        let command = match parse(args) {
            Ok(c) => c,
            Err(problem) => {
                let _ = writeln!(stderr, "{prog}: {problem}\n\n{}", self.usage());
                return EXIT_USAGE;
            }
        };
        match command {
            Command::Help => {
                let _ = writeln!(stdout, "{}", self.usage());
                0
            }
            Command::Describe(out) => self.describe(out.as_deref(), stdout, stderr),
            Command::Call(id) => self.call(&id, stdin, stdout, stderr, cx),
        }
    }

    fn ids(&self) -> String {
        self.tools
            .iter()
            .map(Registration::id)
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn usage(&self) -> String {
        let prog = &self.program;
        format!(
            "{prog}: a tool host serving {} tool(s) over stdio-json: {}\n\n\
             usage:\n  \
             {prog} <tool id>                 one call: payload JSON on stdin, output JSON on stdout\n  \
             {prog} --describe [--out DIR]    the tools' records: a JSON array, or DIR/<tool id>.json",
            self.tools.len(),
            self.ids()
        )
    }

    fn describe(&self, out: Option<&Path>, stdout: &mut dyn Write, stderr: &mut dyn Write) -> u8 {
        let prog = &self.program;
        let mut records = Vec::new();
        for t in self.tools {
            let contract = t.contract();
            if contract.endpoint.args.first() != Some(&contract.id) {
                let _ = writeln!(
                    stderr,
                    "{prog}: warning: the endpoint of `{}` passes {:?}; this host dispatches on \
                     its first argument, the tool id",
                    contract.id, contract.endpoint.args
                );
            }
            match contract.to_record() {
                Ok(r) => records.push((contract.id, r)),
                Err(e) => {
                    let _ = writeln!(
                        stderr,
                        "{prog}: the contract of `{}` has a schema that is not JSON: {e}",
                        contract.id
                    );
                    return EXIT_INTERNAL;
                }
            }
        }
        let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
        match out {
            None => {
                let all = Value::Array(records.into_iter().map(|(_, r)| r).collect());
                match writeln!(stdout, "{}", pretty(&all)) {
                    Ok(()) => 0,
                    Err(e) => {
                        let _ = writeln!(stderr, "{prog}: cannot write: {e}");
                        EXIT_PERMANENT
                    }
                }
            }
            Some(dir) => {
                let written = fs::create_dir_all(dir).and_then(|()| {
                    for (id, r) in &records {
                        fs::write(dir.join(format!("{id}.json")), pretty(r) + "\n")?;
                    }
                    Ok(())
                });
                match written {
                    Ok(()) => {
                        let _ = writeln!(
                            stderr,
                            "{prog}: wrote {} record(s) to {}",
                            records.len(),
                            dir.display()
                        );
                        0
                    }
                    Err(e) => {
                        let _ = writeln!(stderr, "{prog}: cannot write {}: {e}", dir.display());
                        EXIT_PERMANENT
                    }
                }
            }
        }
    }

    fn call(
        &self,
        id: &str,
        stdin: &mut dyn Read,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
        cx: CallContext,
    ) -> u8 {
        let prog = &self.program;
        let Some(tool) = self.tools.iter().find(|t| t.id() == id) else {
            let _ = writeln!(
                stderr,
                "{prog}: unknown tool `{id}`; this host serves: {}",
                self.ids()
            );
            return EXIT_USAGE;
        };
        let mut payload = Vec::new();
        if let Err(e) = stdin.read_to_end(&mut payload) {
            let _ = writeln!(stderr, "{prog} {id}: cannot read the payload: {e}");
            return EXIT_PERMANENT;
        }
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(stderr, "{prog} {id}: cannot start the async runtime: {e}");
                return EXIT_INTERNAL;
            }
        };
        let result = runtime.block_on(tool.call_json(&payload, cx));
        match result {
            Ok(output) => {
                let written = stdout
                    .write_all(&output)
                    .and_then(|()| stdout.write_all(b"\n"))
                    .and_then(|()| stdout.flush());
                match written {
                    Ok(()) => 0,
                    Err(e) => {
                        let _ = writeln!(stderr, "{prog} {id}: cannot write the output: {e}");
                        EXIT_PERMANENT
                    }
                }
            }
            Err(failure) => {
                let _ = writeln!(stderr, "{prog} {id}: {failure}");
                match failure {
                    Failure::Payload { .. } => EXIT_BAD_PAYLOAD,
                    Failure::Tool(e) if e.transient => EXIT_TRANSIENT,
                    Failure::Tool(_) => EXIT_PERMANENT,
                    Failure::Output { .. } => EXIT_INTERNAL,
                }
            }
        }
    }
}

fn parse(args: &[String]) -> Result<Command, String> {
    let mut describe = false;
    let mut out = None;
    let mut positional = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--describe" => describe = true,
            "--out" => match it.next() {
                Some(dir) => out = Some(PathBuf::from(dir)),
                None => return Err("`--out` needs a directory".into()),
            },
            s if s.starts_with("--out=") => out = Some(PathBuf::from(&s["--out=".len()..])),
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`")),
            s => positional.push(s.to_string()),
        }
    }
    match (describe, out, positional.as_slice()) {
        (true, out, []) => Ok(Command::Describe(out)),
        (true, _, _) => Err("`--describe` takes no tool id".into()),
        (false, Some(_), _) => Err("`--out` goes with `--describe`".into()),
        (false, None, [id]) => Ok(Command::Call(id.clone())),
        (false, None, []) => Err("no tool id given".into()),
        (false, None, _) => Err("one tool id per call".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use escepine_contract::{
        Contract, Endpoint, FailureOutcome, Filesystem, RetryPolicy, SideEffectClass, ToolError,
        ToolFn, Transport,
    };
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct In {
        n: i64,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Out {
        doubled: i64,
        key: Option<String>,
    }

    struct Marker;
    impl escepine_contract::CedarAction for Marker {
        const ACTION_ID: &'static str = "t_double";
        const IS_GROUP: bool = false;
    }

    struct Double {}
    impl escepine_contract::Tool for Double {
        type Input = In;
        type Output = Out;
        type Action = Marker;
        const CONTRACT: Contract = Contract {
            id: "t_double",
            version: "1.0.0",
            title: None,
            description: "Doubles n.",
            open_world: None,
            cedar_action: "t_double",
            action_groups: &[],
            class: SideEffectClass::ReadOnly,
            compensation: None,
            timeout_ms: 1000,
            retry: RetryPolicy {
                max_attempts: 2,
                backoff_ms: 0,
            },
            on_failure: &[FailureOutcome::Halt],
            endpoint: Endpoint {
                transport: Transport::StdioJson,
                command: "host",
                args: &["t_double"],
                sha256: None,
                image: None,
                definition_sha256: None,
                url: None,
                tool: None,
            },
            secrets: &[],
            egress: &[],
            filesystem: Filesystem::Workspace,
            isolation: escepine_contract::Isolation::Namespaces,
            read_only: &[],
            input_schema: r#"{"type":"object"}"#,
            output_schema: r#"{"type":"object"}"#,
        };
    }
    impl ToolFn for Double {
        type Tool = Self;
        fn call(
            input: In,
            cx: CallContext,
        ) -> escepine_contract::LocalBoxFuture<Result<Out, ToolError>> {
            Box::pin(async move {
                match input.n {
                    13 => Err(ToolError::transient("unlucky, try again")),
                    0 => Err(ToolError::permanent("zero")),
                    n => Ok(Out {
                        doubled: 2 * n,
                        key: cx.idempotency_key,
                    }),
                }
            })
        }
    }

    const TOOLS: [Registration; 1] = [Registration::of::<Double>()];

    fn run(args: &[&str], stdin: &str) -> (u8, String, String) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = Host::new(&TOOLS).run(
            &args,
            &mut stdin.as_bytes(),
            &mut out,
            &mut err,
            CallContext::new(Some("c1".into()), Some("k1".into())),
        );
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn a_call_writes_the_output_and_sees_the_idempotency_key() {
        let (code, out, _) = run(&["t_double"], r#"{"n": 21}"#);
        assert_eq!(code, 0);
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap(),
            serde_json::json!({"doubled": 42, "key": "k1"})
        );
    }

    #[test]
    fn failures_map_to_exit_statuses() {
        assert_eq!(run(&["t_double"], r#"{"n": 13}"#).0, EXIT_TRANSIENT);
        assert_eq!(run(&["t_double"], r#"{"n": 0}"#).0, EXIT_PERMANENT);
        let (code, out, err) = run(&["t_double"], r#"{"n": 1, "extra": true}"#);
        assert_eq!(code, EXIT_BAD_PAYLOAD);
        assert!(out.is_empty());
        assert!(
            err.contains("does not match the input type of `t_double`"),
            "{err}"
        );
        assert!(err.contains("extra"), "{err}");
        assert_eq!(run(&["t_nope"], "{}").0, EXIT_USAGE);
        assert_eq!(run(&[], "").0, EXIT_USAGE);
        assert_eq!(run(&["--frob"], "").0, EXIT_USAGE);
    }

    #[test]
    fn a_linked_host_serves_the_tools_its_name_covers() {
        let sets: &[&[Registration]] = &[&TOOLS];
        assert_eq!(crate::linked::served_by("host", sets).len(), 1);
        assert!(crate::linked::served_by("other-host", sets).is_empty());
        assert_eq!(crate::linked::contracts(&TOOLS)[0].id, "t_double");
        // A host this program does not link is a usage error, not a call of another host.
        assert_eq!(
            crate::linked::serve_linked("other-host", &["t_double".into()], sets),
            EXIT_USAGE
        );
    }

    #[test]
    fn describe_prints_records_or_writes_files() {
        let (code, out, _) = run(&["--describe"], "");
        assert_eq!(code, 0);
        let all: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(all[0]["tool_id"], "t_double");
        assert_eq!(all[0]["endpoint"]["args"][0], "t_double");

        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("records");
        let (code, _, err) = run(&["--describe", "--out", target.to_str().unwrap()], "");
        assert_eq!(code, 0, "{err}");
        let one: Value =
            serde_json::from_str(&fs::read_to_string(target.join("t_double.json")).unwrap())
                .unwrap();
        assert_eq!(one, all[0]);
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let tools = [Registration::of::<Double>(), Registration::of::<Double>()];
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = Host::new(&tools).run(
            &["--describe".to_string()],
            &mut io::empty(),
            &mut out,
            &mut err,
            CallContext::default(),
        );
        assert_eq!(code, EXIT_INTERNAL);
    }
}
