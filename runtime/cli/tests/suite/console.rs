//! `escepine console`: a real console process over a SQLite ledger written by real `escepine`
//! commands (a compensated SOP run, calls allowed, denied and waiting for approval), driven by
//! Debian's Chromium (headless) through Debian's `chromium-driver` over WebDriver, and by a plain
//! HTTP client for what a browser would not send (forged forms, foreign sessions). The approval
//! runs the call against the loopback store, which counts every applied write. Screenshots of
//! each page go to `<target>/debug/console-screenshots/`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use escepine_testkit::sop::{item, key};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use crate::sop_harness::SopCli;

const ALICE: &str = r#"Agent::"alice""#;
const MALLORY: &str = r#"Agent::"mallory""#;
/// What an attacker puts in a payload: markup that would run if it were not escaped.
const HOSTILE: &str = r#"<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">"#;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn approval_fixtures() -> PathBuf {
    escepine_testkit::bins::workspace_root().join("runtime/tests/fixtures/approval")
}

/// The ledger every command of a test writes, and the commands.
struct Setup {
    dir: tempfile::TempDir,
    /// Commands under the SOP fixtures' own policies (the run).
    sop: SopCli,
    /// Commands under the approval policies (the calls).
    calls: SopCli,
    /// The waiting call (alice's write of the hostile value).
    waiting: String,
    /// The ledger: a SQLite file, or a PostgreSQL URL.
    location: std::ffi::OsString,
}

impl Setup {
    /// The SQLite ledger's file.
    fn ledger(&self) -> PathBuf {
        PathBuf::from(&self.location)
    }

    /// A SQLite ledger in the test's directory.
    fn new() -> Self {
        Self::on(|dir| dir.join("ledger.db").into_os_string())
    }

    /// The ledger `location` names, given the test's directory.
    fn on(location: impl FnOnce(&Path) -> std::ffi::OsString) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ledger = location(dir.path());
        let l = ledger.clone();
        let sop = SopCli::new(move |_| l);
        let l = ledger.clone();
        let f = approval_fixtures();
        let calls =
            SopCli::new(move |_| l).with_policies(&f.join("policies"), &f.join("entities.json"));

        let o = sop.run("five_steps_fail", &[]).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(12),
            "compensated: {}",
            text(&o.stderr)
        );

        calls.store.seed("seen", "v1");
        let seen = key(&calls.store, "seen").to_string();
        call(&calls, ALICE, "s_get", &seen, 0);
        call(&calls, MALLORY, "s_get", &seen, 3);
        // A read decided beside a shadow policy set that forbids everything: a disagreement.
        let shadow = dir.path().join("shadow");
        std::fs::create_dir(&shadow).unwrap();
        for schema in std::fs::read_dir(f.join("policies")).unwrap() {
            let schema = schema.unwrap().path();
            if schema.extension().is_some_and(|e| e == "cedarschema") {
                std::fs::copy(&schema, shadow.join(schema.file_name().unwrap())).unwrap();
            }
        }
        std::fs::write(
            shadow.join("deny.cedar"),
            "@id(\"shadow-deny-all\")\nforbid (principal, action, resource);\n",
        )
        .unwrap();
        let mut cmd = calls.command(&["call", "--principal", ALICE, "--tool", "s_get"]);
        cmd.args(["--input", &seen])
            .arg("--shadow-policies")
            .arg(&shadow);
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let hostile = item(&calls.store, "hostile", HOSTILE).to_string();
        let o = call(&calls, ALICE, "s_put", &hostile, 8);
        let waiting = text(&o.stdout).lines().next().unwrap().to_string();

        let keys = dir.path().join("keys");
        escepine(
            &[
                "ledger",
                "keygen",
                "--name",
                "console.test/escepine",
                "--out",
            ],
            &[&keys],
        );
        let s = Self {
            dir,
            sop,
            calls,
            waiting,
            location: ledger,
        };
        s.sign_checkpoint();
        std::fs::write(
            s.dir.path().join("tokens.json"),
            json!({
                "tok-alice-console-0001": ALICE,
                "tok-bob-console-000001": r#"Agent::"bob""#,
                "tok-mallory-console-01": MALLORY,
            })
            .to_string(),
        )
        .unwrap();
        s
    }

    /// Sign a checkpoint of the ledger as it is now into `checkpoint.txt`.
    fn sign_checkpoint(&self) {
        let o = escepine(
            &["ledger", "checkpoint", "--key"],
            &[
                &self.dir.path().join("keys/signer.key"),
                Path::new(&self.location),
            ],
        );
        std::fs::write(self.dir.path().join("checkpoint.txt"), o.stdout).unwrap();
    }

    /// `escepine console` over the ledger, the approval policies and the tokens.
    fn console(&self) -> ConsoleProcess {
        let mut cmd = self.console_command("127.0.0.1:0");
        cmd.arg("--tokens").arg(self.dir.path().join("tokens.json"));
        ConsoleProcess::start(cmd)
    }

    /// `escepine console` on `listen`, without its authenticator.
    fn console_command(&self, listen: &str) -> Command {
        let f = approval_fixtures();
        let mut cmd = self.calls.command(&["console"]);
        cmd.args(["--listen", listen, "--verify-every", "1"])
            .arg("--checkpoint")
            .arg(self.dir.path().join("checkpoint.txt"))
            .arg("--public-key")
            .arg(self.dir.path().join("keys/verifier.pub"))
            .arg("--sop")
            .arg(escepine_testkit::sop::sop_path("five_steps_fail"))
            .arg("--what-if")
            .arg(f.join("policies"))
            .env("RUST_LOG", "warn");
        cmd
    }
}

