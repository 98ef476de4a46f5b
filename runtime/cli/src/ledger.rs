//! `escepine ledger verify PATH`, `escepine ledger show PATH [--run ID] [--disagreements |
//! --waiting]`, and
//! the commands of checkpoints and proofs (`keygen`, `checkpoint`, `prove`, in [`proofs`]).

mod proofs;

use std::collections::HashMap;
use std::path::PathBuf;

use escepine_ledger::calls::{self, recorded::Recorded, state::CallState, Call};
use escepine_ledger::entry::{iso8601, Entry};
use escepine_ledger::error::LedgerError;
use escepine_ledger::location::LedgerLocation;
use escepine_ledger::record::{Attempt, Outcome, Record};
use escepine_ledger::verify::VerifyError;

use crate::error::{CliError, CliResult};
use crate::exit::{self, LEDGER_UNREADABLE as UNREADABLE};
use crate::io::Io;

/// Arguments of `escepine ledger`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Recompute the hash chain; name the first changed, removed, inserted or reordered entry;
    /// with `--checkpoint`, check the chain against signed checkpoints.
    /// Exit 0 intact, 1 tampered, 2 unreadable.
    Verify {
        /// The ledger: a SQLite file (opened read-only) or a PostgreSQL database
        /// (`postgres://user:password@host:port/db`, only read).
        #[arg(value_name = "PATH|URL")]
        path: LedgerLocation,
        /// A head hash recorded elsewhere: the chain must contain it (shows entries cut from its end).
        #[arg(long, value_name = "HASH")]
        head: Option<String>,
        /// A signed checkpoint (`ledger checkpoint`): the chain must hold the entries it covers,
        /// unchanged. Given twice (OLD, NEW), NEW is also proven consistent with OLD.
        #[arg(long, value_name = "FILE", requires = "public_key")]
        checkpoint: Vec<PathBuf>,
        /// The verifier key (`verifier.pub` of `ledger keygen`) the checkpoints are signed with.
        #[arg(long, value_name = "FILE", requires = "checkpoint")]
        public_key: Option<PathBuf>,
    },
    /// Create DIR holding a new Ed25519 checkpoint key: `signer.key` (private, mode 0600) and
    /// `verifier.pub`. Prints the verifier key.
    Keygen {
        /// The key's name, also the checkpoints' origin (e.g. `example.com/escepine/prod`).
        #[arg(long, value_name = "NAME")]
        name: String,
        /// The directory to create (new or empty).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Print the signed checkpoint (C2SP tlog-checkpoint) of the verified chain: origin, tree
    /// size, root. Nothing is written into the ledger. Exit 0, 1 tampered, 2 unreadable.
    Checkpoint {
        /// The ledger: a SQLite file (opened read-only) or a PostgreSQL database
        /// (`postgres://user:password@host:port/db`, only read).
        #[arg(value_name = "PATH|URL")]
        path: LedgerLocation,
        /// The signer key (`signer.key` of `ledger keygen`).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
    },
    /// Print the inclusion proofs of one call's entries as JSON: tree size, root, and per entry
    /// its seq, leaf hash and audit path. Exit 0, 1 tampered or unknown call, 2 unreadable.
    Prove {
        /// The ledger: a SQLite file (opened read-only) or a PostgreSQL database
        /// (`postgres://user:password@host:port/db`, only read).
        #[arg(value_name = "PATH|URL")]
        path: LedgerLocation,
        /// The call whose intent and outcome are proven.
        #[arg(required_unless_present = "consistency")]
        call_id: Option<String>,
        /// Prove against the tree of the first N entries (an earlier checkpoint's size).
        #[arg(long, value_name = "N")]
        size: Option<u64>,
        /// Instead of a call's inclusion, prove the tree of the first OLD entries (an earlier
        /// checkpoint's size) consistent with the tree of `--size N` entries (default: all).
        #[arg(long, value_name = "OLD", conflicts_with = "call_id")]
        consistency: Option<u64>,
    },
    /// Print runs and calls: tool, principal, decision and policies, attempts, timings, outcome.
    Show {
        /// The ledger: a SQLite file (opened read-only) or a PostgreSQL database
        /// (`postgres://user:password@host:port/db`, only read).
        #[arg(value_name = "PATH|URL")]
        path: LedgerLocation,
        /// Only this SOP run.
        #[arg(long, value_name = "ID")]
        run: Option<String>,
        /// Only this call: its intent, decision, every attempt (error, stderr tail, egress
        /// requests and refusals) and its outcome.
        #[arg(long = "call", value_name = "CALL_ID", conflicts_with_all = ["run", "disagreements", "waiting"])]
        call: Option<String>,
        /// Only the calls whose shadow policies disagreed with the enforced ones, one line
        /// each: call id, principal, tool, enforced → shadow decision, the policies of both.
        #[arg(long)]
        disagreements: bool,
        /// Only the calls that wait for approval, one line each: call id, requester, tool,
        /// until when (or `expired`), the `@approval` permits and their reasons.
        #[arg(long, conflicts_with = "disagreements")]
        waiting: bool,
    },
}

