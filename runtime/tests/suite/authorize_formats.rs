//! Strings of `format: date-time`, `ipv4`/`ipv6` and `duration` reach Cedar as `datetime`,
//! `ipaddr` and `duration`, through the real authorizer: comparisons decide as Cedar's
//! extension types do (offsets applied, milliseconds kept), and a value Cedar cannot hold
//! exactly (microseconds, a leap second, a month) denies the call with its reason, before any
//! request. A string outside its `enum` denies as well.

use crate::support::authorize::{catalog_entities, record, TempCatalog};
use escepine_contract::Principal;
use escepine_policy::authorize::Authorizer;
use serde_json::{json, Value};

fn report_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["since"],
           "properties": {
               "since": {"type": "string", "format": "date-time"},
               "client": {"type": "string", "format": "ipv4"},
               "peer": {"type": "string", "format": "ipv6"},
               "window": {"type": "string", "format": "duration"},
               "depth": {"type": "string", "enum": ["basic", "advanced"]}}})
}

const POLICIES: &str = r#"
@id("all") permit (principal, action, resource);
@id("too-old")
forbid (principal, action == Action::"report_fetch", resource)
when { context.input.since < datetime("2024-01-01T00:00:00Z") };
@id("internal-client")
forbid (principal, action == Action::"report_fetch", resource)
when { context.input has client && context.input.client.isInRange(ip("10.0.0.0/8")) };
@id("loopback-peer")
forbid (principal, action == Action::"report_fetch", resource)
when { context.input has peer && context.input.peer.isLoopback() };
@id("internal-peer")
forbid (principal, action == Action::"report_fetch", resource)
when { context.input has peer && context.input.peer.isInRange(ip("10.0.0.0/8")) };
@id("long-window")
forbid (principal, action == Action::"report_fetch", resource)
when { context.input has window && context.input.window > duration("1h") };
"#;

fn authorizer() -> Authorizer {
    let cat = TempCatalog::new(
        &[record("report_fetch", "read-only", &[], report_schema())],
        POLICIES,
    );
    let registry = cat.load();
    Authorizer::new(
        registry.cedar(),
        registry.records(),
        Some(&catalog_entities()),
    )
    .expect("authorizer builds")
}

const SINCE_OK: &str = "2024-06-01T00:00:00Z";

/// Allowed by `all` alone, or denied by exactly `by`.
fn decide(a: &Authorizer, payload: &Value) -> Result<(), String> {
    let d = a.authorize(&Principal::agent("alice"), "report_fetch", payload);
    if d.allowed() {
        assert_eq!(d.policy_ids(), ["all"], "{payload}");
        Ok(())
    } else {
        assert!(d.requests() > 0, "{payload}: {d:?}");
        assert_eq!(d.policy_ids().len(), 1, "{payload}: {d:?}");
        Err(d.policy_ids()[0].clone())
    }
}

/// Denied before any request, the reason naming the field and containing `why`.
fn refused(a: &Authorizer, payload: &Value, pointer: &str, why: &str) {
    let d = a.authorize(&Principal::agent("alice"), "report_fetch", payload);
    assert!(!d.allowed(), "{payload}");
    assert_eq!(d.requests(), 0, "{payload}: {d:?}");
    assert!(d.policy_ids().is_empty(), "{payload}: {d:?}");
    let reason = &d.reasons()[0];
    assert!(reason.contains(&format!("`{pointer}`")), "{reason}");
    assert!(reason.contains(why), "{reason}");
}

