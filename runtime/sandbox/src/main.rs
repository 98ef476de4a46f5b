//! `escepine-sandbox-init`: the init of the Linux backend's sandboxes, for a program that cannot
//! call `escepine_sandbox::init::dispatch()` first in its `main` (name it with
//! `LinuxBackend::with_init` or `$ESCEPINE_SANDBOX_INIT`). Links this crate only. Not meant to
//! be run by hand: its standard input must be the control socket of the runtime that started
//! it.

fn main() {
    escepine_sandbox::init::main()
}
