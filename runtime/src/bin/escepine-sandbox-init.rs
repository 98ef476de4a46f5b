//! `escepine-sandbox-init`: PID 1 of every sandbox of the Linux backend (see
//! `escepine_runtime::sandbox::init`). Not meant to be run by hand: its standard input must be
//! the control socket of the runtime that started it.

fn main() {
    escepine_runtime::sandbox::init::main()
}
