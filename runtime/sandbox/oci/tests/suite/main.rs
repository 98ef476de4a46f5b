//! The OCI client's tests, one binary: a real registry on loopback, hostile registries, and
//! unpacking of hostile and ordinary layers.

mod hostile_registry;
mod registry;
mod unpack;
