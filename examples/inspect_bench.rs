//! Benchmark (not a test): `repro inspect` on large generated journals.
//!
//! Writes a journal in `journalctl -u k3s` short format — four hosts of an etcd-split cluster
//! interleaved, each booting again and again, every boot its banner, k3s's start-up lines and a
//! long tail of kubelet chatter — at two sizes, reads each with `inspect` (the same code as
//! `repro inspect FILE`), and prints lines per second, bytes per second and the peak resident
//! memory of the process after each. Memory that does not grow from the small to the large
//! file is what "bounded memory" means here.
//!
//! Run with `make bench` (or `cargo run --release --example inspect_bench`);
//! `INSPECT_BENCH_MB=small,large` sets the sizes (default 128,1024). Prints figures; asserts
//! nothing. The generated files go to the system temp folder and are removed afterwards.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use repro::inspect::{self, sources, Catalog};

const HOSTS: [&str; 4] = ["etcd-1", "etcd-2", "etcd-3", "cp-1"];

/// A journal being written: one second per line, so settle windows pass as in a real boot.
struct Journal {
    w: BufWriter<std::fs::File>,
    t: u64,
    bytes: u64,
    lines: u64,
}

impl Journal {
    fn clock(&self) -> (u64, u64, u64) {
        ((self.t / 3600) % 24, (self.t / 60) % 60, self.t % 60)
    }

    fn emit(&mut self, host: &str, pid: u64, text: &str) -> std::io::Result<()> {
        self.t += 1;
        let (h, m, s) = self.clock();
        let line = format!("Sep 26 {h:02}:{m:02}:{s:02} {host} k3s[{pid}]: {text}\n");
        self.bytes += line.len() as u64;
        self.lines += 1;
        self.w.write_all(line.as_bytes())
    }
}

const START: [&str; 10] = [
    "level=info msg=\"Starting k3s v1.33.4+k3s1 (abcdef12)\"",
    "level=info msg=\"Managed etcd cluster bootstrap already complete and initialized\"",
    "level=info msg=\"Starting etcd for existing cluster member\"",
    "level=info msg=\"ETCD server is now running\"",
    "level=info msg=\"etcd data store connection OK\"",
    "level=info msg=\"Waiting for apiserver addresses\"",
    "level=info msg=\"k3s is up and running\"",
    "level=info msg=\"Running containerd -c /var/lib/rancher/k3s/agent/etc/containerd/config.toml\"",
    "level=info msg=\"containerd is now running\"",
    "level=info msg=\"Running kubelet --address=0.0.0.0 --anonymous-auth=false --authentication-token-webhook=true --authorization-mode=Webhook --cgroup-driver=systemd --hostname-override=HOST\"",
];

/// Writes about `mb` MiB of journal; returns the number of lines.
fn generate(path: &Path, mb: u64) -> std::io::Result<u64> {
    let mut j = Journal {
        w: BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?),
        t: 0,
        bytes: 0,
        lines: 0,
    };
    let mut boot = 0u64;
    while j.bytes < mb << 20 {
        boot += 1;
        for host in HOSTS {
            for s in START {
                let (h, m, sec) = j.clock();
                let text = format!(
                    "time=\"2025-09-26T{h:02}:{m:02}:{sec:02}Z\" {}",
                    s.replace("HOST", host)
                );
                j.emit(host, boot, &text)?;
            }
            // The long tail of an hour-long boot: kubelet's klog lines.
            for i in 0..5_000u64 {
                let text = format!("I0926 12:00:00.{i:06}    {boot} reconciler_common.go:245] \"operationExecutor.VerifyControllerAttachedVolume started for volume\" volume=\"kube-api-access-{i}\" pod=\"kube-system/coredns-{boot}\"");
                j.emit(host, boot, &text)?;
            }
        }
    }
    j.w.flush()?;
    Ok(j.lines)
}

/// CPU seconds (user + system) this process used so far: on a machine shared with other work,
/// lines per CPU second says more than lines per wall second.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    ticks as f64 / 100.0
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn main() -> anyhow::Result<()> {
    let sizes: Vec<u64> = std::env::var("INSPECT_BENCH_MB")
        .unwrap_or_else(|_| "128,1024".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let cat = Catalog::load(None).map_err(|d| anyhow::anyhow!("{d}"))?;
    let opts = inspect::Options {
        settle: None,
        excerpt: false,
        secrets: Vec::new(),
        progress: false,
    };
    println!("repro inspect on generated journals (4 hosts, journalctl short format)");
    println!(
        "{:>9}  {:>11}  {:>6}  {:>7}  {:>7}  {:>11}  {:>15}  {:>9}  {:>14}",
        "size",
        "lines",
        "boots",
        "wall s",
        "CPU s",
        "lines/s",
        "lines/CPU s",
        "MiB/s",
        "peak RSS (MiB)"
    );
    for mb in sizes {
        let path = std::env::temp_dir().join(format!(
            "repro-inspect-bench-{}-{mb}.journal",
            std::process::id()
        ));
        let lines = generate(&path, mb)?;
        let resolved = sources::resolve(std::slice::from_ref(&path), &[], &[])
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let t = Instant::now();
        let cpu0 = cpu_seconds();
        let result = inspect::inspect(&resolved, &cat, &opts);
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu0;
        std::fs::remove_file(&path)?;
        let (report, figures) = result.map_err(|e| anyhow::anyhow!("{e}"))?;
        let boots: usize = report
            .inputs
            .iter()
            .flat_map(|i| &i.nodes)
            .map(|n| n.boots.len())
            .sum();
        assert_eq!(figures.lines, lines, "every generated line was read");
        println!(
            "{:>6} MiB  {:>11}  {:>6}  {:>7.2}  {:>7.2}  {:>11.0}  {:>15.0}  {:>9.1}  {:>14.1}",
            mb,
            figures.lines,
            boots,
            secs,
            cpu,
            figures.lines as f64 / secs,
            figures.lines as f64 / cpu.max(0.01),
            figures.bytes as f64 / secs / (1 << 20) as f64,
            peak_rss_kib() as f64 / 1024.0
        );
    }
    Ok(())
}