/// `escepine call --principal P --tool T --input I` under `cli`'s flags, exiting `status`.
fn call(cli: &SopCli, principal: &str, tool: &str, input: &str, status: i32) -> Output {
    let args = [
        "call",
        "--principal",
        principal,
        "--tool",
        tool,
        "--input",
        input,
    ];
    let o = cli.command(&args).output().unwrap();
    assert_eq!(o.status.code(), Some(status), "{tool}: {}", text(&o.stderr));
    o
}

fn escepine(args: &[&str], paths: &[&Path]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(args)
        .args(paths)
        .output()
        .unwrap();
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    o
}

/// A running console; killed on drop.
pub(super) struct ConsoleProcess {
    child: Child,
    base: String,
}

impl ConsoleProcess {
    /// Starts `cmd` (an `escepine console`) and waits until it listens.
    pub(super) fn start(mut cmd: Command) -> Self {
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let base = loop {
            let Some(Ok(line)) = lines.next() else {
                panic!("the console exited before listening: {seen}");
            };
            seen.push_str(&line);
            seen.push('\n');
            if let Some(at) = line.find("console on ") {
                break line[at + "console on ".len()..]
                    .trim()
                    .trim_end_matches('/')
                    .to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Self { child, base }
    }

    /// The console's URL of `path`.
    pub(super) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Its pid.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops it as an operator would (SIGTERM) and waits for its exit.
    pub(super) fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = i32::try_from(self.child.id()).expect("a pid");
        // SAFETY: a signal to the console's own pid, which is waited for below.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        self.child.wait().unwrap()
    }
}

impl Drop for ConsoleProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's chromium-driver on a free loopback port; killed on drop.
struct Driver {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl Driver {
    fn start() -> Self {
        use std::os::unix::process::CommandExt as _;
        let port = escepine_testkit::oidc::free_loopback_port();
        // A process group of its own, so that the browsers it starts end with it even when a
        // test fails before closing its session.
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver is needed (apt-get install chromium chromium-driver)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            port,
            _profile: tempfile::tempdir().unwrap(),
        }
    }

