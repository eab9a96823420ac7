//! Reading lines in bounded memory.
//!
//! A log can be gigabytes, hold a line of a hundred megabytes, or be one endless line with no
//! newline at all (a binary dump, `/dev/zero`). `BoundedLines` keeps at most `max` bytes of any
//! line and skips the rest, so memory stays flat whatever the input is.

use std::io::{self, BufRead, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Longest line kept; the rest of a longer line is dropped (and counted). k3s's longest lines
/// (`Running kubelet …`, containerd's config dump) are a few kilobytes.
pub(crate) const MAX_LINE: usize = 256 * 1024;

/// One physical line: its 1-based number and how many bytes were dropped from its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineInfo {
    pub(crate) number: u64,
    pub(crate) dropped: u64,
}

pub(crate) struct BoundedLines<R> {
    inner: R,
    max: usize,
    number: u64,
}

impl<R: BufRead> BoundedLines<R> {
    pub(crate) fn new(inner: R, max: usize) -> Self {
        BoundedLines {
            inner,
            max,
            number: 0,
        }
    }

    /// Reads the next line into `buf` (without its `\n`); `None` at the end of the input.
    pub(crate) fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<LineInfo>> {
        buf.clear();
        self.append_line(buf)
    }

    /// Reads the next line onto the end of `buf` (without its `\n`, at most `max` bytes of it);
    /// `None` at the end of the input.
    pub(crate) fn append_line(&mut self, buf: &mut Vec<u8>) -> io::Result<Option<LineInfo>> {
        let start = buf.len();
        let mut dropped = 0u64;
        let mut any = false;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            let room = self.max.saturating_sub(buf.len() - start);
            let keep = take.min(room);
            buf.extend_from_slice(&chunk[..keep]);
            dropped += (take - keep) as u64;
            self.inner.consume(if done { take + 1 } else { take });
            if done {
                break;
            }
        }
        self.number += 1;
        Ok(Some(LineInfo {
            number: self.number,
            dropped,
        }))
    }
}

/// Lines read in a batch, for the thread that reads them to hand to the one that takes them in
/// (`read_batch`): the lines' bytes one after another, each followed by `\n` (so a word search
/// over the whole batch never finds a word across two lines), where each ends, and what the
/// prescan said.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(crate) bytes: Vec<u8>,
    pub(crate) lines: Vec<BatchLine>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchLine {
    /// Where the line's bytes end in `bytes` (it starts after the `\n` of the line before).
    pub(crate) end: usize,
    pub(crate) info: LineInfo,
    /// What the prescan found in the line, when it is plain ASCII (None otherwise, or when no
    /// prescan ran): `Prefilter::scan` of the whole line, which bounds that of any text taken
    /// from it (`Prefilter::prescan`).
    pub(crate) scan: Option<Found>,
}

impl BatchLine {
    /// The prescan found the line plain ASCII without any searched word: neither a pattern
    /// nor a secret cue can be in any text taken from it.
    #[cfg(test)]
    pub(crate) fn clear(&self) -> bool {
        self.scan == Some(Found::NOTHING)
    }
}

impl Batch {
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.lines.clear();
    }

    /// The lines: bytes, where they came from, and the prescan's word.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], BatchLine)> {
        let mut start = 0;
        self.lines.iter().map(move |l| {
            let line = &self.bytes[start..l.end];
            start = l.end + 1;
            (line, *l)
        })
    }
}

