//! Which lines can match no signal pattern at all, told by a literal search.
//!
//! Nearly every line of a large journal is chatter that matches none of `signals.yaml`'s
//! patterns, and running the whole pattern set on each costs more than reading it. Every pattern
//! there contains some literal text (`k3s is up and running`, `Running kube-apiserver`): a match
//! must contain one of its pattern's required literals. One Aho-Corasick search for all of them
//! rules out most lines at memchr speed; only the lines it finds go to the patterns.
//!
//! The literals are folded to ASCII lower case and searched in the line folded the same way, so a
//! case-insensitive pattern (`(?i)Running kubelet`) keeps its literal; a line with non-ASCII text
//! always goes to the patterns (Unicode case folding has non-ASCII forms of `k` and `s`, which the
//! fold does not know). Folding the line and searching it case-sensitively, rather than asking
//! the automaton to ignore case, is what lets aho-corasick use its SIMD (Teddy) searcher: with
//! case ignored it walks the automaton byte by byte, which was a third of inspect's time. The filter only ever says "cannot match": a line it lets through is matched as before,
//! so what `inspect` decides is the same with or without it.

use std::cell::RefCell;

use aho_corasick::AhoCorasick;
use regex_syntax::hir::{Class, Hir, HirKind};

use super::reader::Batch;
use super::reader::{Found, ALL};

