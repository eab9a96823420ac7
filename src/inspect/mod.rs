//! `repro inspect`: read the logs a user already has and say, per node and per boot, which
//! features came up — with the signals and checks `run` uses, so what `run` proves on a fresh
//! cluster `inspect` recognises on an old one.
//!
//! The pipeline, one input at a time, streaming:
//! [`sources`] (what was named → log streams and configs) → [`reader`] (lines in bounded memory,
//! in batches that [`prefilter`] searches whole for the patterns' literals and the secret cues,
//! on one thread) → [`formats`] (which tool wrote each line; the k3s line inside, on a second
//! thread) → [`boots`] (per node, cut at start banners, keeping only lines the signals need;
//! the prefilter spares most lines the patterns) → [`judge`] (the runner's own rules) →
//! [`findings`] (bug signatures from the check files) → [`render`].

mod banner;
pub(crate) mod boots;
pub(crate) mod config;
mod deps;
pub(crate) mod findings;
pub(crate) mod formats;
pub(crate) mod judge;
pub(crate) mod model;
pub(crate) mod prefilter;
pub(crate) mod reader;
pub(crate) mod render;
pub mod sources;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use indexmap::IndexMap;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use boots::{BootBuilder, Matcher};
use config::NodeConfig;
use deps::{Redactor, Settle, Signals, VERSION_SIGNAL};
use formats::{Entry, Kind, Normaliser, Outer, Preread, FATAL_WORDS};
use model::{CheckRef, FileReport, Finding, InputReport, NodeReport, Report, Tool, SCHEMA_VERSION};
use reader::Found;
use reader::{BoundedLines, Counting, MAX_LINE};
use sources::{ConfigFile, InputError, Opener, Resolved, Stream};

pub use deps::{find_root, Catalog, DEFAULT_SETTLE};

#[derive(Debug, Clone)]
pub struct Options {
    /// `--settle`: a margin after every deciding `settled-by` line (None: as `run` decides).
    pub settle: Option<Duration>,
    /// Treat every input as an excerpt (lines left out): no settle rule.
    pub excerpt: bool,
    /// Values to redact wherever they occur.
    pub secrets: Vec<String>,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

/// Lines read per input before its format is decided (and at most this many bytes).
const SAMPLE_LINES: usize = 2000;
const SAMPLE_BYTES: usize = 1024 * 1024;
/// Bytes looked at first to tell binary data from text.
const PEEK: usize = 64 * 1024;
/// The read buffer: large reads (one system call per MiB, not per 64 KiB) for large journals.
const READ_BUF: usize = 1024 * 1024;

/// Figures about the work done, for the benchmark.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub lines: u64,
    pub bytes: u64,
}

/// Reads every input and decides every boot and finding. The report is already redacted.
pub fn inspect(
    resolved: &Resolved,
    cat: &Catalog,
    opts: &Options,
) -> Result<(Report, Figures), InputError> {
    let matcher = Matcher::new(&cat.signals, &SCAN_WORDS);
    let sigs = findings::signatures(cat);
    let mut redactor = Redactor::new(&opts.secrets);
    for c in resolved
        .configs
        .iter()
        .chain(resolved.inputs.iter().flat_map(|i| i.configs.iter()))
    {
        redactor.learn_text(&c.text);
    }
    let total: u64 = resolved
        .inputs
        .iter()
        .flat_map(|i| i.streams.iter())
        .filter_map(|s| s.size)
        .sum();
    let counter = Arc::new(AtomicU64::new(0));
    let bar = opts.progress.then(|| progress_bar(total));
    let mut figures = Figures::default();
    let mut learned = Learned::default();

    let mut inputs = Vec::new();
    let mut all_findings = Vec::new();
    for (index, input) in resolved.inputs.iter().enumerate() {
        let mut state = InputState::new(opts.excerpt);
        let mut files: Vec<FileReport> = Vec::new();
        let mut cx = StreamCx {
            matcher: &matcher,
            signals: &cat.signals,
            redactor: &mut redactor,
            learned: &mut learned,
            counter: counter.clone(),
            bar: bar.as_ref(),
            figures: &mut figures,
        };
        match &input.archive {
            Some(archive) => read_archive(archive, input, &mut state, &mut files, &mut cx)?,
            None => {
                for s in &input.streams {
                    let file = files.len();
                    let opened: Result<Box<dyn Read>, std::io::Error> = match &s.open {
                        Opener::File(p) => {
                            std::fs::File::open(p).map(|f| Box::new(f) as Box<dyn Read>)
                        }
                        Opener::Stdin => Ok(Box::new(std::io::stdin()) as Box<dyn Read>),
                        Opener::Member(_) => continue,
                    };
                    let report = match opened {
                        Ok(r) => read_stream(r, s, file, &mut state, &mut cx),
                        Err(e) => Err(StreamError::Io(e.to_string())),
                    };
                    record_file(s, report, &mut files)?;
                }
            }
        }
        for (f, why) in &input.skipped {
            files.push(FileReport {
                path: f.clone(),
                format: String::new(),
                lines: 0,
                bytes: 0,
                skipped: Some(why.clone()),
            });
        }
        if files.iter().all(|f| f.skipped.is_some()) {
            let why: Vec<String> = files
                .iter()
                .map(|f| format!("{}: {}", f.path, f.skipped.clone().unwrap_or_default()))
                .collect();
            return Err(InputError::new(format!(
                "{}: nothing readable as a k3s log ({})",
                input.path,
                why.join("; ")
            )));
        }
        let labels: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
        let unit_distro = state.unit_distro;
        let (nodes, excerpt, mut notes) = state.finish(&cat.signals, opts, input.trusted, &labels);
        notes.extend(input.notes.iter().cloned());
        let mut report = InputReport {
            path: input.path.clone(),
            kind: input.kind,
            files,
            excerpt,
            nodes,
            notes,
        };
        let configs = node_configs(input.configs.iter().chain(resolved.configs.iter()), &report)?;
        all_findings.extend(judge_boots(
            &mut report,
            &configs,
            index,
            &sigs,
            &cat.signals,
        ));
        if report.nodes.iter().all(|n| n.boots.is_empty()) {
            return Err(no_log_line(&report, unit_distro));
        }
        inputs.push(report);
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut report = report_of(cat, opts, &sigs, inputs, all_findings);
    render::redact(&mut report, &mut redactor);
    Ok((report, figures))
}

/// The whole report around the inputs and findings: the tool, the settle window, the checks.
fn report_of(
    cat: &Catalog,
    opts: &Options,
    sigs: &[findings::Signature],
    inputs: Vec<InputReport>,
    all_findings: Vec<Finding>,
) -> Report {
    Report {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: "repro".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        settle_seconds: Settle {
            margin: opts.settle,
        }
        .after(false)
        .as_secs_f64(),
        checks: cat
            .checks
            .iter()
            .map(|(c, _)| CheckRef {
                name: c.name.clone(),
                issue: c.issue.clone(),
                fixed_in: c.fixed_in.firsts.iter().map(ToString::to_string).collect(),
                signatures: sigs.iter().filter(|s| s.check == c.name).count(),
            })
            .collect(),
        inputs,
        findings: all_findings,
    }
}

/// Each boot's config and role, and the findings of every signature on it.
fn judge_boots(
    report: &mut InputReport,
    configs: &HashMap<(String, Option<u32>), NodeConfig>,
    index: usize,
    sigs: &[findings::Signature],
    signals: &Signals,
) -> Vec<Finding> {
    let mut found = Vec::new();
    for node in &mut report.nodes {
        let boots = node.boots.len();
        for boot in &mut node.boots {
            let own = configs.get(&(node.name.clone(), Some(boot.boot)));
            let cfg = own.or_else(|| configs.get(&(node.name.clone(), None)));
            boot.config = cfg.map(|c| c.files.join(", "));
            let (role, from) = findings::role_of(boot, cfg);
            boot.role = role.map(|r| r.as_str().to_string());
            boot.role_from = from;
            found.extend(findings::match_boot(
                &findings::Subject {
                    input: index,
                    node: &node.name,
                    boot,
                    config: cfg,
                    config_for_all_boots: own.is_none(),
                    boots,
                },
                sigs,
                signals,
            ));
        }
    }
    found
}

fn progress_bar(total: u64) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} reading logs {bytes}/{total_bytes} ({bytes_per_sec}, {eta}) {wide_msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}

