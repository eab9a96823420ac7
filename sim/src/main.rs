//! `k3s`: repro's k3s stand-in. NOT k3s — a small test double that behaves
//! like a k3s server as far as repro can observe it (log lines, config files,
//! bootstrap rules, the k3s #12753 bug by version, `kubectl get --raw`).
//! See sim/README.md for what it models and what it does not.

mod agent;
mod bootstrap;
mod cgroup;
mod check_config;
mod cli;
mod component_lines;
mod config;
mod control_plane;
mod datastore;
mod distro;
mod faults;
mod flags;
mod host;
mod http;
mod kubectl;
mod loadbalancer;
mod logs;
mod metrics;
mod node;
mod nodes_api;
mod pace;
mod plant;
mod registries;
mod version;

use cli::Invocation;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let code = match cli::parse_invocation(&argv) {
        Invocation::Server(args) => {
            exit_on_signals();
            node::run_server(&args)
        }
        Invocation::Agent(args) => {
            exit_on_signals();
            agent::run_command(&args)
        }
        Invocation::Kubectl(args) => kubectl::run(&args),
        Invocation::Rm(args) => cli::run_rm(&args),
        Invocation::Cat(args) => cli::run_cat(&args),
        Invocation::Cp(args) => cli::run_cp(&args),
        Invocation::Sleep(args) => {
            exit_on_signals();
            cli::run_sleep(&args)
        }
        Invocation::CheckConfig => check_config::run(),
        Invocation::Version => {
            cli::print_version();
            0
        }
        Invocation::Help => {
            cli::print_help();
            0
        }
        Invocation::Unknown(cmd) => {
            eprintln!(
                "Incorrect Usage: the k3s stand-in has no command {cmd:?} (try `k3s server`)"
            );
            1
        }
    };
    std::process::exit(code);
}

/// SIGTERM/SIGINT end the node at once with status 0: under docker-init the
/// stand-in is not PID 1, and `docker stop`/`restart` should not wait for the
/// kill timeout or record a failure.
fn exit_on_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    match signal_hook::iterator::Signals::new([SIGTERM, SIGINT]) {
        Ok(mut signals) => {
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    std::process::exit(0);
                }
            });
        }
        Err(e) => logs::warn(format!("repro-sim: cannot handle SIGTERM: {e}")),
    }
}
