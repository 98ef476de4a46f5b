//! Cedar authorization over the real catalog (`tools/records`, `tools/policies`): group
//! policies, default deny, URL facts that cannot be fooled, per-element authorization of the
//! bulk tool, and the determining policies' `@id`s.

use crate::support::authorize::{authorizer, catalog};
use escepine_contract::Principal;
use escepine_policy::authorize::{Authorizer, Decision, UrlFacts};
use serde_json::json;

fn alice() -> Principal {
    Principal::agent("alice")
}

fn scrape(a: &Authorizer, url: &str) -> Decision {
    a.authorize(&alice(), "firecrawl_scrape", &json!({ "url": url }))
}

#[test]
fn read_only_tools_are_open_and_name_their_permit() {
    let a = authorizer(&catalog());
    let d = a.authorize(
        &Principal::agent("bob"),
        "web_search",
        &json!({"query": "cedar"}),
    );
    assert!(d.allowed(), "{d:?}");
    assert_eq!(d.policy_ids(), ["read-only-tools"]);
    assert!(d.reasons().is_empty());
    assert_eq!(d.requests(), 1);
    // An agent absent from the entities is still an `Agent`.
    let d = a.authorize(
        &Principal::agent("carol"),
        "tavily_search",
        &json!({"query": "x", "max_results": 3}),
    );
    assert!(d.allowed(), "{d:?}");
}

#[test]
fn default_deny_without_a_permit() {
    let a = authorizer(&catalog());
    let payload = json!({"title": "t", "body": "b"});
    let d = a.authorize(&Principal::agent("bob"), "note_publish", &payload);
    assert!(!d.allowed());
    assert!(d.policy_ids().is_empty(), "{d:?}");
    assert_eq!(d.requests(), 1);
    assert!(d.reasons()[0].contains("no policy permits"), "{d:?}");
    // The editor is permitted, through her team.
    let d = a.authorize(&alice(), "note_publish", &payload);
    assert!(d.allowed(), "{d:?}");
    assert_eq!(d.policy_ids(), ["publishing-editors"]);
}

#[test]
fn unknown_tool_and_foreign_principal_type_deny() {
    let a = authorizer(&catalog());
    let d = a.authorize(&alice(), "no_such_tool", &json!({}));
    assert!(!d.allowed() && d.requests() == 0);
    assert!(d.reasons()[0].contains("unknown tool"));
    let team = Principal {
        entity_type: "Team".into(),
        id: "editors".into(),
    };
    let d = a.authorize(&team, "web_search", &json!({"query": "q"}));
    assert!(!d.allowed() && d.requests() == 0, "{d:?}");
}

#[test]
fn linkedin_cannot_be_reached_by_any_spelling() {
    let a = authorizer(&catalog());
    for url in [
        "https://linkedin.com/in/someone",
        "https://LinkedIn.COM/x",
        "https://www.linkedin.com./",
        "https://www.linkedin.com../feed",
        "https://user@linkedin.com",
        "https://user:pw@www.LINKEDIN.com:8443/",
        "HTTPS://WWW.LINKEDIN.COM:443",
        "https://linkedin%2Ecom/",
        "https://ｌｉｎｋｅｄｉｎ.com/",
        "https://de.linkedin.com/jobs",
    ] {
        let d = scrape(&a, url);
        assert!(!d.allowed(), "{url} must be denied: {d:?}");
        assert_eq!(d.policy_ids(), ["page-read-no-linkedin"], "{url}");
        assert!(d.reasons()[0].contains(url), "{url}: {d:?}");
    }
}

#[test]
fn other_hosts_that_merely_mention_linkedin_are_not_linkedin() {
    let a = authorizer(&catalog());
    // The query string is not the host.
    let f = UrlFacts::parse("https://evil.com/?linkedin.com").expect("facts");
    assert_eq!(
        (f.host.as_str(), f.port, f.path.as_str()),
        ("evil.com", 443, "/")
    );
    // A suffix is not a parent domain.
    let f = UrlFacts::parse("https://linkedin.com.evil.com").expect("facts");
    assert_eq!(f.host, "linkedin.com.evil.com");
    // A user-info that looks like a host is not the host.
    let f = UrlFacts::parse("https://linkedin.com@evil.com/").expect("facts");
    assert_eq!(f.host, "evil.com");
    for url in [
        "https://evil.com/?linkedin.com",
        "https://linkedin.com.evil.com",
        "https://linkedin.com@evil.com/",
        "https://notlinkedin.com/",
    ] {
        let d = scrape(&a, url);
        assert!(d.allowed(), "{url}: {d:?}");
        assert_eq!(d.policy_ids(), ["read-only-tools"]);
    }
}

#[test]
fn url_without_a_host_denies() {
    let a = authorizer(&catalog());
    for url in [
        "mailto:someone@linkedin.com",
        "file:///etc/passwd",
        "data:text/plain,x",
    ] {
        let d = scrape(&a, url);
        assert!(!d.allowed(), "{url}: {d:?}");
        assert_eq!(d.requests(), 0);
        assert!(d.reasons()[0].contains("host"), "{url}: {d:?}");
    }
}

#[test]
fn bulk_call_is_authorized_whole_and_per_element() {
    let a = authorizer(&catalog());
    let ok = json!({"urls": ["https://example.com/a", "https://docs.rs/cedar-policy"]});
    let d = a.authorize(&alice(), "web_fetch_exa", &ok);
    assert!(d.allowed(), "{d:?}");
    assert_eq!(d.requests(), 3, "the whole call and each of two elements");
    assert_eq!(d.policy_ids(), ["read-only-tools"]);
}