/// Why an input has no boot: no line of a distribution at all, or (a journal of systemd's lines
/// about a unit only: `Starting rke2-server.service…`, `Started …`) none the distribution itself
/// printed; then the message names the distribution those unit lines are about.
fn no_log_line(report: &InputReport, unit_distro: Option<distro::Distro>) -> InputError {
    let formats = report
        .files
        .iter()
        .filter(|f| f.skipped.is_none())
        .map(|f| format!("{}: {}", f.path, f.format))
        .collect::<Vec<_>>()
        .join("; ");
    if let Some(d) = unit_distro {
        let f = d.facts();
        let units: Vec<String> = f.units.iter().map(|u| format!("-u {u}")).collect();
        let b = f.binary;
        return InputError::new(format!(
            "{}: no {b} log line found ({formats}): only systemd's lines about the {b} unit (starts, stops, exits), none that {b} itself printed (identifier {b}…)",
            report.path,
        ))
        .help(format!(
            "give the unit's whole journal (journalctl {}), with {b}'s own lines",
            units.join(" or "),
        ));
    }
    // A read that stopped early (a truncated .gz) is why there is no line: say so first.
    let notes: String = report
        .notes
        .iter()
        .map(|n| format!("\n  note: {n}"))
        .collect();
    InputError::new(format!(
        "{}: no k3s log line found ({formats}){}{notes}",
        report.path,
        if report.files.iter().any(|f| f.format.contains("journalctl")) {
            "; a journal's lines count only when they come from k3s (identifier k3s…)"
        } else {
            ""
        }
    ))
    .help("give the k3s service's log (journalctl -u k3s), a k3s container's `docker logs`, or k3s's --log file")
}

/// The configs of an input's nodes: per node, and per boot where a results folder says which
/// config each boot started with.
fn node_configs<'a>(
    files: impl Iterator<Item = &'a ConfigFile>,
    report: &InputReport,
) -> Result<HashMap<(String, Option<u32>), NodeConfig>, InputError> {
    let mut grouped: IndexMap<(String, Option<u32>), Vec<&ConfigFile>> = IndexMap::new();
    for f in files {
        if report.nodes.iter().any(|n| n.name == f.node) {
            grouped.entry((f.node.clone(), f.boot)).or_default().push(f);
        }
    }
    let mut out = HashMap::new();
    for (key, fs) in grouped {
        out.insert(key, NodeConfig::read(&fs)?);
    }
    Ok(out)
}

fn record_file(
    s: &Stream,
    report: Result<FileReport, StreamError>,
    files: &mut Vec<FileReport>,
) -> Result<(), InputError> {
    match report {
        Ok(r) => files.push(r),
        Err(e) if s.named => return Err(e.refused(&s.label)),
        Err(e) => files.push(FileReport {
            path: s.label.clone(),
            format: String::new(),
            lines: 0,
            bytes: 0,
            skipped: Some(e.short()),
        }),
    }
    Ok(())
}

