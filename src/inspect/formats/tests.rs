//! One test per format. Every input here is SYNTHETIC: lines written for the test in the shape
//! each tool prints (the k3s messages are k3s's own strings, docs/k3s-facts.md), not copied from
//! a real log. Real logs are in tests/fixtures/real-k3s/.

use super::journal_text::*;
use super::k3s_text::*;
use super::paste::*;
use super::*;
use crate::inspect::prefilter::plain_ascii;

fn read(text: &[u8]) -> (Vec<Entry>, Stats) {
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let stats = detect(lines.iter().copied());
    let mut n = Normaliser::new(stats.dominant());
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        n.push(
            l,
            LineInfo {
                number: i as u64 + 1,
                dropped: 0,
            },
            &mut out,
        );
    }
    n.finish(&mut out);
    (out, n.stats)
}

fn logs(entries: &[Entry]) -> Vec<&Entry> {
    entries.iter().filter(|e| e.kind == Kind::Log).collect()
}

const BANNER: &str =
    r#"time="2025-09-26T10:38:30-05:00" level=info msg="Starting k3s v1.33.4+k3s1 (abcdef12)""#;

#[test]
fn docker_logs_with_timestamps() {
    let text = format!(
        "2026-11-30T09:01:27.104512365Z {BANNER}\n2026-11-30T09:01:45.191621365Z time=\"2026-11-30T09:01:45Z\" level=info msg=\"Running kubelet --address=0.0.0.0\"\n"
    );
    let (e, s) = read(text.as_bytes());
    assert_eq!(s.dominant(), Outer::Docker);
    let l = logs(&e);
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].text, BANNER, "the k3s line exactly as k3s printed it");
    assert_eq!(l[0].ts.unwrap().timestamp_subsec_nanos(), 104512365);
    assert!(l[0].ts_exact);
    assert_eq!(l[0].inner, Inner::Logrus);
    assert!(l[1].text.starts_with("time="));
}

#[test]
fn docker_logs_without_timestamps_take_logrus_time() {
    let text = format!("{BANNER}\nsome line k3s printed without format\nI0926 10:38:32.000000   82763 server.go:123] klog line\n");
    let (e, s) = read(text.as_bytes());
    assert_eq!(s.dominant(), Outer::Bare);
    let l = logs(&e);
    assert_eq!(l.len(), 3, "every line of a bare log is k3s's");
    assert_eq!(
        l[0].ts.unwrap().to_rfc3339(),
        "2025-09-26T15:38:30+00:00",
        "logrus time with its zone"
    );
    assert_eq!(l[2].inner, Inner::Klog);
    assert_eq!(
        l[2].ts.unwrap().to_rfc3339(),
        "2025-09-26T15:38:32+00:00",
        "klog's local time placed with the year and zone of the logrus lines"
    );
    // Without a logrus line before it, a klog time has no year or zone: not used.
    let (e, _) = read(b"I0926 10:38:32.000000   82763 server.go:123] klog line\n");
    assert!(logs(&e)[0].ts.is_none());
}

#[test]
fn journalctl_short_learns_year_and_zone_from_logrus() {
    let text = format!(
        "Sep 26 10:38:30 node2 k3s[82763]: {BANNER}\nSep 26 10:38:36 node2 k3s[82763]: I0926 10:38:36.608000   82763 x.go:1] no logrus time here\nSep 26 10:39:00 node2 systemd[1]: Stopping Lightweight Kubernetes...\nSep 26 10:39:00 node2 sshd[1]: Accepted publickey\n"
    );
    let (e, s) = read(text.as_bytes());
    assert_eq!(s.dominant(), Outer::JournalShort);
    let l = logs(&e);
    assert_eq!(l[0].host.as_deref(), Some("node2"));
    assert_eq!(l[0].text, BANNER);
    // 10:38:36 local on a host at -05:00 (learned from the first line) is 15:38:36 UTC.
    assert_eq!(l[1].ts.unwrap().to_rfc3339(), "2025-09-26T15:38:36+00:00");
    assert!(l[1].ts_exact);
    assert_eq!(e[2].kind, Kind::Unit);
    assert_eq!(e[3].kind, Kind::Foreign);
}

