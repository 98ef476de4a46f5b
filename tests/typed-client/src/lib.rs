//! Workspace scenario crate: see `tests/typed_client.rs`.
