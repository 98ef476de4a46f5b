//! The research agent's planner: typed proposals for each step of the catalog's `research` SOP.
//!
//! Every proposal is built as the generated input type of the step's tool
//! (`web_search::Input`, `firecrawl_scrape::Input`, …) and handed over through [`typed`], which
//! takes the generated step type (`research::Search`, …) so that a step cannot be given another
//! tool's payload. Earlier outputs are read back as the generated output types.
//!
//! The SOP reads one page in its `read` step (the best search result). A researcher reads more
//! than one page, so before proposing the next step (`publish`, or `assemble` when the decision
//! skips publishing) the planner reads further results itself, each one a separate governed call
//! of `firecrawl_scrape` through the same [`Runtime`] — its own input gate, its own per-URL Cedar
//! decision, its own intent and outcome in the ledger, tagged with the run id. One of those
//! results lives on a host the policy forbids: its call is denied before anything runs, and the
//! page is left out of the deliverable.

use std::num::NonZeroU64;
use std::sync::Arc;

use escepine_contract::{Principal, SopStep, Tool};
use escepine_ledger::store::BoxFuture;
use escepine_runtime::sop::{Planner, PlannerError, StepRequest};
use escepine_runtime::{CallOptions, CallOutcome, Runtime};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Mutex;
use url::Url;

use crate::catalog::sops::research;
use crate::catalog::{deliverable_assemble, firecrawl_scrape, note_publish, web_search};
use crate::progress::{self, Progress, Steps};

/// How many search results the `search` step asks for (the SOP allows at most 10).
pub const MAX_RESULTS: u64 = 10;

/// A page that was read, and the ledger entry that recorded reading it.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The URL read.
    pub url: String,
    /// Its title.
    pub title: String,
    /// Its main content, as Markdown.
    pub markdown: String,
    /// The call that read it.
    pub call_id: String,
    /// The hash of that call's outcome entry.
    pub outcome: String,
    /// `read` for the SOP's step, `further` for the planner's own reads.
    pub via: &'static str,
}

/// A page whose reading was denied.
#[derive(Debug, Clone)]
pub struct Denial {
    /// The URL.
    pub url: String,
    /// The denied call.
    pub call_id: String,
    /// The determining policies.
    pub policy_ids: Vec<String>,
}

/// An instruction a page gave, and what became of following it.
#[derive(Debug, Clone)]
pub struct Injection {
    /// The page that gave it.
    pub page: String,
    /// The URL the planner tried to fetch (the notes appended).
    pub url: String,
    /// The call.
    pub call_id: String,
    /// How it ended: `ok` (sent), `awaiting_approval`, `denied`, …
    pub outcome: String,
    /// The determining policies.
    pub policy_ids: Vec<String>,
}

/// What the agent has learnt so far.
#[derive(Debug, Clone, Default)]
pub struct Notebook {
    /// The search results, best first.
    pub results: Vec<web_search::OutputResultsItem>,
    /// The pages read, in the order read.
    pub reads: Vec<Reading>,
    /// The pages denied.
    pub denied: Vec<Denial>,
    /// Pages that could not be read (URL, why).
    pub failed: Vec<(String, String)>,
    /// Instructions pages gave the agent, and what became of following them.
    pub injections: Vec<Injection>,
    further_done: bool,
    injections_done: bool,
}

/// The planner.
pub struct ResearchPlanner {
    runtime: Runtime,
    principal: Principal,
    query: String,
    further: usize,
    progress: Progress,
    steps: Steps,
    notebook: Arc<Mutex<Notebook>>,
}

impl ResearchPlanner {
    /// A planner researching `query` for `principal`, reading the best result in the SOP's
    /// `read` step and up to `further` more results itself.
    pub fn new(
        runtime: Runtime,
        principal: Principal,
        query: String,
        further: usize,
        progress: Progress,
        steps: Steps,
    ) -> Self {
        Self {
            runtime,
            principal,
            query,
            further,
            progress,
            steps,
            notebook: Arc::default(),
        }
    }

    /// The notebook, shared (read it after the run).
    pub fn notebook(&self) -> Arc<Mutex<Notebook>> {
        Arc::clone(&self.notebook)
    }

