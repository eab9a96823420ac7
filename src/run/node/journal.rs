//! Following a systemd unit's boot through its journal, read by an exec in the node
//! (`journalctl -u UNIT -f -o json --after-cursor C`): the log source of a distribution that
//! runs as a systemd unit (RKE2). docs/systemd-nodes.md has the measurements behind it.
//!
//! A boot is one start of the unit: one invocation id (`_SYSTEMD_INVOCATION_ID` on the unit's
//! own lines, `INVOCATION_ID` on PID 1's lines about it). The follower reads from a cursor
//! taken just before repro started or restarted the unit, skips what the previous invocation
//! still logs (its stop), takes the first other id as its boot's, and ends the boot at the
//! unit's process exit or stop (PID 1's messages, by their catalog ids) — no timestamps, so
//! none of the whole-second questions of `docker logs`. A broken exec is reopened at the last
//! cursor, which is exact.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use regex::Regex;

use crate::docker::DockerApi;

use crate::run::watch::{self, BootHandle, Ended, LineSplitter, LogLine, OnLine, Scrub};

/// systemd's catalog id of "Main process exited, code=…, status=…" (`SD_MESSAGE_UNIT_PROCESS_EXIT`,
/// with `EXIT_STATUS`), logged when the unit's process ends on its own.
const UNIT_PROCESS_EXIT: &str = "98e322203f7a4ed290d09fe03c09fe15";
/// "Stopped <unit>" (`SD_MESSAGE_UNIT_STOPPED`): the unit is down, whoever stopped it.
const UNIT_STOPPED: &str = "9d1aaa27d60140bd96365438aad20286";

/// The fields asked of journalctl (it adds `__CURSOR` and `__REALTIME_TIMESTAMP` itself).
const FIELDS: &str =
    "--output-fields=MESSAGE,_SYSTEMD_INVOCATION_ID,INVOCATION_ID,MESSAGE_ID,EXIT_STATUS";

/// A unit boot to follow: the unit has just been asked to (re)start.
pub(crate) struct JournalFollow {
    pub(crate) docker: Arc<dyn DockerApi>,
    pub(crate) container: String,
    pub(crate) unit: String,
    pub(crate) number: u32,
    pub(crate) step: usize,
    pub(crate) started_at: DateTime<Utc>,
    /// The journal's cursor before the start: everything after it is this boot's or later.
    pub(crate) after_cursor: String,
    /// The unit's invocation id before the start (its stop lines come after the cursor).
    pub(crate) previous: Option<String>,
    pub(crate) ready: Vec<Regex>,
    pub(crate) log_path: std::path::PathBuf,
    pub(crate) on_line: OnLine,
    pub(crate) stopping: Arc<AtomicBool>,
    pub(crate) scrub: Scrub,
}

/// The command that follows `unit` from `cursor` on.
pub(crate) fn follow_command(unit: &str, cursor: &str) -> Vec<String> {
    [
        "journalctl",
        "-u",
        unit,
        "-f",
        "--no-tail",
        "-o",
        "json",
        FIELDS,
        "--after-cursor",
        cursor,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The command that prints `unit`'s journal for a person: every line so far, as journalctl
/// shows it, then (`follow`) the new ones as they come.
pub(crate) fn print_command(unit: &str, follow: bool) -> Vec<String> {
    let mut cmd: Vec<String> = ["journalctl", "-u", unit, "--no-pager"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if follow {
        cmd.push("-f".to_string());
    }
    cmd
}

/// The cursor in `journalctl -n 0 --show-cursor -q`'s answer (`-- cursor: s=…`).
pub(crate) fn parse_cursor(output: &str) -> Option<String> {
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix("-- cursor: "))
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
}

/// One journal entry, as much of it as a boot needs.
#[derive(Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) cursor: String,
    pub(crate) ts: DateTime<Utc>,
    pub(crate) text: String,
    /// The unit's own line (`_SYSTEMD_INVOCATION_ID`) or PID 1's about it (`INVOCATION_ID`).
    pub(crate) invocation: Option<String>,
    pub(crate) message_id: Option<String>,
    pub(crate) exit_status: Option<i64>,
}

/// A line of `journalctl -o json`. `MESSAGE` is a string, or an array of bytes when it is not
/// UTF-8 (kept lossily, as the container follower keeps garbage).
pub(crate) fn parse_entry(line: &[u8]) -> Option<Entry> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    let field = |k: &str| v.get(k).and_then(|f| f.as_str()).map(str::to_string);
    let text = match v.get("MESSAGE") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(bytes)) => {
            let b: Vec<u8> = bytes
                .iter()
                .filter_map(|x| x.as_u64().and_then(|n| u8::try_from(n).ok()))
                .collect();
            String::from_utf8_lossy(&b).into_owned()
        }
        _ => String::new(),
    };
    let micros: i64 = field("__REALTIME_TIMESTAMP")?.parse().ok()?;
    Some(Entry {
        cursor: field("__CURSOR")?,
        ts: DateTime::from_timestamp_micros(micros)?,
        text: text.trim_end_matches(['\r', '\n']).to_string(),
        invocation: field("_SYSTEMD_INVOCATION_ID").or_else(|| field("INVOCATION_ID")),
        message_id: field("MESSAGE_ID"),
        exit_status: field("EXIT_STATUS").and_then(|s| s.parse().ok()),
    })
}

