//! `escepine_testkit::prometheus` against Debian's Prometheus that `.ci/fixtures` installs: it
//! starts on loopback, scrapes a tiny exposition this test serves, reports the target up, and
//! answers a PromQL query with the scraped value. Needs `.ci/fixtures` to have run.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use escepine_testkit::prometheus::{sample_value, Prometheus};

const WAIT: Duration = Duration::from_secs(60);

/// The exposition served at `/metrics` (Prometheus text format 0.0.4).
const EXPOSITION: &str = "# HELP test_metric_total A counter for the test.\n\
                          # TYPE test_metric_total counter\n\
                          test_metric_total 3\n";

/// A loopback HTTP server answering every request with [`EXPOSITION`] (`/metrics`) or 404,
/// counting the scrapes; stopped on drop.
struct Exposition {
    addr: SocketAddr,
    scrapes: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Exposition {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("its address");
        let scrapes = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (scrapes, stop) = (scrapes.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            if answer(stream) {
                                scrapes.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(e) => panic!("accept: {e}"),
                    }
                }
            })
        };
        Self {
            addr,
            scrapes,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Exposition {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Read one request's head and answer it (closing the connection): whether it was a
/// `GET /metrics`.
fn answer(mut stream: TcpStream) -> bool {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let scrape = head.starts_with("GET /metrics ");
    let (status, body) = if scrape {
        ("200 OK", EXPOSITION)
    } else {
        ("404 Not Found", "not found\n")
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
    scrape
}

#[test]
fn prometheus_scrapes_a_loopback_target_and_answers_queries() {
    let exposition = Exposition::start();
    let target = exposition.addr.to_string();
    let prometheus = Prometheus::start(&target, Duration::from_millis(500));
    assert!(prometheus.url().starts_with("http://127.0.0.1:"));

    let up = prometheus.wait_for_target_up(WAIT);
    assert_eq!(up["labels"]["job"], "escepine");
    assert_eq!(up["labels"]["instance"], target.as_str());
    assert_eq!(up["scrapeUrl"], format!("http://{target}/metrics"));
    assert_eq!(up["lastError"], "");
    assert!(exposition.scrapes.load(Ordering::SeqCst) >= 1);

    let result = prometheus.wait_until("test_metric_total", |r| !r.is_empty(), WAIT);
    assert_eq!(result.len(), 1, "{result:#?}");
    assert_eq!(sample_value(&result[0]), Some(3.0), "{result:#?}");
    assert_eq!(result[0]["metric"]["__name__"], "test_metric_total");
    assert_eq!(result[0]["metric"]["job"], "escepine");
    assert_eq!(result[0]["metric"]["instance"], target.as_str());

    // The scrape's own series, and a query that matches nothing.
    let up_series = prometheus.query(r#"up{job="escepine"}"#);
    assert_eq!(up_series.len(), 1, "{up_series:#?}");
    assert_eq!(sample_value(&up_series[0]), Some(1.0));
    assert!(prometheus.query("no_such_metric_total").is_empty());
    let targets = prometheus.targets();
    assert_eq!(targets.len(), 1, "{targets:#?}");
    assert_eq!(targets[0]["health"], "up");
}