thread_local! {
    /// The folded copy of the line being searched (one buffer per thread, reused).
    static FOLDED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

#[derive(Clone)]
pub(crate) struct Prefilter {
    /// Every word: the patterns' literals, then the extra words (ids from `own` on),
    /// leftmost-longest, which aho-corasick's SIMD searcher (Teddy) serves. A search that
    /// starts again one byte after each hit finds every word that occurs (`scan_folded`).
    words: AhoCorasick,
    /// The same words in aho-corasick's packed (Teddy) searcher itself, where the CPU has one:
    /// it verifies a candidate by comparing the words of its bucket, where the automaton
    /// above walks its states from the candidate (and costs a call more per hit; a dense
    /// line has several hits).
    packed: Option<aho_corasick::packed::Searcher>,
    /// Per word, what its hit tells: the patterns that require it or a prefix of it, and its
    /// extra bit and those of its prefixes (a word that matches where a longer one does is not
    /// reported by the leftmost-longest search, which reports the longer).
    tells: Vec<Found>,
    /// No word holds a line break: a batch of lines can be searched whole (`prescan`).
    prescan: bool,
}

impl Prefilter {
    /// A filter for these patterns, or None when one of them requires no literal (then every
    /// line goes to the patterns).
    #[cfg(test)]
    pub(crate) fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Option<Prefilter> {
        Self::with_extra(patterns, &[])
    }

    /// A filter that also tells, in the same search, whether one of `extra` occurs (without
    /// case): one pass over a line answers both (the line search is where inspect's time goes).
    pub(crate) fn with_extra<'a>(
        patterns: impl IntoIterator<Item = &'a str>,
        extra: &[&str],
    ) -> Option<Prefilter> {
        let mut all: Vec<Vec<u8>> = Vec::new();
        let mut needed_by: Vec<u64> = Vec::new();
        for (i, p) in patterns.into_iter().enumerate() {
            let hir = regex_syntax::parse(p).ok()?;
            let bit = if i < 64 { 1u64 << i } else { ALL };
            for lit in required(&hir)? {
                match all.iter().position(|l| *l == lit) {
                    Some(at) => needed_by[at] |= bit,
                    None => {
                        all.push(lit);
                        needed_by.push(bit);
                    }
                }
            }
        }
        // Extra words are searched as given (folded); a duplicate of a literal still needs its
        // own id.
        let own = needed_by.len();
        all.extend(extra.iter().map(|w| w.to_ascii_lowercase().into_bytes()));
        let words = AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(&all)
            .ok()?;
        let packed = aho_corasick::packed::Config::new()
            .match_kind(aho_corasick::packed::MatchKind::LeftmostLongest)
            .builder()
            .extend(&all)
            .build();
        let tell = |i: usize| match needed_by.get(i) {
            Some(&patterns) => Found { patterns, extra: 0 },
            None => Found {
                patterns: 0,
                extra: 1 << (i - own).min(63),
            },
        };
        let tells = all
            .iter()
            .map(|w| {
                let mut t = Found::NOTHING;
                for (j, p) in all.iter().enumerate() {
                    if w.starts_with(p) {
                        t.patterns |= tell(j).patterns;
                        t.extra |= tell(j).extra;
                    }
                }
                t
            })
            .collect();
        let prescan = !all.iter().any(|w| w.contains(&b'\n'));
        Some(Prefilter {
            words,
            packed,
            tells,
            prescan,
        })
    }

    /// False only when none of the patterns can match `text`.
    #[cfg(test)]
    pub(crate) fn may_match(&self, text: &str) -> bool {
        self.scan(text).may()
    }

    /// Which patterns may match, and whether an extra word occurs, in one search. Most lines
    /// hold neither, and `is_match` stops at the first of either; only lines with a hit are
    /// searched to the end for which.
    pub(crate) fn scan(&self, text: &str) -> Found {
        FOLDED.with_borrow_mut(|folded| {
            folded.clear();
            folded.extend_from_slice(text.as_bytes());
            folded.make_ascii_lowercase();
            self.scan_folded(folded, !text.is_ascii())
        })
    }

    /// Scans every printable-ASCII line of `batch` for the words (the patterns' literals and
    /// the extra words), as `scan` would, into its `BatchLine::scan`: one search over the whole
    /// batch, folded into `folded` (a search costs most where it starts and stops; nearly every
    /// line has no word and is then `clear`). Lines are `\n`-separated in the batch and no word
    /// holds a `\n` (else nothing is marked), so no hit spans two lines, and a hit's line is the
    /// only one it says anything of. A line's answer bounds that of any part of it (the text a
    /// journal line carries after its prefix): a word in the part is in the line.
    pub(crate) fn prescan(&self, batch: &mut Batch, folded: &mut Vec<u8>) {
        if !self.prescan {
            return;
        }
        folded.clear();
        folded.extend(batch.bytes.iter().map(u8::to_ascii_lowercase));
        // Nearly every batch is printable ASCII throughout (its line breaks aside): one test
        // of the whole, not one per line.
        let all_plain = plain_ascii_lines(&batch.bytes);
        let mut start = 0;
        for l in &mut batch.lines {
            l.scan =
                (all_plain || plain_ascii(&batch.bytes[start..l.end])).then_some(Found::NOTHING);
            start = l.end + 1;
        }
        let mut at = 0;
        self.each_hit(folded, |hit, t| {
            while batch.lines.get(at).is_some_and(|l| l.end < hit) {
                at += 1;
            }
            if let Some(Some(found)) = batch.lines.get_mut(at).map(|l| l.scan.as_mut()) {
                found.patterns |= t.patterns;
                found.extra |= t.extra;
            }
        });
    }

    /// Every place a word starts in `folded`, with what the word tells: each search starts
    /// one byte after the last hit's start, so a word that overlaps another or lies inside
    /// it is found too, and the longest word at each place stands for its prefixes (`tells`).
    fn each_hit(&self, folded: &[u8], mut hit: impl FnMut(usize, Found)) {
        if let Some(packed) = &self.packed {
            let mut at = 0;
            while at < folded.len() {
                let Some(m) = packed.find_in(folded, aho_corasick::Span::from(at..folded.len()))
                else {
                    break;
                };
                hit(m.start(), self.tells[m.pattern().as_usize()]);
                at = m.start() + 1;
            }
            return;
        }
        let mut input = aho_corasick::Input::new(folded);
        while let Some(m) = self.words.find(input.clone()) {
            hit(m.start(), self.tells[m.pattern().as_usize()]);
            if m.start() + 1 > folded.len() {
                break;
            }
            input.set_start(m.start() + 1);
        }
    }

    /// `scan` of a folded text: every word in it, for the patterns' bits and the extra bits.
    /// A non-ASCII text may match any pattern (Unicode case folding has non-ASCII forms of `k`
    /// and `s`, which the fold does not know).
    fn scan_folded(&self, folded: &[u8], non_ascii: bool) -> Found {
        let mut found = Found {
            patterns: if non_ascii { ALL } else { 0 },
            extra: 0,
        };
        self.each_hit(folded, |_, t| {
            found.patterns |= t.patterns;
            found.extra |= t.extra;
        });
        found
    }
}