#[test]
fn journalctl_short_precise_and_year_guess() {
    let (e, _) = read(b"Sep  3 10:38:30.123456 host-a k3s[1]: I0903 10:38:30.123456 1 a.go:1] x\n");
    let l = logs(&e);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].host.as_deref(), Some("host-a"));
    assert!(
        !l[0].ts_exact,
        "no year and no zone known: the time is a guess"
    );
    assert_eq!(l[0].ts.unwrap().timestamp_subsec_micros(), 123456);
}

#[test]
fn journalctl_short_iso_and_precise() {
    let (e, s) = read(
        format!(
            "2025-09-26T10:38:30-0500 n1 k3s[9]: {BANNER}\n2025-09-26T10:38:31.250000-05:00 n1 k3s[9]: time=\"2025-09-26T10:38:31-05:00\" level=info msg=\"x\"\n"
        )
        .as_bytes(),
    );
    assert_eq!(s.dominant(), Outer::JournalIso);
    let l = logs(&e);
    assert_eq!(
        l.len(),
        2,
        "short-iso-precise is not mistaken for docker: {l:?}"
    );
    assert_eq!(l[0].ts.unwrap().to_rfc3339(), "2025-09-26T15:38:30+00:00");
    assert_eq!(l[1].ts.unwrap().timestamp_subsec_millis(), 250);
    assert_eq!(l[1].host.as_deref(), Some("n1"));
}

#[test]
fn journalctl_short_full() {
    let (e, s) = read(format!("Fri 2025-09-26 15:38:30 UTC n1 k3s[9]: {BANNER}\n").as_bytes());
    assert_eq!(s.dominant(), Outer::JournalFull);
    assert_eq!(
        logs(&e)[0].ts.unwrap().to_rfc3339(),
        "2025-09-26T15:38:30+00:00"
    );
}

#[test]
fn journalctl_xe_catalog_and_boot_lines() {
    let text = format!(
        "-- Journal begins at Mon 2025-09-01 00:00:00 UTC, ends at Fri 2025-09-26 11:00:00 UTC. --\nSep 26 10:38:30 n1 systemd[1]: k3s.service: Main process exited, code=exited, status=1/FAILURE\n░░ Subject: Unit process exited\n░░ Defined-By: systemd\n░░ \n-- Subject: Unit k3s.service has failed\n-- Boot 0123456789abcdef0123456789abcdef --\nSep 26 10:40:00 n1 k3s[10]: {BANNER}\n-- No entries --\n"
    );
    let (e, s) = read(text.as_bytes());
    let kinds: Vec<&Kind> = e.iter().map(|x| &x.kind).collect();
    assert_eq!(kinds[1], &Kind::Unit);
    assert!(kinds.contains(&&Kind::HostReboot));
    assert_eq!(logs(&e).len(), 1);
    assert!(s.journal_catalog >= 5);
}

#[test]
fn several_hosts_in_one_journal() {
    let text = format!(
        "Sep 26 10:38:30 etcd-1 k3s[1]: {BANNER}\nSep 26 10:38:31 etcd-2 k3s[2]: {BANNER}\n"
    );
    let (e, _) = read(text.as_bytes());
    let hosts: Vec<&str> = logs(&e)
        .iter()
        .map(|x| x.host.as_deref().unwrap())
        .collect();
    assert_eq!(hosts, ["etcd-1", "etcd-2"]);
}

#[test]
fn kubectl_logs_prefix_and_timestamps() {
    let text = format!(
        "[pod/k3s-server-0/k3s] 2026-11-30T09:01:27.104512365Z {BANNER}\n[pod/k3s-server-1/k3s] {BANNER}\n"
    );
    let (e, s) = read(text.as_bytes());
    assert_eq!(s.dominant(), Outer::KubectlPrefix);
    let l = logs(&e);
    assert_eq!(l[0].host.as_deref(), Some("k3s-server-0"));
    assert_eq!(l[0].text, BANNER);
    assert_eq!(l[0].ts.unwrap().timestamp_subsec_nanos(), 104512365);
    assert_eq!(l[1].host.as_deref(), Some("k3s-server-1"));
}

