//! The registered contract of a tool, in a form that can be a `const`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The inherent effect class of a tool; it decides how a saga rolls the tool's step back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SideEffectClass {
    /// No external state mutated: nothing to undo.
    ReadOnly,
    /// Writes that carry a declared inverse, run during rollback.
    Compensatable,
    /// Writes that are later versions of prior state: rollback marks them superseded.
    Supersede,
}

impl SideEffectClass {
    /// Every class, in declaration order.
    pub const ALL: [SideEffectClass; 3] = [Self::ReadOnly, Self::Compensatable, Self::Supersede];

    /// The record spelling, which is also the id of the class's Cedar action group.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::Compensatable => "compensatable",
            Self::Supersede => "supersede",
        }
    }

    /// Parse the record spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// What an SOP step may do when the tool's call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureOutcome {
    /// Stop the run.
    Halt,
    /// Stop the run and escalate.
    HaltAndEscalate,
    /// Roll the run's earlier steps back by their classes.
    Compensate,
}

impl FailureOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [FailureOutcome; 3] = [Self::Halt, Self::HaltAndEscalate, Self::Compensate];

    /// The record spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Halt => "halt",
            Self::HaltAndEscalate => "halt_and_escalate",
            Self::Compensate => "compensate",
        }
    }

    /// Parse the record spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// The retry budget of a tool: only transient failures are retried.
///
/// The budget is bounded ([`RetryPolicy::MAX_ATTEMPTS`], [`RetryPolicy::MAX_BACKOFF_MS`]), and
/// so is every call: [`RetryPolicy::deadline_ms`] is the longest a call of the tool may take,
/// every attempt at its timeout and every delay at its longest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// Base delay before the second attempt; later delays grow exponentially.
    pub backoff_ms: u64,
}

/// Why a retry budget is refused ([`RetryPolicy::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryBoundError {
    /// `max_attempts` is 0.
    NoAttempt,
    /// `max_attempts` is above [`RetryPolicy::MAX_ATTEMPTS`].
    TooManyAttempts(u64),
    /// `backoff_ms` is above [`RetryPolicy::MAX_BACKOFF_MS`].
    BackoffTooLong(u64),
}

impl fmt::Display for RetryBoundError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAttempt => write!(
                f,
                "`max_attempts` is 0: a tool is attempted at least once (1 means no retry)"
            ),
            Self::TooManyAttempts(n) => write!(
                f,
                "`max_attempts` is {n}; at most {} attempts are allowed (a call's deadline \
                 grows with every attempt)",
                RetryPolicy::MAX_ATTEMPTS
            ),
            Self::BackoffTooLong(ms) => write!(
                f,
                "`backoff_ms` is {ms}; at most {} ms are allowed",
                RetryPolicy::MAX_BACKOFF_MS
            ),
        }
    }
}

impl std::error::Error for RetryBoundError {}

impl RetryPolicy {
    /// A policy of at most `max_attempts` attempts with a base backoff of `backoff_ms` (as
    /// declared; [`check`](Self::check) holds them to the bounds).
    pub const fn new(max_attempts: u32, backoff_ms: u64) -> Self {
        Self {
            max_attempts,
            backoff_ms,
        }
    }

    /// The most attempts a tool may declare.
    pub const MAX_ATTEMPTS: u32 = 10;
    /// The longest base backoff a tool may declare.
    pub const MAX_BACKOFF_MS: u64 = 60_000;
    /// Exponential growth stops here (or at `backoff_ms`, when that is longer).
    pub const DELAY_CAP_MS: u64 = 30_000;
    /// The jitter multiplies a delay by a factor in `[1, JITTER_MAX)`.
    pub const JITTER_MAX: f64 = 1.5;

