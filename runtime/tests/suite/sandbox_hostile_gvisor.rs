//! The hostile-tool scenarios of `sandbox_hostile` on the gVisor tier: the records say
//! `"isolation": "gvisor"`, and each attempt runs under `runsc`, on the binary's root and on an
//! image root.

mod on_binary {
    crate::sandbox_hostile::scenarios::on_root!(crate::support::sandbox::Target::gvisor(
        crate::support::sandbox::Root::Binary
    ));
}

mod on_image {
    crate::sandbox_hostile::scenarios::on_root!(crate::support::sandbox::Target::gvisor(
        crate::support::sandbox::Root::Image
    ));
}
