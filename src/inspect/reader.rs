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
            let room = self.max.saturating_sub(buf.len());
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
    fn empty_input_has_no_lines() {
        assert!(all(b"", 10).is_empty());
        assert_eq!(all(b"\n", 10).len(), 1);
    }
}
