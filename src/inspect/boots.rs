//! One node's log, cut into boots, keeping only what the signals need.
//!
//! A boot starts at k3s's start banner (`"Starting " + program + " " + version`,
//! pkg/cli/server/server.go and the agent's twin). A boot's lines are not all kept: only the
//! first line matching each pattern of `signals.yaml` (that is all the runner's rules ever look
//! at), lines carrying values, the last few lines (evidence of a death), and the facts the settle
//! rule needs (times, how much ordinary output the boot had). So a gigabyte journal costs memory
//! in proportion to its number of boots, not its size.

use std::collections::VecDeque;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use regex::{Regex, RegexSet, SetMatches};

use distro::Distro;

pub(crate) use super::banner::{banner_of, is_banner};
use super::deps::{Signal, Signals};
use super::formats::{Entry, Inner, Outer, Prompt};
use super::model::Source;
use super::prefilter::{literal_runs, Prefilter};
use super::reader::{Found, ALL};

#[cfg(test)]
fn banner_is_agent(text: &str) -> bool {
    banner_of(text).is_some_and(|(_, agent)| agent)
}

/// The distribution a line names by one of its own paths (`/var/lib/rancher/rke2`,
/// `/etc/rancher/k3s`): a hint for boots without banner or journal identifier.
/// The supervisor's URL paths carry the program's name too (`/v1-rke2/readyz`,
/// `/v1-k3s/connect`: pkg/server/router.go's `"/v1-" + version.Program`).
fn distro_by_path(text: &str) -> Option<Distro> {
    if !text.contains("/rancher/") && !text.contains("/v1-") {
        return None;
    }
    Distro::ALL.iter().copied().find(|d| {
        let f = d.facts();
        text.contains(f.data_dir)
            || text.contains(f.config_dir)
            || text.contains(&format!("/v1-{}/", f.binary))
    })
}

/// How many lines of ordinary output (matching no pattern) a boot must show after its banner
/// before the settle rule may use it: an excerpt made of the lines the signals name
/// (`grep -E 'Starting k3s|kubelet'`) has none, a real k3s boot has hundreds.
pub(crate) const MIN_CHATTER: u32 = 3;
/// Lines kept at the end of a boot, as evidence of how it ended.
const TAIL: usize = 3;
/// Value lines kept per boot (distinct values are few; a crash-looping line must not grow it).
const MAX_VALUE_LINES: usize = 64;
/// Probe output lines kept per boot.
const MAX_PROBE_LINES: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatKind {
    State,
    Value,
    Settle,
}

/// Every line pattern of `signals.yaml`, matched at once. A clone has its regexes' caches of its
/// own: a thread that matches many lines should (regex hands a cache to any thread but the
/// first to use it through a shared pool, at a cost per match).
#[derive(Clone)]
pub(crate) struct Matcher {
    set: RegexSet,
    /// The distinct patterns one by one: a line the prefilter says only a few may match runs
    /// only those (the set runs all of them over the whole line), and a pattern several
    /// signals share (`(?i)Running kubelet`, `k3s is up and running`) once.
    each: Vec<Regex>,
    /// Per regex of `each`, the literal texts its every match contains (`literal_runs`),
    /// searched before it runs, and whether finding them is matching it.
    needs: Vec<Needs>,
    /// Per pattern (in `kinds`' order), its regex in `each`.
    each_of: Vec<usize>,
    kinds: Vec<PatKind>,
    /// Probe-only signals: (signal name, words its command must contain, output rules).
    probes: Vec<ProbeWatch>,
    /// Rules out the lines no pattern can match (None: every line goes to the set).
    prefilter: Option<Prefilter>,
    /// `Found::extra`'s bits of the start banners' prefixes (after the caller's extra words).
    banner_bits: u64,
}

/// Literal texts a pattern's every match contains; `whole`: the pattern is one of them alone.
#[derive(Clone)]
struct Needs {
    finders: Vec<memchr::memmem::Finder<'static>>,
    whole: bool,
}