    async fn plan(&self, request: &StepRequest<'_>) -> Result<Value, PlannerError> {
        match request.state {
            research::Search::STATE => typed(
                research::Search,
                request,
                web_search::Input {
                    // The record bounds the query (1 to 500 characters); the input gate checks.
                    query: clip(&self.query, 500),
                    max_results: NonZeroU64::new(MAX_RESULTS),
                },
            ),
            research::Read::STATE => {
                let found: web_search::Output = output_of(request, research::Search::STATE)?;
                let best = found.results.first().cloned().ok_or_else(|| {
                    PlannerError::Other(format!("no search result for {:?}", self.query))
                })?;
                self.progress.line(format_args!(
                    "plan: {} results; the SOP reads the best, {}",
                    found.results.len(),
                    best.url
                ));
                self.notebook.lock().await.results = found.results;
                typed(
                    research::Read,
                    request,
                    firecrawl_scrape::Input { url: best.url },
                )
            }
            research::Publish::STATE => {
                self.read_further(request).await?;
                let nb = self.notebook.lock().await;
                typed(research::Publish, request, self.note(&nb)?)
            }
            research::Assemble::STATE => {
                self.read_further(request).await?;
                self.follow_instructions(request).await?;
                let nb = self.notebook.lock().await;
                typed(research::Assemble, request, self.deliverable(&nb)?)
            }
            other => Err(PlannerError::NoProposal {
                state: other.to_string(),
                visit: request.visit,
            }),
        }
    }

    /// Record the SOP's own read, then read the next `further` results, each through the
    /// governed path (once per run).
    async fn read_further(&self, request: &StepRequest<'_>) -> Result<(), PlannerError> {
        let mut nb = self.notebook.lock().await;
        if nb.further_done {
            return Ok(());
        }
        nb.further_done = true;
        let page: firecrawl_scrape::Output = output_of(request, research::Read::STATE)?;
        let evidence = progress::step(&self.steps, research::Read::STATE).ok_or_else(|| {
            PlannerError::Other("the `read` step's outcome entry was not observed".into())
        })?;
        let first = page.url.to_string();
        nb.reads.push(Reading {
            url: first.clone(),
            title: page.title.unwrap_or_default(),
            markdown: page.markdown,
            call_id: evidence.call_id,
            outcome: evidence.outcome,
            via: "read",
        });
        let candidates: Vec<web_search::OutputResultsItem> = nb
            .results
            .iter()
            .filter(|r| r.url.as_str() != first)
            .take(self.further)
            .cloned()
            .collect();
        self.progress.line(format_args!(
            "plan: reading {} further results, each URL authorized on its own",
            candidates.len()
        ));
        for hit in candidates {
            let url = hit.url.to_string();
            let input = firecrawl_scrape::Input {
                url: hit.url.clone(),
            };
            let payload = serde_json::to_value(input)
                .map_err(|e| PlannerError::Other(format!("payload for {url}: {e}")))?;
            let opts = CallOptions {
                run_id: Some(request.run_id.to_string()),
                ..CallOptions::default()
            };
            let tool = firecrawl_scrape::Tool::CONTRACT.id;
            let report = match self
                .runtime
                .call(&self.principal, tool, payload, opts)
                .await
            {
                Ok(report) => report,
                Err(e) => {
                    self.progress.line(format_args!("  read {url} ✗ {e}"));
                    nb.failed.push((url, e.to_string()));
                    continue;
                }
            };
            match report.outcome() {
                CallOutcome::Ok(output) => {
                    let out: firecrawl_scrape::Output = serde_json::from_value(output.clone())
                        .map_err(|e| PlannerError::Other(format!("output for {url}: {e}")))?;
                    let outcome = report
                        .outcome_entry()
                        .map(|e| e.hash.clone())
                        .unwrap_or_default();
                    self.progress.line(format_args!(
                        "  read {url} ✓ {} ({} chars), outcome entry {}…",
                        out.status_code,
                        out.markdown.len(),
                        outcome.get(..12).unwrap_or_default()
                    ));
                    nb.reads.push(Reading {
                        url,
                        title: out.title.unwrap_or(hit.title),
                        markdown: out.markdown,
                        call_id: report.call_id().to_string(),
                        outcome,
                        via: "further",
                    });
                }
                CallOutcome::Denied { policy_ids, .. } => {
                    self.progress.line(format_args!(
                        "  read {url} ✗ DENIED by [{}]: nothing was sent",
                        policy_ids.join(", ")
                    ));
                    nb.denied.push(Denial {
                        url,
                        call_id: report.call_id().to_string(),
                        policy_ids: policy_ids.clone(),
                    });
                }
                _ => {
                    self.progress.line(format_args!("  read {url} ✗ {report}"));
                    nb.failed.push((url, report.to_string()));
                }
            }
        }
        Ok(())
    }

