//! The testkit's tests, one binary: the testtool's modes, the installed fixtures, the errors
//! when they are missing, and the authorization server of the OAuth tests.

mod fixtures;
mod fixtures_missing;
mod modes;
mod oidc;
mod remote_servers;