/// Verify or show the ledger.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    match &args.command {
        Sub::Verify {
            path,
            head,
            checkpoint,
            public_key,
        } => {
            let checkpoints = match public_key {
                Some(key) => Some(proofs::Checkpoints::open(checkpoint, key, io)?),
                None => None,
            };
            verify(path, head.as_deref(), checkpoints.as_ref(), io)
        }
        Sub::Show {
            path,
            call: Some(call_id),
            ..
        } => show_call(path, call_id, io),
        Sub::Show {
            path,
            run,
            disagreements: false,
            waiting: false,
            ..
        } => show(path, run.as_deref(), io),
        Sub::Show {
            path,
            run,
            disagreements: true,
            ..
        } => show_disagreements(path, run.as_deref(), io),
        Sub::Show {
            path,
            run,
            waiting: true,
            ..
        } => show_waiting(path, run.as_deref(), io),
        Sub::Keygen { name, out } => proofs::keygen(name, out, io),
        Sub::Checkpoint { path, key } => proofs::checkpoint(path, key, io),
        Sub::Prove {
            path,
            call_id,
            size,
            consistency,
        } => match (call_id, consistency) {
            (_, Some(old)) => proofs::prove_consistency(path, *old, *size, io),
            (Some(call_id), None) => proofs::prove(path, call_id, *size, io),
            (None, None) => Err(CliError::new(
                exit::USAGE,
                "`escepine ledger prove` needs a CALL_ID or --consistency OLD",
            )),
        },
    }
}

fn verify(
    path: &LedgerLocation,
    head: Option<&str>,
    checkpoints: Option<&proofs::Checkpoints>,
    io: &mut Io<'_>,
) -> CliResult {
    match path.verify(head) {
        Ok(report) => {
            let lines = match checkpoints {
                Some(c) => c.check(path, &report, io)?,
                None => Vec::new(),
            };
            let _ = write!(
                io.out,
                "intact: {} entries, head {}",
                report.entries, report.head
            );
            if let (Some(anchor), Some(seq)) = (head, report.anchor_seq) {
                let _ = write!(io.out, " (expected head {anchor} is entry {seq})");
            }
            let _ = writeln!(io.out);
            for line in lines {
                let _ = writeln!(io.out, "{line}");
            }
            Ok(())
        }
        Err(VerifyError::Tampered(t)) => {
            // The finding is the command's output.
            let _ = writeln!(io.out, "tampered: {t}");
            Err(CliError::code(exit::INVALID))
        }
        Err(VerifyError::Unreadable(e)) => Err(CliError::new(UNREADABLE, e)),
    }
}

enum Item<'a> {
    Transition(&'a Entry),
    Call(usize),
}

/// The entries grouped by run (in order of first appearance), calls outside any run last.
struct Grouped<'a> {
    /// Every call, as the ledger's call view folds the entries.
    calls: Vec<Call>,
    groups: Vec<Group<'a>>,
}

/// A run id (`None`: calls outside any run) and its items in chain order.
type Group<'a> = (Option<&'a str>, Vec<Item<'a>>);

/// The transitions of each run and its calls (placed where each first appears, in the run of
/// its intent), the calls outside any run last.
fn group<'a>(entries: &'a [Entry]) -> Grouped<'a> {
    let calls = calls::fold(entries.iter().cloned());
    let first: HashMap<u64, usize> = calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| Some((c.first_seq()?, i)))
        .collect();
    let mut groups: Vec<Group<'a>> = Vec::new();
    let mut group_index: HashMap<Option<&'a str>, usize> = HashMap::new();
    let mut place = |groups: &mut Vec<Group<'a>>, run: Option<&'a str>| -> usize {
        *group_index.entry(run).or_insert_with(|| {
            groups.push((run, Vec::new()));
            groups.len() - 1
        })
    };
    for e in entries {
        match &e.record {
            Record::Transition(t) => {
                let g = place(&mut groups, Some(t.run_id.as_str()));
                groups[g].1.push(Item::Transition(e));
            }
            _ => {
                let Some(&c) = first.get(&e.seq) else {
                    continue;
                };
                let run = match &e.record {
                    Record::Intent(i) => i.run_id.as_deref(),
                    _ => None,
                };
                let g = place(&mut groups, run);
                groups[g].1.push(Item::Call(c));
            }
        }
    }
    // Calls outside any run come last.
    groups.sort_by_key(|(run, _)| run.is_none());
    Grouped { calls, groups }
}

