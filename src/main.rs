use clap::Parser;

fn main() {
    let cli = repro::cli::Cli::parse();
    std::process::exit(repro::cmd::main(cli));
}
