//! The stamp `repro sim binary` appends to a copy of the stand-in binary, so the file itself
//! says which version it reports and whether it has a fix — the way a local k3s build carries its
//! own version, whatever image it runs in. One format, written by repro and read by the stand-in
//! (from its own executable at start).

/// Starts the stamp's line; the stamp is the last line of the file.
const MARKER: &str = "\n#repro-sim-stamp ";

/// What a stamped stand-in binary reports and does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimStamp {
    /// The version its `-v` prints and it imitates (`v1.33.4+k3s1`).
    pub version: String,
    /// Whether it has the etcd-only bootstrap fix (k3s #12753), whatever its version says.
    pub bootstrap_fix: bool,
}

impl SimStamp {
    /// The bytes to append to the binary.
    pub fn to_bytes(&self) -> Vec<u8> {
        format!(
            "{MARKER}version={} etcd-only-bootstrap-fix={}\n",
            self.version, self.bootstrap_fix
        )
        .into_bytes()
    }

    /// The stamp at the end of `tail` (the last bytes of a file), if it has one.
    pub fn find(tail: &[u8]) -> Option<SimStamp> {
        let marker = MARKER.as_bytes();
        let at = tail.windows(marker.len()).rposition(|w| w == marker)?;
        let line = std::str::from_utf8(&tail[at + marker.len()..]).ok()?;
        let line = line.strip_suffix('\n')?;
        let mut version = None;
        let mut fix = None;
        for field in line.split(' ') {
            match field.split_once('=')? {
                ("version", v) => version = Some(v.to_string()),
                ("etcd-only-bootstrap-fix", f) => fix = Some(f.parse().ok()?),
                _ => return None,
            }
        }
        Some(SimStamp {
            version: version?,
            bootstrap_fix: fix?,
        })
    }

    /// How many bytes at the end of a file [`Self::find`] needs to see.
    pub const TAIL_BYTES: usize = 256;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_at_the_end_of_a_binary() {
        let stamp = SimStamp {
            version: "v1.33.5+k3s1".into(),
            bootstrap_fix: false,
        };
        let mut file = b"\x7fELF...binary bytes...".to_vec();
        file.extend(stamp.to_bytes());
        let tail = &file[file.len().saturating_sub(SimStamp::TAIL_BYTES)..];
        assert_eq!(SimStamp::find(tail), Some(stamp));
        assert_eq!(SimStamp::find(b"\x7fELF plain binary"), None);
        // Anything after the stamp: no stamp (it must be the last line).
        file.extend(b"more");
        assert_eq!(SimStamp::find(&file), None);
    }
}