impl Needs {
    fn of(pattern: &str) -> Needs {
        let (runs, whole) = literal_runs(pattern);
        Needs {
            finders: runs
                .iter()
                .map(|r| memchr::memmem::Finder::new(r).into_owned())
                .collect(),
            whole: whole && runs.len() == 1,
        }
    }

    /// `re.is_match(text)`, without running `re` where a literal it needs is absent or the
    /// literal is the whole pattern.
    fn is_match(&self, re: &Regex, text: &str) -> bool {
        self.finders
            .iter()
            .all(|f| f.find(text.as_bytes()).is_some())
            && (self.whole || re.is_match(text))
    }
}

#[derive(Clone)]
struct ProbeWatch {
    /// Words a pasted command must contain to be this probe (its target: the last argument and
    /// any URL), so a dump of some other /metrics is not taken for it.
    words: Vec<String>,
}

impl Matcher {
    /// `extra`: words to tell in the same search as the patterns' literals (`scan`).
    pub(crate) fn new(signals: &Signals, extra: &[&str]) -> Matcher {
        let mut pats = Vec::new();
        let mut kinds = Vec::new();
        for sig in signals.by_name.values() {
            for (list, kind) in [
                (&sig.up, PatKind::State),
                (&sig.down, PatKind::State),
                (&sig.value, PatKind::Value),
                (&sig.settled_by, PatKind::Settle),
                // a line that leaves a state undecided is judged as the state's own lines are
                (&sig.undecided_by, PatKind::State),
            ] {
                for p in list {
                    // One entry per (regex, kind): several signals share a line (the kubelet's
                    // as a settle line), and a line is kept by what matched, not by whom.
                    let re = p.regex.as_str();
                    if (pats.iter().zip(&kinds))
                        .any(|(q, k): (&String, &PatKind)| q == re && *k == kind)
                    {
                        continue;
                    }
                    pats.push(re.to_string());
                    kinds.push(kind);
                }
            }
        }
        let probes = signals
            .by_name
            .values()
            .filter_map(|s| s.probe.as_ref())
            .map(|p| ProbeWatch {
                words: p
                    .command
                    .iter()
                    .enumerate()
                    .filter(|(i, w)| *i + 1 == p.command.len() || w.contains("://"))
                    .map(|(_, w)| w.clone())
                    .collect(),
            })
            .collect();
        // The patterns compiled once already (load validated them); a set of them compiles too.
        let set = RegexSet::new(&pats).unwrap_or_else(|_| RegexSet::empty());
        let mut distinct: Vec<&str> = Vec::new();
        let each_of: Vec<usize> = pats
            .iter()
            .map(|p| {
                distinct.iter().position(|d| d == p).unwrap_or_else(|| {
                    distinct.push(p);
                    distinct.len() - 1
                })
            })
            .collect();
        let each: Vec<Regex> = distinct.iter().filter_map(|p| Regex::new(p).ok()).collect();
        let needs: Vec<Needs> = distinct.iter().map(|p| Needs::of(p)).collect();
        // Bits stand for patterns only when every pattern has its regex and a bit.
        let each = if each.len() == distinct.len() && pats.len() < 64 {
            each
        } else {
            Vec::new()
        };
        // Banner lines are searched for too: a line the prescan calls clear is then no banner
        // either, and the boot splitter need not look at it (`is_banner_entry`).
        let mut words: Vec<&str> = extra.to_vec();
        words.extend(Distro::ALL.iter().map(|d| d.facts().banner_prefix));
        let prefilter = Prefilter::with_extra(pats.iter().map(String::as_str), &words);
        let banner_bits = (extra.len()..words.len()).fold(0, |bits, i| bits | 1 << i.min(63));
        Matcher {
            set,
            each,
            needs,
            each_of,
            kinds,
            probes,
            prefilter,
            banner_bits,
        }
    }

    /// `is_banner` of an entry: a line whose search found no banner prefix (they are among the
    /// prefilter's words) holds no banner, so nearly every line is answered without a search.
    pub(crate) fn is_banner_entry(&self, e: &Entry) -> bool {
        let none = e.clear || e.scan.is_some_and(|f| f.extra & self.banner_bits == 0);
        !none && is_banner(&e.text)
    }