fn read_archive(
    archive: &std::path::Path,
    input: &sources::Input,
    state: &mut InputState,
    files: &mut Vec<FileReport>,
    cx: &mut StreamCx,
) -> Result<(), InputError> {
    let bad =
        |e: std::io::Error| InputError::new(format!("{}: cannot read: {e}", archive.display()));
    let mut ar = sources::open_archive(archive).map_err(bad)?;
    let wanted: HashMap<&str, &Stream> = input
        .streams
        .iter()
        .filter_map(|s| match &s.open {
            Opener::Member(p) => Some((p.as_str(), s)),
            _ => None,
        })
        .collect();
    for entry in ar.entries().map_err(bad)? {
        let e = entry.map_err(bad)?;
        let path = e
            .path()
            .map(|p| p.to_string_lossy().trim_start_matches("./").to_string())
            .unwrap_or_default();
        let Some(s) = wanted.get(path.as_str()) else {
            continue;
        };
        let file = files.len();
        let report = read_stream(Box::new(e), s, file, state, cx);
        record_file(s, report, files)?;
    }
    Ok(())
}

enum StreamError {
    Io(String),
    Binary,
    /// Text in a form inspect does not read (compressed otherwise than gzip, a zip, UTF-16, a
    /// journal file): what it is and how to make it text.
    Packed {
        what: &'static str,
        help: &'static str,
    },
    /// journalctl's `-- No entries --`: the journal had no line of the unit asked for.
    NoEntries,
    /// No text at all: an empty file, or only blank lines (this many).
    Empty {
        lines: u64,
    },
    /// A journalctl output form inspect does not read (`-o json-pretty`, `-o verbose`…).
    UnreadForm(&'static str),
    /// The gzip data ends early or is damaged before the first line.
    Gzip(String),
    Unknown {
        lines: u64,
    },
}

impl StreamError {
    /// The input error of a file the user named.
    fn refused(&self, label: &str) -> InputError {
        match self {
            StreamError::Io(e) => InputError::new(format!("{label}: cannot read: {e}"))
                .help("check that the file exists and is readable"),
            StreamError::Binary => InputError::new(format!("{label}: binary data, not a text log"))
                .help(format!(
                    "give the log as text ({}); for a .gz log or a .tar.gz bundle, name the file as it is",
                    "journalctl -u k3s, docker logs, k3s --log file"
                )),
            StreamError::Packed { what, help } => {
                InputError::new(format!("{label}: {what}, not a text log"))
                    .help(help.replace("FILE", &shell_word(label)))
            }
            StreamError::NoEntries => InputError::new(format!(
                "{label}: journalctl printed `-- No entries --`: the journal holds no line of the unit it was asked for"
            ))
            .help("check the unit's name (k3s or k3s-agent; rke2-server or rke2-agent: `systemctl list-units 'k3s*' 'rke2*'`), the time range, and that journalctl ran as root or in group systemd-journal"),
            StreamError::Empty { lines } => InputError::new(format!(
                "{label}: {}, no log line",
                if *lines == 0 {
                    "empty".to_string()
                } else {
                    format!("only blank lines ({lines})")
                }
            ))
            .help("give the k3s or RKE2 log itself (journalctl -u k3s, docker logs, k3s --log file); a journal saved while the service had no lines is empty too"),
            StreamError::UnreadForm(form) => InputError::new(format!(
                "{label}: `{form}` output, which inspect does not read (one field a line: the host, unit and boots would be lost)"
            ))
            .help("give the same journal as `journalctl -u k3s -o json` (one entry a line), `-o export`, or the default short form (RKE2: `-u rke2-server` or `-u rke2-agent`)"),
            StreamError::Gzip(e) => InputError::new(format!(
                "{label}: the gzip data is cut short or damaged ({e})"
            ))
            .help(format!(
                "`gzip -t {f}` checks it; `zcat {f} > k3s.log` keeps what can be read",
                f = shell_word(label)
            )),
            StreamError::Unknown { lines } => InputError::new(format!(
                "{label}: unknown format: none of the first {lines} line(s) is a k3s log line"
            ))
            .help(format!("formats tried: {}", formats::TRIED)),
        }
    }

    fn short(&self) -> String {
        match self {
            StreamError::Io(e) => format!("cannot read: {e}"),
            StreamError::Binary => "binary data, not a text log".into(),
            StreamError::Packed { what, .. } => format!("{what}, not a text log"),
            StreamError::Gzip(e) => format!("gzip data cut short or damaged: {e}"),
            StreamError::UnreadForm(form) => format!("`{form}` output, not read"),
            StreamError::Empty { .. } => "empty (no text)".into(),
            StreamError::NoEntries => "journalctl found no entries".into(),
            StreamError::Unknown { .. } => "unknown format (not a k3s log)".into(),
        }
    }
}

/// A file name as a shell word, for the commands the help lines suggest (a path with spaces,
/// quotes or newlines still pastes as one word).
fn shell_word(name: &str) -> String {
    // Standard input has no name to give a command: the placeholder stays.
    if name == sources::STDIN_LABEL {
        return "FILE".into();
    }
    deps::shell_quote(name)
}

struct StreamCx<'a> {
    matcher: &'a Matcher,
    signals: &'a Signals,
    redactor: &'a mut Redactor,
    learned: &'a mut Learned,
    counter: Arc<AtomicU64>,
    bar: Option<&'a ProgressBar>,
    figures: &'a mut Figures,
}

impl StreamCx<'_> {
    /// The same context, matching with `matcher`.
    fn with_matcher<'b>(&'b mut self, matcher: &'b Matcher) -> StreamCx<'b> {
        StreamCx {
            matcher,
            signals: self.signals,
            redactor: self.redactor,
            learned: self.learned,
            counter: self.counter.clone(),
            bar: self.bar,
            figures: self.figures,
        }
    }
}

/// Whether a line may carry a secret the redactor should learn. The redactor is too slow to run
/// on every line of a gigabyte log; a secret only ever comes with one of these words or shapes
/// (keyed values, k3s tokens, bearer tokens, credentials in URLs, PEM blocks, JWTs).
const SECRET_CUES: [&str; 11] = [
    "token",
    "passw",
    "pwd",
    "secret",
    "key",
    "auth",
    "bearer",
    "cred",
    "K10",
    "-----BEGIN",
    "eyJ",
];

