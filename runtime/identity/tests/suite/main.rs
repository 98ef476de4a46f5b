//! The resource server's verifier against real issuers on loopback (one test binary).

mod issuer;
mod verify;