    /// The patterns a line matches; None when it matches none (told by the prefilter, for
    /// most lines, without running the patterns).
    fn matches(&self, text: &str) -> Option<Hits> {
        self.matches_scanned(text, None)
    }

    /// `matches`, with the prefilter's answer already known (`scan`'s `Found::patterns`): only
    /// the patterns it lets through run, each on its own, where it names them; all at once in
    /// the set where it cannot (`ALL`).
    fn matches_scanned(&self, text: &str, may: Option<u64>) -> Option<Hits> {
        let may = may.unwrap_or_else(|| {
            self.prefilter
                .as_ref()
                .map_or(ALL, |f| f.scan(text).patterns)
        });
        if may == 0 {
            return None;
        }
        if may == ALL || self.each.is_empty() {
            let m = self.set.matches(text);
            return m.matched_any().then_some(Hits::Set(m));
        }
        let mut hits = 0u64;
        // Of the distinct regexes: which ran, which matched.
        let (mut ran, mut matched) = (0u64, 0u64);
        let mut left = may;
        while left != 0 {
            let i = left.trailing_zeros() as usize;
            left &= left - 1;
            let Some(&r) = self.each_of.get(i) else {
                continue;
            };
            if ran & 1 << r == 0 {
                ran |= 1 << r;
                let needs = self.needs.get(r);
                if self
                    .each
                    .get(r)
                    .zip(needs)
                    .is_some_and(|(re, n)| n.is_match(re, text))
                {
                    matched |= 1 << r;
                }
            }
            if matched & 1 << r != 0 {
                hits |= 1 << i;
            }
        }
        (hits != 0).then_some(Hits::Mask(hits))
    }

    /// `matches_scanned` as a mask of the patterns' bits (`Found::patterns`): `Some(0)` when
    /// none match; None where the answer is not a mask (the prefilter could not tell).
    pub(crate) fn hit_bits(&self, text: &str, may: u64) -> Option<u64> {
        match self.matches_scanned(text, Some(may)) {
            None => Some(0),
            Some(Hits::Mask(m)) => Some(m),
            Some(Hits::Set(_)) => None,
        }
    }

    /// `matches_scanned`, or the reading thread's answer for the same text where it has one
    /// (`Entry::hits`).
    fn matches_known(&self, text: &str, may: Option<u64>, known: Option<u64>) -> Option<Hits> {
        match known {
            Some(bits) => (bits != 0).then_some(Hits::Mask(bits)),
            None => self.matches_scanned(text, may),
        }
    }

    /// One search of a line: which patterns may match it, whether an extra word occurs; None
    /// without a prefilter (then every line goes to the patterns).
    pub(crate) fn scan(&self, text: &str) -> Option<Found> {
        self.prefilter.as_ref().map(|f| f.scan(text))
    }

    /// Marks the batch's lines the prefilter's words are all absent from (`Prefilter::prescan`);
    /// none without a prefilter.
    pub(crate) fn prescan(&self, batch: &mut super::reader::Batch, folded: &mut Vec<u8>) {
        if let Some(f) = &self.prefilter {
            f.prescan(batch, folded);
        }
    }

    /// Whether a pasted command runs one of the probes (its output may then decide a signal).
    pub(crate) fn is_probe_command(&self, cmd: &str) -> bool {
        self.probes
            .iter()
            .any(|p| !p.words.is_empty() && p.words.iter().all(|w| cmd.contains(w.as_str())))
    }
}

/// The patterns a line matched: as bits (`Matcher::each`) or as the set's answer.
#[derive(Debug)]
pub(crate) enum Hits {
    Mask(u64),
    Set(SetMatches),
}

impl Hits {
    /// The indices of the matched patterns, in ascending order (as the set gives them).
    fn iter(&self) -> HitIter<'_> {
        match self {
            Hits::Mask(m) => HitIter::Mask(*m),
            Hits::Set(s) => HitIter::Set(s.iter()),
        }
    }
}