/// The words the line search tells besides the patterns' literals: logrus's fatal levels
/// (`formats::FATAL_WORDS`, first: the normaliser reads their bits), the secret cues, and `://`,
/// the start of a URL's cue (so a line without any of them costs no further search).
const SCAN_WORDS: [&str; FATAL_WORDS.len() + SECRET_CUES.len() + 1] = {
    let mut w = [""; FATAL_WORDS.len() + SECRET_CUES.len() + 1];
    let mut i = 0;
    while i < FATAL_WORDS.len() {
        w[i] = FATAL_WORDS[i];
        i += 1;
    }
    while i < FATAL_WORDS.len() + SECRET_CUES.len() {
        w[i] = SECRET_CUES[i - FATAL_WORDS.len()];
        i += 1;
    }
    w[i] = "://";
    w
};

/// `Found::extra`'s bits of `SCAN_WORDS` (the first extra words `Matcher::new` is given): the
/// secret cues, and `://`.
const CUE_BITS: u64 = ((1 << SECRET_CUES.len()) - 1) << FATAL_WORDS.len();
const URL_BIT: u64 = 1 << (FATAL_WORDS.len() + SECRET_CUES.len());

fn secret_cue(text: &str) -> bool {
    keyed_cue(text) || url_cue(text)
}

/// `secret_cue` of a text, knowing what the search of its line found (which bounds the
/// text's): a cue word or `://` occurs in the line; whether in the text, and a URL's with
/// credentials, is told by the full tests, each only where its words are.
fn found_cue(found: Found, text: &str) -> bool {
    (found.extra & CUE_BITS != 0 && keyed_cue(text))
        || (found.extra & URL_BIT != 0 && url_cue(text))
}

/// One of the secret cues, in any case: searched in a copy folded to lower case, as the
/// prefilter searches (aho-corasick's SIMD searcher does not serve a search that ignores case).
fn keyed_cue(text: &str) -> bool {
    static CUES: LazyLock<Option<aho_corasick::AhoCorasick>> = LazyLock::new(|| {
        aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            .build(SECRET_CUES.map(str::to_ascii_lowercase))
            .ok()
    });
    thread_local! {
        static FOLDED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let Some(cues) = CUES.as_ref() else {
        return true;
    };
    FOLDED.with_borrow_mut(|folded| {
        folded.clear();
        folded.extend_from_slice(text.as_bytes());
        folded.make_ascii_lowercase();
        cues.is_match(&folded[..])
    })
}

/// Credentials in a URL (`https://user:pw@host`).
fn url_cue(text: &str) -> bool {
    // The searcher is built once (`memmem::find` builds one per call).
    static URL: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new("://"));
    URL.find(text.as_bytes())
        .is_some_and(|i| memchr::memchr(b'@', &text.as_bytes()[i..]).is_some())
}

/// One entry into the input's nodes, its secrets learned first. One search of the line tells
/// both the secret cues and the patterns' prefilter (the search is most of a line's cost).
fn enter(mut e: Entry, s: &Stream, file: usize, state: &mut InputState, cx: &mut StreamCx) {
    if e.clear {
        e.may_match = Some(0);
        state.entry(e, s, file, cx.matcher, cx.signals);
        return;
    }
    // The prescan's answer for the whole line where it has one (it bounds the text's).
    let cue = match e.scan.or_else(|| cx.matcher.scan(&e.text)) {
        Some(found) => {
            e.may_match = Some(found.patterns);
            found_cue(found, &e.text)
        }
        None => secret_cue(&e.text),
    };
    if cue {
        cx.learned.learn(cx.redactor, &e.text);
    }
    state.entry(e, s, file, cx.matcher, cx.signals);
}

/// The bodies of the lines the redactor learned lately, with its knowledge right after: a
/// journal repeats its lines (the same kubelet flags at every start, the same warning every
/// few seconds) with only logrus's `time="…"` changed, and learning costs more than reading a
/// line. A line whose body was learned, with nothing learned since, is not learned again: what
/// the redactor finds in a text does not depend on logrus's time in it, and learning a text
/// twice finds nothing new (`learning_ignores_the_time_and_a_second_time`).
#[derive(Default)]
struct Learned {
    /// Hashed with foldhash: std's SipHash of each line's body was a twentieth of taking it in,
    /// and nothing here needs a hash that resists crafted collisions (the map is bounded).
    bodies: HashMap<String, usize, foldhash::fast::RandomState>,
}

/// Bodies remembered at most (then forgotten, all at once: memory stays bounded).
const LEARNED_BODIES: usize = 4096;

impl Learned {
    fn learn(&mut self, redactor: &mut Redactor, text: &str) {
        let body = logrus_body(text);
        if self.bodies.get(body) == Some(&redactor.generation()) {
            return;
        }
        redactor.learn_text(text);
        if self.bodies.len() >= LEARNED_BODIES {
            self.bodies.clear();
        }
        self.bodies.insert(body.to_string(), redactor.generation());
    }
}

/// A logrus line without its leading `time="…" `; any other text whole.
fn logrus_body(text: &str) -> &str {
    text.strip_prefix("time=\"")
        .and_then(|rest| {
            // The closing quote: memchr, not a substring search set up anew per line.
            let end = memchr::memchr(b'"', rest.as_bytes())?;
            rest[end..].strip_prefix("\" ")
        })
        .unwrap_or(text)
}

/// The first lines of a stream, read to decide its format.
struct Sample {
    lines: Vec<(Vec<u8>, reader::LineInfo)>,
    /// The stream ended within the sample (or broke off: `cut`).
    ended: bool,
    /// The read error that ended the sample early, after at least one line.
    cut: Option<std::io::Error>,
}

