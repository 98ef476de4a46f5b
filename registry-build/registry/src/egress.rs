//! Egress allowlist entries: the model lives in the contract crate ([`escepine_contract::egress`]),
//! so that the sandbox and its proxy use it without the registration rules.

pub use escepine_contract::egress::{
    is_reserved, EgressEntry, EgressError, EgressHost, AUTHORIZED_URLS, PUBLIC,
};