    /// Check a declared budget against the bounds: the one rule the record check and the
    /// macros both apply.
    ///
    /// # Errors
    /// [`RetryBoundError`] naming the field out of bounds.
    pub fn check(max_attempts: u64, backoff_ms: u64) -> Result<(), RetryBoundError> {
        if max_attempts == 0 {
            return Err(RetryBoundError::NoAttempt);
        }
        if max_attempts > u64::from(Self::MAX_ATTEMPTS) {
            return Err(RetryBoundError::TooManyAttempts(max_attempts));
        }
        if backoff_ms > Self::MAX_BACKOFF_MS {
            return Err(RetryBoundError::BackoffTooLong(backoff_ms));
        }
        Ok(())
    }

    /// The delay before attempt `attempt + 1`, before jitter: `backoff · 2^(attempt-1)`, capped
    /// at [`Self::DELAY_CAP_MS`] or at `backoff_ms` when that is longer (so a delay is never
    /// shorter than the declared backoff).
    pub fn base_delay_ms(&self, attempt: u32) -> u64 {
        let grown = self
            .backoff_ms
            .saturating_mul(1u64 << attempt.saturating_sub(1).min(20));
        grown.min(Self::DELAY_CAP_MS.max(self.backoff_ms))
    }

    /// The longest delay before attempt `attempt + 1`, jitter included.
    pub fn max_delay_ms(&self, attempt: u32) -> u64 {
        (self.base_delay_ms(attempt) as f64 * Self::JITTER_MAX).ceil() as u64
    }

    /// The longest a call may take: every attempt at `timeout_ms` and every delay between them
    /// at its longest. The runtime stops a call at this deadline, whatever its attempts do.
    pub fn deadline_ms(&self, timeout_ms: u64) -> u64 {
        let attempts = self.max_attempts.max(1);
        let delays: u64 = (1..attempts)
            .map(|a| self.max_delay_ms(a))
            .fold(0, u64::saturating_add);
        timeout_ms
            .saturating_mul(u64::from(attempts))
            .saturating_add(delays)
    }
}

/// How the sandbox talks to the tool's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Transport {
    /// Payload JSON on stdin, output JSON on stdout, exit 75 for a transient failure.
    #[serde(rename = "stdio-json")]
    StdioJson,
    /// An MCP server over stdio: `initialize`, `tools/call`, shut down.
    #[serde(rename = "mcp-stdio")]
    McpStdio,
    /// A remote MCP server over streamable HTTP, called by the runtime's own MCP client (no
    /// local process, so no sandbox): `endpoint.url` and `endpoint.tool` name it.
    #[serde(rename = "mcp-http")]
    McpHttp,
}

impl Transport {
    /// The record spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::StdioJson => "stdio-json",
            Self::McpStdio => "mcp-stdio",
            Self::McpHttp => "mcp-http",
        }
    }

    /// Parse the record spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::StdioJson, Self::McpStdio, Self::McpHttp]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

/// File-system access of a sandbox. Only the ephemeral workspace exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Filesystem {
    /// Nothing beyond the sandbox's own ephemeral workspace.
    Workspace,
}

impl Filesystem {
    /// The record spelling.
    pub const fn as_str(self) -> &'static str {
        "workspace"
    }
}

/// The isolation tier a tool's sandbox runs on, weakest first (`Ord` follows strength).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Linux namespaces, a cgroup, seccomp and Landlock on the host's kernel (the default).
    #[default]
    Namespaces,
    /// gVisor (`runsc`): the tool's system calls are served by a user-space kernel, so a host
    /// kernel bug in the tool's reach is not an escape.
    Gvisor,
}

impl Isolation {
    /// Every tier, weakest first.
    pub const ALL: [Isolation; 2] = [Self::Namespaces, Self::Gvisor];

