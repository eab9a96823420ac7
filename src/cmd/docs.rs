//! `repro completions <shell>` and `repro man [--out DIR]`: generated from the same clap
//! definition as the parser, so they can never list a flag that does not exist.

use std::path::Path;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::error::Error;
use crate::exit::Exit;

use super::common::write_stdout;

pub(crate) fn completions(shell: clap_complete::Shell) -> Result<Exit, Error> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "repro", &mut buf);
    write_stdout(&String::from_utf8_lossy(&buf)).map_err(anyhow::Error::from)?;
    Ok(Exit::Ok)
}

pub(crate) fn man(out: Option<&Path>) -> Result<Exit, Error> {
    let cmd = Cli::command();
    let Some(dir) = out else {
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut buf)
            .map_err(anyhow::Error::from)?;
        write_stdout(&String::from_utf8_lossy(&buf)).map_err(anyhow::Error::from)?;
        return Ok(Exit::Ok);
    };
    // repro.1 and repro-<command>.1 for every subcommand (and theirs: repro-sim-build.1), as
    // clap_mangen::generate_to names them — but written through safe_fs, never through a link
    // planted in DIR (generate_to's File::create would overwrite the link's target), 0600.
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    collect_pages(cmd, &mut pages).map_err(anyhow::Error::from)?;
    for (name, page) in pages {
        crate::safe_fs::write_in(dir, Path::new(&name), &page).map_err(|e| {
            let msg = format!("--out {}: {e}", dir.display());
            // Bad input is printed as it is, anything else after `error: ` (`Error::render`).
            if e.is_hostile() {
                Error::bad_input(format!("error: {msg}"))
            } else {
                Error::Other(anyhow::anyhow!(msg))
            }
        })?;
    }
    errln!("repro: man pages written to {}", dir.display());
    Ok(Exit::Ok)
}

/// Every page (file name, roff) of `cmd` and its visible subcommands, depth first.
fn collect_pages(cmd: clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        collect_pages(sub, out)?;
    }
    let man = clap_mangen::Man::new(cmd);
    let mut buf = Vec::new();
    man.render(&mut buf)?;
    out.push((man.get_filename(), buf));
    Ok(())
}