#[test]
fn crlf_ansi_and_bytes_that_are_not_utf8() {
    let mut text = format!("\u{1b}[36m{BANNER}\u{1b}[0m\r\n").into_bytes();
    text.extend_from_slice(
        b"time=\"2025-09-26T10:38:31-05:00\" level=info msg=\"bad \xff\xfe bytes\"\r\n",
    );
    let (e, s) = read(&text);
    let l = logs(&e);
    assert_eq!(l[0].text, BANNER, "colours and CR gone");
    assert!(l[1].text.contains("bad"));
    assert!(l[1].text.contains('\u{fffd}'));
    assert_eq!((s.crlf, s.ansi, s.not_utf8), (2, 1, 1));
}

#[test]
fn prompts_name_the_node_and_filtering_commands_are_flagged() {
    let text = format!(
        "$ docker logs --tail 100 k3d-server-1 2>&1\n{BANNER}\nroot@etcd-2:~# journalctl -u k3s | grep -i registry\n[root@cp-1 ~]# k3s -v\nk3s version v1.33.4+k3s1 (abcdef12)\n# HELP go_goroutines Number of goroutines\n"
    );
    let (e, _) = read(text.as_bytes());
    let prompts: Vec<&Prompt> = e
        .iter()
        .filter_map(|x| match &x.kind {
            Kind::Prompt(p) => Some(&**p),
            _ => None,
        })
        .collect();
    assert_eq!(prompts.len(), 3);
    assert_eq!(prompts[0].node.as_deref(), Some("k3d-server-1"));
    assert!(!prompts[0].filters);
    assert!(prompts[1].filters, "| grep leaves lines out");
    assert_eq!(prompts[2].command, "k3s -v");
    let after: Vec<&Entry> = e
        .iter()
        .skip_while(|x| x.text != "k3s -v")
        .skip(1)
        .collect();
    assert_eq!(after[0].kind, Kind::Output, "k3s -v prints output, not log");
    assert_eq!(
        after[1].kind,
        Kind::Output,
        "`# HELP` is output, not a root prompt"
    );
}

#[test]
fn hard_wrapped_lines_are_joined() {
    // A journal line wrapped at 80 columns in the middle of a word.
    let full = "Sep 26 10:38:36 node2 k3s[82763]: time=\"2025-09-26T10:38:36-05:00\" level=info msg=\"Starting distributed registry mirror at https://10.0.0.2:6443/v2 for registries [*]\"";
    let (a, b) = full.split_at(80);
    let (e, s) = read(format!("{a}\n{b}\n").as_bytes());
    let l = logs(&e);
    assert_eq!(l.len(), 1);
    assert!(
        l[0].text
            .contains("Starting distributed registry mirror at https://"),
        "{}",
        l[0].text
    );
    assert_eq!(s.joined, 1);
    // A bare logrus line cut by a word-wrapping editor: the open quote says it goes on.
    let (e, _) = read(
        b"time=\"2025-09-26T10:38:36-05:00\" level=info msg=\"Starting distributed registry\nmirror at https://10.0.0.2:6443/v2\"\ntime=\"2025-09-26T10:38:37-05:00\" level=info msg=\"next\"\n",
    );
    let l = logs(&e);
    assert_eq!(l.len(), 2);
    assert!(l[0].text.contains("registry mirror at"), "{}", l[0].text);
}

#[test]
fn grep_excerpts_are_recognised() {
    let text = format!("12:{BANNER}\n--\n40-time=\"2025-09-26T10:38:40-05:00\" level=info msg=\"x\"\n...\n[snip]\n");
    let (e, s) = read(text.as_bytes());
    assert!(e
        .iter()
        .any(|x| x.grep_prefix && x.kind == Kind::Log && x.text == BANNER));
    assert_eq!(e.iter().filter(|x| x.kind == Kind::Gap).count(), 3);
    assert!(s.gaps >= 3);
}