/// A failed read of the ledger for `show`: a corrupt entry is exit 1, an unreadable ledger 2.
fn for_show(e: LedgerError) -> CliError {
    match e {
        LedgerError::Corrupt { .. } => {
            CliError::new(exit::INVALID, format!("{e} (run `escepine ledger verify`)"))
        }
        e => CliError::new(UNREADABLE, e),
    }
}

/// Every entry of the ledger, for `show`: a corrupt one is exit 1, an unreadable ledger 2.
fn read_for_show(path: &LedgerLocation) -> Result<Vec<Entry>, CliError> {
    path.read_entries().map_err(for_show)
}

/// `show --waiting`: one line per call that waits for approval (or waited past its expiry with
/// nothing recorded since), then a count.
fn show_waiting(path: &LedgerLocation, run: Option<&str>, io: &mut Io<'_>) -> CliResult {
    let calls = calls::fold(read_for_show(path)?);
    let now = escepine_ledger::entry::now_ms();
    let mut out = String::new();
    let mut count = 0usize;
    for call in &calls {
        let Some(intent) = &call.intent else {
            continue;
        };
        let i = &intent.record;
        if i.approval.is_none() || (run.is_some() && i.run_id.as_deref() != run) {
            continue;
        }
        let (w, until) = match call.state(now) {
            CallState::Waiting(w) => {
                let until = format!("until {}", iso8601(w.expires_at_ms));
                (w, until)
            }
            CallState::Expired(w) => {
                let until = format!("expired {}", iso8601(w.expires_at_ms));
                (w, until)
            }
            _ => continue,
        };
        count += 1;
        out.push_str(&format!(
            "#{:<5} call {}  {}  {}  {until}  [{}]",
            intent.seq,
            w.call_id,
            w.principal,
            w.tool_id,
            w.policy_ids.join(", ")
        ));
        if let Some(step) = &w.step {
            out.push_str(&format!("  step {step}"));
        }
        if !w.reasons.is_empty() {
            out.push_str(&format!("  {}", w.reasons.join("; ")));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "{count} call{} waiting for approval in {path}\n",
        if count == 1 { "" } else { "s" }
    ));
    let _ = io.out.write_all(out.as_bytes());
    Ok(())
}

/// `show --disagreements`: one line per intent with a shadow decision, then a count.
fn show_disagreements(path: &LedgerLocation, run: Option<&str>, io: &mut Io<'_>) -> CliResult {
    let entries = read_for_show(path)?;
    let mut out = String::new();
    let mut count = 0usize;
    for e in &entries {
        let Record::Intent(i) = &e.record else {
            continue;
        };
        let Some(shadow) = &i.shadow else { continue };
        if run.is_some() && i.run_id.as_deref() != run {
            continue;
        }
        count += 1;
        out.push_str(&format!(
            "#{:<5} call {}  {}  {}  {} [{}] → shadow {} [{}]\n",
            e.seq,
            i.call_id,
            i.principal,
            i.tool_id,
            i.decision,
            i.policy_ids.join(", "),
            shadow.decision,
            shadow.policy_ids.join(", ")
        ));
    }
    out.push_str(&format!(
        "{count} disagreement{} in {path}\n",
        if count == 1 { "" } else { "s" }
    ));
    let _ = io.out.write_all(out.as_bytes());
    Ok(())
}

fn show(path: &LedgerLocation, run: Option<&str>, io: &mut Io<'_>) -> CliResult {
    let entries = read_for_show(path)?;
    let grouped = group(&entries);
    let runs = grouped.groups.iter().filter(|(r, _)| r.is_some()).count();
    let selected: Vec<&Group<'_>> = grouped
        .groups
        .iter()
        .filter(|(r, _)| run.is_none() || *r == run)
        .collect();
    if let (Some(id), true) = (run, selected.is_empty()) {
        return Err(CliError::new(
            exit::INVALID,
            format!("no entries for run {id} in {path}"),
        ));
    }
    let mut out = String::new();
    if run.is_none() {
        out.push_str(&format!(
            "ledger {}: {} entries, {} runs, {} calls\n",
            path,
            entries.len(),
            runs,
            grouped.calls.len()
        ));
    }
    for (r, items) in selected {
        out.push('\n');
        match r {
            Some(id) => out.push_str(&format!("run {id}\n")),
            None => out.push_str("calls outside any run\n"),
        }
        for item in items {
            match item {
                Item::Transition(e) => render_transition(e, &mut out),
                Item::Call(c) => render_call(&grouped.calls[*c], &mut out),
            }
        }
    }
    let _ = io.out.write_all(out.as_bytes());
    Ok(())
}

