//! A hostile tool against the Linux sandbox, as root with real namespaces: every escape it tries
//! fails, each outcome asserted, and the host is checked clean after each scenario. The tool
//! runs on its host binary's root here; `sandbox_hostile_on_image` runs the same scenarios on an
//! image root, and `sandbox_hostile_gvisor` on both roots on the gVisor tier.

pub(crate) mod scenarios;

scenarios::on_root!(crate::support::sandbox::Target::namespaces(
    crate::support::sandbox::Root::Binary
));