#[test]
fn a_datetime_comparison_decides_as_cedars_datetime_does() {
    let a = authorizer();
    let since = |s: &str| decide(&a, &json!({ "since": s }));
    let old = Err("too-old".to_string());
    // The bound itself is not before the bound; a millisecond earlier is.
    assert_eq!(since("2024-01-01T00:00:00Z"), Ok(()));
    assert_eq!(since("2023-12-31T23:59:59.999Z"), old);
    assert_eq!(since("2023-12-31T23:59:59.9990Z"), old);
    assert_eq!(since("2024-01-01T00:00:00.001Z"), Ok(()));
    // Offsets are applied: 05:30 at +05:30 is midnight UTC.
    assert_eq!(since("2024-01-01T05:30:00+05:30"), Ok(()));
    assert_eq!(since("2024-01-01T05:29:59.999+05:30"), old);
    assert_eq!(since("2023-12-31T19:00:00-05:00"), Ok(()));
    assert_eq!(since("2023-12-31T18:59:59-05:00"), old);
    assert_eq!(since("2023-12-31t23:59:59z"), old);
    assert_eq!(since("2024-01-01T00:00:00-00:00"), Ok(()));
    // A text comparison would say "2023-12-31T23:00:00-02:00" < "2024-…"; as an instant it is
    // 01:00 UTC on 1 January.
    assert_eq!(since("2023-12-31T23:00:00-02:00"), Ok(()));
    // Never rounded: a microsecond past midnight is not midnight.
    refused(
        &a,
        &json!({"since": "2023-12-31T23:59:59.999999Z"}),
        "/since",
        "beyond milliseconds",
    );
    refused(
        &a,
        &json!({"since": "2024-01-01T00:00:00.000001Z"}),
        "/since",
        "beyond milliseconds",
    );
    refused(
        &a,
        &json!({"since": "2016-12-31T23:59:60Z"}),
        "/since",
        "leap second",
    );
    refused(&a, &json!({"since": "yesterday"}), "/since", "RFC 3339");
}

#[test]
fn an_ipaddr_comparison_decides_as_cedars_ipaddr_does() {
    let a = authorizer();
    let client = |c: &str| decide(&a, &json!({"since": SINCE_OK, "client": c}));
    assert_eq!(client("10.1.2.3"), Err("internal-client".into()));
    assert_eq!(client("10.255.255.255"), Err("internal-client".into()));
    assert_eq!(client("11.0.0.1"), Ok(()));
    assert_eq!(client("192.0.2.1"), Ok(()));
    let peer = |p: &str| decide(&a, &json!({"since": SINCE_OK, "peer": p}));
    assert_eq!(peer("::1"), Err("loopback-peer".into()));
    assert_eq!(peer("0:0:0:0:0:0:0:1"), Err("loopback-peer".into()));
    assert_eq!(peer("2001:db8::1"), Ok(()));
    // Cedar's `ip()` refuses the dotted spelling of an IPv4-mapped address; it reaches Cedar
    // as its IPv4 address (as `context.url.ip` does), so IPv4 ranges cover it in any spelling.
    assert_eq!(peer("::ffff:10.0.0.1"), Err("internal-peer".into()));
    assert_eq!(peer("::ffff:a00:1"), Err("internal-peer".into()));
    assert_eq!(peer("::ffff:11.0.0.1"), Ok(()));
    // An IPv6 address with a dotted tail that is not IPv4-mapped is written in groups.
    assert_eq!(peer("64:ff9b::10.0.0.1"), Ok(()));
    refused(
        &a,
        &json!({"since": SINCE_OK, "client": "10.0.0.0/8"}),
        "/client",
        "a range",
    );
    refused(
        &a,
        &json!({"since": SINCE_OK, "peer": "fe80::1%eth0"}),
        "/peer",
        "not an address",
    );
}

#[test]
fn a_duration_comparison_decides_as_cedars_duration_does() {
    let a = authorizer();
    let window = |w: &str| decide(&a, &json!({"since": SINCE_OK, "window": w}));
    let long = Err("long-window".to_string());
    assert_eq!(window("PT30M"), Ok(()));
    assert_eq!(window("PT1H"), Ok(()));
    assert_eq!(window("PT60M"), Ok(()));
    assert_eq!(window("PT3600S"), Ok(()));
    assert_eq!(window("PT3600.001S"), long);
    assert_eq!(window("PT1H30M"), long);
    assert_eq!(window("P1D"), long);
    assert_eq!(window("P1W"), long);
    assert_eq!(window("PT0.5H"), Ok(()));
    refused(
        &a,
        &json!({"since": SINCE_OK, "window": "P1M"}),
        "/window",
        "years or months",
    );
    refused(
        &a,
        &json!({"since": SINCE_OK, "window": "PT0.0001S"}),
        "/window",
        "whole number of milliseconds",
    );
    refused(
        &a,
        &json!({"since": SINCE_OK, "window": "1h"}),
        "/window",
        "ISO 8601",
    );
}

#[test]
fn a_string_outside_its_enum_denies() {
    let a = authorizer();
    assert_eq!(
        decide(&a, &json!({"since": SINCE_OK, "depth": "advanced"})),
        Ok(())
    );
    refused(
        &a,
        &json!({"since": SINCE_OK, "depth": "advnced"}),
        "/depth",
        "`enum`",
    );
}