#[test]
fn old_info_bracket_form() {
    let (e, s) = read(b"INFO[2019-03-13T05:57:01.879941090Z] Starting k3s v0.2.0 (2771ae1)\nFATA[2019-03-13T05:57:02.000000000Z] boom\n");
    let l = logs(&e);
    assert_eq!(l[0].inner, Inner::OldLogrus);
    assert!(l[0].ts_exact);
    assert!(l[1].fatal);
    assert!(s.describe().starts_with("old k3s INFO"));
}

#[test]
fn fatal_levels() {
    let (e, _) = read(b"time=\"2025-09-26T10:38:36-05:00\" level=fatal msg=\"Error: preparing server: failed\"\ntime=\"2025-09-26T10:38:36-05:00\" level=info msg=\"level=fatal in a message\"\n");
    let l = logs(&e);
    assert!(l[0].fatal);
    assert!(!l[1].fatal, "only the line's own level counts");
}

#[test]
fn text_that_is_no_log_at_all() {
    let s = detect([b"Hello, this is a README".as_slice(), b"with two lines"]);
    assert_eq!(s.recognised(), 0);
    assert!(looks_binary(b"\x7fELF\x02\x01\x01\x00\x00\x00"));
    assert!(!looks_binary(BANNER.as_bytes()));
}

#[test]
fn the_hand_read_short_prefix_agrees_with_its_regex() {
    let lines = [
        "Sep 26 10:38:30 node2 k3s[82763]: msg",
        "Sep  3 10:38:30.123456 host-a k3s[1]: x",
        "Dec 31 23:59:59 h systemd[1]: Stopping Lightweight Kubernetes...",
        "Jan  1 00:00:00 h kernel: eth0 up",
        "Sep 26 10:38:30 node2 k3s-agent[9]:",
        "Sep 26 10:38:30 node2 k3s: no pid",
        "Sep 26 10:38:30 node2 10: digits are no ident",
        "Sep 26 10:38:30  node2 k3s[1]: two spaces",
        "Foo 26 10:38:30 node2 k3s[1]: no month",
        "Sep 26 10:38 node2 k3s[1]: no seconds",
        "Sep 26 10:38:30 node2 k3s[x]: bad pid",
        "Sep 26 10:38:30",
    ];
    for l in lines {
        let by_hand = short_prefix(l).map(|p| (p.host.clone(), p.ident.clone(), p.end));
        let by_regex = JOURNAL_SHORT.captures(l).map(|c| {
            (
                Some(c.name("host").unwrap().range()),
                c.name("ident").unwrap().range(),
                c.get(0).unwrap().end(),
            )
        });
        assert_eq!(by_hand, by_regex, "{l}");
    }
    let p = short_prefix("Sep  3 10:38:30.1234 h k3s[1]: x").unwrap();
    let t = p.stamp.unwrap().at(2025).unwrap();
    assert_eq!(t.to_string(), "2025-09-03 10:38:30.123400");
}

#[test]
fn short_form_in_other_locales_or_without_its_date_keeps_host_and_identifier() {
    // journalctl's `%b` follows the locale; k3s #6119 pasted lines whose date was lost.
    let line = "12:09:44 node k3s[22385]: time=\"2022-09-12T12:09:44+08:00\" level=info msg=\"Starting k3s v1.24.4+k3s1 (c3f830e9)\"";
    for date in ["", " ", "Mär 12 ", "févr. 12 ", " 9月 12 ", "9월  2 "] {
        let text = format!("{date}{line}");
        let p = localised_prefix(&text).unwrap_or_else(|| panic!("{text}"));
        assert_eq!(&text[p.host.clone().unwrap()], "node", "{text}");
        assert_eq!(&text[p.ident.clone()], "k3s", "{text}");
        assert_eq!(p.pid, Some(22385));
        assert!(text[p.end..].starts_with("time="), "{text}");
        assert!(p.stamp.is_none());
    }
    // Not a journal prefix: klog, logrus, an English month left to `short_prefix`, no host.
    for text in [
        "I0912 12:09:42.176007    6852 clientconn.go:897] blockingPicker: the picked transport is not ready",
        "time=\"2022-09-12T12:09:42+08:00\" level=info msg=\"Acquiring lock file /var/lib/rancher/k3s/data/.lock\"",
        "Sept 12 12:09:42 node k3s[1]: x",
        "12:09:42 k3s[1]: x",
        "Mär 123 12:09:42 node k3s[1]: x",
    ] {
        assert!(localised_prefix(text).is_none(), "{text}");
    }
}

