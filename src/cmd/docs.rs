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
    std::fs::create_dir_all(dir).map_err(|source| Error::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    // repro.1 and repro-<command>.1 for every subcommand (and theirs: repro-sim-build.1).
    clap_mangen::generate_to(cmd, dir).map_err(|source| Error::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    errln!("repro: man pages written to {}", dir.display());
    Ok(Exit::Ok)
}
