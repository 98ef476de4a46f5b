//! Where telemetry goes: the OTLP endpoint and protocol from a command's flags or the standard
//! `OTEL_*` variables, and the service's name.

use url::Url;

/// The standard variable naming the OTLP endpoint of every signal.
pub const ENV_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The standard variable naming the OTLP endpoint of traces alone.
pub const ENV_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The standard variable naming the OTLP protocol.
pub const ENV_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// The standard variable naming the service.
pub const ENV_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";
/// The standard variable that turns the SDK off.
pub const ENV_SDK_DISABLED: &str = "OTEL_SDK_DISABLED";
/// The service name when `OTEL_SERVICE_NAME` does not give one.
pub const DEFAULT_SERVICE_NAME: &str = "escepine";

/// How spans and metrics travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP over gRPC (`grpc`), usually port 4317.
    Grpc,
    /// OTLP over HTTP with protobuf bodies (`http/protobuf`, the default), usually port 4318.
    HttpProtobuf,
}

impl Protocol {
    /// The protocol named `name` as in `OTEL_EXPORTER_OTLP_PROTOCOL`.
    ///
    /// # Errors
    /// For `http/json` (not supported) and any other name.
    pub fn parse(name: &str, origin: &str) -> Result<Self, ConfigError> {
        match name.trim() {
            "grpc" => Ok(Self::Grpc),
            "http/protobuf" => Ok(Self::HttpProtobuf),
            other => Err(ConfigError::Protocol {
                origin: origin.to_string(),
                value: other.to_string(),
            }),
        }
    }

    /// The name as in `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Grpc => "grpc",
            Self::HttpProtobuf => "http/protobuf",
        }
    }
}

/// An OTLP collector to export to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The collector's base URL (`http://host:4317` for gRPC, `http://host:4318` for HTTP, to
    /// which `/v1/traces` and `/v1/metrics` are added).
    pub endpoint: Url,
    /// How spans and metrics travel.
    pub protocol: Protocol,
}

impl OtlpConfig {
    /// The URL spans are sent to.
    pub fn traces_url(&self) -> String {
        self.signal_url("traces")
    }

    /// The URL metrics are sent to.
    pub fn metrics_url(&self) -> String {
        self.signal_url("metrics")
    }

    fn signal_url(&self, signal: &str) -> String {
        let base = self.endpoint.as_str().trim_end_matches('/');
        match self.protocol {
            Protocol::Grpc => base.to_string(),
            Protocol::HttpProtobuf => format!("{base}/v1/{signal}"),
        }
    }
}

/// What a process exports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// The collector, when one is configured.
    pub otlp: Option<OtlpConfig>,
    /// `service.name` of every span and metric.
    pub service_name: String,
}

impl TelemetryConfig {
    /// The configuration of a command given `--otlp-endpoint` (`flag_endpoint`) and
    /// `--otlp-protocol` (`flag_protocol`): a flag wins over its variable; without either
    /// endpoint, nothing is exported over OTLP. `OTEL_SDK_DISABLED=true` turns OTLP off whatever
    /// the flags say.
    ///
    /// # Errors
    /// An endpoint that is not an `http`/`https` URL, or an unknown protocol, each naming the
    /// flag or variable it came from.
    pub fn resolve(
        flag_endpoint: Option<&str>,
        flag_protocol: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let service_name = set(ENV_SERVICE_NAME).unwrap_or_else(|| DEFAULT_SERVICE_NAME.into());
        let disabled = set(ENV_SDK_DISABLED).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let endpoint = match flag_endpoint {
            Some(e) => Some((e.to_string(), "--otlp-endpoint")),
            None => set(ENV_TRACES_ENDPOINT)
                .map(|e| (e, ENV_TRACES_ENDPOINT))
                .or_else(|| set(ENV_ENDPOINT).map(|e| (e, ENV_ENDPOINT))),
        };
        let protocol = match flag_protocol {
            Some(p) => Protocol::parse(p, "--otlp-protocol")?,
            None => match set(ENV_PROTOCOL) {
                Some(p) => Protocol::parse(&p, ENV_PROTOCOL)?,
                None => Protocol::HttpProtobuf,
            },
        };
        let otlp = match endpoint {
            Some(_) if disabled => None,
            Some((e, origin)) => Some(OtlpConfig {
                endpoint: endpoint_url(&e, origin)?,
                protocol,
            }),
            None => None,
        };
        Ok(Self { otlp, service_name })
    }

