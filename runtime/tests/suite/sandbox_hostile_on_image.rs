//! The hostile-tool scenarios of `sandbox_hostile` with the tool on an image root: its records
//! name an OCI image holding the same binary and its libraries, verified and unpacked by the
//! image store, instead of the host binary.

crate::sandbox_hostile::scenarios::on_root!(crate::support::sandbox::Target::namespaces(
    crate::support::sandbox::Root::Image
));
