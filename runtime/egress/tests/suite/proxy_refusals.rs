//! What the egress proxy refuses, and that it refuses before connecting: ports outside the
//! profile, names resolving to internal addresses (DNS rebinding, with an injected resolver),
//! empty profiles, oversized and malformed heads. Every refusal is recorded.
//!
//! No test sends traffic anywhere but 127.0.0.1: refused targets are refused before any
//! connection attempt (`connect_attempts` stays 0), and the loopback listeners named by
//! rebinding answers see nothing.

use crate::proxy_support;

use proxy_support::{proxy, roundtrip, send, silent, status, MapResolver};
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn loopback_port_outside_the_profile() {
    let quiet = silent().await;
    let allowed = silent().await;
    let p = proxy(
        &[format!("127.0.0.1:{}", allowed.port)],
        MapResolver::default(),
    )
    .await;
    let request = format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", quiet.port);
    let (head, body) = roundtrip(&p.path, request.as_bytes()).await;
    assert_eq!(status(&head), 403, "{head}");
    let line = format!(
        "refused CONNECT 127.0.0.1:{}: not in the profile",
        quiet.port
    );
    assert_eq!(
        String::from_utf8_lossy(&body),
        format!("escepine egress proxy: {line}\n")
    );
    quiet.assert_untouched().await;
    allowed.assert_untouched().await;
    assert_eq!(p.handle.connect_attempts(), 0);
    assert_eq!(p.handle.refusals(), vec![line.clone()]);
    assert_eq!(p.handle.shutdown().await, vec![line]);
}

#[tokio::test]
async fn allowlisted_name_resolving_to_loopback_is_refused_before_connecting() {
    let quiet = silent().await;
    let resolver = MapResolver::with(&[("allowed.test", &["127.0.0.1"])]);
    let p = proxy(&["allowed.test".to_string()], resolver.clone()).await;
    let request = format!("CONNECT allowed.test:{} HTTP/1.1\r\n\r\n", quiet.port);
    let (head, _) = roundtrip(&p.path, request.as_bytes()).await;
    assert_eq!(status(&head), 403, "{head}");
    quiet.assert_untouched().await;
    assert_eq!(p.handle.connect_attempts(), 0);
    assert_eq!(resolver.asked(), vec!["allowed.test"]);
    assert_eq!(
        p.handle.shutdown().await,
        vec![format!(
            "refused CONNECT allowed.test:{}: resolves to 127.0.0.1, a loopback address",
            quiet.port
        )]
    );
}