    async fn browser(&self) -> Client {
        // Several providers are linked in a workspace build: name the one to use.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let binary = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("Debian's chromium is needed");
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": binary,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,1100",
                         format!("--user-data-dir={}", self._profile.path().display())],
            }),
        );
        ClientBuilder::rustls()
            .unwrap()
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .unwrap()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The driver's group: the driver and every browser it started.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) with a negative pid signals that process group; no memory is
            // involved.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the screenshots go: `console-screenshots/` beside the test binaries.
fn screenshots() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_escepine"))
        .parent()
        .unwrap()
        .join("console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shot(b: &Client, name: &str) {
    let png = b.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "{name}: a PNG");
    std::fs::write(screenshots().join(format!("{name}.png")), png).unwrap();
}

/// The text of the element `css` names (found again while a navigation replaces the page).
async fn text_of(b: &Client, css: &str) -> String {
    let mut last = None;
    for _ in 0..20 {
        match b.find(Locator::Css(css)).await {
            Ok(e) => match e.text().await {
                Ok(t) => return t,
                Err(err) => last = Some(err),
            },
            Err(err) => last = Some(err),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{css}: {last:?}")
}

/// Click the element `css` names.
async fn click(b: &Client, css: &str) {
    b.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Wait until the browser's URL contains `part` (a navigation finished).
async fn wait_url(b: &Client, part: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !b.current_url().await.unwrap().as_str().contains(part) {
        assert!(Instant::now() < deadline, "never reached a URL with {part}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn sign_in(b: &Client, console: &ConsoleProcess, token: &str) {
    b.goto(&console.url("/login")).await.unwrap();
    b.find(Locator::Css("#token"))
        .await
        .unwrap()
        .send_keys(token)
        .await
        .unwrap();
    click(b, "#sign-in").await;
    wait_url(b, "/calls").await;
}

async fn sign_out(b: &Client) {
    click(b, "header form button").await;
    wait_url(b, "/login").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_lists_filters_proves_draws_and_approves_as_cedar_decides() {
    let setup = tokio::task::spawn_blocking(Setup::new).await.unwrap();
    let console = setup.console();
    let driver = Driver::start();
    let b = driver.browser().await;

    // Without a session, the console shows nothing but the sign-in form.
    b.goto(&console.url("/calls")).await.unwrap();
    assert_eq!(b.current_url().await.unwrap().path(), "/login");
    shot(&b, "login").await;
    assert!(b.find_all(Locator::Css("#calls")).await.unwrap().is_empty());

    // The requester signs in: every call listed, newest first; the banner says the chain and
    // the checkpoint hold.
    sign_in(&b, &console, "tok-alice-console-0001").await;
    let intents = escepine_ledger::sqlite::read_entries(&setup.ledger())
        .unwrap()
        .iter()
        .filter(|e| e.record.kind() == "intent")
        .count();
    assert!(
        intents >= 3 + 5,
        "3 calls, the run's 5 steps and its inverses"
    );
    let rows = b.find_all(Locator::Css("#calls tr.call")).await.unwrap();
    assert_eq!(rows.len(), intents, "every call listed");
    assert_eq!(text_of(&b, "#chain-status").await, "Chain intact");
    assert_eq!(text_of(&b, "#checkpoint-status").await, "Checkpoint holds");
    assert_eq!(text_of(&b, "#principal").await, ALICE);
    shot(&b, "calls").await;

    // Filter: the denied call alone, then s_get calls alone.
    b.goto(&console.url("/calls?decision=deny")).await.unwrap();
    let rows = b.find_all(Locator::Css("#calls tr.call")).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(text_of(&b, "#calls td.principal").await, MALLORY);
    b.goto(&console.url("/calls")).await.unwrap();
    let form = b.form(Locator::Css("#filter")).await.unwrap();
    form.set_by_name("tool", "s_get").await.unwrap();
    click(&b, "#apply").await;
    wait_url(&b, "tool=s_get").await;
    let tools = b.find_all(Locator::Css("#calls td.tool")).await.unwrap();
    assert_eq!(tools.len(), 3, "alice's two reads and mallory's");
    for t in tools {
        assert_eq!(t.text().await.unwrap(), "s_get");
    }
    shot(&b, "calls-filtered").await;

    // Open alice's read: its determining policy's text and its proof, verified against the
    // signed checkpoint and its key named.
    b.goto(&console.url("/calls?tool=s_get&result=ok"))
        .await
        .unwrap();
    click(&b, "#calls tr.call a").await;
    wait_url(&b, "/calls/").await;
    let policy = text_of(&b, ".policy[data-policy='alice-without-approval'] pre").await;
    assert!(policy.contains("permit"), "{policy}");
    assert!(policy.contains("Agent::\"alice\""), "{policy}");
    let proof = text_of(&b, "#proof").await;
    assert!(proof.starts_with("Verified by the console"), "{proof}");
    assert!(text_of(&b, "#proof-key")
        .await
        .starts_with("console.test/escepine"));
    assert_eq!(
        b.find_all(Locator::Css("#proof-entries tbody tr"))
            .await
            .unwrap()
            .len(),
        2,
        "intent and outcome proven"
    );
    assert_eq!(text_of(&b, "#result").await, "ok");
    shot(&b, "call").await;

    // The compensated run: its graph has the path taken highlighted and the undone steps
    // marked; a step links to its call.
    b.goto(&console.url("/runs")).await.unwrap();
    click(&b, "#runs a").await;
    wait_url(&b, "/runs/").await;
    assert_eq!(text_of(&b, "#run-status").await, "compensated");
    for state in ["put_a", "put_b", "version_a", "put_c", "boom"] {
        let class = b
            .find(Locator::Css(&format!("#graph g#state-{state}")))
            .await
            .unwrap()
            .attr("class")
            .await
            .unwrap()
            .unwrap_or_default();
        assert!(class.contains("visited"), "{state}: {class}");
    }
    let compensated = b
        .find_all(Locator::Css("#graph g.compensated"))
        .await
        .unwrap();
    assert!(compensated.len() >= 2, "the undone steps are marked");
    let taken = b
        .find_all(Locator::Css("#graph g.edge.taken"))
        .await
        .unwrap();
    assert!(
        taken.len() >= 5,
        "the transitions followed: {}",
        taken.len()
    );
    assert!(
        !b.find_all(Locator::Css("#steps tr.compensation"))
            .await
            .unwrap()
            .is_empty(),
        "the inverses are listed as compensation"
    );
    shot(&b, "run").await;
    click(&b, "#steps a.step-call").await;
    wait_url(&b, "/calls/").await;

    // The inbox: the waiting call with its exact payload, shown as text.
    b.goto(&console.url("/approvals")).await.unwrap();
    let payload = text_of(&b, ".waiting pre.payload").await;
    assert!(
        payload.contains(HOSTILE.replace('"', "\\\"").as_str()),
        "{payload}"
    );
    assert_no_injection(&b).await;
    shot(&b, "approvals").await;

    // The requester cannot approve her own call: refused, nothing ran.
    click(&b, "button.approve").await;
    wait_url(&b, "/approve").await;
    assert_eq!(text_of(&b, "h1").await, "Refused");
    assert!(text_of(&b, "#message").await.contains("requester"));
    assert!(setup.calls.store.applied().is_empty(), "nothing ran");
    shot(&b, "approve-refused").await;

    // A reviewer approves: the call runs once.
    sign_out(&b).await;
    sign_in(&b, &console, "tok-bob-console-000001").await;
    b.goto(&console.url("/approvals")).await.unwrap();
    click(&b, "button.approve").await;
    wait_url(&b, "/approve").await;
    assert_eq!(text_of(&b, "h1").await, "Approved");
    shot(&b, "approved").await;
    let applied = setup.calls.store.applied();
    assert_eq!(applied.values().sum::<u32>(), 1, "ran once: {applied:?}");
    assert_eq!(
        setup.calls.store.items().get("hostile").map(Vec::len),
        Some(1)
    );
    b.goto(&console.url("/approvals")).await.unwrap();
    assert!(!b.find_all(Locator::Css("#empty")).await.unwrap().is_empty());

    // Its page: approved by bob, the hostile payload escaped, nothing injected ran; it is newer
    // than the checkpoint, until a new checkpoint is signed into the same file.
    b.goto(&console.url(&format!("/calls/{}", setup.waiting)))
        .await
        .unwrap();
    assert!(text_of(&b, "#approval")
        .await
        .starts_with("approved by Agent::\"bob\""));
    assert!(text_of(&b, "#payload")
        .await
        .contains("<script>window.__pwned=1</script>"));
    assert_no_injection(&b).await;
    let proof = text_of(&b, "#proof").await;
    assert!(
        proof.starts_with("Verified by the console"),
        "the intent is covered: {proof}"
    );
    assert!(
        proof.ends_with("not yet covered."),
        "the decision and outcome are not: {proof}"
    );
    setup.sign_checkpoint();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        b.refresh().await.unwrap();
        let proof = text_of(&b, "#proof").await;
        if !proof.contains("not yet covered") {
            assert!(proof.starts_with("Verified by the console"), "{proof}");
            assert_eq!(
                b.find_all(Locator::Css("#proof-entries tbody tr"))
                    .await
                    .unwrap()
                    .len(),
                3,
                "intent, approval and outcome proven"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new checkpoint was not picked up"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    shot(&b, "approved-call").await;

    // Policies: the approval policies replayed over the run made under the SOP fixtures' own
    // policies flip its writes (they would now wait for a reviewer), and none of the calls
    // made under the approval policies.
    b.goto(&console.url("/policies")).await.unwrap();
    let disagreements = b
        .find_all(Locator::Css("#disagreements tbody tr"))
        .await
        .unwrap();
    assert_eq!(
        disagreements.len(),
        1,
        "the read beside the shadow policies"
    );
    let row = disagreements[0].text().await.unwrap();
    assert!(row.contains("s_get") && row.contains("allow"), "{row}");
    let summary = text_of(&b, "#replay-summary").await;
    assert!(
        summary.starts_with(&format!("Replayed {intents} recorded requests")),
        "{summary}"
    );
    let flips = b.find_all(Locator::Css("#flips tbody tr")).await.unwrap();
    assert!(!flips.is_empty(), "{summary}");
    for f in flips {
        let row = f.text().await.unwrap();
        assert!(row.contains("awaiting-approval"), "{row}");
        assert!(!row.contains(&setup.waiting[..16]), "{row}");
    }
    shot(&b, "policies").await;

    b.close().await.unwrap();
    drop(setup.sop);
}

/// No script element exists and nothing an injected handler would set is set.
async fn assert_no_injection(b: &Client) {
    let found = b
        .execute(
            "return [document.querySelectorAll('script').length, \
             document.querySelectorAll('img[src=x]').length, typeof window.__pwned];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(found, json!([0, 0, "undefined"]));
}

// ----- without a browser: what a browser would not send -----

/// An HTTP agent that follows no redirect and takes every status as an answer.
pub(super) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .build()
        .into()
}

/// A response's status and body.
pub(super) fn body(mut r: ureq::http::Response<ureq::Body>) -> (u16, String) {
    let status = r.status().as_u16();
    (status, r.body_mut().read_to_string().unwrap_or_default())
}

fn set_cookie(r: &ureq::http::Response<ureq::Body>, name: &str) -> String {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| c.strip_prefix(&format!("{name}=")))
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_string()
}

/// Sign in over HTTP as the form would: the session cookie.
fn session(console: &ConsoleProcess, token: &str) -> String {
    let a = agent();
    let r = a.get(&console.url("/login")).call().unwrap();
    let login = set_cookie(&r, "escepine_login");
    let r = a
        .post(&console.url("/login"))
        .header("Cookie", &format!("escepine_login={login}"))
        .send_form([("token", token), ("login", login.as_str())])
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    let cookie = set_cookie(&r, "escepine_session");
    let set = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|c| c.starts_with("escepine_session="))
        .unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    cookie
}

/// The CSRF token of the session's forms.
fn csrf(console: &ConsoleProcess, cookie: &str) -> String {
    let (_, page) = body(
        agent()
            .get(&console.url("/approvals"))
            .header("Cookie", &format!("escepine_session={cookie}"))
            .call()
            .unwrap(),
    );
    let at = page.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
    page[at..at + 43].to_string()
}

#[test]
fn forged_forms_foreign_sessions_and_tampering_are_refused_or_shown() {
    let setup = Setup::new();
    let console = setup.console();
    let a = agent();
    let approve = console.url(&format!("/approvals/{}/approve", setup.waiting));

    // Nothing without a session: a browser is sent to /login, a bad bearer token refused.
    for path in [
        "/calls",
        "/approvals",
        "/runs",
        "/policies",
        &format!("/calls/{}", setup.waiting),
    ] {
        let r = a.get(&console.url(path)).call().unwrap();
        assert_eq!(r.status().as_u16(), 303, "{path}");
        assert_eq!(r.headers().get("location").unwrap(), "/login");
        let (status, page) = body(
            a.get(&console.url(path))
                .header("Authorization", "Bearer not-a-token")
                .call()
                .unwrap(),
        );
        assert_eq!(status, 401, "{path}");
        assert!(!page.contains(&setup.waiting), "{path}: nothing shown");
    }
    let (status, _) = body(a.post(&approve).send_form([("csrf", "x")]).unwrap());
    assert_eq!(status, 303, "no session: sent to sign in, nothing decided");
    // A login form posted without its cookie (a cross-site sign-in) is refused.
    let (status, _) = body(
        a.post(&console.url("/login"))
            .send_form([("token", "tok-bob-console-000001"), ("login", "guess")])
            .unwrap(),
    );
    assert_eq!(status, 403);

    let bob = session(&console, "tok-bob-console-000001");
    let mallory = session(&console, "tok-mallory-console-01");
    let bob_csrf = csrf(&console, &bob);
    let mallory_csrf = csrf(&console, &mallory);
    assert_ne!(bob_csrf, mallory_csrf);

    // Forged forms: no token, another session's token, a made-up token.
    for (cookie, token) in [
        (&bob, None),
        (&bob, Some(&mallory_csrf)),
        (&bob, Some(&"A".repeat(43))),
    ] {
        let req = a
            .post(&approve)
            .header("Cookie", &format!("escepine_session={cookie}"));
        let r = match token {
            Some(t) => req.send_form([("csrf", t.as_str())]),
            None => req.send_form([("go", "approve")]),
        }
        .unwrap();
        let (status, page) = body(r);
        assert_eq!(status, 403, "{page}");
        assert!(page.contains("CSRF"), "{page}");
    }
    // Mallory's own session and token: Cedar does not let her approve.
    let (status, page) = body(
        a.post(&approve)
            .header("Cookie", &format!("escepine_session={mallory}"))
            .send_form([("csrf", mallory_csrf.as_str())])
            .unwrap(),
    );
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("Refused"), "{page}");
    assert!(setup.calls.store.applied().is_empty(), "nothing ran");
    let o = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "show", "--waiting"])
        .arg(setup.ledger())
        .output()
        .unwrap();
    assert!(text(&o.stdout).contains(&setup.waiting), "still waiting");

    // The time range: everything after 2000, nothing before it or from tomorrow on; a time
    // that cannot be read is refused, naming its field.
    let calls = |query: &str| {
        body(
            a.get(&console.url(&format!("/calls?{query}")))
                .header("Authorization", "Bearer tok-bob-console-000001")
                .call()
                .unwrap(),
        )
    };
    let all = calls("from=2000-01-01T00:00Z")
        .1
        .matches("data-call=")
        .count();
    assert!(all >= 8, "{all}");
    assert_eq!(
        calls("to=2000-01-01T00:00:00Z")
            .1
            .matches("data-call=")
            .count(),
        0
    );
    let tomorrow = escepine_ledger::entry::now_ms() + 86_400_000;
    assert_eq!(
        calls(&format!("from={tomorrow}"))
            .1
            .matches("data-call=")
            .count(),
        0
    );
    assert_eq!(
        calls(&format!("from=2000-01-01T00:00&to={tomorrow}"))
            .1
            .matches("data-call=")
            .count(),
        all
    );
    let (status, page) = calls("from=soon");
    assert_eq!(status, 400);
    assert!(page.contains("from: `soon` is neither"), "{page}");

    // A script with a bearer token needs no CSRF token (it sends no cookie): bob rejects.
    let reject = console.url(&format!("/approvals/{}/reject", setup.waiting));
    let (status, page) = body(
        a.post(&reject)
            .header("Authorization", "Bearer tok-bob-console-000001")
            .send_form([("go", "reject")])
            .unwrap(),
    );
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Rejected"), "{page}");
    assert!(
        setup.calls.store.applied().is_empty(),
        "a rejection runs nothing"
    );

    // Every page carries a policy that runs no script.
    let r = a
        .get(&console.url("/calls"))
        .header("Authorization", "Bearer tok-bob-console-000001")
        .call()
        .unwrap();
    let csp = r
        .headers()
        .get("content-security-policy")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(csp.contains("script-src 'none'"), "{csp}");

    // A changed entry: every page says the ledger is tampered, within a verification period.
    let o = Command::new("sqlite3")
        .arg(setup.ledger())
        .arg("UPDATE entries SET at_ms = at_ms + 1 WHERE seq = 3;")
        .output()
        .expect("the sqlite3 command-line tool is needed");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (_, page) = body(
            a.get(&console.url("/runs"))
                .header("Authorization", "Bearer tok-alice-console-0001")
                .call()
                .unwrap(),
        );
        if page.contains("id=\"chain-status\">TAMPERED") {
            assert!(page.contains("class=\"tampered\""), "{page}");
            break;
        }
        assert!(Instant::now() < deadline, "tampering not shown: {page}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

// ----- signing in through the identity provider -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_signs_in_through_the_identity_provider_and_approves() {
    use escepine_testkit::oidc::{free_loopback_port, Keys, Provider, ProviderConfig};

    let setup = tokio::task::spawn_blocking(Setup::new).await.unwrap();
    let port = free_loopback_port();
    let base = format!("http://127.0.0.1:{port}");
    let resource = format!("{base}/console");
    let callback = format!("{base}/login/callback");
    let provider = {
        let (resource, callback) = (resource.clone(), callback.clone());
        tokio::task::spawn_blocking(move || {
            Provider::start(
                &ProviderConfig::new(Keys::A, &resource)
                    .app("escepine-console", &callback)
                    .account("rita", &["reviewers"])
                    .account("alice", &[]),
            )
        })
        .await
        .unwrap()
    };
    let oauth = setup.dir.path().join("oauth.json");
    std::fs::write(
        &oauth,
        json!({"resource": resource, "issuers": [{
            "issuer": provider.issuer,
            "principal": { "type": "Agent", "claim": "sub" },
            "parents": [{ "claim": "groups", "type": "Team" }],
        }]})
        .to_string(),
    )
    .unwrap();
    let client = setup.dir.path().join("oidc-client.json");
    std::fs::write(
        &client,
        json!({"issuer": provider.issuer, "client_id": "escepine-console",
               "redirect_uri": callback, "scope": "openid mcp:tools"})
        .to_string(),
    )
    .unwrap();
    let mut cmd = setup.console_command(&format!("127.0.0.1:{port}"));
    cmd.arg("--oauth")
        .arg(&oauth)
        .arg("--oidc-client")
        .arg(&client);
    let console = ConsoleProcess::start(cmd);
    assert_eq!(console.base, base);

    let driver = Driver::start();
    let b = driver.browser().await;

    // An unknown login: the provider refuses, and the console says so and opens no session.
    provider_login(&b, &console, "eve").await;
    wait_url(&b, "/login/callback").await;
    assert_eq!(text_of(&b, "h1").await, "Refused");
    assert!(text_of(&b, "#message").await.contains("access_denied"));
    b.goto(&console.url("/approvals")).await.unwrap();
    wait_url(&b, "/login").await;

    // A reviewer: signed in as the token's principal, the approval decided by Cedar with the
    // token's groups as parents, and the call run once.
    provider_login(&b, &console, "rita").await;
    wait_url(&b, "/calls").await;
    assert_eq!(text_of(&b, "#principal").await, r#"Agent::"rita""#);
    shot(&b, "oidc-signed-in").await;
    b.goto(&console.url("/approvals")).await.unwrap();
    click(&b, "button.approve").await;
    wait_url(&b, "/approve").await;
    assert_eq!(text_of(&b, "h1").await, "Approved");
    assert_eq!(setup.calls.store.applied().values().sum::<u32>(), 1);
    b.goto(&console.url(&format!("/calls/{}", setup.waiting)))
        .await
        .unwrap();
    assert!(text_of(&b, "#approval")
        .await
        .starts_with(r#"approved by Agent::"rita""#));
    b.close().await.unwrap();
}

/// Follow "Sign in with …" and fill the provider's login (any password) and consent forms.
async fn provider_login(b: &Client, console: &ConsoleProcess, login: &str) {
    b.goto(&console.url("/login")).await.unwrap();
    click(b, "#oidc").await;
    wait_url(b, "/interaction/").await;
    b.find(Locator::Css("input[name=login]"))
        .await
        .unwrap()
        .send_keys(login)
        .await
        .unwrap();
    b.find(Locator::Css("input[name=password]"))
        .await
        .unwrap()
        .send_keys("any password")
        .await
        .unwrap();
    click(b, "button[type=submit]").await;
    // The consent form, when the provider asks (not for a refused login).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let url = b.current_url().await.unwrap();
        if url.as_str().starts_with(&console.base) {
            return;
        }
        if let Ok(page) = b.source().await {
            if page.contains("name=\"prompt\" value=\"consent\"") {
                if let Ok(button) = b.find(Locator::Css("button[type=submit]")).await {
                    let _ = button.click().await;
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "the provider did not send the browser back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ----- over PostgreSQL -----

#[test]
fn the_console_reads_verifies_and_decides_on_a_postgresql_ledger() {
    let db = escepine_testkit::postgres::TestDatabase::create();
    let url = db.url();
    let setup = Setup::on(|_| url.clone().into());
    let console = setup.console();
    let a = agent();
    let get = |path: &str| {
        body(
            a.get(&console.url(path))
                .header("Authorization", "Bearer tok-bob-console-000001")
                .call()
                .unwrap(),
        )
    };
    let intents = escepine_ledger::postgres::read_entries(&url)
        .unwrap()
        .iter()
        .filter(|e| e.record.kind() == "intent")
        .count();
    let (status, page) = get("/calls");
    assert_eq!(status, 200, "{page}");
    assert_eq!(page.matches("data-call=").count(), intents, "{page}");
    assert!(page.contains("id=\"chain-status\">Chain intact"), "{page}");
    assert!(
        page.contains("id=\"checkpoint-status\">Checkpoint holds"),
        "{page}"
    );

    let (_, page) = get(&format!("/calls/{}", setup.waiting));
    assert!(page.contains("Verified by the console"), "{page}");
    let (status, page) = body(
        a.post(&console.url(&format!("/approvals/{}/approve", setup.waiting)))
            .header("Authorization", "Bearer tok-bob-console-000001")
            .send_form([("go", "approve")])
            .unwrap(),
    );
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Approved"), "{page}");
    assert_eq!(setup.calls.store.applied().values().sum::<u32>(), 1);
    let (_, page) = get(&format!("/calls/{}", setup.waiting));
    assert!(page.contains("id=\"result\">ok"), "{page}");
}