/// Reads the sample: up to `SAMPLE_LINES` lines or `SAMPLE_BYTES` bytes. An error before the
/// first line is the stream's error; after it, the lines read are kept (a truncated .gz still
/// has its first lines to read).
fn read_sample<R: BufRead>(lines: &mut BoundedLines<R>) -> std::io::Result<Sample> {
    let mut sample = Vec::new();
    let mut sampled = 0usize;
    let mut buf = Vec::new();
    while sample.len() < SAMPLE_LINES && sampled < SAMPLE_BYTES {
        match lines.next_line(&mut buf) {
            Ok(Some(info)) => {
                sampled += buf.len() + 1;
                sample.push((std::mem::take(&mut buf), info));
            }
            Ok(None) => break,
            Err(e) if !sample.is_empty() => {
                return Ok(Sample {
                    lines: sample,
                    ended: true,
                    cut: Some(e),
                })
            }
            Err(e) => return Err(e),
        }
    }
    let ended = sample.len() < SAMPLE_LINES && sampled < SAMPLE_BYTES;
    Ok(Sample {
        lines: sample,
        ended,
        cut: None,
    })
}

/// Why a stream's sample is not read as a log: a journalctl form inspect does not read, no
/// text at all, or no line of a known format (and no banner). None when it is read.
fn refusal(
    sample: &[(Vec<u8>, reader::LineInfo)],
    detected: &formats::Stats,
) -> Option<StreamError> {
    let raw = || sample.iter().map(|(b, _)| b.as_slice());
    if detected.dominant() == Outer::Bare {
        if let Some(form) = formats::unread_journal_form(raw()) {
            return Some(StreamError::UnreadForm(form));
        }
    }
    let banner = raw().any(|b| boots::is_banner(&String::from_utf8_lossy(b)));
    if detected.recognised() > 0 || banner {
        return None;
    }
    let lines = sample.len() as u64;
    // journalctl's answer when the unit matched nothing (k3s #146 shows it).
    if raw().any(|b| b.trim_ascii() == b"-- No entries --") {
        return Some(StreamError::NoEntries);
    }
    if raw().all(|b| b.trim_ascii().is_empty()) {
        return Some(StreamError::Empty { lines });
    }
    Some(StreamError::Unknown { lines })
}

/// Reads one stream through the normaliser into the input's nodes.
fn read_stream(
    raw: Box<dyn Read + '_>,
    s: &Stream,
    file: usize,
    state: &mut InputState,
    cx: &mut StreamCx,
) -> Result<FileReport, StreamError> {
    let start = cx.counter.load(Ordering::Relaxed);
    let counted = Counting::new(raw, cx.counter.clone());
    let mut buffered = BufReader::with_capacity(READ_BUF, counted);
    let head = buffered
        .fill_buf()
        .map_err(|e| StreamError::Io(e.to_string()))?;
    let gz = head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    let mut inner: Box<dyn BufRead + '_> = if gz {
        Box::new(BufReader::with_capacity(
            READ_BUF,
            flate2::read::MultiGzDecoder::new(buffered),
        ))
    } else {
        Box::new(buffered)
    };
    // An error of the gzip decoder is the file's data, not the file system's.
    let read_error = |e: std::io::Error| {
        if gz {
            StreamError::Gzip(e.to_string())
        } else {
            StreamError::Io(e.to_string())
        }
    };
    let head = inner.fill_buf().map_err(read_error)?;
    if formats::looks_binary(&head[..head.len().min(PEEK)]) {
        return Err(match formats::packed_kind(head, gz) {
            Some((what, help)) => StreamError::Packed { what, help },
            None => StreamError::Binary,
        });
    }
    let mut lines = BoundedLines::new(inner, MAX_LINE);
    let Sample {
        lines: sample,
        ended,
        cut,
    } = read_sample(&mut lines).map_err(read_error)?;
    let detected = formats::detect(sample.iter().map(|(b, _)| b.as_slice()));
    if let Some(e) = refusal(&sample, &detected) {
        return Err(match cut {
            // No line of the distribution before the data broke off: the break is the news.
            Some(c) if matches!(e, StreamError::Unknown { .. } | StreamError::Empty { .. }) => {
                read_error(c)
            }
            _ => e,
        });
    }
    let mut norm = Normaliser::new(detected.dominant());
    state.begin_stream(s, cx.matcher);
    let mut out: Vec<Entry> = Vec::new();
    let feed = |raw: &[u8],
                info,
                norm: &mut Normaliser,
                out: &mut Vec<Entry>,
                state: &mut InputState,
                cx: &mut StreamCx| {
        norm.push(raw, info, out);
        for e in out.drain(..) {
            enter(e, s, file, state, cx);
        }
    };
    for (raw, info) in &sample {
        feed(raw, *info, &mut norm, &mut out, state, cx);
    }
    drop(sample);
    if let Some(e) = cut {
        state.note(format!(
            "{}: read error after line {}: {e}; the rest is not read",
            s.label, norm.stats.lines
        ));
    }
    if !ended {
        if let Err(e) = read_rest(lines, s, file, &mut norm, state, cx) {
            state.note(format!(
                "{}: read error after line {}: {e}; the rest is not read",
                s.label, norm.stats.lines
            ));
        }
    }
    norm.finish(&mut out);
    for e in out.drain(..) {
        enter(e, s, file, state, cx);
    }
    state.end_stream(s);
    let bytes = cx.counter.load(Ordering::Relaxed) - start;
    cx.figures.lines += norm.stats.lines;
    cx.figures.bytes += bytes;
    if let Some(b) = cx.bar {
        b.set_position(cx.counter.load(Ordering::Relaxed));
    }
    if norm.stats.truncated > 0 {
        state.note(format!(
            "{}: {} line(s) longer than {} KiB were cut",
            s.label,
            norm.stats.truncated,
            MAX_LINE / 1024
        ));
    }
    Ok(FileReport {
        path: s.label.clone(),
        format: norm.stats.describe(),
        lines: norm.stats.lines,
        bytes,
        skipped: None,
    })
}

