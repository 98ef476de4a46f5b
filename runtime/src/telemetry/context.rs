//! W3C trace context (`traceparent`, `tracestate`): read from a caller, given to tools.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The variable a command reads the caller's `traceparent` from, and a tool gets its call's in.
pub const ENV_TRACEPARENT: &str = "TRACEPARENT";
/// The variable of `tracestate`, beside [`ENV_TRACEPARENT`].
pub const ENV_TRACESTATE: &str = "TRACESTATE";
/// The `_meta` key of an MCP request's `traceparent`.
pub const META_TRACEPARENT: &str = "traceparent";
/// The `_meta` key of an MCP request's `tracestate`.
pub const META_TRACESTATE: &str = "tracestate";

/// A valid W3C trace context: the span a call continues, or the one a tool's work continues.
#[derive(Clone, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

impl std::fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.traceparent)
    }
}

impl TraceContext {
    /// The context `traceparent` (and `tracestate`) name, if `traceparent` is valid (version
    /// `00`, lower-case hex, non-zero trace and parent ids); an invalid one is ignored, as the W3C
    /// recommendation says: the call starts a new trace.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        // The shape of version 00 (`00-` 32 `-` 16 `-` 2, lower-case hex), which the propagator
        // reads more loosely (upper case, short ids padded).
        let parts: Vec<&str> = traceparent.trim().split('-').collect();
        let shaped = parts.len() == 4
            && parts.iter().zip([2, 32, 16, 2]).all(|(p, n)| {
                p.len() == n
                    && p.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            });
        if !shaped {
            return None;
        }
        let mut carrier = HashMap::new();
        carrier.insert(META_TRACEPARENT.to_string(), traceparent.trim().to_string());
        if let Some(state) = tracestate {
            carrier.insert(META_TRACESTATE.to_string(), state.trim().to_string());
        }
        let cx = TraceContextPropagator::new().extract(&carrier);
        Self::of_otel(&cx)
    }

    /// The context in `TRACEPARENT` / `TRACESTATE` of this process's environment.
    pub fn from_env() -> Option<Self> {
        let parent = std::env::var(ENV_TRACEPARENT).ok()?;
        Self::parse(&parent, std::env::var(ENV_TRACESTATE).ok().as_deref())
    }

    /// The context of `span` as an OpenTelemetry pipeline sees it; `None` when no pipeline is
    /// installed (the span has no valid OpenTelemetry context).
    pub fn of_span(span: &tracing::Span) -> Option<Self> {
        Self::of_otel(&span.context())
    }

    /// The context of the current span (see [`TraceContext::of_span`]).
    pub fn current() -> Option<Self> {
        Self::of_span(&tracing::Span::current())
    }

    fn of_otel(cx: &opentelemetry::Context) -> Option<Self> {
        if !cx.span().span_context().is_valid() {
            return None;
        }
        let mut carrier: HashMap<String, String> = HashMap::new();
        TraceContextPropagator::new().inject_context(cx, &mut carrier);
        Some(Self {
            traceparent: carrier.remove(META_TRACEPARENT)?,
            tracestate: carrier.remove(META_TRACESTATE).filter(|s| !s.is_empty()),
        })
    }

    /// `traceparent`.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// `tracestate`, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The 32 hex digits of the trace id.
    pub fn trace_id(&self) -> &str {
        self.traceparent.get(3..35).unwrap_or_default()
    }

    /// The 16 hex digits of the parent span id.
    pub fn span_id(&self) -> &str {
        self.traceparent.get(36..52).unwrap_or_default()
    }

    /// Make `span` a child of this context (in the OpenTelemetry pipeline, if one is installed).
    pub(crate) fn adopt(&self, span: &tracing::Span) {
        let mut carrier = HashMap::new();
        carrier.insert(META_TRACEPARENT.to_string(), self.traceparent.clone());
        if let Some(state) = &self.tracestate {
            carrier.insert(META_TRACESTATE.to_string(), state.clone());
        }
        let cx = TraceContextPropagator::new().extract(&carrier);
        // Only fails when the span is disabled or already started; then it keeps its parent.
        let _ = span.set_parent(cx);
    }

    /// The context to pass on from `span`: its own, else (no pipeline installed) `inherited`,
    /// unchanged, so that a tool still continues its caller's trace.
    pub(crate) fn passed_on(span: &tracing::Span, inherited: Option<&Self>) -> Option<Self> {
        Self::of_span(span).or_else(|| inherited.cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_kept_with_its_state() {
        let t = TraceContext::parse(PARENT, Some("vendor=opaque")).unwrap();
        assert_eq!(t.traceparent(), PARENT);
        assert_eq!(t.tracestate(), Some("vendor=opaque"));
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.span_id(), "00f067aa0ba902b7");
    }

    #[test]
    fn invalid_traceparents_are_ignored() {
        for bad in [
            "",
            "garbage",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
    }

    #[test]
    fn without_a_pipeline_the_inherited_context_is_passed_on() {
        let inherited = TraceContext::parse(PARENT, None).unwrap();
        let span = tracing::Span::none();
        assert_eq!(
            TraceContext::passed_on(&span, Some(&inherited)),
            Some(inherited)
        );
        assert_eq!(TraceContext::passed_on(&span, None), None);
    }
}