/// `ledger show --call ID`: the one call, read from its own entries through the store's index
/// of call ids.
fn show_call(path: &LedgerLocation, call_id: &str, io: &mut Io<'_>) -> CliResult {
    let entries = path.read_call(call_id).map_err(for_show)?;
    let call = calls::fold(entries)
        .into_iter()
        .find(|c| c.call_id == call_id)
        .ok_or_else(|| CliError::new(exit::INVALID, format!("no call {call_id} in {path}")))?;
    let mut out = String::new();
    render_call(&call, &mut out);
    let _ = io.out.write_all(out.as_bytes());
    Ok(())
}

fn render_transition(e: &Entry, out: &mut String) {
    if let Record::Transition(t) = &e.record {
        out.push_str(&format!(
            "  #{:<5} {}  {}",
            e.seq,
            iso8601(e.at_ms),
            t.event
        ));
        if let Some(s) = &t.state {
            out.push_str(&format!("  state {s}"));
        }
        if !t.data.is_null() {
            out.push_str(&format!(
                "  {}",
                escepine_ledger::entry::canonical_json(&t.data)
            ));
        }
        out.push('\n');
    }
}

fn render_call(call: &Call, out: &mut String) {
    match &call.intent {
        Some(Recorded {
            seq,
            at_ms,
            record: i,
            ..
        }) => {
            out.push_str(&format!(
                "  #{:<5} {}  call {}  {}@{}  {}",
                seq,
                iso8601(*at_ms),
                call.call_id,
                i.tool_id,
                i.tool_version,
                i.class.as_str()
            ));
            if let Some(step) = &i.step {
                out.push_str(&format!("  step {step}"));
            }
            out.push('\n');
            out.push_str(&format!("{PAD}principal  {}\n", i.principal));
            if let Some(a) = &i.attestation {
                render_attestation(a, out);
            }
            let policies = if i.policy_ids.is_empty() {
                "(none)".to_string()
            } else {
                i.policy_ids.join(", ")
            };
            out.push_str(&format!(
                "{PAD}decision   {}  policies {policies}\n",
                i.decision
            ));
            for reason in &i.reasons {
                out.push_str(&format!("{PAD}reason     {reason}\n"));
            }
            if let Some(a) = &i.approval {
                out.push_str(&format!(
                    "{PAD}waits      until {}\n",
                    iso8601(a.expires_at_ms)
                ));
                for reason in &a.reasons {
                    out.push_str(&format!("{PAD}why        {reason}\n"));
                }
            }
            if let Some(shadow) = &i.shadow {
                let policies = if shadow.policy_ids.is_empty() {
                    "(none)".to_string()
                } else {
                    shadow.policy_ids.join(", ")
                };
                out.push_str(&format!(
                    "{PAD}shadow     {}  policies {policies}\n",
                    shadow.decision
                ));
            }
            if let Some(c) = &i.compensates {
                out.push_str(&format!("{PAD}compensates {c}\n"));
            }
            out.push_str(&format!("{PAD}payload    sha256 {}\n", i.payload_hash));
            for f in &i.files {
                out.push_str(&format!(
                    "{PAD}file       /workspace/{}  {} bytes  sha256 {}\n",
                    f.name, f.bytes, f.sha256
                ));
            }
            out.push_str(&format!("{PAD}idempotency {}\n", i.idempotency_key));
            for o in &i.overlay {
                out.push_str(&format!("{PAD}overlay    {o}\n"));
            }
            for o in &i.egress_origins {
                out.push_str(&format!("{PAD}origin     {o}\n"));
            }
        }
        None => out.push_str(&format!("  call {}  (no intent recorded)\n", call.call_id)),
    }
    if let Some(Recorded {
        seq,
        at_ms,
        record: a,
        ..
    }) = &call.approval
    {
        let policies = if a.policy_ids.is_empty() {
            "(none)".to_string()
        } else {
            a.policy_ids.join(", ")
        };
        out.push_str(&format!(
            "{PAD}approval   {} by {}  policies {policies}  {}  (#{})\n",
            a.result.as_str(),
            a.approver,
            iso8601(*at_ms),
            seq
        ));
        if let Some(att) = &a.attestation {
            render_attestation(att, out);
        }
    }
    match &call.outcome {
        Some(Recorded { seq, record: o, .. }) => {
            for (n, a) in o.attempts.iter().enumerate() {
                render_attempt(n + 1, a, out);
            }
            out.push_str(&format!("{PAD}outcome    {}", result_word(o)));
            if let Some(h) = &o.output_hash {
                out.push_str(&format!("  output sha256 {h}"));
            }
            out.push_str(&format!("  (#{seq})\n"));
            if let Some(b) = &o.budget {
                out.push_str(&format!("{PAD}budget     {b}\n"));
            }
            if let Some(e) = &o.error {
                out.push_str(&format!("{PAD}error      {}\n", one_line(e)));
            }
        }
        None if call.approval.is_none()
            && call
                .intent
                .as_ref()
                .is_some_and(|i| i.record.approval.is_some()) =>
        {
            out.push_str(&format!("{PAD}outcome    (awaiting approval)\n"));
        }
        None => out.push_str(&format!("{PAD}outcome    (none recorded)\n")),
    }
    for extra in &call.ignored {
        out.push_str(&format!(
            "{PAD}ignored    #{} another {} of this call (only the first counts)\n",
            extra.entry.seq, extra.kind
        ));
    }
}