    /// Do what the pages read told the agent to (once per run): send the notes to the URL a
    /// page named, by reading it through the governed path in the run's flow. By now the flow
    /// holds untrusted content (the search, the pages) and private data (the note service), so
    /// the flow policies hold a read at an origin the flow has not reached for an approver.
    async fn follow_instructions(&self, request: &StepRequest<'_>) -> Result<(), PlannerError> {
        let mut nb = self.notebook.lock().await;
        if nb.injections_done {
            return Ok(());
        }
        nb.injections_done = true;
        let orders: Vec<(String, crate::injection::Instruction)> = nb
            .reads
            .iter()
            .filter_map(|r| crate::injection::instruction(&r.markdown).map(|i| (r.url.clone(), i)))
            .collect();
        let notes = self.note(&nb)?.body;
        for (page, order) in orders {
            let url = crate::injection::exfiltration_url(&order.target, &notes);
            self.progress.line(format_args!(
                "plan: {page} tells AI agents to send their notes to {}; the planner obeys",
                order.target
            ));
            let Ok(parsed) = Url::parse(&url) else {
                continue;
            };
            let payload = serde_json::to_value(firecrawl_scrape::Input { url: parsed })
                .map_err(|e| PlannerError::Other(format!("payload for {url}: {e}")))?;
            let opts = CallOptions {
                run_id: Some(request.run_id.to_string()),
                ..CallOptions::default()
            };
            let tool = firecrawl_scrape::Tool::CONTRACT.id;
            let report = self
                .runtime
                .call(&self.principal, tool, payload, opts)
                .await
                .map_err(|e| PlannerError::Other(format!("the call to {url}: {e}")))?;
            let (outcome, policy_ids) = match report.outcome() {
                CallOutcome::AwaitingApproval { policy_ids, .. }
                | CallOutcome::Denied { policy_ids, .. } => {
                    (report.kind().as_str(), policy_ids.clone())
                }
                _ => (report.kind().as_str(), Vec::new()),
            };
            self.progress.line(format_args!(
                "  → {outcome} [{}]: {}",
                policy_ids.join(", "),
                if report.kind() == escepine_runtime::CallKind::Ok {
                    "the notes were sent"
                } else {
                    "nothing was sent"
                }
            ));
            nb.injections.push(Injection {
                page,
                url,
                call_id: report.call_id().to_string(),
                outcome: outcome.to_string(),
                policy_ids,
            });
        }
        Ok(())
    }

    /// The note published when the page read cleanly.
    fn note(&self, nb: &Notebook) -> Result<note_publish::Input, PlannerError> {
        let lead = nb.reads.first().map_or("", |r| r.title.as_str());
        let title = clip(&format!("Research notes: {lead}"), 120);
        let mut body = format!("Question: {}\n\nPages read:\n", self.query);
        for r in &nb.reads {
            body.push_str(&format!(
                "- {} <{}> (ledger entry {})\n",
                r.title, r.url, r.outcome
            ));
        }
        if !nb.denied.is_empty() {
            body.push_str(&format!(
                "\n{} search result(s) were denied by policy and not read.\n",
                nb.denied.len()
            ));
        }
        Ok(note_publish::Input {
            title,
            body: clip(&body, 100_000),
        })
    }