/// What one entry means for the boot being followed.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Not this boot's (the previous invocation stopping): skipped.
    Skip,
    /// This boot's line.
    Keep,
    /// This boot's line, and its last: the boot ended so.
    KeepAndEnd(Ended),
    /// Another invocation began without this one's end being seen: the boot is over.
    End(Ended),
}

/// Which invocation is this boot's, and when it ends: the decision, pure.
#[derive(Debug, Default)]
pub(crate) struct Boundary {
    pub(crate) previous: Option<String>,
    pub(crate) mine: Option<String>,
}

impl Boundary {
    pub(crate) fn step(&mut self, e: &Entry, stopping: bool) -> Step {
        let at = || e.ts.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
        // An end whose status the journal does not give: a stop when repro asked for one.
        let over = || {
            if stopping {
                Ended::Stopped { at: at() }
            } else {
                Ended::Died {
                    exit_code: None,
                    at: at(),
                    oom: false,
                }
            }
        };
        let Some(id) = e.invocation.as_deref() else {
            return if self.mine.is_some() {
                Step::Keep
            } else {
                Step::Skip
            };
        };
        if self.previous.as_deref() == Some(id) && self.mine.as_deref() != Some(id) {
            return Step::Skip;
        }
        match self.mine.as_deref() {
            None => self.mine = Some(id.to_string()),
            Some(m) if m == id => {}
            Some(_) => return Step::End(over()),
        }
        match e.message_id.as_deref() {
            Some(UNIT_PROCESS_EXIT) if !stopping => Step::KeepAndEnd(Ended::Died {
                exit_code: e.exit_status,
                at: at(),
                oom: false,
            }),
            Some(UNIT_STOPPED) => Step::KeepAndEnd(over()),
            _ => Step::Keep,
        }
    }
}

/// What journalctl -f says when it gets no inotify instance (`sd_journal_get_fd` → EMFILE,
/// systemd's journalctl.c): "Insufficient watch descriptors available. Reverting to -n." — it
/// then prints what it has and exits instead of following.
const NO_INOTIFY: &str = "Reverting to -n";

/// How often a journal is read again while journalctl cannot follow it.
const POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// Attaches of the journal follow in a row that may bring no entry before the boot's log
/// counts as lost: with `reattach_pause`'s pauses, about 25 seconds.
const REATTACH_TRIES: u32 = 9;

/// The pause before the `failures`-th attach in a row that brought nothing (0: the follow broke
/// after entries, reattach at once); None once the tries are used up.
pub(crate) fn reattach_pause(failures: u32) -> Option<std::time::Duration> {
    match failures {
        0 => Some(std::time::Duration::ZERO),
        n if n <= REATTACH_TRIES => Some(std::time::Duration::from_millis(
            (250u64 << (n - 1).min(4)).min(4_000),
        )),
        _ => None,
    }
}

/// How one exec of `journalctl -f` ended, as the follow decides what comes next.
struct Attach {
    /// What journalctl said on stderr last.
    said: String,
    /// The stream's own error, if it broke.
    broke: Option<String>,
    /// It brought at least one entry.
    got: bool,
}