impl<R: BufRead> BoundedLines<R> {
    /// Reads lines into `batch` until it holds about `bytes` bytes or the input ends; false once
    /// the input has ended. After an error the batch still holds the whole lines read before it.
    pub(crate) fn read_batch(&mut self, batch: &mut Batch, bytes: usize) -> io::Result<bool> {
        while batch.bytes.len() < bytes {
            // Whole lines in the read buffer are taken at once (one copy, one newline search
            // through them), not line by line.
            match self.take_whole_lines(batch, bytes - batch.bytes.len()) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => {
                    batch
                        .bytes
                        .truncate(batch.lines.last().map_or(0, |l| l.end + 1));
                    return Err(e);
                }
            }
            let info = self.append_line(&mut batch.bytes);
            let Ok(Some(info)) = info else {
                // A line cut by the error, or nothing: no line of the batch.
                batch
                    .bytes
                    .truncate(batch.lines.last().map_or(0, |l| l.end + 1));
                return info.map(|_| false);
            };
            batch.lines.push(BatchLine {
                end: batch.bytes.len(),
                info,
                scan: None,
            });
            batch.bytes.push(b'\n');
        }
        Ok(true)
    }

    /// Moves the whole lines at the start of the read buffer (about `want` bytes of them,
    /// at least one) into `batch`, as `append_line` would one by one; false when there is no
    /// such line there (the next ends beyond the buffer, is longer than `max`, or the input
    /// has ended): then `append_line` reads the next.
    fn take_whole_lines(&mut self, batch: &mut Batch, want: usize) -> io::Result<bool> {
        let chunk = loop {
            match self.inner.fill_buf() {
                Ok(c) => break c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        let base = batch.bytes.len();
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            if nl - start > self.max {
                break;
            }
            self.number += 1;
            batch.lines.push(BatchLine {
                end: base + nl,
                info: LineInfo {
                    number: self.number,
                    dropped: 0,
                },
                scan: None,
            });
            start = nl + 1;
            if start >= want {
                break;
            }
        }
        if start == 0 {
            return Ok(false);
        }
        batch.bytes.extend_from_slice(&chunk[..start]);
        self.inner.consume(start);
        Ok(true)
    }
}

/// Counts the bytes read through it (for the progress bar and the figures of the benchmark).
pub(crate) struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    pub(crate) fn new(inner: R, count: Arc<AtomicU64>) -> Self {
        Counting { inner, count }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// What one search of a text found: which patterns may match it, and which extra words occur.
/// A pattern is a bit (`1 << i`, the i-th pattern given); `ALL` when the bits cannot tell (a
/// non-ASCII text, more than 64 patterns): then every pattern may match. An extra word is a bit
/// too (`1 << i`, the i-th extra word; the 64th and later share the last bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) patterns: u64,
    pub(crate) extra: u64,
}

/// `Found::patterns` when any pattern may match.
pub(crate) const ALL: u64 = u64::MAX;

impl Found {
    /// Neither a pattern's literal nor an extra word.
    pub(crate) const NOTHING: Found = Found {
        patterns: 0,
        extra: 0,
    };

    /// Whether some pattern may match.
    #[cfg(test)]
    pub(crate) fn may(self) -> bool {
        self.patterns != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<(String, LineInfo)> {
        let mut r = BoundedLines::new(io::BufReader::with_capacity(7, input), max);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(info) = r.next_line(&mut buf).unwrap() {
            out.push((String::from_utf8_lossy(&buf).into_owned(), info));
        }
        out
    }

    #[test]
    fn splits_lines_across_buffer_boundaries() {
        let got = all(b"first line\nsecond\n\nlast without newline", 100);
        let texts: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(texts, ["first line", "second", "", "last without newline"]);
        assert_eq!(got[3].1.number, 4);
        assert!(got.iter().all(|(_, i)| i.dropped == 0));
    }

    #[test]
    fn long_lines_are_cut_and_the_rest_counted() {
        let mut input = vec![b'x'; 1000];
        input.push(b'\n');
        input.extend_from_slice(b"next\n");
        let got = all(&input, 64);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0.len(), 64);
        assert_eq!(got[0].1.dropped, 936);
        assert_eq!(got[1].0, "next");
    }

    #[test]
    fn an_endless_line_without_newline_ends_once() {
        let input = vec![0u8; 100_000];
        let got = all(&input, 1024);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1.dropped, 100_000 - 1024);
    }

    #[test]
    fn batches_hold_whole_lines_with_their_numbers() {
        let input = b"one\ntwo two\n\nfour".repeat(3);
        let mut r = BoundedLines::new(io::BufReader::with_capacity(5, &input[..]), 100);
        let mut batch = Batch::default();
        let mut got = Vec::new();
        loop {
            batch.clear();
            let more = r.read_batch(&mut batch, 10).unwrap();
            for (line, l) in batch.iter() {
                got.push((String::from_utf8(line.to_vec()).unwrap(), l.info.number));
            }
            if !more {
                break;
            }
        }
        let texts: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            ["one", "two two", "", "fourone", "two two", "", "fourone", "two two", "", "four"]
        );
        assert_eq!(got.last().unwrap().1, 10);
    }

    #[test]
    fn empty_input_has_no_lines() {
        assert!(all(b"", 10).is_empty());
        assert_eq!(all(b"\n", 10).len(), 1);
    }
}
