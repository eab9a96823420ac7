//! `repro completions <shell>` and `repro man [--out DIR]`: generated from the same clap
//! definition as the parser (with `crate::help`'s examples, exit status and environment), so
//! they can never list a flag that does not exist.

use std::path::Path;

use clap::ValueEnum;

use crate::error::Error;
use crate::exit::Exit;
use crate::help;

use super::common::write_stdout;

/// The script that registers repro's completion with the shell: it calls `repro` back (as
/// `COMPLETE=<shell> repro -- …`, see `main`), so check, topology and results-folder names are
/// completed from what is there when TAB is pressed, and `--topology` offers names and YAML files.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<Exit, Error> {
    let name = shell
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    let shells = clap_complete::env::Shells::builtins();
    let Some(completer) = shells.completer(&name) else {
        return Err(Error::bad_input(format!(
            "repro: no dynamic completion for {name}; use one of bash, elvish, fish, powershell, zsh"
        )));
    };
    let mut buf = Vec::new();
    completer
        .write_registration("COMPLETE", "repro", "repro", "repro", &mut buf)
        .map_err(anyhow::Error::from)?;
    write_stdout(&String::from_utf8_lossy(&buf)).map_err(anyhow::Error::from)?;
    Ok(Exit::Ok)
}

pub(crate) fn man(out: Option<&Path>) -> Result<Exit, Error> {
    let mut cmd = help::command().disable_help_subcommand(true);
    cmd.build();
    let Some(dir) = out else {
        write_stdout(&String::from_utf8_lossy(&page(cmd, "")?)).map_err(anyhow::Error::from)?;
        return Ok(Exit::Ok);
    };
    // repro.1 and repro-<command>.1 for every subcommand (and theirs: repro-sim-build.1), as
    // clap_mangen::generate_to names them — but written through safe_fs, never through a link
    // planted in DIR (generate_to's File::create would overwrite the link's target), 0600.
    let mut pages = Vec::new();
    collect_pages(cmd, "", &mut pages)?;
    for (name, page) in pages {
        crate::safe_fs::write_in(dir, Path::new(&name), &page).map_err(|e| {
            let msg = format!("--out {}: {e}", dir.display());
            // Bad input is printed as it is, anything else after `error: ` (`Error::render`).
            if e.is_hostile() {
                Error::usage(msg)
            } else {
                Error::Other(anyhow::anyhow!(msg))
            }
        })?;
    }
    errln!("repro: man pages written to {}", dir.display());
    Ok(Exit::Ok)
}

/// Every page (file name, roff) of `cmd` and its visible subcommands, depth first.
fn collect_pages(
    cmd: clap::Command,
    path: &str,
    out: &mut Vec<(String, Vec<u8>)>,
) -> Result<(), Error> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        let sub_path = if path.is_empty() {
            sub.get_name().to_string()
        } else {
            format!("{path} {}", sub.get_name())
        };
        collect_pages(sub, &sub_path, out)?;
    }
    let name = clap_mangen::Man::new(cmd.clone()).get_filename();
    out.push((name, page(cmd, path)?));
    Ok(())
}

/// One man page: clap_mangen's sections (name, synopsis, description, options, commands,
/// version), then EXAMPLES, EXIT STATUS and ENVIRONMENT from `crate::help` and the exit table
/// instead of the help text's plain "Examples:" block.
fn page(cmd: clap::Command, path: &str) -> Result<Vec<u8>, Error> {
    let has_subcommands = cmd.get_subcommands().any(|s| !s.is_hide_set());
    let has_version = cmd.get_version().is_some() || cmd.get_long_version().is_some();
    let man = clap_mangen::Man::new(cmd);
    let mut buf = Vec::new();
    let io = |e: std::io::Error| Error::Other(e.into());
    man.render_title(&mut buf).map_err(io)?;
    man.render_name_section(&mut buf).map_err(io)?;
    man.render_synopsis_section(&mut buf).map_err(io)?;
    man.render_description_section(&mut buf).map_err(io)?;
    man.render_options_section(&mut buf).map_err(io)?;
    if has_subcommands {
        man.render_subcommands_section(&mut buf).map_err(io)?;
    }
    buf.extend_from_slice(sections(path).as_bytes());
    if has_version {
        man.render_version_section(&mut buf).map_err(io)?;
    }
    Ok(once_preamble(&buf))
}

/// clap_mangen starts every section it renders with the same two-line preamble (a string
/// definition); a page needs it once, at the top.
fn once_preamble(page: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(page);
    let mut seen = std::collections::HashSet::new();
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let preamble = line.starts_with(".ie \\n(.g .ds Aq") || line.starts_with(".el .ds Aq");
        if !preamble || seen.insert(line.to_string()) {
            out.push_str(line);
        }
    }
    out.into_bytes()
}

/// EXAMPLES (the command's), EXIT STATUS and ENVIRONMENT, in roff.
fn sections(path: &str) -> String {
    let mut s = String::from(".SH EXAMPLES\n");
    for e in help::examples_of(path) {
        s.push_str(&format!(
            ".PP\n{}\n.RS 4\n.nf\n\\fB{}\\fR\n.fi\n.RE\n",
            roff_text(e.what),
            roff_text(e.line)
        ));
    }
    s.push_str(".SH \"EXIT STATUS\"\n");
    for (e, _, meaning) in Exit::TABLE {
        s.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            e.code(),
            roff_text(&help::plain(meaning))
        ));
    }
    s.push_str(".SH ENVIRONMENT\n");
    for (name, meaning) in help::ENVIRONMENT {
        s.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_text(name),
            roff_text(&help::plain(meaning))
        ));
    }
    s
}

/// Text as roff reads it literally: backslashes and dashes escaped, a leading `.` or `'`
/// (a request) guarded.
fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}
