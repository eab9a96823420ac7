//! Benchmark (not a test): `repro inspect` on large generated journals, paired with ripgrep.
//!
//! Writes journals in `journalctl -u k3s` short format — four hosts of an etcd-split cluster
//! interleaved, each booting again and again, every boot its banner, k3s's start-up lines and a
//! long tail — at two sizes and two densities: *sparse*, whose tail is kubelet chatter that no
//! signal pattern matches (nearly every line of a real journal), and *dense*, whose tail is k3s's
//! own lines that each carry a signal (the worst case: every line goes through the patterns, the
//! secret cues and the boot's bookkeeping). Reads each with `inspect` (the same code as
//! `repro inspect FILE`), and prints lines per second, bytes per second and the peak resident
//! memory of the process after each. Memory that does not grow from the small to the large
//! file is what "bounded memory" means here.
//!
//! In the same run, on the same file, `rg` (Debian's ripgrep) counts the lines matching the same
//! signal patterns, alternating with inspect, so the ratio of wall times is paired (skipped with
//! a message where `rg` is not installed). The figures go into `target/bench/bench.json` under
//! `inspect` (the file `repro-bench` writes; created if missing).
//!
//! Run with `make bench` (or `cargo run --release --example inspect_bench`);
//! `INSPECT_BENCH_MB=small,large` sets the sizes (default 256,1024), `INSPECT_BENCH_PAIRS` the
//! paired repetitions (default 3; the medians count), `INSPECT_BENCH_KEEP=1` keeps the files. Prints figures; asserts nothing. The
//! generated files go to the system temp folder and are removed afterwards.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
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

/// Lines that carry a signal, each as k3s prints it (HOST and # filled in): the tail of a boot in
/// the dense journal, where most lines match some pattern.
const SIGNAL_LINES: [&str; 8] = [
    "level=info msg=\"Running kubelet --address=0.0.0.0 --anonymous-auth=false --authentication-token-webhook=true --authorization-mode=Webhook --cgroup-driver=systemd --hostname-override=HOST\"",
    "level=info msg=\"Starting distributed registry mirror at https://10.0.0.#:6443/v2 for registries [docker.io registry.k8s.io]\"",
    "level=info msg=\"Starting distributed registry P2P node at 10.0.0.#:5001\"",
    "level=info msg=\"Running kube-apiserver --advertise-port=6443 --allow-privileged=true --anonymous-auth=false --api-audiences=https://kubernetes.default.svc.cluster.local,k3s --authorization-mode=Node,RBAC\"",
    "level=info msg=\"Adding member HOST-#=https://10.0.0.#:2380 to etcd cluster [etcd-1=https://10.0.0.1:2380]\"",
    "level=info msg=\"Starting etcd to join cluster with members [etcd-1-#=https://10.0.0.1:2380]\"",
    "level=warning msg=\"critical configuration mismatched: cluster-cidr\"",
    "level=info msg=\"k3s is up and running\"",
];

/// How many of a boot's tail lines carry a signal: none (k3s's start lines only, then kubelet
/// chatter) or all.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Density {
    Sparse,
    Dense,
}

impl Density {
    fn name(self) -> &'static str {
        match self {
            Density::Sparse => "sparse",
            Density::Dense => "dense",
        }
    }
}

/// Writes about `mb` MiB of journal; returns the number of lines.
fn generate(path: &Path, mb: u64, density: Density) -> std::io::Result<u64> {
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
            // The long tail of an hour-long boot: kubelet's klog lines, or (dense) k3s's lines
            // that carry a signal, one after another.
            for i in 0..5_000u64 {
                let text = match density {
                    Density::Sparse => format!("I0926 12:00:00.{i:06}    {boot} reconciler_common.go:245] \"operationExecutor.VerifyControllerAttachedVolume started for volume\" volume=\"kube-api-access-{i}\" pod=\"kube-system/coredns-{boot}\""),
                    Density::Dense => {
                        let (h, m, sec) = j.clock();
                        let line = SIGNAL_LINES[(i as usize) % SIGNAL_LINES.len()]
                            .replace("HOST", host)
                            .replace('#', &(i % 250 + 1).to_string());
                        format!("time=\"2025-09-26T{h:02}:{m:02}:{sec:02}Z\" {line}")
                    }
                };
                j.emit(host, boot, &text)?;
            }
        }
    }
    j.w.flush()?;
    Ok(j.lines)
}