/// What the follow does after an exec ended.
enum Next {
    /// Attach again after this pause.
    Again(std::time::Duration),
    /// The boot ended so.
    End(Ended),
    /// The node runs on but its journal cannot be followed: why.
    Lost(String),
}

impl Attach {
    /// The decision, given the container's state now and the attaches in a row that brought
    /// nothing (`failures`, updated).
    fn then(
        self,
        state: Result<crate::docker::ContainerState, crate::docker::DockerError>,
        failures: &mut u32,
        stopping: bool,
    ) -> Next {
        match state {
            // No inotify instance for journalctl (the host's max_user_instances used up): it
            // printed what follows the cursor and ended. Read again after a pause — polling,
            // slower but exact (the cursor), and no loss.
            Ok(s) if s.running && self.said.contains(NO_INOTIFY) => {
                *failures = 0;
                Next::Again(POLL)
            }
            Ok(s) if s.running => {
                *failures = if self.got { 0 } else { *failures + 1 };
                if let Some(pause) = reattach_pause(*failures) {
                    return Next::Again(pause);
                }
                Next::Lost(match (self.said.is_empty(), self.broke) {
                    (false, _) => format!("journalctl said: {}", self.said),
                    (true, Some(b)) => b,
                    (true, None) => "journalctl ended with nothing to say".into(),
                })
            }
            Ok(s) => {
                let at = s.finished_at.unwrap_or_default();
                Next::End(if stopping {
                    Ended::Stopped { at }
                } else {
                    Ended::Died {
                        exit_code: s.exit_code,
                        at,
                        oom: s.oom_killed,
                    }
                })
            }
            Err(e) => Next::End(Ended::Lost {
                reason: e.to_string(),
            }),
        }
    }
}

/// The last line of what a command wrote, trimmed and bounded (a reason, not a log).
fn last_words(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    last.trim().chars().take(300).collect()
}