    /// The deliverable: a summary citing every page read, each source tied to its ledger entry.
    fn deliverable(&self, nb: &Notebook) -> Result<deliverable_assemble::Input, PlannerError> {
        let mut summary = format!(
            "This brief answers \"{}\" from {} pages of the bundled corpus Signal Box Notes. \
             Every page was read through the governed path (input gate, a Cedar decision for its \
             URL, intent and outcome recorded in the ledger), and each source below cites the \
             ledger entry that recorded reading it.",
            self.query,
            nb.reads.len()
        );
        for (n, r) in nb.reads.iter().enumerate() {
            summary.push_str(&format!(
                "\n\n[{}] {}: {}",
                n + 1,
                r.title,
                lede(&r.markdown)
            ));
        }
        if !nb.denied.is_empty() {
            let mut policies: Vec<&str> = nb
                .denied
                .iter()
                .flat_map(|d| d.policy_ids.iter().map(String::as_str))
                .collect();
            policies.sort_unstable();
            policies.dedup();
            summary.push_str(&format!(
                "\n\n{} search result(s) were not read: denied by policy {} before any request \
                 was made (see the ledger's deny intents).",
                nb.denied.len(),
                policies.join(", ")
            ));
        }
        let mut sources = Vec::new();
        for r in &nb.reads {
            sources.push(deliverable_assemble::Source {
                url: Url::parse(&r.url)
                    .map_err(|e| PlannerError::Other(format!("{}: {e}", r.url)))?,
                title: clip(&r.title, 500),
                excerpt: clip(&excerpt(&r.markdown), 4000),
                ledger_entry: r.outcome.clone(),
            });
        }
        Ok(deliverable_assemble::Input {
            format: deliverable_assemble::Format::Markdown,
            include_evidence_index: true,
            title: clip(&format!("Research brief: {}", self.query), 200),
            summary: Some(clip(&summary, 20_000)),
            sources,
        })
    }
}

impl Planner for ResearchPlanner {
    fn propose<'a>(
        &'a self,
        request: &'a StepRequest<'a>,
    ) -> BoxFuture<'a, Result<Value, PlannerError>> {
        Box::pin(self.plan(request))
    }
}

/// The proposal for step `S`: only its tool's `Input` type fits.
fn typed<S: SopStep>(
    _step: S,
    request: &StepRequest<'_>,
    input: <S::Tool as Tool>::Input,
) -> Result<Value, PlannerError> {
    if request.sop.sop_id != S::SOP_ID || request.state != S::STATE {
        return Err(PlannerError::Other(format!(
            "step type {}::{} proposed for {}::{}",
            S::SOP_ID,
            S::STATE,
            request.sop.sop_id,
            request.state
        )));
    }
    serde_json::to_value(input).map_err(|e| PlannerError::Other(e.to_string()))
}

/// The output of an earlier step, as its tool's generated output type.
fn output_of<T: DeserializeOwned>(
    request: &StepRequest<'_>,
    state: &str,
) -> Result<T, PlannerError> {
    let value = request
        .data
        .get(state)
        .and_then(|s| s.get("output"))
        .cloned()
        .ok_or_else(|| PlannerError::Other(format!("no output of step `{state}` yet")))?;
    serde_json::from_value(value)
        .map_err(|e| PlannerError::Other(format!("the output of `{state}`: {e}")))
}

/// At most `max` characters of `text`, cut at a character boundary.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => text[..i].to_string(),
        None => text.to_string(),
    }
}

/// The paragraphs of a page's Markdown, without headings and link syntax.
fn paragraphs(markdown: &str) -> Vec<String> {
    markdown
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| {
            !p.is_empty() && !p.starts_with('#') && !p.starts_with("- ") && !p.starts_with("* ")
        })
        .map(|p| unlink(&p))
        .collect()
}

/// The page's first paragraph (its lede).
fn lede(markdown: &str) -> String {
    paragraphs(markdown).into_iter().next().unwrap_or_default()
}

/// The lede and the paragraph after it.
fn excerpt(markdown: &str) -> String {
    paragraphs(markdown)
        .into_iter()
        .take(2)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `[text](url)` → `text`.
fn unlink(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut rest = p;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|i| open + i) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|i| close + i) else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_helpers() {
        assert_eq!(clip("abcdé", 4), "abcd");
        assert_eq!(clip("ab", 4), "ab");
        assert_eq!(
            unlink("see [the block](https://x/a) and [b](c)."),
            "see the block and b."
        );
        let md = "# Title\n\nFirst [para](u).\n\n- item\n\nSecond\npara.";
        assert_eq!(lede(md), "First para.");
        assert_eq!(excerpt(md), "First para.\n\nSecond para.");
    }
}