/// Every file under tests/fixtures (the real-log corpora and the synthetic inputs), with its
/// bytes: the lines the equivalence tests of inspect's shortcuts run on.
#[cfg(test)]
pub(crate) fn fixture_files() -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let root = find_root(None).expect("repository root");
    let mut stack = vec![root.join("tests/fixtures")];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("fixtures folder").flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                files.push((path, bytes));
            }
        }
    }
    files
}

/// Bytes of lines read and prescanned at a time, and how many such batches may wait.
const BATCH_BYTES: usize = 256 * 1024;
const BATCHES_QUEUED: usize = 4;

/// Reads the rest of a stream on two cores: this thread reads batches of lines and prescans
/// them (one literal search per batch marks the lines no pattern or secret cue can be in), a
/// second takes them in through the normaliser in order. Neither waits for the other but at the
/// queue, whose bound (and the batches handed back for reuse) keeps memory flat. Where most
/// lines carry a signal, taking in is the longer half; so while batches wait in the queue (the
/// taker is behind) this thread also prereads the journal lines of the next (`Preread`: their
/// prefix, and the patterns matching their message), and while the queue is empty (the reader
/// is behind) it leaves that to the taker. Either way the taker gets the same answers, so what
/// inspect decides does not depend on which thread worked them out. A read error ends the
/// stream after the lines read before it.
fn read_rest(
    mut lines: BoundedLines<Box<dyn BufRead + '_>>,
    s: &Stream,
    file: usize,
    norm: &mut Normaliser,
    state: &mut InputState,
    cx: &mut StreamCx,
) -> std::io::Result<()> {
    use std::sync::mpsc::{channel, sync_channel};
    let matcher = cx.matcher;
    let (full, taken) = sync_channel::<Prepared>(BATCHES_QUEUED);
    let (reuse, reusable) = channel::<Prepared>();
    // Batches sent and not yet taken.
    let queued = &std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let taker = scope.spawn(move || {
            // The patterns' caches of this thread's own (`Matcher`'s clone).
            let own = cx.matcher.clone();
            let cx = &mut cx.with_matcher(&own);
            let mut out: Vec<Entry> = Vec::new();
            for mut p in taken {
                queued.fetch_sub(1, Ordering::Relaxed);
                let mut prereads = p.prereads.iter_mut();
                for (raw, l) in p.batch.iter() {
                    let pre = prereads.next().and_then(Option::take);
                    norm.push_scanned(raw, l.info, l.scan, pre, &mut out);
                    for e in out.drain(..) {
                        enter(e, s, file, state, cx);
                    }
                }
                if let Some(b) = cx.bar {
                    b.set_position(cx.counter.load(Ordering::Relaxed));
                }
                // Gone only when the reader is: nothing left to reuse it for.
                let _ = reuse.send(p);
            }
            for e in out.drain(..) {
                enter(e, s, file, state, cx);
            }
        });
        let mut folded = Vec::new();
        let read = loop {
            let mut p = reusable.try_recv().unwrap_or_default();
            p.batch.clear();
            let more = lines.read_batch(&mut p.batch, BATCH_BYTES);
            matcher.prescan(&mut p.batch, &mut folded);
            p.prereads.clear();
            if queued.load(Ordering::Relaxed) > 0 {
                p.prereads.extend(p.batch.iter().map(|(raw, l)| {
                    Preread::of(raw, l.scan, |message, may| matcher.hit_bits(message, may))
                }));
            }
            queued.fetch_add(1, Ordering::Relaxed);
            // The taker stops early only by panicking, which the join below passes on.
            if full.send(p).is_err() || !matches!(more, Ok(true)) {
                break more.map(|_| ());
            }
        };
        drop(full);
        if let Err(panic) = taker.join() {
            std::panic::resume_unwind(panic);
        }
        read
    })
}

/// A batch of lines as the reading thread hands it over: prescanned, and each line's preread
/// (in the batch's order).
#[derive(Default)]
struct Prepared {
    batch: reader::Batch,
    prereads: Vec<Option<Preread>>,
}

/// One node's boots while its input is read.
struct NodeLog {
    name_from: String,
    closed: Vec<BootBuilder>,
    open: Option<BootBuilder>,
    next: u32,
    /// `k3s -v` output seen outside any boot.
    cli_version: Option<String>,
}

impl NodeLog {
    fn has_boots(&self) -> bool {
        self.closed
            .iter()
            .chain(self.open.iter())
            .any(BootBuilder::has_log)
    }

    /// The version `k3s -v` printed outside this node's boots.
    fn version(&self, signals: &Signals) -> Option<String> {
        self.cli_version.clone().or_else(|| {
            self.closed
                .iter()
                .chain(self.open.iter())
                .filter(|b| !b.has_log())
                .flat_map(|b| b.kept.iter())
                .find_map(|k| version_in(&k.text, signals))
        })
    }
}

/// Everything read so far from one input.
struct InputState {
    nodes: IndexMap<String, NodeLog>,
    /// The node lines without a host of their own go to (and its index in `nodes`).
    current: Option<String>,
    current_i: Option<usize>,
    /// A pasted `docker logs NAME` / `kubectl logs POD` names the node of what follows.
    prompted: Option<String>,
    excerpt: bool,
    why_excerpt: Vec<String>,
    /// The current stream is one boot of a results folder.
    presplit: bool,
    notes: Vec<String>,
    /// The distribution the first of systemd's lines about a unit names (`rke2-server.service`).
    unit_distro: Option<distro::Distro>,
}