/// `journalctl -o json`: host, time and invocation from the fields; a message of bytes.
#[test]
fn journal_json_lines() {
    let text = concat!(
        r#"{"__REALTIME_TIMESTAMP":"1796155190222309","_HOSTNAME":"etcd-1","SYSLOG_IDENTIFIER":"k3s","_PID":"85","_SYSTEMD_UNIT":"k3s.service","_SYSTEMD_INVOCATION_ID":"aa11","MESSAGE":"time=\"2026-12-01T19:59:50Z\" level=info msg=\"Starting k3s v1.33.4+k3s1 (abcdef12)\""}"#,
        "\n",
        r#"{"__REALTIME_TIMESTAMP":"1796155190322309","_HOSTNAME":"cp-1","SYSLOG_IDENTIFIER":"k3s","_PID":"81","_SYSTEMD_INVOCATION_ID":"bb22","MESSAGE":[108,97,98,101,108,32,255,254]}"#,
        "\n",
        r#"{"__REALTIME_TIMESTAMP":"1796155194641718","_HOSTNAME":"etcd-2","SYSLOG_IDENTIFIER":"systemd","_PID":"1","UNIT":"rke2-server.service","INVOCATION_ID":"cc33","MESSAGE":"rke2-server.service: Failed with result 'timeout'."}"#,
        "\n",
    );
    let (e, s) = read(text.as_bytes());
    assert_eq!(s.dominant(), Outer::JournalJson);
    assert_eq!(e[0].kind, Kind::Log);
    assert_eq!(e[0].host.as_deref(), Some("etcd-1"));
    assert_eq!(e[0].invocation.as_deref(), Some("aa11"));
    assert!(e[0].text.starts_with("time=\"2026-12-01T19:59:50Z\""));
    assert_eq!(e[0].ts.unwrap().timestamp_micros(), 1796155190222309);
    assert!(e[0].ts_exact);
    assert_eq!(e[0].distro, Some(distro::Distro::K3s));
    assert_eq!(e[1].kind, Kind::Log);
    assert_eq!(e[1].text, "label \u{fffd}\u{fffd}");
    assert_eq!(e[2].kind, Kind::Unit);
    assert_eq!(e[2].host.as_deref(), Some("etcd-2"));
    assert_eq!(e[2].invocation.as_deref(), Some("cc33"));
    assert_eq!(e[2].distro, Some(distro::Distro::Rke2));
}

/// `journalctl -o export`: records between blank lines, a binary field whose length and bytes
/// hold line breaks (the reader splits them; the normaliser puts them back).
#[test]
fn journal_export_records_with_binary_fields() {
    let mut text: Vec<u8> = Vec::new();
    text.extend_from_slice(b"__CURSOR=s=1;i=1\n__REALTIME_TIMESTAMP=1796155190222309\n_HOSTNAME=etcd-1\nSYSLOG_IDENTIFIER=k3s\n_SYSTEMD_INVOCATION_ID=aa11\nMESSAGE=");
    text.extend_from_slice(BANNER.as_bytes());
    text.extend_from_slice(b"\n\n__CURSOR=s=1;i=2\n__REALTIME_TIMESTAMP=1796155190322309\n_HOSTNAME=cp-1\nSYSLOG_IDENTIFIER=k3s\nMESSAGE\n");
    // Length 10 is itself a `\n` byte; the message holds one too.
    let msg = b"a\nb \xff\xfe cde";
    assert_eq!(msg.len(), 10);
    text.extend_from_slice(&(msg.len() as u64).to_le_bytes());
    text.extend_from_slice(msg);
    text.extend_from_slice(b"\n_PID=81\n\n");
    assert!(!looks_binary(&text));
    let (e, s) = read(&text);
    assert_eq!(s.dominant(), Outer::JournalExport);
    let l = logs(&e);
    assert_eq!(l.len(), 2, "{e:?}");
    assert_eq!(l[0].text, BANNER);
    assert_eq!(l[0].host.as_deref(), Some("etcd-1"));
    assert_eq!(l[0].invocation.as_deref(), Some("aa11"));
    assert_eq!(
        l[0].line, 1,
        "an entry is numbered by its record's first line"
    );
    assert_eq!(l[1].text, "a b \u{fffd}\u{fffd} cde");
    assert_eq!(l[1].host.as_deref(), Some("cp-1"));
}

