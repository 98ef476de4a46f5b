//! An ordinary proxy client (curl) through the egress proxy, by way of a TCP→Unix relay like the
//! one the sandbox runs on its loopback. Skipped, saying so, where curl is not installed.

use crate::proxy_support;

use std::process::Output;

use proxy_support::{http_server, proxy, silent, tcp_relay, MapResolver};
use tokio::process::Command;

async fn curl(relay: u16, args: &[&str]) -> Option<Output> {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "20", "--noproxy", ""])
        .arg("--proxy")
        .arg(format!("http://127.0.0.1:{relay}"))
        .args(args)
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .kill_on_drop(true);
    match cmd.output().await {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("curl is not installed: skipping");
            None
        }
        Err(e) => panic!("curl: {e}"),
    }
}

#[tokio::test]
async fn curl_get_post_and_tunnel() {
    let (port, _rx) = http_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    let relay = tcp_relay(p.path.clone()).await;
    let url = format!("http://127.0.0.1:{port}/x");

    let Some(out) = curl(relay, &["-w", "%{http_code}", &url]).await else {
        return;
    };
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");

    let body = "a=1&b=".to_string() + &"x".repeat(5000);
    let out = curl(relay, &["--data-binary", &body, &url])
        .await
        .unwrap_or_else(|| panic!("curl vanished"));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), body);

    let out = curl(
        relay,
        &[
            "-H",
            "Transfer-Encoding: chunked",
            "--data-binary",
            "chunky",
            &url,
        ],
    )
    .await
    .unwrap_or_else(|| panic!("curl vanished"));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "chunky");

    // `-p`: the same request through a CONNECT tunnel.
    let out = curl(relay, &["-p", "--data-binary", "tunnelled", &url])
        .await
        .unwrap_or_else(|| panic!("curl vanished"));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tunnelled");

    assert!(p.handle.shutdown().await.is_empty());
}

#[tokio::test]
async fn curl_is_refused_outside_the_profile() {
    let quiet = silent().await;
    let (port, _rx) = http_server().await;
    let p = proxy(&[format!("127.0.0.1:{port}")], MapResolver::default()).await;
    let relay = tcp_relay(p.path.clone()).await;
    let url = format!("http://127.0.0.1:{}/", quiet.port);

    let Some(out) = curl(relay, &["-w", "%{http_code}", &url]).await else {
        return;
    };
    let line = format!("refused GET 127.0.0.1:{}/: not in the profile", quiet.port);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("escepine egress proxy: {line}\n403")
    );
    let out = curl(relay, &["-p", &url])
        .await
        .unwrap_or_else(|| panic!("curl vanished"));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("403"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    quiet.assert_untouched().await;
    assert_eq!(
        p.handle.shutdown().await,
        vec![
            format!("refused GET 127.0.0.1:{}/: not in the profile", quiet.port),
            format!(
                "refused CONNECT 127.0.0.1:{}: not in the profile",
                quiet.port
            ),
        ]
    );
}
