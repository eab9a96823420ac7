//! Snapshots of a repro command (`snapshots/`): its exit code and both streams, with the
//! command line as the snapshot's description.

use crate::repro::Output;

/// Exit code and both streams, as stored in a snapshot.
pub fn snapshot(o: &Output) -> String {
    let mut s = format!("exit: {}\n", o.code);
    if !o.stdout.is_empty() {
        s.push_str("--- stdout\n");
        s.push_str(&o.stdout);
    }
    if !o.stderr.is_empty() {
        s.push_str("--- stderr\n");
        s.push_str(&o.stderr);
    }
    s
}

/// Snapshots an output under `name`, with the command line as the snapshot's description.
macro_rules! snap {
    ($name:expr, $out:expr) => {{
        let out = &$out;
        insta::with_settings!({ description => out.command.clone(), omit_expression => true }, {
            insta::assert_snapshot!($name, $crate::snap::snapshot(out));
        });
    }};
}
