//! Admission by authorized origin (`authorized-urls`): a forwarded `http://` request or a
//! `CONNECT` reaches exactly the origins of the grant, the address policy still applies to them
//! (only the grant's public addresses pass), and every refusal precedes any connection — the
//! loopback listeners that must stay silent see no connection at all.

use crate::proxy_support;

use std::net::IpAddr;
use std::sync::Arc;

use escepine_contract::{EgressGrant, Origin, OriginHost};
use escepine_egress::EgressProxy;
use proxy_support::{entries, http_server, roundtrip, send, silent, status, MapResolver, Proxy};

const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

fn origin(scheme: &str, host: &str, port: u16) -> Origin {
    let host = match host.parse::<IpAddr>() {
        Ok(ip) => OriginHost::Ip(ip),
        Err(_) => OriginHost::Name(host.to_string()),
    };
    Origin {
        scheme: scheme.into(),
        host,
        port,
    }
}

async fn proxy(grant: EgressGrant, resolver: MapResolver) -> Proxy {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let path = dir.path().join("egress.sock");
    let handle = EgressProxy::start(&path, grant, Arc::new(resolver))
        .await
        .unwrap_or_else(|e| panic!("start: {e}"));
    Proxy::new(handle, path, dir)
}

fn get(authority: &str, path: &str) -> Vec<u8> {
    format!("GET http://{authority}{path} HTTP/1.1\r\n\r\n").into_bytes()
}

#[tokio::test]
async fn an_authorized_origin_is_reached_and_nothing_else_is() {
    let (port, mut rx) = http_server().await;
    let other = silent().await;
    let grant = EgressGrant::default()
        .with_origins([origin("http", "127.0.0.1", port)])
        .with_public_addresses([LOOPBACK]);
    let resolver = MapResolver::with(&[("localhost", &["127.0.0.1"])]);
    let p = proxy(grant, resolver.clone()).await;

    let (head, _) = roundtrip(&p.path, &get(&format!("127.0.0.1:{port}"), "/page?x=1")).await;
    assert_eq!(status(&head), 200, "{head}");
    let got = rx
        .recv()
        .await
        .unwrap_or_else(|| panic!("the server saw nothing"));
    assert!(
        got.head.starts_with("GET /page?x=1 HTTP/1.1"),
        "{}",
        got.head
    );
    // A tunnel to the same host and port is the same origin.
    let (head, tunnel) = send(
        &p.path,
        format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!(status(&head), 200, "{head}");
    drop(tunnel);
    let attempts = p.handle.connect_attempts();
    assert_eq!(attempts, 2);
    assert_eq!(
        p.handle.requests(),
        [
            format!("GET 127.0.0.1:{port}/page?x=1"),
            format!("CONNECT 127.0.0.1:{port}")
        ]
    );

    // The same server's other port, another loopback name, another loopback address.
    for request in [
        get(&format!("127.0.0.1:{}", other.port), "/secret"),
        format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", other.port).into_bytes(),
        get(&format!("localhost:{}", other.port), "/"),
        get(&format!("localhost:{port}"), "/"),
        get(&format!("127.0.0.2:{port}"), "/"),
    ] {
        let (head, _) = roundtrip(&p.path, &request).await;
        assert_eq!(
            status(&head),
            403,
            "{}: {head}",
            String::from_utf8_lossy(&request)
        );
    }
    other.assert_untouched().await;
    assert_eq!(p.handle.connect_attempts(), attempts, "a refusal connected");
    assert_eq!(p.handle.requests().len(), 2, "a refusal was admitted");
    assert!(resolver.asked().is_empty(), "{:?}", resolver.asked());
    let why = "not in the profile nor an origin this call's authorization allowed";
    assert_eq!(
        p.handle.shutdown().await,
        vec![
            format!("refused GET 127.0.0.1:{}/secret: {why}", other.port),
            format!("refused CONNECT 127.0.0.1:{}: {why}", other.port),
            format!("refused GET localhost:{}/: {why}", other.port),
            format!("refused GET localhost:{port}/: {why}"),
            format!("refused GET 127.0.0.2:{port}/: {why}"),
        ]
    );
}

#[tokio::test]
async fn an_origins_address_is_still_vetted() {
    let quiet = silent().await;
    // Without public addresses, an authorized loopback origin is refused by the address policy,
    // literal or name.
    let grant = EgressGrant::default().with_origins([
        origin("http", "127.0.0.1", quiet.port),
        origin("http", "pages.example.com", quiet.port),
        origin("http", "mixed.example.com", quiet.port),
    ]);
    let resolver = MapResolver::with(&[
        ("pages.example.com", &["127.0.0.1"]),
        ("mixed.example.com", &["127.0.0.1", "10.0.0.1"]),
    ]);
    let p = proxy(
        grant.clone().with_public_addresses([LOOPBACK]),
        resolver.clone(),
    )
    .await;
    // With 127.0.0.1 public, a name that also resolves to a private address is refused whole.
    let (head, _) = roundtrip(
        &p.path,
        &get(&format!("mixed.example.com:{}", quiet.port), "/"),
    )
    .await;
    assert_eq!(status(&head), 403, "{head}");
    assert_eq!(
        p.handle.shutdown().await,
        vec![format!(
            "refused GET mixed.example.com:{}/: resolves to 10.0.0.1, a private address",
            quiet.port
        )]
    );

    let p = proxy(grant, resolver).await;
    for request in [
        get(&format!("127.0.0.1:{}", quiet.port), "/a"),
        get(&format!("pages.example.com:{}", quiet.port), "/b"),
    ] {
        let (head, _) = roundtrip(&p.path, &request).await;
        assert_eq!(status(&head), 403, "{head}");
    }
    quiet.assert_untouched().await;
    assert_eq!(p.handle.connect_attempts(), 0);
    assert_eq!(
        p.handle.shutdown().await,
        vec![
            format!(
                "refused GET 127.0.0.1:{}/a: 127.0.0.1 is a loopback address",
                quiet.port
            ),
            format!(
                "refused GET pages.example.com:{}/b: resolves to 127.0.0.1, a loopback address",
                quiet.port
            ),
        ]
    );
}

#[tokio::test]
async fn a_forwarded_request_is_http_and_entries_keep_their_rules() {
    let (port, _rx) = http_server().await;
    let quiet = silent().await;
    // An `https` origin admits a tunnel, never a plain-HTTP forward.
    let grant = EgressGrant::new(entries(&[format!("127.0.0.1:{port}")]))
        .with_origins([origin("https", "127.0.0.1", quiet.port)])
        .with_public_addresses([LOOPBACK]);
    let p = proxy(grant, MapResolver::default()).await;
    let (head, _) = roundtrip(&p.path, &get(&format!("127.0.0.1:{}", quiet.port), "/")).await;
    assert_eq!(status(&head), 403, "{head}");
    quiet.assert_untouched().await;
    // The static entry still admits its literal.
    let (head, _) = roundtrip(&p.path, &get(&format!("127.0.0.1:{port}"), "/")).await;
    assert_eq!(status(&head), 200, "{head}");
    assert_eq!(p.handle.connect_attempts(), 1);
    assert_eq!(p.handle.shutdown().await.len(), 1);
}