/// CPU seconds (user + system) this process used so far, and those of its waited-for children
/// (`rg`): on a machine shared with other work, CPU time says more than wall time.
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime, stime, cutime and cstime are fields 14 to 17 of the whole line: 12 to 15 after
    // the name.
    let at = |i: usize| f.get(i).copied().unwrap_or(0) as f64 / 100.0;
    (at(11) + at(12), at(13) + at(14))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Every line pattern `inspect` matches (the signals' up, down, value and settled-by lines).
fn patterns(cat: &Catalog) -> Vec<String> {
    let mut out = Vec::new();
    for sig in cat.signals.by_name.values() {
        for list in [&sig.up, &sig.down, &sig.value, &sig.settled_by] {
            out.extend(list.iter().map(|p| p.regex.as_str().to_string()));
        }
    }
    out
}

/// `rg --count` with these patterns on the file: (wall s, CPU s, matching lines), or why not.
fn ripgrep(path: &Path, pats: &[String]) -> Result<(f64, f64, u64), String> {
    let mut cmd = Command::new("rg");
    cmd.args(["--no-config", "--count", "--no-filename"]);
    // rg joins its patterns into one regex, where two groups of one name are an error; the
    // groups change nothing of what matches.
    for p in pats {
        cmd.arg("-e").arg(p.replace("(?P<value>", "(?:"));
    }
    cmd.arg(path);
    let t = Instant::now();
    let (_, c0) = cpu_seconds();
    let out = cmd
        .output()
        .map_err(|e| format!("rg not run ({e}); install ripgrep (apt-get install ripgrep)"))?;
    let wall = t.elapsed().as_secs_f64();
    let (_, c1) = cpu_seconds();
    if !out.status.success() {
        return Err(format!(
            "rg failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let count = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    Ok((wall, c1 - c0, count))
}

/// Puts `figures` into the benchmark's JSON file under `inspect`, keeping what is there.
fn record(figures: serde_json::Value) -> anyhow::Result<PathBuf> {
    let path = PathBuf::from("target/bench/bench.json");
    let mut doc: serde_json::Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| serde_json::json!({}));
    if let Some(map) = doc.as_object_mut() {
        map.insert("inspect".into(), figures);
    }
    std::fs::create_dir_all("target/bench")?;
    std::fs::write(&path, serde_json::to_string_pretty(&doc)? + "\n")?;
    Ok(path)
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
        .unwrap_or_else(|_| "256,1024".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let pairs: usize = std::env::var("INSPECT_BENCH_PAIRS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let cat = Catalog::load(None).map_err(|d| anyhow::anyhow!("{d}"))?;
    let pats = patterns(&cat);
    let opts = inspect::Options {
        settle: None,
        excerpt: false,
        secrets: Vec::new(),
        progress: false,
    };
    println!(
        "repro inspect on generated journals (4 hosts, journalctl short format), paired with rg \
         ({} patterns), medians of {pairs}",
        pats.len()
    );
    // What rg is asked, so the comparison is stated: the same patterns on the same file, every
    // matching line counted. One file is searched on one thread (rg parallelises over files);
    // rg maps the file into memory where inspect reads it. Both CPU times count every thread.
    println!(
        "rg: rg --no-config --count --no-filename -e PATTERN ({} times) FILE; inspect: 2 threads \
         (read, search and, while the other is behind, preread | take in; boots judged on both), \
         CPU time of all",
        pats.len()
    );
    println!(
        "{:>9}  {:>7}  {:>11}  {:>8}  {:>6}  {:>7}  {:>7}  {:>15}  {:>11}  {:>8}  {:>8}  {:>10}  {:>10}  {:>14}",
        "size",
        "journal",
        "lines",
        "signal %",
        "boots",
        "wall s",
        "CPU s",
        "lines/CPU s",
        "MB/CPU s",
        "rg wall",
        "rg CPU",
        "inspect/rg",
        "CPU ratio",
        "peak RSS (MiB)"
    );
    let mut rows = Vec::new();
    let mut rg_missing = None;
    for (mb, density) in sizes
        .iter()
        .flat_map(|&mb| [Density::Sparse, Density::Dense].map(|d| (mb, d)))
    {
        let path = std::env::temp_dir().join(format!(
            "repro-inspect-bench-{}-{mb}-{}.journal",
            std::process::id(),
            density.name()
        ));
        let lines = generate(&path, mb, density)?;
        let resolved = sources::resolve(std::slice::from_ref(&path), &[], &[])
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let (mut walls, mut cpus, mut rg_walls, mut rg_cpus) = (vec![], vec![], vec![], vec![]);
        let mut last = None;
        let mut rg_lines = None;
        for _ in 0..pairs {
            let t = Instant::now();
            let (cpu0, _) = cpu_seconds();
            let result = inspect::inspect(&resolved, &cat, &opts);
            walls.push(t.elapsed().as_secs_f64());
            cpus.push(cpu_seconds().0 - cpu0);
            last = Some(result.map_err(|e| anyhow::anyhow!("{e}"))?);
            match ripgrep(&path, &pats) {
                Ok((w, c, n)) => {
                    rg_walls.push(w);
                    rg_cpus.push(c);
                    rg_lines = Some(n);
                }
                Err(why) => rg_missing = Some(why),
            }
        }
        // INSPECT_BENCH_KEEP=1 keeps the journal (to diff `repro inspect --format json` on it).
        if std::env::var_os("INSPECT_BENCH_KEEP").is_some() {
            println!("kept: {}", path.display());
        } else {
            std::fs::remove_file(&path)?;
        }
        let Some((report, figures)) = last else {
            continue;
        };
        let boots: usize = report
            .inputs
            .iter()
            .flat_map(|i| &i.nodes)
            .map(|n| n.boots.len())
            .sum();
        assert_eq!(figures.lines, lines, "every generated line was read");
        let (wall, cpu) = (median(walls), median(cpus).max(0.01));
        let rg = (!rg_walls.is_empty()).then(|| (median(rg_walls), median(rg_cpus)));
        let ratio = rg.map(|(w, _)| wall / w.max(0.001));
        // CPU time says more than wall time on a machine shared with other work (both of
        // inspect's threads count; rg searches one file on one).
        let cpu_ratio = rg.map(|(_, c)| cpu / c.max(0.01));
        let mb_per_cpu_s = figures.bytes as f64 / cpu / 1e6;
        // The share of lines a signal pattern matches, as rg counts them.
        let signal_share = rg_lines.map(|n| n as f64 / figures.lines.max(1) as f64);
        let dash = || "-".to_string();
        println!(
            "{:>6} MiB  {:>7}  {:>11}  {:>8}  {:>6}  {:>7.2}  {:>7.2}  {:>15.0}  {:>11.0}  {:>8}  {:>8}  {:>10}  {:>10}  {:>14.1}",
            mb,
            density.name(),
            figures.lines,
            signal_share.map_or_else(dash, |f| format!("{:.1}", f * 100.0)),
            boots,
            wall,
            cpu,
            figures.lines as f64 / cpu,
            mb_per_cpu_s,
            rg.map_or_else(dash, |(w, _)| format!("{w:.2}")),
            rg.map_or_else(dash, |(_, c)| format!("{c:.2}")),
            ratio.map_or_else(dash, |r| format!("{r:.2}")),
            cpu_ratio.map_or_else(dash, |r| format!("{r:.2}")),
            peak_rss_kib() as f64 / 1024.0
        );
        rows.push(serde_json::json!({
            "mib": mb,
            "journal": density.name(),
            "signal_line_share": signal_share,
            "bytes": figures.bytes,
            "lines": figures.lines,
            "boots": boots,
            "wall_s": wall,
            "cpu_s": cpu,
            "lines_per_cpu_s": figures.lines as f64 / cpu,
            "mb_per_cpu_s": mb_per_cpu_s,
            "rg_wall_s": rg.map(|(w, _)| w),
            "rg_cpu_s": rg.map(|(_, c)| c),
            "rg_matching_lines": rg_lines,
            "inspect_over_rg_wall": ratio,
            "inspect_over_rg_cpu": cpu_ratio,
            "peak_rss_mib": peak_rss_kib() as f64 / 1024.0,
        }));
    }
    if let Some(why) = &rg_missing {
        println!("rg: skipped: {why}");
    }
    let path = record(serde_json::json!({
        "pairs": pairs,
        "patterns": pats.len(),
        "rg": rg_missing.map_or_else(|| serde_json::json!("ripgrep"), |why| serde_json::json!({"skipped": why})),
        "sizes": rows,
    }))?;
    println!("figures: {} (`inspect`)", path.display());
    Ok(())
}