    /// As [`TelemetryConfig::resolve`] with the process's environment.
    ///
    /// # Errors
    /// As [`TelemetryConfig::resolve`].
    pub fn from_env(
        flag_endpoint: Option<&str>,
        flag_protocol: Option<&str>,
    ) -> Result<Self, ConfigError> {
        Self::resolve(flag_endpoint, flag_protocol, |name| {
            std::env::var(name).ok()
        })
    }
}

fn endpoint_url(value: &str, origin: &str) -> Result<Url, ConfigError> {
    let bad = |rule: &str| ConfigError::Endpoint {
        origin: origin.to_string(),
        value: value.to_string(),
        rule: rule.to_string(),
    };
    let url = Url::parse(value.trim()).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("the URL names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "credentials do not belong in the URL (use OTEL_EXPORTER_OTLP_HEADERS)",
        ));
    }
    Ok(url)
}

/// A telemetry configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The endpoint is not a usable URL.
    #[error("{origin}: `{value}` is not an OTLP endpoint: {rule}")]
    Endpoint {
        /// The flag or variable it came from.
        origin: String,
        /// What it said.
        value: String,
        /// The rule broken.
        rule: String,
    },
    /// The protocol is unknown or unsupported.
    #[error("{origin}: unknown OTLP protocol `{value}` (expected `grpc` or `http/protobuf`)")]
    Protocol {
        /// The flag or variable it came from.
        origin: String,
        /// What it said.
        value: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_string())
        }
    }

    #[test]
    fn nothing_configured_exports_nothing_under_the_default_name() {
        let c = TelemetryConfig::resolve(None, None, env(&[])).unwrap();
        assert_eq!(c.otlp, None);
        assert_eq!(c.service_name, "escepine");
    }

    #[test]
    fn flags_win_over_variables_and_http_gets_signal_paths() {
        let vars = [
            (ENV_ENDPOINT, "http://127.0.0.1:1"),
            (ENV_PROTOCOL, "grpc"),
            (ENV_SERVICE_NAME, "gateway-a"),
        ];
        let c = TelemetryConfig::resolve(
            Some("http://127.0.0.1:4318/"),
            Some("http/protobuf"),
            env(&vars),
        )
        .unwrap();
        let otlp = c.otlp.unwrap();
        assert_eq!(otlp.protocol, Protocol::HttpProtobuf);
        assert_eq!(otlp.traces_url(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(otlp.metrics_url(), "http://127.0.0.1:4318/v1/metrics");
        assert_eq!(c.service_name, "gateway-a");
    }

    #[test]
    fn variables_alone_configure_grpc_and_the_traces_variable_wins() {
        let vars = [
            (ENV_ENDPOINT, "http://127.0.0.1:1"),
            (ENV_TRACES_ENDPOINT, "http://127.0.0.1:4317"),
            (ENV_PROTOCOL, "grpc"),
        ];
        let otlp = TelemetryConfig::resolve(None, None, env(&vars))
            .unwrap()
            .otlp
            .unwrap();
        assert_eq!(otlp.protocol, Protocol::Grpc);
        assert_eq!(otlp.traces_url(), "http://127.0.0.1:4317");
    }

    #[test]
    fn sdk_disabled_turns_otlp_off() {
        let vars = [(ENV_SDK_DISABLED, "TRUE")];
        let c = TelemetryConfig::resolve(Some("http://127.0.0.1:4318"), None, env(&vars)).unwrap();
        assert_eq!(c.otlp, None);
    }

    #[test]
    fn bad_values_name_where_they_came_from_and_the_rule() {
        let e = TelemetryConfig::resolve(Some("ftp://x"), None, env(&[])).unwrap_err();
        assert!(e.to_string().contains("--otlp-endpoint"), "{e}");
        assert!(e.to_string().contains("http or https"), "{e}");
        let vars = [(ENV_ENDPOINT, "http://u:p@127.0.0.1:4318")];
        let e = TelemetryConfig::resolve(None, None, env(&vars)).unwrap_err();
        assert!(e.to_string().contains(ENV_ENDPOINT), "{e}");
        assert!(e.to_string().contains("credentials"), "{e}");
        let vars = [
            (ENV_ENDPOINT, "http://127.0.0.1:4318"),
            (ENV_PROTOCOL, "http/json"),
        ];
        let e = TelemetryConfig::resolve(None, None, env(&vars)).unwrap_err();
        assert!(e.to_string().contains(ENV_PROTOCOL), "{e}");
        assert!(e.to_string().contains("http/json"), "{e}");
    }
}