/// The indent of a call's detail lines in `ledger show`.
const PAD: &str = "      ";

/// The lines of an identity provider's attestation: `token      issuer <iss>  jti sha256 <hex>`
/// and `member of  Team::"editors", …`.
fn render_attestation(a: &escepine_contract::Attestation, out: &mut String) {
    out.push_str(&format!("{PAD}token      issuer {}", a.issuer));
    if let Some(jti) = &a.jti_sha256 {
        out.push_str(&format!("  jti sha256 {jti}"));
    }
    out.push('\n');
    if !a.parents.is_empty() {
        let parents: Vec<String> = a.parents.iter().map(ToString::to_string).collect();
        out.push_str(&format!("{PAD}member of  {}\n", parents.join(", ")));
    }
}

fn render_attempt(n: usize, a: &Attempt, out: &mut String) {
    let ms = a.duration_us as f64 / 1000.0;
    out.push_str(&format!(
        "      attempt {n}  {}  {ms:>10.3} ms  ",
        iso8601(a.start_ms)
    ));
    match (&a.error_class, &a.error) {
        (None, _) => out.push_str("ok"),
        (Some(class), Some(msg)) => out.push_str(&format!("{class}: {}", one_line(msg))),
        (Some(class), None) => out.push_str(class.as_str()),
    }
    out.push('\n');
    for r in &a.egress_requests {
        out.push_str(&format!("        egress {r}\n"));
    }
    for r in &a.egress_refusals {
        out.push_str(&format!("        egress refused {r}\n"));
    }
    if let Some(c) = &a.credential {
        let mut line = format!("        credential {}", c.grant);
        if let Some(sub) = &c.sub {
            line.push_str(&format!(" for sub {sub:?}"));
        }
        if let Some(te) = &c.token_endpoint_sha256 {
            line.push_str(&format!(
                " from token endpoint sha256:{}",
                &te[..te.len().min(16)]
            ));
        }
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(stderr) = &a.stderr {
        for line in stderr_tail(stderr) {
            out.push_str(&format!("        stderr | {line}\n"));
        }
    }
}

/// How many of an attempt's last stderr lines `ledger show` prints.
const STDERR_TAIL_LINES: usize = 8;

/// The last non-empty lines of a (recorded, scrubbed) stderr, each on one line.
fn stderr_tail(stderr: &str) -> Vec<String> {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(STDERR_TAIL_LINES);
    let mut tail: Vec<String> = lines[from..].iter().map(|l| one_line(l)).collect();
    if from > 0 {
        tail.insert(0, format!("… ({from} earlier lines)"));
    }
    tail
}

fn result_word(o: &Outcome) -> &'static str {
    o.result.as_str()
}

fn one_line(s: &str) -> String {
    let line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    // 160 characters, never ending inside a `[REDACTED]` marker.
    match line.char_indices().nth(160) {
        Some((at, _)) => format!("{}…", escepine_runtime::scrub::prefix(&line, at)),
        None => line,
    }
}
