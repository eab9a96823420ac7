#![deny(clippy::print_stdout, clippy::print_stderr)]

use clap::Parser;
use repro::err;

/// The one place that prints a command's error and exits.
fn main() {
    let cli = repro::cli::Cli::parse();
    let code = match repro::cmd::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            err!("{}", e.render());
            e.exit_code()
        }
    };
    std::process::exit(code);
}
