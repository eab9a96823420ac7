//! `journalctl -o export`: `KEY=value` blocks separated by blank lines, binary fields as `KEY`,
//! a little-endian 64-bit length and the bytes.

use super::journal_fields::JournalFields;
use super::{Entry, Normaliser, Outer};
use crate::inspect::reader::LineInfo;

impl Normaliser {
    /// A line of `journalctl -o export` output: consumed into the record being read (a record
    /// starts at `__CURSOR=` and ends at a blank line). False when the line is not one.
    pub(super) fn export_line(&mut self, raw: &[u8], info: LineInfo, out: &mut Vec<Entry>) -> bool {
        let Some(rec) = self.export.as_mut() else {
            if raw.starts_with(b"__CURSOR=") {
                self.flush(out);
                self.export = Some(ExportRecord {
                    line: info.number,
                    fields: JournalFields::default(),
                    binary: None,
                });
                return true;
            }
            return false;
        };
        if let Some(bin) = rec.binary.as_mut() {
            // The line reader split the field's bytes at every `\n`: put them back.
            if bin.pieces > 0 {
                bin.bytes.push(b'\n');
            }
            bin.pieces += 1;
            bin.bytes.extend_from_slice(raw);
            let buf = &bin.bytes;
            if buf.len() >= 8 {
                let mut len = [0u8; 8];
                len.copy_from_slice(&buf[..8]);
                let len = u64::from_le_bytes(len);
                if len > MAX_BINARY_FIELD || buf.len() as u64 >= 8 + len {
                    let end = buf.len().min(8 + len.min(MAX_BINARY_FIELD) as usize);
                    let value = buf[8..end].to_vec();
                    let key = std::mem::take(&mut bin.key);
                    rec.binary = None;
                    rec.fields.set(&key, value);
                }
            }
            return true;
        }
        if raw.is_empty() || raw == b"\r" {
            if let Some(rec) = self.export.take() {
                self.end_export(rec, out);
            }
            return true;
        }
        match memchr::memchr(b'=', raw) {
            Some(i) => rec.fields.set(&raw[..i], raw[i + 1..].to_vec()),
            // `KEY` alone: a binary field, its length and bytes follow.
            None => {
                rec.binary = Some(Binary {
                    key: raw.to_vec(),
                    bytes: Vec::new(),
                    pieces: 0,
                })
            }
        }
        true
    }

    pub(super) fn end_export(&mut self, rec: ExportRecord, out: &mut Vec<Entry>) {
        if rec.fields.message.is_none() {
            return;
        }
        let info = LineInfo {
            number: rec.line,
            dropped: 0,
        };
        let e = self.structured(rec.fields, Outer::JournalExport, info);
        self.flush(out);
        out.push(e);
    }
}

/// An export record being read: its fields so far, and a binary field's bytes still arriving.
#[derive(Debug)]
pub(super) struct ExportRecord {
    line: u64,
    fields: JournalFields,
    /// A binary field: its name and the bytes read so far (length, data, and the physical line
    /// breaks inside them, which the line reader took out).
    binary: Option<Binary>,
}

#[derive(Debug)]
struct Binary {
    key: Vec<u8>,
    bytes: Vec<u8>,
    /// Physical lines read into `bytes` (each after the first follows a `\n` the reader took).
    pieces: usize,
}

/// Longest binary export field read (the line limit of the reader, a little more).
const MAX_BINARY_FIELD: u64 = 512 * 1024;