#[test]
fn journal_short_monotonic_unix_and_message_only() {
    let mono = format!("[ 1075.104562] etcd-1 k3s[88]: {BANNER}\n[ 1076.104562] etcd-1 k3s[88]: time=\"2025-09-26T10:38:31-05:00\" level=info msg=\"x\"\n");
    let (e, s) = read(mono.as_bytes());
    assert_eq!(s.dominant(), Outer::JournalMonotonic);
    let l = logs(&e);
    assert_eq!(l[0].host.as_deref(), Some("etcd-1"));
    assert_eq!(l[0].text, BANNER);
    assert_eq!(
        l[0].ts.unwrap().to_rfc3339(),
        "2025-09-26T15:38:30+00:00",
        "on the wall clock of the first line's own time"
    );
    assert_eq!(
        (l[1].ts.unwrap() - l[0].ts.unwrap()).num_milliseconds(),
        1000,
        "the monotonic clock between lines"
    );

    let unix = format!("1796155173.028662 etcd-1 k3s[85]: {BANNER}\n");
    let (e, s) = read(unix.as_bytes());
    assert_eq!(s.dominant(), Outer::JournalUnix);
    let l = logs(&e);
    assert_eq!(l[0].ts.unwrap().timestamp_micros(), 1796155173028662);
    assert!(l[0].ts_exact);
    assert_eq!(l[0].host.as_deref(), Some("etcd-1"));

    let grep = format!("k3s[2513]: {BANNER}\nsystemd[1]: k3s.service: Main process exited, code=killed, status=9/KILL\n");
    let (e, s) = read(grep.as_bytes());
    assert_eq!(s.dominant(), Outer::JournalIdent);
    assert_eq!(e[0].kind, Kind::Log);
    assert_eq!(e[0].host, None);
    assert_eq!(e[0].text, BANNER);
    assert_eq!(e[1].kind, Kind::Unit);
    // Prose is not a journal line: the identifier needs its pid.
    let (e, _) = read(b"note: this is prose\n");
    assert_ne!(e[0].outer, Outer::JournalIdent);
}

/// `-o cat` keeps systemd's lines about the unit without their identifier: still unit lines.
#[test]
fn journal_cat_unit_lines() {
    let text = format!("{BANNER}\nk3s.service: Failed with result 'timeout'.\nFailed to start k3s.service - Lightweight Kubernetes.\n");
    let (e, _) = read(text.as_bytes());
    assert_eq!(e[0].kind, Kind::Log);
    assert_eq!(e[1].kind, Kind::Unit);
    assert_eq!(e[2].kind, Kind::Unit);
}

/// The word-at-a-time test agrees with the byte-by-byte one on every byte at every position.
#[test]
fn plain_ascii_agrees_with_the_byte_test() {
    let ok = |s: &[u8]| s.iter().all(|&b| (0x20..0x7f).contains(&b) || b == b'\t');
    for len in [1usize, 7, 8, 9, 16, 23] {
        for pos in 0..len {
            for b in 0..=255u8 {
                let mut line = vec![b'a'; len];
                line[pos] = b;
                assert_eq!(plain_ascii(&line), ok(&line), "byte {b:#x} at {pos}/{len}");
            }
        }
    }
    assert!(plain_ascii(b""));
}