/// The literal texts (as written, case and all) every match of `pattern` contains, of at least
/// `MIN_RUN` bytes each, and whether the pattern is nothing but one such text: a line without
/// one of them cannot match, and where the pattern is a single literal, finding it is matching
/// it (a substring search instead of the regex). The prefilter's search, folded and of one
/// literal per pattern, cannot tell either; on a dense journal the patterns that name a line
/// and a flag (`Running kube-apiserver .*--encryption-provider-config=`) otherwise run over
/// every line of that kind.
pub(crate) fn literal_runs(pattern: &str) -> (Vec<Vec<u8>>, bool) {
    const MIN_RUN: usize = 3;
    let Ok(hir) = regex_syntax::parse(pattern) else {
        return (Vec::new(), false);
    };
    let mut hir = &hir;
    while let HirKind::Capture(c) = hir.kind() {
        hir = &c.sub;
    }
    match hir.kind() {
        HirKind::Literal(lit) => (vec![lit.0.to_vec()], !lit.0.is_empty()),
        HirKind::Concat(subs) => {
            let mut runs = Vec::new();
            let mut run: Vec<u8> = Vec::new();
            for s in subs {
                match s.kind() {
                    HirKind::Literal(lit) => run.extend_from_slice(&lit.0),
                    _ => {
                        if run.len() >= MIN_RUN {
                            runs.push(std::mem::take(&mut run));
                        }
                        run.clear();
                    }
                }
            }
            if run.len() >= MIN_RUN {
                runs.push(run);
            }
            (runs, false)
        }
        _ => (Vec::new(), false),
    }
}

/// Literals (ASCII lower case) one of which every match of `hir` contains, on ASCII text; None
/// when there is no such set.
fn required(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        HirKind::Literal(lit) => Some(vec![lit.0.to_ascii_lowercase()]),
        HirKind::Class(c) => letter(c).map(|b| vec![vec![b]]),
        HirKind::Capture(c) => required(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => required(&r.sub),
        HirKind::Alternation(subs) => {
            let mut out = Vec::new();
            for s in subs {
                out.extend(required(s)?);
            }
            Some(out)
        }
        HirKind::Concat(subs) => {
            // Candidates: each run of adjacent literal pieces, and each piece's own set; the
            // best is the one whose shortest literal is longest (the fewest false hits).
            let mut best: Option<Vec<Vec<u8>>> = None;
            let mut consider = |cand: Vec<Vec<u8>>| {
                let score = |c: &Vec<Vec<u8>>| c.iter().map(Vec::len).min().unwrap_or(0);
                if score(&cand) > 0 && best.as_ref().is_none_or(|b| score(&cand) > score(b)) {
                    best = Some(cand);
                }
            };
            let mut run: Vec<u8> = Vec::new();
            for s in subs {
                match piece(s) {
                    Some(bytes) => run.extend(bytes),
                    None => {
                        consider(vec![std::mem::take(&mut run)]);
                        if let Some(set) = required(s) {
                            consider(set);
                        }
                    }
                }
            }
            consider(vec![run]);
            best
        }
        _ => None,
    }
}

/// The bytes a piece of a concatenation always matches (lower case), if it is that simple.
fn piece(hir: &Hir) -> Option<Vec<u8>> {
    match hir.kind() {
        HirKind::Literal(lit) => Some(lit.0.to_ascii_lowercase()),
        HirKind::Class(c) => letter(c).map(|b| vec![b]),
        _ => None,
    }
}

/// The one ASCII character (lower case) a class matches on ASCII text, up to case: `[Rr]` (what
/// `(?i)R` becomes) is `r`; `[a-z]` is none.
fn letter(c: &Class) -> Option<u8> {
    let mut ascii: Vec<u8> = Vec::new();
    let mut add = |lo: u32, hi: u32| -> Option<()> {
        for x in lo..=hi.min(0x7f) {
            ascii.push(u8::try_from(x).ok()?);
            if ascii.len() > 2 {
                return None;
            }
        }
        Some(())
    };
    match c {
        Class::Unicode(u) => {
            for r in u.ranges() {
                add(u32::from(r.start()), u32::from(r.end()))?;
            }
        }
        Class::Bytes(b) => {
            for r in b.ranges() {
                add(u32::from(r.start()), u32::from(r.end()))?;
            }
        }
    }
    match ascii.as_slice() {
        [a] => Some(a.to_ascii_lowercase()),
        [a, b] if a.eq_ignore_ascii_case(b) => Some(a.to_ascii_lowercase()),
        _ => None,
    }
}

