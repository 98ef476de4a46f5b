//! The console's index of the ledger: one row per call and per SOP run, folded from the chain
//! once and then kept up to date from the entries appended since ([`Ledger::entries_after`]),
//! so that a page of the calls list never reads the whole ledger.
//!
//! Folding also checks that each new entry links to the one before it (its `prev` is the last
//! hash folded, and its own hash recomputes): an append that does not link stops the index
//! there and is reported ([`Index::broken`]), as the full verification ([`crate::integrity`])
//! would.

use std::collections::{BTreeSet, HashMap};

use escepine_ledger::entry::Entry;
use escepine_ledger::error::LedgerError;
use escepine_ledger::record::{CallResult, Decision, Record};
use escepine_ledger::store::Ledger;

/// One call as the lists show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRow {
    /// The call id.
    pub call_id: String,
    /// Its intent's position in the chain.
    pub seq: u64,
    /// When its intent was committed, Unix milliseconds.
    pub at_ms: u64,
    /// The tool.
    pub tool: String,
    /// Who asked (`Agent::"id"`).
    pub principal: String,
    /// What Cedar decided.
    pub decision: Decision,
    /// How it ended (`None` while it runs or waits).
    pub result: Option<CallResult>,
    /// Whether an approval entry (approved, rejected, withdrawn, expired) is recorded.
    pub decided: bool,
    /// Until when it waits for an approver, for a call that waited.
    pub expires_at_ms: Option<u64>,
    /// Its flow, if it ran in one.
    pub flow: Option<String>,
    /// The SOP run it is a step of.
    pub run_id: Option<String>,
    /// Whether the shadow policies decided otherwise.
    pub shadow_disagrees: bool,
}

impl CallRow {
    /// Whether it waits for an approver at `now_ms` (no decision, no outcome, not expired).
    pub fn waiting(&self, now_ms: u64) -> bool {
        self.decision == Decision::AwaitingApproval
            && !self.decided
            && self.result.is_none()
            && self.expires_at_ms.is_some_and(|e| e > now_ms)
    }
}

/// One SOP run as the lists show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRow {
    /// The run id.
    pub run_id: String,
    /// Its SOP.
    pub sop_id: String,
    /// The principal it runs for.
    pub principal: String,
    /// Its first entry.
    pub seq: u64,
    /// When it started, Unix milliseconds.
    pub at_ms: u64,
    /// Its final status (`None` while it runs or is paused).
    pub status: Option<String>,
}

/// What the calls list is filtered by; an empty field matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Filter {
    /// The tool, exactly.
    #[serde(default)]
    pub tool: String,
    /// The principal, exactly (`Agent::"id"`).
    #[serde(default)]
    pub principal: String,
    /// `allow`, `deny` or `awaiting-approval`.
    #[serde(default)]
    pub decision: String,
    /// The result (`ok`, `denied`, …), or `none` for calls without an outcome.
    #[serde(default)]
    pub result: String,
    /// The flow id, exactly.
    #[serde(default)]
    pub flow: String,
    /// Calls at or after this time (RFC 3339, or Unix milliseconds).
    #[serde(default)]
    pub from: String,
    /// Calls before this time (RFC 3339, or Unix milliseconds).
    #[serde(default)]
    pub to: String,
}

/// Why a filter cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FilterError {
    /// The query parameter.
    pub field: &'static str,
    /// The rule it breaks.
    pub message: String,
}

/// A filter with its times read.
#[derive(Debug, Clone)]
struct Compiled<'f> {
    filter: &'f Filter,
    from_ms: Option<u64>,
    to_ms: Option<u64>,
}

impl Filter {
    fn compile(&self) -> Result<Compiled<'_>, FilterError> {
        if !self.decision.is_empty() && !Decision::ALL.iter().any(|d| d.as_str() == self.decision) {
            return Err(FilterError {
                field: "decision",
                message: format!(
                    "`{}` is not a decision (allow, deny, awaiting-approval)",
                    self.decision
                ),
            });
        }
        Ok(Compiled {
            filter: self,
            from_ms: time_ms("from", &self.from)?,
            to_ms: time_ms("to", &self.to)?,
        })
    }

    /// Whether the filter matches everything.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl Compiled<'_> {
    fn matches(&self, row: &CallRow) -> bool {
        let f = self.filter;
        let result = row.result.map_or("none", CallResult::as_str);
        (f.tool.is_empty() || row.tool == f.tool)
            && (f.principal.is_empty() || row.principal == f.principal)
            && (f.decision.is_empty() || row.decision.as_str() == f.decision)
            && (f.result.is_empty() || result == f.result)
            && (f.flow.is_empty() || row.flow.as_deref() == Some(f.flow.as_str()))
            && self.from_ms.is_none_or(|t| row.at_ms >= t)
            && self.to_ms.is_none_or(|t| row.at_ms < t)
    }
}