    /// The record spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Namespaces => "namespaces",
            Self::Gvisor => "gvisor",
        }
    }

    /// The tier spelled `s` in a record.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the sandbox obtains and invokes the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The wire protocol.
    pub transport: Transport,
    /// An absolute path, a name on `PATH`, or a binary the workspace declares; with an
    /// image, a path inside it (empty: the image's `Entrypoint` and `Cmd`).
    pub command: &'static str,
    /// Arguments passed to the command.
    pub args: &'static [&'static str],
    /// The binary's expected SHA-256 digest, lower-case hex.
    pub sha256: Option<&'static str>,
    /// The OCI image the sandbox runs on, as written (pinned by digest; [`crate::ImageRef`]
    /// parses it).
    pub image: Option<&'static str>,
    /// For `mcp-stdio` and `mcp-http`: SHA-256 (lower-case hex) of the tool definition the
    /// server listed.
    pub definition_sha256: Option<&'static str>,
    /// For `mcp-http`: the remote server's URL (`https://…`, plain `http` only on loopback).
    pub url: Option<&'static str>,
    /// For `mcp-http`: the server's name for the tool.
    pub tool: Option<&'static str>,
}

impl Endpoint {
    /// What generated endpoints leave out, as `..Endpoint::OMITTED`: no arguments, no binary
    /// digest, no image, no definition digest (its transport and command are placeholders).
    pub const OMITTED: Endpoint = Endpoint {
        transport: Transport::StdioJson,
        command: "",
        args: &[],
        sha256: None,
        image: None,
        definition_sha256: None,
        url: None,
        tool: None,
    };
}

/// The declared inverse of a compensatable tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compensation {
    /// The inverse tool's id.
    pub tool: &'static str,
    /// Inverse input field → JSON pointer into `{"input": …, "output": …}` of this tool's call.
    pub map: &'static [(&'static str, &'static str)],
}

/// A tool's whole registered contract, as constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contract {
    /// The tool id (`^[a-z][a-z0-9_]*$`).
    pub id: &'static str,
    /// The semver version.
    pub version: &'static str,
    /// A short human-readable name (MCP's `title`).
    pub title: Option<&'static str>,
    /// What the planner reads.
    pub description: &'static str,
    /// Whether the tool reaches an open world of external entities (MCP's `openWorldHint`).
    pub open_world: Option<bool>,
    /// The id of the tool's Cedar action: `Action::"<cedar_action>"`.
    pub cedar_action: &'static str,
    /// Extra action groups the tool's action joins, besides its class group.
    pub action_groups: &'static [&'static str],
    /// The side-effect class.
    pub class: SideEffectClass,
    /// The declared inverse (compensatable tools only).
    pub compensation: Option<Compensation>,
    /// Bound of each attempt, in milliseconds.
    pub timeout_ms: u64,
    /// Retry budget for transient failures.
    pub retry: RetryPolicy,
    /// Outcomes an SOP step may choose on failure.
    pub on_failure: &'static [FailureOutcome],
    /// How the sandbox runs the tool.
    pub endpoint: Endpoint,
    /// Names of the secrets injected into the sandbox (never values).
    pub secrets: &'static [&'static str],
    /// Egress allowlist entries of the sandbox profile.
    pub egress: &'static [&'static str],
    /// File-system access of the sandbox profile.
    pub filesystem: Filesystem,
    /// The sandbox's isolation tier.
    pub isolation: Isolation,
    /// Host paths the sandbox binds read-only at the same path.
    pub read_only: &'static [&'static str],
    /// The canonical input JSON Schema text: the very bytes the input gate validates against.
    pub input_schema: &'static str,
    /// The canonical output JSON Schema text: the very bytes the output gate validates against.
    pub output_schema: &'static str,
}