#[tokio::test]
async fn allowlisted_name_resolving_to_private_addresses_is_refused() {
    // The loopback listener comes first in the mixed answer: a proxy that dialled anything would
    // touch it (and nothing beyond loopback) before any other address.
    let quiet = silent().await;
    let resolver = MapResolver::with(&[
        ("allowed.test", &["10.0.0.1"]),
        ("mixed.test", &["127.0.0.1", "10.0.0.1"]),
        ("metadata.test", &["169.254.169.254"]),
        ("v6.test", &["fd00:ec2::254"]),
        ("mapped.test", &["::ffff:127.0.0.1"]),
        ("cgnat.test", &["100.64.1.1"]),
    ]);
    let list = [
        "allowed.test".to_string(),
        "mixed.test".to_string(),
        "metadata.test".to_string(),
        "v6.test".to_string(),
        "mapped.test".to_string(),
        "cgnat.test".to_string(),
        // An entry naming loopback's address does not unlock it for a name.
        format!("127.0.0.1:{}", quiet.port),
    ];
    let p = proxy(&list, resolver).await;
    let port = quiet.port;
    let cases = [
        ("allowed.test", "10.0.0.1, a private address"),
        ("mixed.test", "127.0.0.1, a loopback address"),
        ("metadata.test", "169.254.169.254, a metadata address"),
        ("v6.test", "fd00:ec2::254, a metadata address"),
        ("mapped.test", "::ffff:127.0.0.1, a loopback address"),
        ("cgnat.test", "100.64.1.1, a shared (CGNAT) address"),
    ];
    for (name, _) in cases {
        let (head, _) = roundtrip(
            &p.path,
            format!("CONNECT {name}:{port} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(status(&head), 403, "{name}: {head}");
        // The plain-HTTP path applies the same policy.
        let (head, _) = roundtrip(
            &p.path,
            format!("GET http://{name}:{port}/ HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(status(&head), 403, "{name}: {head}");
    }
    quiet.assert_untouched().await;
    assert_eq!(p.handle.connect_attempts(), 0);
    let expected: Vec<String> = cases
        .iter()
        .flat_map(|(name, why)| {
            [
                format!("refused CONNECT {name}:{port}: resolves to {why}"),
                format!("refused GET {name}:{port}/: resolves to {why}"),
            ]
        })
        .collect();
    assert_eq!(p.handle.shutdown().await, expected);
}

#[tokio::test]
async fn wildcard_admits_sub_domains_only_and_never_unlocks_loopback() {
    let quiet = silent().await;
    let resolver = MapResolver::with(&[
        ("a.example.test", &["127.0.0.1"]),
        ("example.test", &["127.0.0.1"]),
    ]);
    let p = proxy(&["*.example.test".to_string()], resolver.clone()).await;
    let port = quiet.port;
    for host in ["a.example.test", "example.test", "a.example.test.evil.test"] {
        let (head, _) = roundtrip(
            &p.path,
            format!("CONNECT {host}:{port} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(status(&head), 403, "{host}: {head}");
    }
    quiet.assert_untouched().await;
    // Only the admitted sub-domain was resolved: admission comes before resolution.
    assert_eq!(resolver.asked(), vec!["a.example.test"]);
    assert_eq!(
        p.handle.shutdown().await,
        vec![
            format!(
                "refused CONNECT a.example.test:{port}: resolves to 127.0.0.1, a loopback address"
            ),
            format!("refused CONNECT example.test:{port}: not in the profile"),
            format!("refused CONNECT a.example.test.evil.test:{port}: not in the profile"),
        ]
    );
}

#[tokio::test]
async fn target_forms_are_normalised_before_admission() {
    // The resolver knows no name, so an admitted target is answered 502 (not a refusal) and
    // the resolver's record shows the normalised name it was asked for.
    let resolver = MapResolver::default();
    let p = proxy(
        &[
            "xn--bcher-kva.example:443".to_string(),
            "allowed.test:443".to_string(),
        ],
        resolver.clone(),
    )
    .await;
    for target in [
        "BÜCHER.example:443",
        "bücher.example.:443",
        "xn--bcher-kva.EXAMPLE:443",
        "ALLOWED.Test.:443",
        "allowed.test:443",
    ] {
        let (head, body) = roundtrip(
            &p.path,
            format!("CONNECT {target} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(
            status(&head),
            502,
            "{target}: {head}{}",
            String::from_utf8_lossy(&body)
        );
    }
    let (head, _) = roundtrip(
        &p.path,
        "GET http://Bücher.Example.:443/x HTTP/1.1\r\n\r\n".as_bytes(),
    )
    .await;
    assert_eq!(status(&head), 502, "{head}");
    assert_eq!(
        resolver.asked(),
        vec![
            "xn--bcher-kva.example",
            "xn--bcher-kva.example",
            "xn--bcher-kva.example",
            "allowed.test",
            "allowed.test",
            "xn--bcher-kva.example",
        ]
    );
    // The port still counts after normalisation.
    let (head, _) = roundtrip(&p.path, b"CONNECT ALLOWED.test.:80 HTTP/1.1\r\n\r\n").await;
    assert_eq!(status(&head), 403, "{head}");
    assert_eq!(p.handle.connect_attempts(), 0);
    assert_eq!(
        p.handle.shutdown().await,
        vec!["refused CONNECT allowed.test:80: not in the profile".to_string()]
    );
}

#[tokio::test]
async fn an_empty_profile_refuses_everything() {
    let quiet = silent().await;
    let resolver = MapResolver::with(&[("example.com", &["93.184.216.34"])]);
    let p = proxy(&[], resolver.clone()).await;
    let port = quiet.port;
    for request in [
        format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"),
        format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n"),
        "CONNECT example.com:443 HTTP/1.1\r\n\r\n".to_string(),
        "GET http://example.com/ HTTP/1.1\r\n\r\n".to_string(),
        format!("CONNECT [::1]:{port} HTTP/1.1\r\n\r\n"),
    ] {
        let (head, _) = roundtrip(&p.path, request.as_bytes()).await;
        assert_eq!(status(&head), 403, "{request}: {head}");
    }
    quiet.assert_untouched().await;
    assert!(resolver.asked().is_empty());
    assert_eq!(p.handle.connect_attempts(), 0);
    assert_eq!(
        p.handle.shutdown().await,
        vec![
            format!("refused CONNECT 127.0.0.1:{port}: not in the profile"),
            format!("refused GET 127.0.0.1:{port}/: not in the profile"),
            "refused CONNECT example.com:443: not in the profile".to_string(),
            "refused GET example.com:80/: not in the profile".to_string(),
            format!("refused CONNECT [::1]:{port}: not in the profile"),
        ]
    );
}

#[tokio::test]
async fn oversized_head_is_rejected() {
    let quiet = silent().await;
    let p = proxy(
        &[format!("127.0.0.1:{}", quiet.port)],
        MapResolver::default(),
    )
    .await;
    let mut s = tokio::net::UnixStream::connect(&p.path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let start = format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\n", quiet.port);
    let filler = format!("X-Filler: {}\r\n", "a".repeat(1000));
    // Keep writing header lines: the proxy answers once 16 KiB have arrived without an end.
    let writer = tokio::spawn(async move {
        let _ = s.write_all(start.as_bytes()).await;
        for _ in 0..40 {
            if s.write_all(filler.as_bytes()).await.is_err() {
                break;
            }
        }
        s
    });
    let mut s = writer.await.unwrap_or_else(|e| panic!("{e}"));
    let head = proxy_support::read_head(&mut s).await;
    assert_eq!(status(&head), 431, "{head}");
    quiet.assert_untouched().await;
    assert_eq!(
        p.handle.shutdown().await,
        vec!["refused request: request head larger than 16384 bytes".to_string()]
    );
}

#[tokio::test]
async fn garbage_heads_are_answered_400_and_the_proxy_survives() {
    let quiet = silent().await;
    let p = proxy(
        &[format!("127.0.0.1:{}", quiet.port)],
        MapResolver::default(),
    )
    .await;
    let garbage: Vec<Vec<u8>> = vec![
        b"\r\n\r\n".to_vec(),
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n".to_vec(),
        b"GET\r\n\r\n".to_vec(),
        b"CONNECT HTTP/1.1\r\n\r\n".to_vec(),
        b"CONNECT  127.0.0.1:1 HTTP/1.1\r\n\r\n".to_vec(),
        b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n".to_vec(),
        b"CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n".to_vec(),
        b"CONNECT [::1 HTTP/1.1\r\n\r\n".to_vec(),
        b"CONNECT \xff\xfe:1 HTTP/1.1\r\n\r\n".to_vec(),
        b"CONNECT a%00b:1 HTTP/1.1\r\n\r\n".to_vec(),
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        b"GET http://a.test/ HTTP/1.1\r\nBad Header: x\r\n\r\n".to_vec(),
        b"GET http://a.test/ HTTP/1.1\r\n folded\r\n\r\n".to_vec(),
        b"GET http://a.test/ HTTP/1.1\nHost: a\n\n\r\n\r\n".to_vec(),
        b"GET http://\xe2\x80\xae/ HTTP/1.1\r\n\r\n".to_vec(),
        b"GET http://[::1]x/ HTTP/1.1\r\n\r\n".to_vec(),
        b"\x00\x00\x00\x00\r\n\r\n".to_vec(),
    ];
    for g in &garbage {
        let (head, _) = roundtrip(&p.path, g).await;
        assert_eq!(
            status(&head),
            400,
            "{:?}: {head}",
            String::from_utf8_lossy(g)
        );
    }
    assert_eq!(p.handle.refusals().len(), garbage.len());
    assert!(p
        .handle
        .refusals()
        .iter()
        .all(|r| r.starts_with("refused ") && r.is_ascii()));
    // A client that sends a little and disappears is not an error on the record.
    {
        let mut s = tokio::net::UnixStream::connect(&p.path)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let _ = s.write_all(b"CONNECT 127.0.0.1").await;
    }
    // Still serving.
    let (head, _) = send(
        &p.path,
        format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", quiet.port).as_bytes(),
    )
    .await;
    assert_eq!(status(&head), 200, "{head}");
    assert_eq!(p.handle.connect_attempts(), 1);
    p.handle.shutdown().await;
}