impl InputState {
    fn new(excerpt: bool) -> Self {
        InputState {
            nodes: IndexMap::new(),
            current: None,
            current_i: None,
            prompted: None,
            excerpt,
            why_excerpt: if excerpt {
                vec!["--excerpt was given".into()]
            } else {
                Vec::new()
            },
            presplit: false,
            notes: Vec::new(),
            unit_distro: None,
        }
    }

    fn note(&mut self, n: String) {
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    fn excerpt(&mut self, why: String) {
        self.excerpt = true;
        if self.why_excerpt.len() < 3 && !self.why_excerpt.contains(&why) {
            self.why_excerpt.push(why);
        }
    }

    fn node(&mut self, name: &str, from: &str) -> &mut NodeLog {
        // Looked up before inserting: a line must not cost an allocation for its node's name.
        if !self.nodes.contains_key(name) {
            self.nodes.insert(
                name.to_string(),
                NodeLog {
                    name_from: from.to_string(),
                    closed: Vec::new(),
                    open: None,
                    next: 1,
                    cli_version: None,
                },
            );
        }
        let i = self.nodes.get_index_of(name).unwrap_or(0);
        &mut self.nodes[i]
    }

    fn begin_stream(&mut self, s: &Stream, m: &Matcher) {
        self.prompted = None;
        self.current = s.node.as_ref().map(|n| n.name.clone());
        self.current_i = None;
        self.presplit = false;
        if let (Some(n), Some((number, rec))) = (&s.node, &s.boot) {
            self.presplit = true;
            let node = self.node(&n.name, &n.from);
            close(node, false);
            let mut b = BootBuilder::new(*number, m);
            b.recorded = Some(rec.clone());
            node.next = node.next.max(number + 1);
            node.open = Some(b);
        }
    }

    fn end_stream(&mut self, _s: &Stream) {
        // A boot never spans two files: the next file may be another node's or another time's.
        for node in self.nodes.values_mut() {
            close(node, false);
        }
        self.presplit = false;
    }

    /// The node an entry belongs to, and where that name comes from.
    fn route<'a>(&'a self, e: &'a Entry, s: &'a Stream) -> (&'a str, &'a str) {
        if let Some(n) = s.node.as_ref().filter(|n| n.forced) {
            return (&n.name, &n.from);
        }
        if let Some(h) = &e.host {
            let from = if e.outer == Outer::KubectlPrefix {
                "kubectl --prefix pod"
            } else {
                "journal host"
            };
            return (h, from);
        }
        if let Some(p) = &self.prompted {
            return (p, "pasted command");
        }
        if let Some((c, n)) = self
            .current
            .as_ref()
            .and_then(|c| self.nodes.get_key_value(c))
        {
            return (c, &n.name_from);
        }
        match &s.node {
            Some(n) => (&n.name, &n.from),
            None => ("node", "nothing (no name in the input)"),
        }
    }

    /// The node of an entry, created when new; remembered as the current node. No allocation
    /// for a node already known (the common case: every line of a journal).
    fn node_of(&mut self, e: &Entry, s: &Stream) -> &mut NodeLog {
        let found = {
            let (name, from) = self.route(e, s);
            // Most lines are the current node's: a comparison, not a hash.
            let current = self
                .current_i
                .filter(|&i| self.nodes.get_index(i).is_some_and(|(k, _)| k == name));
            current
                .or_else(|| self.nodes.get_index_of(name))
                .ok_or_else(|| (name.to_string(), from.to_string()))
        };
        let i = match found {
            Ok(i) => i,
            Err((name, from)) => {
                self.node(&name, &from);
                self.nodes.len() - 1
            }
        };
        if self.current_i != Some(i) {
            self.current_i = Some(i);
            self.current = self.nodes.get_index(i).map(|(k, _)| k.clone());
        }
        &mut self.nodes[i]
    }

    fn entry(&mut self, e: Entry, s: &Stream, file: usize, m: &Matcher, signals: &Signals) {
        if e.grep_prefix {
            self.excerpt(format!("grep line-number prefixes (line {})", e.line));
        }
        match &e.kind {
            Kind::Meta | Kind::Foreign => {}
            Kind::Gap => self.excerpt(format!("a gap marker at line {}", e.line)),
            Kind::Prompt(p) => {
                if p.filters {
                    self.excerpt(format!(
                        "a filtering command at line {}: `{}`",
                        e.line, p.command
                    ));
                }
                if let Some(n) = p
                    .node
                    .as_ref()
                    .filter(|_| !s.node.as_ref().is_some_and(|x| x.forced))
                {
                    self.prompted = Some(n.clone());
                }
                let target = self.prompted.clone().or(self.current.clone());
                if let Some(node) = target.and_then(|t| self.nodes.get_mut(&t)) {
                    if let Some(b) = node.open.as_mut() {
                        b.prompt(p, m);
                    }
                }
            }
            Kind::HostReboot => {
                for node in self.nodes.values_mut() {
                    if let Some(b) = node.open.as_mut() {
                        b.host_reboot(&e, file);
                    }
                    close(node, false);
                }
            }
            Kind::Unit => {
                self.unit_distro = self.unit_distro.or(e.distro);
                let presplit = self.presplit;
                let node = self.node_of(&e, s);
                // systemd's lines about a new start carry its new invocation id: a new boot.
                // So does systemd's "Starting <unit>" in a journal without ids: a new start.
                let starting = e.invocation.is_none()
                    && e.text.starts_with("Starting ")
                    && node.open.as_ref().is_some_and(BootBuilder::has_lines);
                if !presplit && (new_invocation(node, &e) || starting) {
                    close(node, true);
                }
                if node.open.is_none() && e.invocation.is_some() {
                    let n = node.next;
                    node.next += 1;
                    node.open = Some(BootBuilder::new(n, m));
                }
                if let Some(b) = node.open.as_mut() {
                    b.unit(&e, file);
                }
            }
            Kind::Output => {
                let (name, from) = self.route(&e, s);
                let (name, from) = (name.to_string(), from.to_string());
                let node = self.node(&name, &from);
                match node.open.as_mut() {
                    Some(b) => b.output(&e, m, file),
                    None => {
                        if let Some(v) = version_in(&e.text, signals) {
                            node.cli_version = Some(v);
                        }
                    }
                }
            }
            Kind::Log => {
                let presplit = self.presplit;
                let node = self.node_of(&e, s);
                // A boot is one start: one invocation id where the journal gives it (its
                // banner may come after other lines), else from banner to banner.
                let split = if e.invocation.is_some() {
                    new_invocation(node, &e)
                        || (m.is_banner_entry(&e)
                            && node.open.as_ref().is_some_and(|b| b.banner.is_some()))
                } else {
                    m.is_banner_entry(&e) && node.open.as_ref().is_none_or(|b| !b.takes_banner(&e))
                };
                if !presplit && split {
                    close(node, true);
                }
                if node.open.is_none() {
                    let n = node.next;
                    node.next += 1;
                    node.open = Some(BootBuilder::new(n, m));
                }
                if let Some(b) = node.open.as_mut() {
                    b.log(e, m, file);
                }
            }
        }
    }