/// A time given as Unix milliseconds or RFC 3339 (`2026-12-05T17:00:00Z`, or the
/// `datetime-local` form `2026-12-05T17:00`, read as UTC).
fn time_ms(field: &'static str, text: &str) -> Result<Option<u64>, FilterError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(Some(ms));
    }
    parse_utc(text).map(Some).ok_or_else(|| FilterError {
        field,
        message: format!(
            "`{text}` is neither Unix milliseconds nor a UTC time like 2026-12-05T17:00:00Z"
        ),
    })
}

/// `YYYY-MM-DDTHH:MM[:SS[.fff]][Z]`, UTC, as Unix milliseconds.
fn parse_utc(text: &str) -> Option<u64> {
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, time) = text.split_once('T')?;
    let mut d = date.splitn(3, '-').map(str::parse::<i64>);
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.splitn(3, ':');
    let h: i64 = t.next()?.parse().ok()?;
    let min: i64 = t.next()?.parse().ok()?;
    let (s, ms) = match t.next() {
        None => (0, 0),
        Some(sec) => match sec.split_once('.') {
            None => (sec.parse().ok()?, 0),
            Some((s, f)) => {
                let f = format!("{f:0<3}");
                (s.parse().ok()?, f.get(..3)?.parse::<i64>().ok()?)
            }
        },
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || s > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ms_total = ((days * 24 + h) * 60 + min) * 60_000 + s * 1000 + ms;
    u64::try_from(ms_total).ok()
}

/// One page of the calls list, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The calls on it.
    pub rows: Vec<CallRow>,
    /// The cursor of the next (older) page, when there is one.
    pub next: Option<u64>,
}

/// The index: calls and runs in chain order, with where folding stopped.
#[derive(Debug, Default)]
pub struct Index {
    through: u64,
    head: String,
    calls: Vec<CallRow>,
    call_at: HashMap<String, usize>,
    runs: Vec<RunRow>,
    run_at: HashMap<String, usize>,
    tools: BTreeSet<String>,
    principals: BTreeSet<String>,
    broken: Option<String>,
}

impl Index {
    /// An empty index (nothing folded).
    pub fn new() -> Self {
        Self::default()
    }

    /// Fold the entries appended since the last refresh; returns how many were folded.
    ///
    /// # Errors
    /// The ledger cannot be read. A chain that does not link is not an error: folding stops
    /// before the entry that breaks it, which [`Index::broken`] names.
    pub fn refresh(&mut self, ledger: &dyn Ledger) -> Result<usize, LedgerError> {
        if self.broken.is_some() {
            return Ok(0);
        }
        let entries = ledger.entries_after(self.through)?;
        let mut folded = 0;
        for entry in entries {
            if let Err(why) = self.links(&entry) {
                self.broken = Some(format!("entry #{}: {why}", entry.seq));
                break;
            }
            self.through = entry.seq;
            self.head.clone_from(&entry.hash);
            self.fold(entry);
            folded += 1;
        }
        Ok(folded)
    }

