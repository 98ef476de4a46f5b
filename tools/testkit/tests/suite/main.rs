//! The testkit's tests, one binary: the testtool's modes, the installed fixtures, the errors
//! when they are missing, the authorization server of the OAuth tests, and the OTLP receiver and
//! Prometheus server of the telemetry tests.

mod fixtures;
mod fixtures_missing;
mod modes;
mod oidc;
mod otlp;
mod prometheus;
mod remote_servers;
