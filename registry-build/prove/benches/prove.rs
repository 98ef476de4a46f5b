//! Proof times: `escepine_prove::prove` over the catalog (its 7 policies and 3 invariants) and
//! over the catalog's records with 1,000 policies (the catalog's and generated ones), each with
//! the catalog's invariants and the request model, on the cvc5 of `$CVC5` or `PATH`.
//!
//! ```text
//! cargo bench -p escepine-prove --bench prove            # catalog 5 runs, 1,000 policies 1 run
//! cargo bench -p escepine-prove --bench prove -- 5 3     # runs of each
//! ```
//!
//! Run without `--bench` (as `cargo test --benches` does), it makes one pass over the catalog.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use escepine_policy::load;
use escepine_prove::{prove_blocking, read_invariants, request_model, Obligations, Solver};
use escepine_registry::registry::Sources;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `n` policies: the catalog's own files, then generated ones (host forbids on the page
/// readers, exact and by sub-domain; path forbids on the bulk fetch; per-agent permits of the
/// read-only tools) up to `n`.
fn policies_dir(n: usize) -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut count = 0;
    for entry in fs::read_dir(workspace().join("tools/policies"))? {
        let path = entry?.path();
        let text = fs::read_to_string(&path)?;
        count += text.matches("@id(").count();
        if let Some(name) = path.file_name() {
            fs::write(dir.path().join(name), text)?;
        }
    }
    let mut generated = String::new();
    for i in 0..n.saturating_sub(count) {
        let _ = match i % 4 {
            0 => writeln!(
                generated,
                "@id(\"gen-{i}\")\nforbid (principal, action in Action::\"page-read\", resource)\n\
                 when {{ context has url && context.url.host == \"blocked-{i}.example\" }};"
            ),
            1 => writeln!(
                generated,
                "@id(\"gen-{i}\")\nforbid (principal, action in Action::\"page-read\", resource)\n\
                 when {{ context has url && context.url.host like \"*.blocked-{i}.example\" }};"
            ),
            2 => writeln!(
                generated,
                "@id(\"gen-{i}\")\nforbid (principal, action == Action::\"web_fetch_exa\", resource)\n\
                 when {{ context has url && context.url.path like \"/private-{i}/*\" }};"
            ),
            _ => writeln!(
                generated,
                "@id(\"gen-{i}\")\npermit (principal == Agent::\"agent-{i}\", action in Action::\"read-only\", resource);"
            ),
        };
    }
    fs::write(dir.path().join("generated.cedar"), generated)?;
    Ok(dir)
}

/// One proof run over `policies`; its time and the number of outcomes.
fn run(policies: &Path) -> Result<(Duration, usize), Box<dyn std::error::Error>> {
    let registry = load(
        &Sources::new()
            .records(workspace().join("tools/records"))
            .policies(policies),
    )?;
    let binding = registry.cedar();
    let obligations = Obligations {
        model: request_model(registry.records(), &binding.schema)?,
        invariants: read_invariants(&workspace().join("tools/invariants"), &binding.schema)?,
        against: None,
    };
    let start = Instant::now();
    let report = prove_blocking(binding, &obligations, &Solver::from_env())?;
    let took = start.elapsed();
    if !report.all_proved() {
        return Err(format!("not proved: {}", report.summary()).into());
    }
    Ok((took, report.outcomes.len()))
}

fn measure(label: &str, policies: &Path, runs: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut times = Vec::with_capacity(runs);
    let mut outcomes = 0;
    for _ in 0..runs.max(1) {
        let (took, n) = run(policies)?;
        times.push(took);
        outcomes = n;
    }
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "{label}: {outcomes} properties proved; median {:.2} s, min {:.2} s, max {:.2} s over {} run(s)",
        median.as_secs_f64(),
        times[0].as_secs_f64(),
        times[times.len() - 1].as_secs_f64(),
        times.len()
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let counts: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let catalog = workspace().join("tools/policies");
    if !bench {
        return measure("catalog (one pass)", &catalog, 1);
    }
    let catalog_runs = counts.first().copied().unwrap_or(5);
    let large_runs = counts.get(1).copied().unwrap_or(1);
    measure("catalog, 7 policies", &catalog, catalog_runs)?;
    let large = policies_dir(1000)?;
    measure("1,000 policies", large.path(), large_runs)?;
    Ok(())
}
