//! Scrubbing 64 KiB of tool output: the previous scrubber against [`Scrubber`].
//!
//! The previous scrubber replaced three fixed forms of each secret (as is, JSON-escaped,
//! form-encoded) with `str::replace`, longest first; it is kept here, as `previous`, only to be
//! measured against. Ours matches every form of the module documentation of
//! `escepine_runtime::scrub`: two Aho-Corasick passes and the escaped matcher from each `%`, `\`
//! and `+`.
//!
//! Texts: 64 KiB of log-like lines (words, URLs with percent-escapes and `+`, JSON with
//! backslash escapes, a base64 blob), without any secret (the common case), and with each of
//! the two secrets in a few forms. Two secrets, 18 and 40 bytes. Run: `cargo bench -p
//! escepine-runtime --bench scrub`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use escepine_runtime::scrub::Scrubber;

const SECRETS: [&str; 2] = [
    "sup3r-s3cret-V4LUE",
    "ghp_9f8Kq2LmX0aZ7bC4dE6fG1hJ3kL5mN8pQ0rS",
];
const SIZE: usize = 64 * 1024;

/// The previous scrubber: three fixed forms, `str::replace`.
mod previous {
    pub struct Scrubber {
        needles: Vec<String>,
    }

    impl Scrubber {
        pub fn new(secrets: &[&str]) -> Self {
            let mut needles = Vec::new();
            for s in secrets {
                needles.push(s.to_string());
                if let Ok(json) = serde_json::to_string(s) {
                    let inner = json[1..json.len() - 1].to_string();
                    if inner != *s {
                        needles.push(inner);
                    }
                }
                let pct: String = url::form_urlencoded::byte_serialize(s.as_bytes()).collect();
                if pct != *s {
                    needles.push(pct);
                }
            }
            needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
            needles.dedup();
            Self { needles }
        }

        pub fn text(&self, text: &str) -> String {
            let mut out = text.to_string();
            for n in &self.needles {
                if out.contains(n.as_str()) {
                    out = out.replace(n.as_str(), "[REDACTED]");
                }
            }
            out
        }
    }
}

/// 64 KiB of log-like text, with `inserts` spliced in at even intervals.
fn text(inserts: &[String]) -> String {
    let lines = [
        "2024-05-01T12:00:00Z INFO fetching https://example.org/search?q=rust+async%20runtime&page=2\n",
        "{\"level\":\"debug\",\"msg\":\"response \\\"ok\\\"\",\"path\":\"C:\\\\tmp\\\\out.json\",\"n\":42}\n",
        "the quick brown fox jumps over the lazy dog; session started for user 1234 in 35 ms\n",
        "payload=eyJ1cmwiOiJodHRwczovL2V4YW1wbGUub3JnLyIsImRlcHRoIjoyfQ== status=200 bytes=5120\n",
        "WARN retrying GET /v1/items/abc%2Fdef after 250 ms (attempt 2 of 3), cause: timeout\n",
    ];
    let mut out = String::with_capacity(SIZE + 1024);
    let mut i = 0;
    let every = SIZE / (inserts.len() + 1);
    let mut next = every;
    let mut inserted = 0;
    while out.len() < SIZE {
        out.push_str(lines[i % lines.len()]);
        i += 1;
        if out.len() >= next && inserted < inserts.len() {
            out.push_str(&inserts[inserted]);
            out.push('\n');
            inserted += 1;
            next += every;
        }
    }
    out.truncate(SIZE);
    out
}

fn bench(c: &mut Criterion) {
    let ours = Scrubber::new(SECRETS);
    let old = previous::Scrubber::new(&SECRETS);
    let clean = text(&[]);
    let mut forms = Vec::new();
    for s in SECRETS {
        forms.push(format!("token={s}"));
        forms.push(format!(
            "url=https://x.example/?k={}",
            s.replace('-', "%2D")
        ));
        forms.push(format!("hex={}", hex::encode(s)));
    }
    let dirty = text(&forms);
    // Both leave clean text alone; ours scrubs every inserted form, the previous one only the
    // literal ones (the second secret has no `-`, so its URL form is literal too).
    assert_eq!(ours.text(&clean), clean);
    assert_eq!(old.text(&clean), clean);
    assert_eq!(ours.text(&dirty).matches("[REDACTED]").count(), forms.len());
    assert_eq!(old.text(&dirty).matches("[REDACTED]").count(), 3);

    for (name, input) in [("no secret in it", &clean), ("6 occurrences", &dirty)] {
        let mut group = c.benchmark_group(format!("scrub 64 KiB, 2 secrets, {name}"));
        group.bench_function("previous (3 fixed forms, str::replace)", |b| {
            b.iter(|| black_box(old.text(black_box(input))))
        });
        group.bench_function("Scrubber::text", |b| {
            b.iter(|| black_box(ours.text(black_box(input))))
        });
        group.bench_function("Scrubber::text_within (bound 60 KiB)", |b| {
            b.iter(|| black_box(ours.text_within(black_box(input), 60 * 1024)))
        });
        group.finish();
    }
    c.bench_function("Scrubber::new, 2 secrets", |b| {
        b.iter(|| black_box(Scrubber::new(black_box(SECRETS))))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