    /// Judges every boot; returns the nodes, whether the input is an excerpt, and notes.
    fn finish(
        mut self,
        signals: &Signals,
        opts: &Options,
        trusted: bool,
        labels: &[String],
    ) -> (Vec<NodeReport>, bool, Vec<String>) {
        let mut nodes = Vec::new();
        let mut notes = std::mem::take(&mut self.notes);
        if self.excerpt && !self.why_excerpt.is_empty() {
            notes.push(format!(
                "read as an excerpt ({}): nothing is `down` by the settle rule",
                self.why_excerpt.join("; ")
            ));
        }
        // `k3s -v` pasted before a journal lands on the input's default node; when that node
        // has no boots and exactly one node has, it is that node's version.
        let with_boots: Vec<&String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.has_boots())
            .map(|(k, _)| k)
            .collect();
        let orphan_version = self
            .nodes
            .values()
            .filter(|n| !n.has_boots())
            .find_map(|n| n.version(signals));
        let lone = (with_boots.len() == 1).then(|| with_boots[0].clone());
        let mut judged = Vec::new();
        for (name, mut node) in self.nodes {
            close(&mut node, false);
            let fallback = node.version(signals).or_else(|| {
                (lone.as_ref() == Some(&name))
                    .then(|| orphan_version.clone())
                    .flatten()
            });
            let cx = judge::Context {
                signals,
                settle: Settle {
                    margin: opts.settle,
                },
                excerpt: self.excerpt,
                trusted,
                files: labels,
                fallback_version: fallback,
            };
            judged.push((name, node, cx));
        }
        let jobs: Vec<(usize, &BootBuilder)> = judged
            .iter()
            .enumerate()
            .flat_map(|(i, (_, node, _))| {
                node.closed
                    .iter()
                    .filter(|b| b.has_log())
                    .map(move |b| (i, b))
            })
            .collect();
        let mut reports = judge_all(&jobs, |i, b| judge::judge(b, &judged[i].2)).into_iter();
        let mut per_node: Vec<Vec<model::BootReport>> = judged.iter().map(|_| Vec::new()).collect();
        for &(i, _) in &jobs {
            per_node[i].extend(reports.next());
        }
        for ((name, node, _), mut boots) in judged.into_iter().zip(per_node) {
            boots.sort_by_key(|b| b.boot);
            if boots.is_empty() {
                continue;
            }
            nodes.push(NodeReport {
                name,
                name_from: node.name_from,
                boots,
            });
        }
        (nodes, self.excerpt, notes)
    }
}

/// `judge` of every job, in the jobs' order, on every core: judging a boot reads only the boot
/// and its node's context, and on a long journal with many boots it was a sixth of inspect's
/// time, all of it after the reading.
fn judge_all<R: Send>(
    jobs: &[(usize, &BootBuilder)],
    judge: impl Fn(usize, &BootBuilder) -> R + Sync,
) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let per_thread = jobs.len().div_ceil(cores.max(1)).max(1);
    let judge = &judge;
    let run = move |part: &[(usize, &BootBuilder)]| -> Vec<R> {
        part.iter().map(|&(i, b)| judge(i, b)).collect()
    };
    std::thread::scope(|scope| {
        let mut parts = jobs.chunks(per_thread);
        let first = parts.next().unwrap_or_default();
        let others: Vec<_> = parts.map(|part| scope.spawn(move || run(part))).collect();
        let mut all = run(first);
        for h in others {
            all.extend(
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        all
    })
}

/// Whether an entry belongs to another start of the unit than the node's open boot.
fn new_invocation(node: &NodeLog, e: &Entry) -> bool {
    match (
        &e.invocation,
        node.open.as_ref().and_then(|b| b.invocation.as_ref()),
    ) {
        (Some(id), Some(open)) => id != open,
        _ => false,
    }
}

/// Closes the node's open boot (a boot of pasted command output only is kept too: its `k3s -v`
/// line tells the version of boots that lack a banner).
fn close(node: &mut NodeLog, followed: bool) {
    if let Some(mut b) = node.open.take() {
        b.followed = followed;
        node.closed.push(b);
    }
}

/// A version in a line, by the `version` signal's patterns (e.g. `k3s -v` output).
fn version_in(text: &str, signals: &Signals) -> Option<String> {
    let sig = signals.get(VERSION_SIGNAL)?;
    sig.value.iter().find_map(|p| {
        p.regex
            .captures(text)
            .and_then(|c| c.name("value").map(|m| m.as_str().to_string()))
    })
}

#[cfg(test)]
mod tests;
