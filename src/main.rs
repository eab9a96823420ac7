#![deny(clippy::print_stdout, clippy::print_stderr)]

use repro::err;
use repro::exit;

/// The one place that prints a command's error and exits: how the command came out, or its
/// error's meaning, turned into the number of `repro::exit`'s table.
fn main() {
    quiet_on_closed_stdout();
    // `COMPLETE=bash repro -- repro run --topology <TAB>`: the scripts of `repro completions`
    // call back here for check, topology and results-folder names, and exit.
    clap_complete::CompleteEnv::with_factory(repro::help::command).complete();
    let cli = repro::help::parse().unwrap_or_else(|e| repro::term::clap_exit(e));
    let ended = match repro::cmd::dispatch(cli) {
        Ok(ended) => ended,
        Err(e) => {
            // Errors quote user input (an `--image` URL, a line of a file): no secret of it
            // reaches the terminal.
            err!("{}", repro::term::redacted(&e.render()));
            e.exit()
        }
    };
    exit::now(ended.code());
}

/// A `print!` to a closed stdout (`repro … | head -c0`) panics in std; the commands write
/// through `cmd::common::out`, which ignores a broken pipe, and this catches any other writer:
/// the reader is gone, so leave quietly ([`exit::CLOSED_STDOUT`]) instead of printing a panic.
/// Every other panic keeps the default report.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            exit::now(exit::CLOSED_STDOUT);
        }
        default(info);
    }));
}