/// The hand-read klog test says what the regex says: on crafted edges (Unicode digits and
/// spaces, `]` at once, no space after it, short lines) and on every line of the real corpora.
#[test]
fn klog_by_hand_agrees_with_the_regex() {
    let edges = [
        "I0926 10:38:32.000000   82763 server.go:123] klog line",
        "I0926 10:38:32.000000 82763 server.go:123] ",
        "I0926 10:38:32.000000\t82763 x] y",
        "I0926 10:38:32.000000   82763 ] x",
        "I0926 10:38:32.000000   82763 x]y",
        "I0926 10:38:32.000000   82763 x]",
        "I0926 10:38:32.   82763 x] y",
        "I0926 10:38:32.1 82763x] y",
        "I0926 10:38:32.1  x] y",
        "X0926 10:38:32.1 1 x] y",
        "I092 10:38:32.1 1 x] y",
        "I0926 10:38:32.1\u{3000}1 x] y",
        "I0926 10:38:32.\u{0663} 1 x] y",
        "I0926 10:38:32.1 \u{0663} x] y",
        "I\u{0663}926 10:38:32.1 1 x] y",
        "I0926 10:38:32.1 1 é] y",
        "I0926 10:38:32",
        "",
    ];
    for t in edges {
        assert_eq!(is_klog(t), KLOG.is_match(t), "{t:?}");
    }
    let mut klog = 0;
    for (path, bytes) in crate::inspect::fixture_files() {
        for line in String::from_utf8_lossy(&bytes).lines() {
            // Each line, and its message after a journal or docker prefix.
            for t in [line, line.split_once(": ").map_or("", |(_, m)| m)] {
                assert_eq!(is_klog(t), KLOG.is_match(t), "{}: {t}", path.display());
                klog += usize::from(KLOG.is_match(t));
            }
        }
    }
    assert!(klog > 10, "{klog} klog lines in the corpora");
}

/// `may_be_gap` is false only where GAP cannot match: crafted markers (ASCII and Unicode forms)
/// and every line of the corpora.
#[test]
fn the_gap_guard_never_hides_a_gap() {
    let edges = [
        "...",
        "…",
        "[...]",
        "[…]",
        "<snip>",
        "(snipped)",
        "[ 12 more lines truncated ]",
        "12 lines omitted",
        "SKIPPED",
        "removed for brevity",
        "… truncated",
        "s\u{212A}ipped",
        "\u{17F}nip",
        "\u{0663} lines removed",
        "Sep 26 10:38:36 node k3s[1]: x",
        "snapshot",
    ];
    for t in edges {
        assert!(!GAP.is_match(t) || may_be_gap(t), "{t:?}");
    }
    let matched = edges.iter().filter(|t| GAP.is_match(t)).count();
    assert!(matched >= 13, "{matched} of the crafted markers are gaps");
    for (path, bytes) in crate::inspect::fixture_files() {
        for line in String::from_utf8_lossy(&bytes).lines() {
            let t = line.trim();
            assert!(!GAP.is_match(t) || may_be_gap(t), "{}: {t}", path.display());
        }
    }
}

/// The prompt guard is false only where `PROMPT` cannot match.
#[test]
fn the_prompt_guard_never_hides_a_prompt() {
    let lines = [
        "root@node1:~# k3s -v",
        "user@host:~$ journalctl -u k3s",
        "[root@etcd-1 ~]# kubectl get nodes",
        "[ec2-user@ip-10-0-0-1 ~]$ sudo k3s -v",
        "me@h $ ls",
        "Sep 26 10:38:36 node k3s[1]: mail me@example.com $ x",
        "text with user@host:~$ inside",
    ];
    let mut matched = 0;
    for l in lines {
        if PROMPT.is_match(l) {
            matched += 1;
            assert!(maybe_user_at_host(l), "{l}");
        }
    }
    assert!(matched >= 5, "{matched}");
}

