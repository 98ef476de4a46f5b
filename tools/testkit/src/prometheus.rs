//! A real Prometheus server for the telemetry tests: Debian's `prometheus` (2.42, which
//! `.ci/fixtures` installs; the package's own service is not used), started on a free
//! `127.0.0.1` port with a configuration and a storage of its own in a temporary directory,
//! scraping one target, and killed when the [`Prometheus`] is dropped.
//!
//! The target is the scrape job `escepine` (`metrics_path: /metrics`, plain HTTP), so its
//! series carry `job="escepine"` and `instance="<the target>"`. [`Prometheus::query`] runs an
//! instant PromQL query over the HTTP API; [`Prometheus::targets`] lists the scrape targets with
//! their health (`"up"` once a scrape succeeded).
//!
//! Every call blocks (plain HTTP, no runtime of its own).

use std::io;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The Prometheus binary, unless `ESCEPINE_PROMETHEUS` names another.
pub const BINARY: &str = "/usr/bin/prometheus";

/// How long the server may take to be ready.
const START_LIMIT: Duration = Duration::from_secs(60);

/// How often [`Prometheus::wait_until`] and [`Prometheus::wait_for_target_up`] ask.
const POLL: Duration = Duration::from_millis(100);

/// A running Prometheus server on loopback; killed on drop.
pub struct Prometheus {
    child: Option<Child>,
    url: String,
    dir: tempfile::TempDir,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Prometheus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prometheus")
            .field("url", &self.url)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// A duration as Prometheus's configuration writes it, in milliseconds (`1500ms`).
fn prometheus_duration(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

impl Prometheus {
    /// Start a server scraping `scrape_target` (`127.0.0.1:PORT`, path `/metrics`, job
    /// `escepine`) every `scrape_interval` (which is also the scrape timeout and the rule
    /// evaluation interval), and wait until it answers `GET /-/ready`.
    ///
    /// # Panics
    /// When the binary is missing (run `.ci/fixtures`), the configuration cannot be written, or
    /// the server is not ready within 60 s (its log is quoted).
    pub fn start(scrape_target: &str, scrape_interval: Duration) -> Self {
        Self::try_start(scrape_target, scrape_interval).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_start(scrape_target: &str, scrape_interval: Duration) -> io::Result<Self> {
        let binary = std::env::var_os("ESCEPINE_PROMETHEUS")
            .map_or_else(|| PathBuf::from(BINARY), PathBuf::from);
        if !binary.exists() {
            return Err(io::Error::other(format!(
                "{} is missing (run .ci/fixtures, which installs Debian's prometheus)",
                binary.display()
            )));
        }
        let dir = tempfile::Builder::new()
            .prefix("escepine-prometheus-")
            .tempdir()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let listen = format!("127.0.0.1:{port}");
        let storage = dir.path().join("data");
        std::fs::create_dir(&storage)?;
        let config = dir.path().join("prometheus.yml");
        let interval = prometheus_duration(scrape_interval);
        // JSON is YAML: the target is quoted whatever it holds.
        let target = Value::String(scrape_target.to_string());
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n  \
                 evaluation_interval: {interval}\n\
                 scrape_configs:\n  - job_name: escepine\n    metrics_path: /metrics\n    \
                 scheme: http\n    static_configs:\n      - targets: [{target}]\n"
            ),
        )?;
        let log = std::fs::File::create(dir.path().join("prometheus.log"))?;
        let child = Command::new(&binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", storage.display()))
            .arg(format!("--web.listen-address={listen}"))
            .arg("--log.level=warn")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| io::Error::other(format!("starting `{}`: {e}", binary.display())))?;
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .max_redirects(0)
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(10)))
                .build(),
        );
        let mut prometheus = Self {
            child: Some(child),
            url: format!("http://{listen}"),
            dir,
            agent,
        };
        let deadline = Instant::now() + START_LIMIT;
        loop {
            let ready = prometheus
                .agent
                .get(format!("{}/-/ready", prometheus.url))
                .call()
                .is_ok_and(|r| r.status() == 200);
            if ready {
                return Ok(prometheus);
            }
            if let Some(child) = prometheus.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    return Err(io::Error::other(format!(
                        "prometheus exited ({status}): {}",
                        prometheus.log()
                    )));
                }
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "prometheus was not ready on {listen} within {START_LIMIT:?}: {}",
                    prometheus.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Its base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What the server logged (warnings and errors).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// `GET path` of the HTTP API: the `data` of a `"status": "success"` answer.
    ///
    /// # Panics
    /// When the request fails or the answer is not a success.
    fn api(&self, path: &str, params: &[(&str, &str)]) -> Value {
        let url = format!("{}{path}", self.url);
        let mut request = self.agent.get(&url);
        for (k, v) in params {
            request = request.query(*k, *v);
        }
        let mut response = request
            .call()
            .unwrap_or_else(|e| panic!("GET {url} {params:?}: {e}"));
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .read_to_string()
            .unwrap_or_else(|e| panic!("the body of GET {url}: {e}"));
        let answer: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("GET {url} {params:?} answers JSON ({e}): {body}"));
        assert!(
            status == 200 && answer["status"] == "success",
            "GET {url} {params:?} failed ({status}): {body}"
        );
        answer["data"].clone()
    }

    /// The result of the instant query `promql` now (`GET /api/v1/query`): `data.result`, for
    /// a vector one object per series, `{"metric": {labels}, "value": [time, "value"]}` (see
    /// [`sample_value`]); an empty list when no series matches.
    ///
    /// # Panics
    /// When the query is refused (a PromQL syntax error, say) or the server does not answer.
    pub fn query(&self, promql: &str) -> Vec<Value> {
        let data = self.api("/api/v1/query", &[("query", promql)]);
        match &data["result"] {
            Value::Array(series) => series.clone(),
            // A scalar or a string: `[time, "value"]`, as one item.
            other => vec![other.clone()],
        }
    }

    /// Run [`Self::query`] until `pred` holds for its result, and return that result.
    ///
    /// # Panics
    /// When `pred` does not hold within `timeout` (the last result, the targets and the log
    /// are quoted).
    pub fn wait_until(
        &self,
        promql: &str,
        pred: impl Fn(&[Value]) -> bool,
        timeout: Duration,
    ) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let result = self.query(promql);
            if pred(&result) {
                return result;
            }
            if Instant::now() >= deadline {
                panic!(
                    "`{promql}` did not match within {timeout:?}; last result: {result:#?}\n\
                     targets: {:#?}\nlog:\n{}",
                    self.targets(),
                    self.log()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// The active scrape targets (`GET /api/v1/targets`, `data.activeTargets`): each with
    /// `labels` (`job`, `instance`), `scrapeUrl`, `health` (`"up"`, `"down"` or `"unknown"`
    /// before the first scrape), `lastError` and `lastScrape`.
    ///
    /// # Panics
    /// When the server does not answer.
    pub fn targets(&self) -> Vec<Value> {
        let data = self.api("/api/v1/targets", &[("state", "active")]);
        data["activeTargets"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Wait until the scrape target is `"up"`, and return it.
    ///
    /// # Panics
    /// When it is not up within `timeout` (the targets and the log are quoted).
    pub fn wait_for_target_up(&self, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let targets = self.targets();
            if let Some(up) = targets.iter().find(|t| t["health"] == "up") {
                return up.clone();
            }
            if Instant::now() >= deadline {
                panic!(
                    "no scrape target up within {timeout:?}: {targets:#?}\nlog:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Stop the server now.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The value of one item of a [`Prometheus::query`] result (`value: [time, "3"]`) as a number,
/// or `None` when it has none or it does not parse (`"NaN"` parses, to NaN).
pub fn sample_value(sample: &Value) -> Option<f64> {
    sample
        .get("value")
        .unwrap_or(sample)
        .get(1)?
        .as_str()?
        .parse()
        .ok()
}