enum HitIter<'a> {
    Mask(u64),
    Set(regex::SetMatchesIter<'a>),
}

impl Iterator for HitIter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            HitIter::Mask(m) => {
                if *m == 0 {
                    return None;
                }
                let i = m.trailing_zeros() as usize;
                *m &= *m - 1;
                Some(i)
            }
            HitIter::Set(it) => it.next(),
        }
    }
}

/// A line kept for the signals' rules or as evidence.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    pub(crate) file: usize,
    pub(crate) line: u64,
    pub(crate) ts: Option<DateTime<Utc>>,
    pub(crate) exact: bool,
    pub(crate) text: String,
}

impl Kept {
    fn of(e: &Entry, file: usize) -> Kept {
        Kept {
            file,
            line: e.line,
            ts: e.ts,
            exact: e.ts_exact,
            text: e.text.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EndKind {
    /// The process ended on its own: a fatal line, systemd's exit status, a recorded exit.
    Died { exit_code: Option<i64> },
    /// It was stopped (systemd "Stopping …", a recorded stop).
    Stopped,
    /// The host booted again.
    HostReboot,
}

#[derive(Debug, Clone)]
pub(crate) struct End {
    pub(crate) kind: EndKind,
    pub(crate) ts: Option<DateTime<Utc>>,
    /// The line (or record) that says so.
    pub(crate) evidence: Option<Kept>,
    /// `log`, `unit` or `record`.
    pub(crate) source: Source,
}

/// What a repro results folder recorded about a boot (it watched the container).
#[derive(Debug, Clone, Default)]
pub(crate) struct Recorded {
    pub(crate) end: Option<End>,
    /// The recorder watched this boot's log until then: the log is whole up to this time.
    pub(crate) watched_until: Option<DateTime<Utc>>,
}

/// One boot being read.
#[derive(Debug)]
pub(crate) struct BootBuilder {
    pub(crate) number: u32,
    pub(crate) banner: Option<Kept>,
    pub(crate) agent: bool,
    /// The distribution this boot is of: its banner's, else its journal identifier's or unit's,
    /// else the one its paths name (None: nothing told; judged as k3s).
    pub(crate) distro: Option<Distro>,
    /// The systemd invocation id of this start (journal json/export): a new id is a new boot.
    pub(crate) invocation: Option<String>,
    /// The process id of the boot's first line that carries one.
    pid: Option<u32>,
    pub(crate) lines: u64,
    pub(crate) first_ts: Option<DateTime<Utc>>,
    pub(crate) last_ts: Option<DateTime<Utc>>,
    pub(crate) kept: Vec<Kept>,
    seen: Vec<bool>,
    values: usize,
    tail: VecDeque<Kept>,
    /// Ordinary lines (matching no pattern) after the banner.
    pub(crate) chatter: u32,
    /// Lines in a log form (logrus, klog, a tool's prefix) or matching a pattern: a "boot" of
    /// plain text only (prose before the first banner of a paste) is not one.
    formatted: u64,
    settled: bool,
    pub(crate) end: Option<End>,
    stopping: bool,
    /// Lines of pasted probe output.
    pub(crate) probe_output: Vec<Kept>,
    in_probe: bool,
    pub(crate) recorded: Option<Recorded>,
    /// Another boot of the node follows in the log.
    pub(crate) followed: bool,
}

impl BootBuilder {
    pub(crate) fn new(number: u32, matcher: &Matcher) -> Self {
        BootBuilder {
            number,
            banner: None,
            agent: false,
            distro: None,
            invocation: None,
            pid: None,
            lines: 0,
            first_ts: None,
            last_ts: None,
            kept: Vec::new(),
            seen: vec![false; matcher.kinds.len()],
            values: 0,
            tail: VecDeque::with_capacity(TAIL),
            chatter: 0,
            formatted: 0,
            settled: false,
            end: None,
            stopping: false,
            probe_output: Vec::new(),
            in_probe: false,
            recorded: None,
            followed: false,
        }
    }

    /// Whether this banner line starts this boot rather than the next: the boot has no banner
    /// yet and no line, or only lines of the banner's own process (rke2 logs its PSA and CIS
    /// lines before the banner).
    pub(crate) fn takes_banner(&self, e: &Entry) -> bool {
        self.banner.is_none() && (self.lines == 0 || (e.pid.is_some() && self.pid == e.pid))
    }

    /// Whether a log line has come yet.
    pub(crate) fn has_lines(&self) -> bool {
        self.lines > 0
    }

    /// Whether a `settled-by` line was seen.
    pub(crate) fn settled(&self) -> bool {
        self.settled
    }

    /// Whether anything of k3s is in this boot (a boot made only of pasted output is not one).
    pub(crate) fn has_log(&self) -> bool {
        self.banner.is_some() || self.formatted > 0
    }

    /// A line k3s printed (taken by value: the last few lines are kept without a copy).
    pub(crate) fn log(&mut self, e: Entry, m: &Matcher, file: usize) {
        self.lines += 1;
        if let Some(ts) = e.ts {
            self.first_ts.get_or_insert(ts);
            self.last_ts = Some(ts);
        }
        if e.inner != Inner::Other || e.outer != Outer::Bare {
            self.formatted += 1;
        }
        let fatal = e.fatal;
        let same_process = e.pid.is_some() && self.pid == e.pid;
        if self.pid.is_none() {
            self.pid = e.pid;
        }
        if self.distro.is_none() {
            self.distro = e.distro;
        }
        if self.invocation.is_none() {
            self.invocation = e.invocation;
        }
        let k = Kept {
            file,
            line: e.line,
            ts: e.ts,
            exact: e.ts_exact,
            text: e.text,
        };
        // A boot of one invocation may print lines before its banner (rke2's PSA lines).
        if self.banner.is_none() && (self.lines == 1 || self.invocation.is_some() || same_process) {
            if let Some((d, agent)) = banner_of(&k.text) {
                self.banner = Some(k.clone());
                self.agent = agent;
                self.distro = Some(d);
            }
        }
        if self.keep_if_matched(&k, m, e.may_match, e.hits) {
            self.formatted += 1;
        }
        if self.distro.is_none() {
            self.distro = distro_by_path(&k.text);
        }
        if fatal && self.end.is_none() {
            self.end = Some(End {
                kind: EndKind::Died { exit_code: None },
                ts: k.ts,
                evidence: Some(k.clone()),
                source: Source::Log,
            });
        }
        if self.tail.len() == TAIL {
            self.tail.pop_front();
        }
        self.tail.push_back(k);
    }

    fn keep_if_matched(
        &mut self,
        k: &Kept,
        m: &Matcher,
        may: Option<u64>,
        known: Option<u64>,
    ) -> bool {
        let Some(hits) = m.matches_known(&k.text, may, known) else {
            if self.banner.is_some() {
                self.chatter = self.chatter.saturating_add(1);
            }
            return false;
        };
        let mut keep = false;
        for i in hits.iter() {
            match m.kinds[i] {
                PatKind::Value => keep |= self.values < MAX_VALUE_LINES,
                PatKind::State | PatKind::Settle => keep |= !self.seen[i],
            }
            if m.kinds[i] == PatKind::Settle {
                self.settled = true;
            }
            self.seen[i] = true;
        }
        if keep {
            if hits.iter().any(|i| m.kinds[i] == PatKind::Value) {
                self.values += 1;
            }
            self.kept.push(k.clone());
        }
        keep
    }

    /// Text that is not a log line: a probe's output if its command was pasted just before, and
    /// `k3s -v` output (value lines such as `k3s version v1.33.4+k3s1`).
    pub(crate) fn output(&mut self, e: &Entry, m: &Matcher, file: usize) {
        let k = Kept::of(e, file);
        if self.in_probe && self.probe_output.len() < MAX_PROBE_LINES {
            self.probe_output.push(k.clone());
        }
        let value = m
            .matches(&k.text)
            .is_some_and(|h| h.iter().any(|i| m.kinds[i] == PatKind::Value));
        if value && self.values < MAX_VALUE_LINES {
            self.values += 1;
            self.kept.push(k);
        }
    }

    pub(crate) fn prompt(&mut self, p: &Prompt, m: &Matcher) {
        self.in_probe = m.is_probe_command(&p.command);
    }

    /// systemd about the unit: a stop, an exit status, a failure.
    pub(crate) fn unit(&mut self, e: &Entry, file: usize) {
        if self.distro.is_none() {
            self.distro = e.distro;
        }
        if self.invocation.is_none() {
            self.invocation.clone_from(&e.invocation);
        }
        let k = Kept::of(e, file);
        let text = e.text.as_str();
        if text.starts_with("Stopping ") {
            self.stopping = true;
            self.end = Some(End {
                kind: EndKind::Stopped,
                ts: e.ts,
                evidence: Some(k),
                source: Source::Unit,
            });
            return;
        }
        if let Some(c) = EXITED.captures(text) {
            let code = c.name("code").map_or("", |m| m.as_str());
            let status: Option<i64> = c.name("status").and_then(|m| m.as_str().parse().ok());
            if self.stopping {
                return;
            }
            // A fatal line already said why; the exit status adds the code.
            let exit_code = if code == "exited" { status } else { None };
            let evidence = match &self.end {
                Some(End {
                    kind: EndKind::Died { .. },
                    evidence: Some(ev),
                    ..
                }) => Some(ev.clone()),
                _ => Some(k),
            };
            self.end = Some(End {
                kind: EndKind::Died { exit_code },
                ts: e.ts,
                evidence,
                source: Source::Unit,
            });
            return;
        }
        if self.end.is_none() && unit_failed(text) {
            self.end = Some(End {
                kind: EndKind::Died { exit_code: None },
                ts: e.ts,
                evidence: Some(k),
                source: Source::Unit,
            });
        }
    }

    pub(crate) fn host_reboot(&mut self, e: &Entry, file: usize) {
        if self.end.is_none() {
            self.end = Some(End {
                kind: EndKind::HostReboot,
                ts: self.last_ts,
                evidence: Some(Kept::of(e, file)),
                source: Source::Unit,
            });
        }
    }

    /// The last lines of the boot (for a death's evidence).
    pub(crate) fn tail(&self) -> impl Iterator<Item = &Kept> {
        self.tail.iter()
    }

    /// The time up to which the boot's log is known to be complete: its last line, a stop or
    /// exit seen later, or what the results folder recorded.
    pub(crate) fn known_until(&self) -> Option<DateTime<Utc>> {
        let mut t = self.last_ts;
        for c in [
            self.end.as_ref().and_then(|e| e.ts),
            self.recorded.as_ref().and_then(|r| r.watched_until),
        ]
        .into_iter()
        .flatten()
        {
            t = Some(t.map_or(c, |x| x.max(c)));
        }
        t
    }

    /// The signal-relevant lines of this boot in log order, and the index of the first line
    /// matching `ready`'s patterns.
    pub(crate) fn lines_for(&self, ready: Option<&Signal>) -> (Vec<&Kept>, Option<usize>) {
        let mut all: Vec<&Kept> = self.kept.iter().collect();
        for t in &self.tail {
            if !all.iter().any(|k| k.line == t.line && k.file == t.file) {
                all.push(t);
            }
        }
        all.sort_by_key(|k| (k.file, k.line));
        let ready_at = ready.and_then(|sig| {
            all.iter()
                .position(|k| sig.up.iter().any(|p| p.regex.is_match(&k.text)))
        });
        (all, ready_at)
    }
}

/// systemd's line on the unit's main process ending (src/core/service.c,
/// `service_sigchld_event`): `Main process exited, code=exited, status=1/FAILURE`,
/// `code=killed, status=9/KILL`, `code=dumped, status=6/ABRT`; systemd before v236 wrote
/// `main process exited` in lower case (k3s #1545's journal, k3s #5406's title).
static EXITED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[Mm]ain process exited, code=(?P<code>\w+), status=(?P<status>\d+)")
        .expect("static regex")
});

/// systemd's other words for a unit that ended on its own (after its exit status, or without
/// one): `Failed with result 'exit-code'` (also 'signal', 'core-dump', 'timeout', 'oom-kill',
/// 'watchdog'…), `Failed to start <description>`, the OOM killer's `A process of this unit has
/// been killed by the OOM killer.`, and before v236 `Unit k3s.service entered failed state.` and
/// `k3s.service failed.`
fn unit_failed(text: &str) -> bool {
    text.contains("Failed with result")
        || text.starts_with("Failed to start")
        || text.contains("killed by the OOM killer")
        || text.contains("entered failed state")
        || text.ends_with(".service failed.")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The patterns run one by one on the prefilter's word (`Matcher::each`) find what the
    /// whole set finds, on every line of the corpora and the text after its journal prefix.
    #[test]
    fn patterns_one_by_one_agree_with_the_set() {
        let cat = crate::inspect::Catalog::load(None).unwrap();
        let m = Matcher::new(&cat.signals, &["token", "://"]);
        assert!(!m.each.is_empty(), "the shipped patterns run one by one");
        let mut matched = 0;
        for (path, bytes) in crate::inspect::fixture_files() {
            for line in String::from_utf8_lossy(&bytes).lines() {
                for t in [line, line.split_once(": ").map_or("", |(_, m)| m)] {
                    let set: Vec<usize> = m.set.matches(t).iter().collect();
                    let got: Vec<usize> =
                        m.matches(t).map_or_else(Vec::new, |h| h.iter().collect());
                    assert_eq!(got, set, "{}: {t}", path.display());
                    matched += usize::from(!set.is_empty());
                }
            }
        }
        assert!(matched > 50, "{matched} lines match a pattern");
    }

    /// systemd's words for a unit's end in both of its eras: since v236 (`Main process exited`,
    /// `Failed with result`) and before it, as k3s #1545's and #5406's journals show them (the
    /// first is tests/fixtures/real-k3s/k3s-1545-systemd-v219-exit-journalctl-x.log).
    #[test]
    fn systemd_exit_lines_before_and_after_v236() {
        let status = |t: &str| {
            EXITED
                .captures(t)
                .map(|c| (c["code"].to_string(), c["status"].to_string()))
        };
        assert_eq!(
            status("k3s.service: main process exited, code=exited, status=2/INVALIDARGUMENT"),
            Some(("exited".into(), "2".into()))
        );
        assert_eq!(
            status("rke2-server.service: Main process exited, code=killed, status=9/KILL"),
            Some(("killed".into(), "9".into()))
        );
        assert_eq!(
            status("Main PID: 4988 (code=exited, status=1/FAILURE)"),
            None
        );
        for ended in [
            "Unit k3s.service entered failed state.",
            "k3s.service failed.",
            "Failed to start Lightweight Kubernetes.",
            "k3s.service: Failed with result 'exit-code'.",
            "rke2-server.service: A process of this unit has been killed by the OOM killer.",
        ] {
            assert!(unit_failed(ended), "{ended}");
        }
        for not_ended in [
            "Failed to get unit file state for nm-cloud-setup.service: No such file or directory",
            "k3s.service holdoff time over, scheduling restart.",
            "Started Lightweight Kubernetes.",
        ] {
            assert!(!unit_failed(not_ended), "{not_ended}");
        }
    }

    #[test]
    fn banners_of_servers_agents_and_old_releases() {
        assert!(is_banner(
            r#"time="2025-09-26T10:38:30-05:00" level=info msg="Starting k3s v1.33.4+k3s1 (abcdef12)""#
        ));
        assert!(is_banner("Starting k3s agent v1.29.6+k3s2 (b4b156d9)"));
        assert!(banner_is_agent(
            "Starting k3s agent v1.29.6+k3s2 (b4b156d9)"
        ));
        assert!(!banner_is_agent("Starting k3s v1.29.6+k3s2 (b4b156d9)"));
        assert!(is_banner("INFO[0000] Starting k3s v0.2.0 (2771ae1)"));
        assert!(!is_banner("Starting Lightweight Kubernetes..."));
        assert!(!is_banner("Starting k3s server"));
    }
}