    /// Whether `entry` follows the last folded one.
    fn links(&self, entry: &Entry) -> Result<(), String> {
        if entry.seq != self.through + 1 {
            return Err(format!(
                "expected entry #{} after #{}",
                self.through + 1,
                self.through
            ));
        }
        if self.through > 0 && entry.prev != self.head {
            return Err("its prev is not the hash of the entry before it".into());
        }
        match entry.computed_hash() {
            Ok(h) if h == entry.hash => Ok(()),
            Ok(_) => Err("its hash does not match its contents".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    fn fold(&mut self, entry: Entry) {
        match entry.record {
            Record::Intent(i) => {
                if self.call_at.contains_key(&i.call_id) {
                    return;
                }
                self.call_at.insert(i.call_id.clone(), self.calls.len());
                if !self.tools.contains(&i.tool_id) {
                    self.tools.insert(i.tool_id.clone());
                }
                if !self.principals.contains(&i.principal) {
                    self.principals.insert(i.principal.clone());
                }
                self.calls.push(CallRow {
                    seq: entry.seq,
                    at_ms: entry.at_ms,
                    tool: i.tool_id,
                    principal: i.principal,
                    decision: i.decision,
                    result: None,
                    decided: false,
                    expires_at_ms: i.approval.as_ref().map(|a| a.expires_at_ms),
                    flow: i.flow.map(|f| f.to_string()),
                    run_id: i.run_id,
                    shadow_disagrees: i.shadow.is_some_and(|s| s.decision != i.decision),
                    call_id: i.call_id,
                });
            }
            Record::Approval(a) => {
                if let Some(&n) = self.call_at.get(&a.call_id) {
                    self.calls[n].decided = true;
                }
            }
            Record::Outcome(o) => {
                if let Some(&n) = self.call_at.get(&o.call_id) {
                    let row = &mut self.calls[n];
                    row.result.get_or_insert(o.result);
                }
            }
            Record::Transition(t) => {
                let data = &t.data;
                match t.event.as_str() {
                    "run_started" if !self.run_at.contains_key(&t.run_id) => {
                        let text = |k: &str| {
                            data.get(k)
                                .and_then(serde_json::Value::as_str)
                                .unwrap_or_default()
                                .to_string()
                        };
                        self.run_at.insert(t.run_id.clone(), self.runs.len());
                        self.runs.push(RunRow {
                            sop_id: text("sop_id"),
                            principal: text("principal"),
                            seq: entry.seq,
                            at_ms: entry.at_ms,
                            status: None,
                            run_id: t.run_id,
                        });
                    }
                    "run_ended" => {
                        if let Some(&n) = self.run_at.get(&t.run_id) {
                            self.runs[n].status = data
                                .get("status")
                                .and_then(serde_json::Value::as_str)
                                .map(str::to_string);
                        }
                    }
                    _ => {}
                }
            }
            Record::Declassification(_) => {}
        }
    }

    /// The last entry folded (0 before any).
    pub fn through(&self) -> u64 {
        self.through
    }

    /// Where an append did not link to the chain folded so far, if one did not.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// How many calls are indexed.
    pub fn calls_len(&self) -> usize {
        self.calls.len()
    }

    /// The row of call `call_id`.
    pub fn call(&self, call_id: &str) -> Option<&CallRow> {
        self.call_at.get(call_id).map(|&n| &self.calls[n])
    }

    /// The row of run `run_id`.
    pub fn run(&self, run_id: &str) -> Option<&RunRow> {
        self.run_at.get(run_id).map(|&n| &self.runs[n])
    }

    /// Up to `limit` calls matching `filter`, newest first, older than the cursor `before` (an
    /// intent's seq; the newest when `None`).
    ///
    /// # Errors
    /// A filter field that cannot be read.
    pub fn page(
        &self,
        filter: &Filter,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Page, FilterError> {
        let compiled = filter.compile()?;
        let end = match before {
            None => self.calls.len(),
            Some(seq) => self.calls.partition_point(|r| r.seq < seq),
        };
        let mut rows = Vec::with_capacity(limit.min(256));
        let mut next = None;
        for row in self.calls[..end].iter().rev() {
            if !compiled.matches(row) {
                continue;
            }
            if rows.len() == limit {
                next = rows.last().map(|r: &CallRow| r.seq);
                break;
            }
            rows.push(row.clone());
        }
        Ok(Page { rows, next })
    }

    /// The calls that wait for an approver at `now_ms`, oldest first.
    pub fn waiting(&self, now_ms: u64) -> Vec<CallRow> {
        self.calls
            .iter()
            .filter(|r| r.waiting(now_ms))
            .cloned()
            .collect()
    }

    /// The calls whose shadow policies decided otherwise, newest first.
    pub fn disagreements(&self) -> Vec<CallRow> {
        self.calls
            .iter()
            .rev()
            .filter(|r| r.shadow_disagrees)
            .cloned()
            .collect()
    }

    /// The SOP runs, newest first.
    pub fn runs(&self) -> Vec<RunRow> {
        self.runs.iter().rev().cloned().collect()
    }

    /// The distinct tools and principals of the indexed calls, sorted (the filter's choices),
    /// kept as calls are folded.
    pub fn choices(&self) -> (Vec<String>, Vec<String>) {
        (
            self.tools.iter().cloned().collect(),
            self.principals.iter().cloned().collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_are_read() {
        assert_eq!(parse_utc("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_utc("2026-12-05T17:00"), Some(1_796_490_000_000));
        assert_eq!(parse_utc("2026-12-05T17:00:01.5Z"), Some(1_796_490_001_500));
        assert_eq!(parse_utc("2026-13-05T17:00"), None);
        assert_eq!(parse_utc("yesterday"), None);
    }

    #[test]
    fn a_bad_filter_names_its_field() {
        let f = Filter {
            from: "soon".into(),
            ..Filter::default()
        };
        let e = Index::new().page(&f, None, 10).unwrap_err();
        assert_eq!(e.field, "from");
        let f = Filter {
            decision: "maybe".into(),
            ..Filter::default()
        };
        assert_eq!(
            Index::new().page(&f, None, 10).unwrap_err().field,
            "decision"
        );
    }
}
