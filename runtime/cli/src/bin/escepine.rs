//! The `escepine` command-line tool.

fn main() {
    // First: when started as its sandboxes' init, this program runs the init and never returns.
    escepine_sandbox::init::dispatch();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let code = escepine_cli::run(
        std::env::args_os(),
        &mut escepine_cli::Io {
            out: &mut out,
            err: &mut err,
        },
    );
    std::process::exit(code);
}