/// `logrus_stamp` (logrus's `time="…"` read by hand) gives chrono's answer wherever it gives
/// one: crafted stamps (every fraction length, offsets, the forms RFC 3339 allows and logrus
/// does not write, impossible dates and times) and every `time="…"` of the corpora.
#[test]
fn logrus_stamp_by_hand_agrees_with_chrono() {
    let general = |t: &str| {
        LOGRUS_TIME
            .captures(&format!("time=\"{t}"))
            .and_then(|c| c.get(1).map(|m| m.as_str().to_string()))
            .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
    };
    let mut stamps: Vec<String> = Vec::new();
    for base in [
        "2025-09-26T10:38:36",
        "2024-02-29T23:59:59",
        "2023-02-29T00:00:00",
    ] {
        for frac in [
            "",
            ".",
            ".1",
            ".123",
            ".123456",
            ".123456789",
            ".1234567890",
            ".12x",
        ] {
            for zone in [
                "Z", "z", "+00:00", "-05:00", "+05:30", "-00:00", "+24:00", "+05:60", "+0500",
                "+05", "", " ",
            ] {
                for end in ["\"", "\" level=info", "", "x\""] {
                    stamps.push(format!("{base}{frac}{zone}{end}"));
                }
            }
        }
    }
    for odd in [
        "2025-09-26t10:38:36Z\"",
        "2025-09-26 10:38:36Z\"",
        "2025-09-26T24:00:00Z\"",
        "2025-09-26T23:60:00Z\"",
        "2025-09-26T23:59:60Z\"",
        "2025-13-26T10:38:36Z\"",
        "2025-00-26T10:38:36Z\"",
        "2025-09-00T10:38:36Z\"",
        "0000-01-01T00:00:00Z\"",
        "9999-12-31T23:59:59.999999999+23:59\"",
        "2025-9-26T10:38:36Z\"",
        "2025-09-26T10:38:3Z\"",
        "２025-09-26T10:38:36Z\"",
        "",
    ] {
        stamps.push(odd.to_string());
    }
    for (_, bytes) in crate::inspect::fixture_files() {
        let text = String::from_utf8_lossy(&bytes);
        for (i, _) in text.match_indices("time=\"") {
            let rest: String = text[i + 6..].chars().take(60).collect();
            stamps.push(rest.lines().next().unwrap_or("").to_string());
        }
    }
    let mut by_hand = 0;
    for t in &stamps {
        if let Some(got) = logrus_stamp(t) {
            by_hand += 1;
            assert_eq!(Some(got), general(t), "{t:?}");
            assert_eq!(got.offset(), general(t).unwrap().offset(), "{t:?}");
        }
    }
    assert!(
        by_hand > 100,
        "{by_hand} of {} stamps read by hand",
        stamps.len()
    );
}

/// `logrus_fatal` (by hand) answers as `LOGRUS_FATAL` does: crafted lines and every line of the
/// corpora.
#[test]
fn logrus_fatal_by_hand_agrees_with_the_regex() {
    let edges = [
        "level=fatal msg=x",
        "time=\"t\" level=fatal msg=x",
        "time=\"t\" level=panic",
        "time=\"t\"\tlevel=fatal",
        "time=\"t\"\u{0b}level=fatal",
        "time=\"t\"\u{a0}level=fatal",
        "time=\"t\" level=fatalx",
        "time=\"t\" level=fatal_",
        "time=\"t\" level=fatal-",
        "time=\"t\" level=fatalé",
        "time=\"t\" xlevel=fatal",
        "time=\"t\" level=info msg=\"level=fatal\"",
        "time=\"t\" level=info msg=\"a level=panic\"",
        "level=fata",
        "level=",
        "",
    ];
    for t in edges {
        assert_eq!(logrus_fatal(t), LOGRUS_FATAL.is_match(t), "{t:?}");
    }
    let mut fatal = 0;
    for (path, bytes) in crate::inspect::fixture_files() {
        for line in String::from_utf8_lossy(&bytes).lines() {
            for t in [line, line.split_once(": ").map_or("", |(_, m)| m)] {
                assert_eq!(
                    logrus_fatal(t),
                    LOGRUS_FATAL.is_match(t),
                    "{}: {t}",
                    path.display()
                );
                fatal += usize::from(LOGRUS_FATAL.is_match(t));
            }
        }
    }
    assert!(fatal > 5, "{fatal} fatal lines in the corpora");
}