#[test]
fn one_bad_element_denies_the_bulk_call() {
    let a = authorizer(&catalog());
    let payload = json!({"urls": [
        "https://example.com/a",
        "https://WWW.LinkedIn.com./in/x",
        "https://docs.rs/"
    ]});
    let d = a.authorize(&alice(), "web_fetch_exa", &payload);
    assert!(!d.allowed(), "{d:?}");
    assert_eq!(d.requests(), 4);
    // The same `page-read` group policy that covers the single-URL tool.
    assert_eq!(d.policy_ids(), ["page-read-no-linkedin"]);
    assert_eq!(d.reasons().len(), 1, "{d:?}");
    assert!(
        d.reasons()[0].contains("element 1 of `/urls`")
            && d.reasons()[0].contains("https://WWW.LinkedIn.com./in/x"),
        "{d:?}"
    );
}

#[test]
fn bulk_elements_get_the_tool_specific_forbids_too() {
    let a = authorizer(&catalog());
    let payload = json!({"urls": ["http://example.com/", "https://127.0.0.1/", "https://[::1]:8080/x", "https://foo.localhost/"]});
    let d = a.authorize(&alice(), "web_fetch_exa", &payload);
    assert!(!d.allowed());
    assert_eq!(
        d.policy_ids(),
        [
            "bulk-fetch-https-only",
            "bulk-fetch-no-internal-addresses",
            "bulk-fetch-no-internal-hosts"
        ]
    );
    assert_eq!(d.reasons().len(), 4, "{d:?}");
    assert!(d.reasons()[0].contains("element 0") && d.reasons()[3].contains("element 3"));
    // The single-URL tool has no such forbid: the per-tool policy does not leak to it.
    assert!(scrape(&a, "http://example.com/").allowed());
}

#[test]
fn the_payload_and_facts_never_panic() {
    let a = authorizer(&catalog());
    for payload in [
        json!(null),
        json!([]),
        json!({"url": 3}),
        json!({"url": null}),
        json!({"urls": "https://x.y"}),
        json!({"urls": [1, null]}),
        json!({"query": {"nested": true}}),
    ] {
        for tool in ["firecrawl_scrape", "web_fetch_exa", "web_search"] {
            let d = a.authorize(&alice(), tool, &payload);
            assert!(!d.allowed(), "{tool} {payload}: {d:?}");
            assert!(!d.reasons().is_empty());
        }
    }
}

#[test]
fn slicing_keeps_only_the_policies_of_each_action() {
    let r = catalog();
    let a = authorizer(&r);
    assert_eq!(r.cedar().policies.policies().count(), 10);
    // firecrawl_scrape: read-only-tools, page-read-no-linkedin and flow-trifecta-new-origin.
    assert_eq!(a.policy_count("firecrawl_scrape"), Some(3));
    // web_fetch_exa: those and its three bulk-fetch forbids.
    assert_eq!(a.policy_count("web_fetch_exa"), Some(6));
    // tavily_crawl reads its start page: the three page-read policies.
    assert_eq!(a.policy_count("tavily_crawl"), Some(3));
    assert_eq!(a.policy_count("note_publish"), Some(1));
    assert_eq!(a.policy_count("web_search"), Some(1));
    // url_normalize: read-only-tools and its own url-normalize-web-only.
    assert_eq!(a.policy_count("url_normalize"), Some(2));
}

#[test]
fn internal_hosts_are_denied_however_they_are_spelled() {
    let a = authorizer(&catalog());
    // Addresses: the policy's `ipaddr` ranges and the `public` fact both hold.
    for host in [
        "127.0.0.2",
        "0",
        "127.1",
        "2130706433",
        "[::ffff:127.0.0.1]",
        "169.254.170.2",
        "169.254.169.254",
        "10.1.2.3",
        "172.20.0.1",
        "192.168.1.1",
        "100.100.100.200",
        "[fd00::1]",
        "[fe80::1]",
    ] {
        let url = format!("https://{host}/x");
        let d = a.authorize(&alice(), "web_fetch_exa", &json!({ "urls": [url] }));
        assert!(!d.allowed(), "{url}: {d:?}");
        assert!(
            d.policy_ids()
                .contains(&"bulk-fetch-no-internal-hosts".to_string())
                && d.policy_ids()
                    .contains(&"bulk-fetch-no-internal-addresses".to_string()),
            "{url}: {d:?}"
        );
    }
    // Names a private network resolves: the `public` fact.
    for host in [
        "kubernetes.default.svc",
        "api.default.svc.cluster.local",
        "printer.lan",
        "nas.home.arpa",
        "metadata.google.internal",
        "intranet",
        "app.localhost",
        "box.local",
    ] {
        let url = format!("https://{host}/x");
        let d = a.authorize(&alice(), "web_fetch_exa", &json!({ "urls": [url] }));
        assert!(!d.allowed(), "{url}: {d:?}");
        assert_eq!(d.policy_ids(), ["bulk-fetch-no-internal-hosts"], "{url}");
    }
    // Public names and addresses pass.
    let d = a.authorize(
        &alice(),
        "web_fetch_exa",
        &json!({"urls": ["https://docs.rs/x", "https://93.184.216.34/", "https://user.github.io/"]}),
    );
    assert!(d.allowed(), "{d:?}");
}

#[test]
fn a_crawl_start_is_authorized_as_a_page_read() {
    let a = authorizer(&catalog());
    let d = a.authorize(
        &alice(),
        "tavily_crawl",
        &json!({"url": "https://www.linkedin.com/in/someone"}),
    );
    assert!(!d.allowed(), "{d:?}");
    assert_eq!(d.policy_ids(), ["page-read-no-linkedin"]);
    let d = a.authorize(
        &alice(),
        "tavily_crawl",
        &json!({"url": "https://docs.rs/"}),
    );
    assert!(d.allowed(), "{d:?}");
}