impl Contract {
    /// What generated contracts leave out, as `..Contract::OMITTED`: no title, no
    /// `open_world` hint, no extra action groups, no compensation, no secrets, no egress, no
    /// read-only paths. Its other fields (an empty id, a `0.0.0` version, empty schemas) are
    /// placeholders every generated contract overwrites; it is not a contract of any tool.
    pub const OMITTED: Contract = Contract {
        id: "",
        version: "0.0.0",
        title: None,
        description: "",
        open_world: None,
        cedar_action: "",
        action_groups: &[],
        class: SideEffectClass::ReadOnly,
        compensation: None,
        timeout_ms: 0,
        retry: RetryPolicy {
            max_attempts: 1,
            backoff_ms: 0,
        },
        on_failure: &[],
        endpoint: Endpoint::OMITTED,
        secrets: &[],
        egress: &[],
        filesystem: Filesystem::Workspace,
        isolation: Isolation::Namespaces,
        read_only: &[],
        input_schema: "",
        output_schema: "",
    };

    /// The contract as a tool record (the JSON form `escepine check` reads).
    ///
    /// # Errors
    /// Fails only if an embedded schema text is not JSON, which generated code never produces.
    pub fn to_record(&self) -> Result<Value, serde_json::Error> {
        let mut record = Map::new();
        record.insert("tool_id".into(), json!(self.id));
        record.insert("version".into(), json!(self.version));
        if let Some(t) = self.title {
            record.insert("title".into(), json!(t));
        }
        record.insert("description".into(), json!(self.description));
        if let Some(o) = self.open_world {
            record.insert("open_world".into(), json!(o));
        }
        record.insert(
            "input_schema".into(),
            serde_json::from_str(self.input_schema)?,
        );
        record.insert(
            "output_schema".into(),
            serde_json::from_str(self.output_schema)?,
        );
        record.insert(
            "cedar_action".into(),
            json!(format!("Action::\"{}\"", self.cedar_action)),
        );
        if !self.action_groups.is_empty() {
            record.insert("action_groups".into(), json!(self.action_groups));
        }
        record.insert("side_effect_class".into(), json!(self.class.as_str()));
        if let Some(c) = &self.compensation {
            let map: Map<String, Value> = c
                .map
                .iter()
                .map(|(k, v)| ((*k).to_string(), json!(v)))
                .collect();
            record.insert("compensation".into(), json!({ "tool": c.tool, "map": map }));
        }
        record.insert("accepts_credentials".into(), json!(false));
        record.insert("timeout_ms".into(), json!(self.timeout_ms));
        record.insert("retry".into(), serde_json::to_value(self.retry)?);
        record.insert(
            "on_failure".into(),
            json!(self
                .on_failure
                .iter()
                .map(|o| o.as_str())
                .collect::<Vec<_>>()),
        );
        let mut endpoint = Map::new();
        endpoint.insert("transport".into(), json!(self.endpoint.transport.as_str()));
        if let Some(image) = self.endpoint.image {
            endpoint.insert("image".into(), json!(image));
        }
        if self.endpoint.image.is_none() || !self.endpoint.command.is_empty() {
            endpoint.insert("command".into(), json!(self.endpoint.command));
        }
        if !self.endpoint.args.is_empty() {
            endpoint.insert("args".into(), json!(self.endpoint.args));
        }
        if let Some(d) = self.endpoint.sha256 {
            endpoint.insert("sha256".into(), json!(d));
        }
        if let Some(d) = self.endpoint.definition_sha256 {
            endpoint.insert("definition_sha256".into(), json!(d));
        }
        record.insert("endpoint".into(), Value::Object(endpoint));
        record.insert("auth".into(), json!({ "secrets": self.secrets }));
        let mut profile = Map::new();
        profile.insert("egress".into(), json!(self.egress));
        profile.insert("filesystem".into(), json!(self.filesystem.as_str()));
        if self.isolation != Isolation::default() {
            profile.insert("isolation".into(), json!(self.isolation.as_str()));
        }
        if !self.read_only.is_empty() {
            profile.insert("read_only".into(), json!(self.read_only));
        }
        record.insert("sandbox_profile".into(), Value::Object(profile));
        Ok(Value::Object(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Contract = Contract {
        id: "srv_time",
        version: "1.0.0",
        title: None,
        description: "Tell the time.",
        open_world: None,
        cedar_action: "srv_time",
        action_groups: &[],
        class: SideEffectClass::ReadOnly,
        compensation: None,
        timeout_ms: 1_000,
        retry: RetryPolicy {
            max_attempts: 1,
            backoff_ms: 0,
        },
        on_failure: &[FailureOutcome::Halt],
        endpoint: Endpoint {
            transport: Transport::McpStdio,
            command: "/usr/bin/python3",
            args: &[],
            sha256: None,
            image: None,
            definition_sha256: None,
            url: None,
            tool: None,
        },
        secrets: &[],
        egress: &[],
        filesystem: Filesystem::Workspace,
        isolation: Isolation::Namespaces,
        read_only: &[],
        input_schema: "{}",
        output_schema: "{}",
    };

    #[test]
    fn the_record_carries_image_definition_read_only_title_and_open_world() {
        let plain = BASE.to_record().expect("JSON");
        assert!(plain.get("title").is_none() && plain.get("open_world").is_none());
        assert_eq!(
            plain["endpoint"],
            json!({"transport": "mcp-stdio", "command": "/usr/bin/python3"})
        );
        assert!(plain["sandbox_profile"].get("read_only").is_none());

        let image = "oci:/var/lib/images/time@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let full = Contract {
            title: Some("Time"),
            open_world: Some(false),
            endpoint: Endpoint {
                command: "",
                image: Some(image),
                definition_sha256: Some(
                    "abababababababababababababababababababababababababababababababab",
                ),
                ..BASE.endpoint
            },
            read_only: &["/usr/lib/python3"],
            ..BASE
        }
        .to_record()
        .expect("JSON");
        assert_eq!(full["title"], json!("Time"));
        assert_eq!(full["open_world"], json!(false));
        assert_eq!(
            full["endpoint"],
            json!({
                "transport": "mcp-stdio",
                "image": image,
                "definition_sha256":
                    "abababababababababababababababababababababababababababababababab",
            })
        );
        assert_eq!(
            full["sandbox_profile"]["read_only"],
            json!(["/usr/lib/python3"])
        );
    }

    #[test]
    fn retry_bounds_and_the_deadline() {
        assert_eq!(RetryPolicy::check(0, 0), Err(RetryBoundError::NoAttempt));
        assert_eq!(RetryPolicy::check(10, 60_000), Ok(()));
        assert_eq!(
            RetryPolicy::check(11, 0),
            Err(RetryBoundError::TooManyAttempts(11))
        );
        assert_eq!(
            RetryPolicy::check(u64::from(u32::MAX), 0),
            Err(RetryBoundError::TooManyAttempts(u64::from(u32::MAX)))
        );
        assert_eq!(
            RetryPolicy::check(1, 60_001),
            Err(RetryBoundError::BackoffTooLong(60_001))
        );
        let p = RetryPolicy {
            max_attempts: 3,
            backoff_ms: 50,
        };
        assert_eq!(p.base_delay_ms(1), 50);
        assert_eq!(p.base_delay_ms(2), 100);
        assert_eq!(p.deadline_ms(5_000), 15_000 + 75 + 150);
        // Growth stops at 30 s, or at the backoff when that is longer.
        let slow = RetryPolicy {
            max_attempts: 10,
            backoff_ms: 60_000,
        };
        assert_eq!(slow.base_delay_ms(9), 60_000);
        assert_eq!(slow.deadline_ms(1_000), 10_000 + 9 * 90_000);
        let fast = RetryPolicy {
            max_attempts: 10,
            backoff_ms: 1_000,
        };
        assert_eq!(fast.base_delay_ms(9), 30_000);
        // One attempt: no delay.
        let once = RetryPolicy {
            max_attempts: 1,
            backoff_ms: 1_000,
        };
        assert_eq!(once.deadline_ms(7), 7);
    }
}