/// `plain_ascii` of every line of `bytes`, lines separated by `\n`.
fn plain_ascii_lines(bytes: &[u8]) -> bool {
    // A word holding a `\n` (one a line) is checked byte by byte.
    let ok = |b: &u8| (0x20..0x7f).contains(b) || *b == b'\t' || *b == b'\n';
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        if !word_plain(u64::from_le_bytes(a)) && !w.iter().all(ok) {
            return false;
        }
    }
    words.remainder().iter().all(ok)
}

/// No byte of the eight below 0x20, 0x7f, or above (may say false of a plain word: callers
/// check such a word byte by byte).
fn word_plain(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    let del = x ^ (ONES * 0x7f);
    let del = del.wrapping_sub(ONES) & !del & HIGH;
    (below | del | (x & HIGH)) == 0
}

/// Whether every byte is printable ASCII or a tab: eight bytes at a time (this test runs on
/// every line; byte by byte it was a fifth of a journal line's cost under callgrind). A word
/// with any byte below 0x20, 0x7f or above is checked byte by byte, so the word test only has
/// to never miss one (the bit tricks of "Bit Twiddling Hacks": `hasless`, `haszero`).
pub(crate) fn plain_ascii(raw: &[u8]) -> bool {
    let ok = |b: &u8| (0x20..0x7f).contains(b) || *b == b'\t';
    let mut words = raw.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        let x = u64::from_le_bytes(a);
        if !word_plain(x) && !w.iter().all(ok) {
            return false;
        }
    }
    words.remainder().iter().all(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(p: &str) -> Option<Vec<String>> {
        required(&regex_syntax::parse(p).unwrap()).map(|v| {
            v.into_iter()
                .map(|l| String::from_utf8(l).unwrap())
                .collect()
        })
    }

    #[test]
    fn each_signal_pattern_has_its_literal() {
        assert_eq!(
            req("k3s is up and running").unwrap(),
            ["k3s is up and running"]
        );
        assert_eq!(req(r"^FATA\[").unwrap(), ["fata["]);
        assert_eq!(
            req(r"Starting k3s (agent )?(?P<value>v\d+\.\d+\.\d+[0-9A-Za-z.+-]*)").unwrap(),
            ["starting k3s "]
        );
        assert_eq!(
            req(r"Adding member \S+ to etcd cluster").unwrap(),
            [" to etcd cluster"]
        );
        assert_eq!(
            req("Starting etcd (for|to join) ").unwrap(),
            ["starting etcd "]
        );
        // `(?i)k` is also the Kelvin sign, which only a non-ASCII line can hold.
        assert_eq!(req("(?i)Running kubelet").unwrap(), ["running kubelet"]);
        assert_eq!(req("(a|bc)d").unwrap(), ["a", "bc"]);
        assert_eq!(req("(abc|de)").unwrap(), ["abc", "de"]);
        assert_eq!(req(r"\d+"), None);
        assert_eq!(req("(abc)?x*"), None);
        assert_eq!(req("abc|.*"), None);
    }

    #[test]
    fn literal_runs_are_what_every_match_contains() {
        let runs = |p: &str| {
            let (r, whole) = literal_runs(p);
            let r: Vec<String> = r
                .into_iter()
                .map(|l| String::from_utf8(l).unwrap())
                .collect();
            (r, whole)
        };
        assert_eq!(
            runs("k3s is up and running"),
            (vec!["k3s is up and running".to_string()], true)
        );
        assert_eq!(
            runs(r"Running kube-apiserver .*--encryption-provider-config="),
            (
                vec![
                    "Running kube-apiserver ".to_string(),
                    "--encryption-provider-config=".to_string()
                ],
                false
            )
        );
        assert_eq!(
            runs(r#"critical configuration mismatched: (?P<value>[^\s"]+)"#),
            (
                vec!["critical configuration mismatched: ".to_string()],
                false
            )
        );
        // An anchor is more than the literal; a case-insensitive pattern has no literal run.
        assert_eq!(runs(r"^FATA\["), (vec!["FATA[".to_string()], false));
        assert_eq!(runs("(?i)Running kubelet"), (vec![], false));
        assert_eq!(runs("(a|bc)d"), (vec![], false));
    }

    #[test]
    fn a_pattern_without_a_literal_turns_the_filter_off() {
        assert!(Prefilter::new(["abc", r"\d+"]).is_none());
        let both = Prefilter::with_extra(["Running kubelet", "k3s is up"], &["token"]).unwrap();
        let found = |patterns, extra| Found { patterns, extra };
        assert_eq!(both.scan("x running kubelet y"), found(1, 0));
        assert_eq!(both.scan("TOKEN=1"), found(0, 1));
        assert_eq!(both.scan("Running kubelet --token=1"), found(1, 1));
        assert_eq!(both.scan("k3s is up; running kubelet"), found(3, 0));
        assert_eq!(both.scan("k3s is up"), found(2, 0));
        assert_eq!(both.scan("nothing here"), Found::NOTHING);
        assert_eq!(
            both.scan("é nothing"),
            found(ALL, 0),
            "non-ASCII goes to the patterns"
        );
        let two = Prefilter::with_extra(["abc"], &["token", "://"]).unwrap();
        assert_eq!(two.scan("https://x token"), found(0, 3));
        assert_eq!(two.scan("https://x"), found(0, 2));
        let f = Prefilter::new(["abc", "(?i)Running kubelet"]).unwrap();
        assert!(f.may_match("xx ABC"));
        assert!(f.may_match("level=info msg=\"RUNNING kubelet --x\""));
        assert!(!f.may_match("I0926 reconciler_common.go:245] started"));
        assert!(f.may_match("non-ASCII: é"), "non-ASCII lines always go on");
    }

    /// On every line of the real corpora: a line the filter drops matches no signal pattern.
    #[test]
    fn no_line_the_filter_drops_matches_a_pattern() {
        let cat = super::super::Catalog::load(None).unwrap();
        let mut pats = Vec::new();
        for sig in cat.signals.by_name.values() {
            for list in [
                &sig.up,
                &sig.down,
                &sig.value,
                &sig.settled_by,
                &sig.undecided_by,
            ] {
                pats.extend(list.iter().map(|p| p.regex.as_str().to_string()));
            }
        }
        let set = regex::RegexSet::new(&pats).unwrap();
        let f = Prefilter::with_extra(pats.iter().map(String::as_str), &["token", "://"])
            .expect("every pattern has one");
        let (mut lines, mut dropped, mut cleared) = (0u64, 0u64, 0u64);
        for (path, bytes) in super::super::fixture_files() {
            let text = String::from_utf8_lossy(&bytes);
            for line in text.lines() {
                lines += 1;
                if !f.may_match(line) {
                    dropped += 1;
                    assert!(!set.is_match(line), "{}: {line}", path.display());
                }
            }
            // The whole-batch prescan: a line it calls clear has no literal and no word; a
            // line it scanned has the answer of its own scan.
            let mut r = super::super::reader::BoundedLines::new(&bytes[..], 1 << 20);
            let mut batch = Batch::default();
            r.read_batch(&mut batch, usize::MAX).unwrap();
            f.prescan(&mut batch, &mut Vec::new());
            for (line, l) in batch.iter() {
                let line = std::str::from_utf8(line).unwrap_or("");
                assert!(
                    !l.clear() || (f.scan(line) == Found::NOTHING && !set.is_match(line)),
                    "{}: {line}",
                    path.display()
                );
                // The line's answer is `scan`'s, and bounds that of every part of it; a
                // pattern it rules out matches no part.
                if let Some(whole) = l.scan {
                    assert_eq!(whole, f.scan(line), "{}: {line}", path.display());
                    for (i, _) in line.match_indices(' ') {
                        let part = f.scan(&line[i..]);
                        assert!(
                            part.patterns & !whole.patterns == 0 && part.extra & !whole.extra == 0,
                            "{}: {line}",
                            path.display()
                        );
                        for p in set.matches(&line[i..]).iter() {
                            assert!(
                                p >= 64 || whole.patterns & (1 << p) != 0,
                                "{}: {line}",
                                path.display()
                            );
                        }
                    }
                }
                cleared += u64::from(l.clear());
            }
        }
        assert!(lines > 1000 && dropped > lines / 2, "{dropped} of {lines}");
        assert!(cleared > lines / 2, "{cleared} of {lines} prescanned clear");
    }
}