/// Starts following a unit's boot.
pub(crate) fn follow(f: JournalFollow) -> BootHandle {
    let JournalFollow {
        docker,
        container,
        unit,
        number,
        step,
        started_at,
        after_cursor,
        previous,
        ready,
        log_path,
        on_line,
        stopping,
        scrub,
    } = f;
    let (handle, boot, tx) = watch::new_boot(number, step, started_at, log_path.clone(), None);
    tokio::spawn(async move {
        let mut sink = watch::Sink::open(boot, tx, log_path, ready, on_line, container.clone());
        let mut boundary = Boundary {
            previous,
            mine: None,
        };
        let mut cursor = after_cursor;
        // Attaches in a row that brought no entry: journalctl failing at once (no inotify
        // instance left on the host, #30) is retried with a growing pause, since another
        // run's nodes may free one; an attach that brings entries starts the count again.
        let mut failures = 0u32;
        let end = 'follow: loop {
            let mut stream = docker.exec_stream(&container, follow_command(&unit, &cursor));
            let mut split = LineSplitter::default();
            let mut broke = None;
            // What journalctl said on stderr last (its complaints are not entries).
            let mut said = String::new();
            let mut got = false;
            while let Some(item) = stream.next().await {
                let chunk = match item {
                    Ok(c) => c,
                    Err(e) => {
                        broke = Some(e.to_string());
                        break;
                    }
                };
                if chunk.stderr {
                    said = last_words(&chunk.bytes);
                    continue;
                }
                let mut ended = None;
                split.feed(&chunk.bytes, |raw, _cut| {
                    if ended.is_some() {
                        return;
                    }
                    let Some(e) = parse_entry(raw) else {
                        return;
                    };
                    got = true;
                    cursor = e.cursor.clone();
                    let decided = boundary.step(&e, stopping.load(Ordering::SeqCst));
                    let line = || LogLine {
                        ts: e.ts,
                        seen: std::time::Instant::now(),
                        text: e.text.clone(),
                    };
                    match decided {
                        Step::Skip => {}
                        Step::Keep => sink.keep(sink.scrubbed(line(), 0, &scrub)),
                        Step::KeepAndEnd(end) => {
                            sink.keep(sink.scrubbed(line(), 0, &scrub));
                            ended = Some(end);
                        }
                        Step::End(end) => ended = Some(end),
                    }
                });
                if let Some(end) = ended {
                    break 'follow end;
                }
            }
            drop(stream);
            // The exec ended: the container stopped (the exec dies with it), or journalctl did.
            let attach = Attach { said, broke, got };
            let state = docker.state(&container).await;
            match attach.then(state, &mut failures, stopping.load(Ordering::SeqCst)) {
                Next::Again(pause) => tokio::time::sleep(pause).await,
                Next::End(end) => break end,
                Next::Lost(why) => {
                    break Ended::Lost {
                        reason: format!(
                            "following its journal (`journalctl -u {unit} -f` in {container}) failed {failures} times in a row; {}",
                            scrub(why)
                        ),
                    }
                }
            }
        };
        sink.end(end);
    });
    handle
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal entry as journalctl prints it, `id_key` the field that holds its invocation id.
    fn entry(id_key: &str, id: &str, message_id: Option<&str>, text: &str) -> Vec<u8> {
        let mut v = serde_json::json!({
            "__CURSOR": format!("s=1;i={}", text.len()),
            "__REALTIME_TIMESTAMP": "1796155594591290",
            "MESSAGE": text,
        });
        v[id_key] = id.into();
        if let Some(m) = message_id {
            v["MESSAGE_ID"] = m.into();
            v["EXIT_STATUS"] = "1".into();
        }
        serde_json::to_vec(&v).expect("json")
    }

    /// A line the unit's process wrote in invocation `id`.
    fn process(id: &str, text: &str) -> Vec<u8> {
        entry("_SYSTEMD_INVOCATION_ID", id, None, text)
    }

    /// A line PID 1 wrote about invocation `id`, with its catalogue id when it has one.
    fn pid1(id: &str, message_id: Option<&str>, text: &str) -> Vec<u8> {
        entry("INVOCATION_ID", id, message_id, text)
    }

    /// Runs entries (as journalctl prints them) through the boundary: kept texts and the end.
    fn run(
        previous: Option<&str>,
        stopping: bool,
        entries: &[Vec<u8>],
    ) -> (Vec<String>, Option<Ended>) {
        let mut b = Boundary {
            previous: previous.map(str::to_string),
            mine: None,
        };
        let mut kept = Vec::new();
        for raw in entries {
            let e = parse_entry(raw).expect("entry");
            match b.step(&e, stopping) {
                Step::Skip => {}
                Step::Keep => kept.push(e.text),
                Step::KeepAndEnd(end) => {
                    kept.push(e.text);
                    return (kept, Some(end));
                }
                Step::End(end) => return (kept, Some(end)),
            }
        }
        (kept, None)
    }

    #[test]
    fn a_restart_skips_the_old_invocations_stop_and_keeps_the_new_one_whole() {
        // As measured (docs/systemd-nodes.md): the old id's stop, then the new id's first line
        // comes before PID 1's "Starting".
        let entries = [
            pid1("old", None, "Stopping rke2-server.service"),
            pid1("old", Some(UNIT_STOPPED), "Stopped rke2-server.service"),
            pid1("new", None, "Failed to get cgroup ID"),
            pid1("new", None, "Starting rke2-server.service"),
            process("new", "level=info msg=\"rke2 is up and running\""),
            pid1("new", None, "Started rke2-server.service"),
        ];
        let (kept, end) = run(Some("old"), false, &entries);
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert_eq!(kept[0], "Failed to get cgroup ID");
        assert_eq!(end, None, "still running");
    }

    #[test]
    fn a_process_exit_ends_the_boot_as_a_death_with_its_status() {
        let entries = [
            process("a", "level=fatal msg=\"boom\""),
            pid1(
                "a",
                Some(UNIT_PROCESS_EXIT),
                "Main process exited, status=1/FAILURE",
            ),
            pid1("a", None, "Failed with result 'exit-code'."),
        ];
        let (kept, end) = run(None, false, &entries);
        assert_eq!(kept.len(), 2);
        assert!(
            matches!(
                end,
                Some(Ended::Died {
                    exit_code: Some(1),
                    ..
                })
            ),
            "{end:?}"
        );
    }

    #[test]
    fn a_stop_repro_asked_for_is_a_stop_and_a_new_invocation_ends_an_unseen_one() {
        let stop = [
            process("a", "running"),
            pid1("a", Some(UNIT_STOPPED), "Stopped"),
        ];
        assert!(matches!(
            run(None, true, &stop).1,
            Some(Ended::Stopped { .. })
        ));
        let jumped = [process("a", "running"), process("b", "another start")];
        let (kept, end) = run(None, false, &jumped);
        assert_eq!(kept, ["running"]);
        assert!(matches!(
            end,
            Some(Ended::Died {
                exit_code: None,
                ..
            })
        ));
    }

    /// #30: a follow that keeps failing is retried with growing pauses (another run may free
    /// an inotify instance) for about 25 s, then lost; one that broke after entries reattaches
    /// at once.
    #[test]
    fn reattaching_pauses_grow_and_end() {
        use std::time::Duration;
        assert_eq!(reattach_pause(0), Some(Duration::ZERO));
        assert_eq!(reattach_pause(1), Some(Duration::from_millis(250)));
        assert_eq!(reattach_pause(3), Some(Duration::from_millis(1000)));
        assert_eq!(reattach_pause(REATTACH_TRIES), Some(Duration::from_secs(4)));
        assert_eq!(reattach_pause(REATTACH_TRIES + 1), None);
        let total: Duration = (1..=REATTACH_TRIES).filter_map(reattach_pause).sum();
        assert!(
            total > Duration::from_secs(20) && total < Duration::from_secs(30),
            "{total:?}"
        );
        assert_eq!(
            last_words(b"Insufficient watch descriptors available. Reverting to -n.\n\n"),
            "Insufficient watch descriptors available. Reverting to -n."
        );
        assert!(
            last_words(b"Insufficient watch descriptors available. Reverting to -n.\n")
                .contains(NO_INOTIFY)
        );
        assert_eq!(last_words(&[b'x'; 1000]).len(), 300);
    }

    /// #30: what follows an ended exec — polling without inotify, retries then a lost log
    /// while the node runs, a death or a stop once it is down — never a death while it runs.
    #[test]
    fn an_ended_follow_polls_retries_or_ends_by_the_containers_state() {
        use crate::docker::ContainerState;
        let up = || {
            Ok(ContainerState {
                running: true,
                finished_at: None,
                exit_code: None,
                oom_killed: false,
            })
        };
        let attach = |said: &str, got: bool| Attach {
            said: said.into(),
            broke: None,
            got,
        };
        let mut failures = 3;
        let no_inotify = "Insufficient watch descriptors available. Reverting to -n.";
        assert!(matches!(
            attach(no_inotify, false).then(up(), &mut failures, false),
            Next::Again(POLL)
        ));
        assert_eq!(failures, 0);
        let failing = "Failed to get journal fd: Too many open files";
        for n in 1..=REATTACH_TRIES {
            assert!(matches!(
                attach(failing, false).then(up(), &mut failures, false),
                Next::Again(_)
            ));
            assert_eq!(failures, n);
        }
        match attach(failing, false).then(up(), &mut failures, false) {
            Next::Lost(why) => assert_eq!(why, format!("journalctl said: {failing}")),
            _ => panic!("not lost after {failures} failures"),
        }
        let down = || {
            Ok(ContainerState {
                running: false,
                finished_at: Some("t".into()),
                exit_code: Some(137),
                oom_killed: false,
            })
        };
        assert!(matches!(
            attach("", false).then(down(), &mut failures, false),
            Next::End(Ended::Died {
                exit_code: Some(137),
                ..
            })
        ));
        assert!(matches!(
            attach("", false).then(down(), &mut failures, true),
            Next::End(Ended::Stopped { .. })
        ));
    }

    #[test]
    fn entries_cursors_and_non_utf8_messages_parse() {
        let raw = br#"{"__CURSOR":"s=a;i=1","__REALTIME_TIMESTAMP":"1796155594591290","MESSAGE":[104,105,255],"_SYSTEMD_INVOCATION_ID":"x"}"#;
        let e = parse_entry(raw).expect("entry");
        assert_eq!(e.text, "hi\u{fffd}");
        assert_eq!(e.invocation.as_deref(), Some("x"));
        assert_eq!(e.ts.timestamp_subsec_micros(), 591290);
        assert!(parse_entry(b"not json").is_none());
        assert_eq!(
            parse_cursor("-- cursor: s=ad09;i=36;b=6f74\n").as_deref(),
            Some("s=ad09;i=36;b=6f74")
        );
        assert_eq!(parse_cursor("-- No entries --\n"), None);
    }
}
