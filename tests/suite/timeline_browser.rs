#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong

//! timeline.html in a real headless browser (Debian's `chromium`): it renders, its evidence is
//! reachable without hovering (every mark is focusable and a click lands on the evidence row),
//! and a long step name wraps instead of being cut.
//!
//! The page itself has no script. The test loads it in an iframe of a small harness page whose
//! script does what a person would (focus each mark, click one, read the layout) and writes a
//! JSON verdict into the DOM, which `chromium --dump-dom` prints.
//!
//! Without chromium the test is skipped with a message on the terminal — except under CI
//! (`CI=true`), where a missing browser fails it: CI must run it (.ci/run installs chromium).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{copy_dir, repro, root};

use serde_json::Value;

/// A step name far wider than its band in the chart.
const LONG_NAME: &str = "enable embedded-registry on etcd-2 and etcd-3, which are etcd-only servers that joined etcd-1, and then restart both of them one after the other while etcd-1 keeps its old configuration untouched";

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("REPRO_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Headless chromium with its own profile folder, as a container without a GPU runs it.
fn headless(browser: &Path, profile: &Path) -> Command {
    let mut c = Command::new(browser);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The browser, or `None` after saying on the terminal that `test` is skipped; under CI a
/// missing browser fails the test instead.
fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let browser = chromium();
    if browser.is_none() {
        assert!(
            !under_ci(),
            "CI=true but no chromium on PATH: the timeline browser test must run in CI (.ci/run installs chromium)"
        );
        // Written to the terminal directly: the test harness hides a passing test's output.
        let _ = writeln!(
            std::io::stderr(),
            "\nSKIPPED {test}: no `chromium` on PATH (apt-get install chromium; README prerequisites)\n"
        );
    }
    browser
}

/// The fixture run with a long first step name, rendered by the real binary.
fn timeline(dir: &Path) -> PathBuf {
    copy_dir(&root().join("tests/fixtures/run-etcd-split-buggy"), dir);
    let path = dir.join("result.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["steps"][0]["name"] = Value::from(LONG_NAME);
    v["planned_steps"][0]["name"] = Value::from(LONG_NAME);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = repro().arg("report").arg(dir).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    dir.join("timeline.html")
}

/// The harness: what a person without a mouse does, as script, reported as JSON.
const HARNESS: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"></head><body>
<iframe id="f" src="timeline.html" style="width:760px;height:900px;border:0"></iframe>
<pre id="result">pending</pre>
<script>
const out = {};
const f = document.getElementById('f');
f.addEventListener('load', () => {
  try {
    const w = f.contentWindow, d = f.contentDocument;
    const svg = d.querySelector('svg[role=img]');
    const box = svg.getBoundingClientRect();
    out.svg_width = box.width;
    out.svg_height = box.height;
    out.boot_bars = d.querySelectorAll('g.boot rect').length;
    const marks = Array.from(d.querySelectorAll('a.mark'));
    out.marks = marks.length;
    out.sig_marks = d.querySelectorAll('a.mark g.sig').length;
    out.focusable = marks.filter(m => { m.focus(); return d.activeElement === m; }).length;
    out.broken_links = marks.map(m => m.getAttribute('href'))
      .filter(h => !h || !h.startsWith('#') || !d.getElementById(h.slice(1)));
    const target = 'obs-1-etcd-2-embedded-registry';
    const mark = marks.find(m => m.getAttribute('href') === '#' + target && m.querySelector('g.sig'));
    out.mark_label = mark ? mark.getAttribute('aria-label') : null;
    const row = d.getElementById(target);
    out.row_text = row ? row.textContent : null;
    const before = getComputedStyle(row.querySelector('td')).backgroundColor;
    mark.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: w}));
    setTimeout(() => {
      out.hash = w.location.hash;
      const td = row.querySelector('td');
      out.row_bg_before = before;
      out.row_bg_after = getComputedStyle(td).backgroundColor;
      const r = row.getBoundingClientRect();
      out.row_top = r.top;
      out.row_bottom = r.bottom;
      out.viewport = w.innerHeight;
      const li = d.getElementById('step-1');
      out.step_text = li ? li.textContent : null;
      out.step_scroll_width = li.scrollWidth;
      out.step_client_width = li.clientWidth;
      out.step_height = li.getBoundingClientRect().height;
      out.step_line_height = parseFloat(getComputedStyle(li).lineHeight) || 20;
      out.details = d.querySelectorAll('td.ev details.full').length;
      document.getElementById('result').textContent = JSON.stringify(out);
    }, 500);
  } catch (e) {
    document.getElementById('result').textContent = JSON.stringify({error: String(e), partial: out});
  }
});
</script></body></html>
"#;

#[test]
fn timeline_in_headless_chromium() {
    let Some(browser) = chromium_or_skip("timeline_in_headless_chromium") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let page = timeline(tmp.path());
    std::fs::write(tmp.path().join("harness.html"), HARNESS).unwrap();
    let profile = tmp.path().join("profile");
    let out = headless(&browser, &profile)
        .args([
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
            "--window-size=800,1000",
        ])
        .arg("--dump-dom")
        .arg(format!(
            "file://{}",
            tmp.path().join("harness.html").display()
        ))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", browser.display()));
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split("<pre id=\"result\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "no result in the DOM:\n{dom}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let json = json
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let r: Value = serde_json::from_str(&json).unwrap_or_else(|e| {
        panic!(
            "{e}: {json}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(r.get("error").is_none(), "{r:#}");

    // It renders: the chart has a size, every boot has its bar.
    assert!(r["svg_width"].as_f64().unwrap() > 600.0, "{r:#}");
    assert!(r["svg_height"].as_f64().unwrap() > 200.0, "{r:#}");
    assert_eq!(r["boot_bars"], 9, "{r:#}");

    // Evidence without hover: every mark (13 signal dots + the red cells) is a link that takes
    // focus and points at an existing row.
    assert_eq!(r["sig_marks"], 13, "{r:#}");
    assert!(r["marks"].as_u64().unwrap() > 13, "{r:#}");
    assert_eq!(r["focusable"], r["marks"], "{r:#}");
    assert_eq!(r["broken_links"], Value::Array(vec![]), "{r:#}");
    assert!(
        r["mark_label"]
            .as_str()
            .unwrap()
            .contains("step 1 etcd-2 embedded-registry: down"),
        "{r:#}"
    );
    // A click lands on the row, which shows the evidence, is highlighted and on screen.
    assert_eq!(r["hash"], "#obs-1-etcd-2-embedded-registry", "{r:#}");
    assert!(
        r["row_text"].as_str().unwrap().contains("Running kubelet"),
        "{r:#}"
    );
    assert_ne!(r["row_bg_after"], r["row_bg_before"], "{r:#}");
    let (top, bottom) = (
        r["row_top"].as_f64().unwrap(),
        r["row_bottom"].as_f64().unwrap(),
    );
    assert!(
        top >= 0.0 && bottom <= r["viewport"].as_f64().unwrap(),
        "{r:#}"
    );
    // Long evidence lines open in place.
    assert!(r["details"].as_u64().unwrap() >= 1, "{r:#}");

    // The long step name: all of it, wrapped (several lines), nothing cut off to the side.
    assert!(
        r["step_text"].as_str().unwrap().contains(LONG_NAME),
        "{r:#}"
    );
    assert!(
        r["step_scroll_width"].as_f64().unwrap() <= r["step_client_width"].as_f64().unwrap(),
        "{r:#}"
    );
    assert!(
        r["step_height"].as_f64().unwrap() > 1.5 * r["step_line_height"].as_f64().unwrap(),
        "{r:#}"
    );
    assert!(page.is_file());
}

/// Markup that would mark the page if it ran: a script, an image error handler, a script URL.
const PAYLOAD: &str = r#"x</title></text><script>document.documentElement.setAttribute('data-pwned','script')</script><img src=x onerror="document.documentElement.setAttribute('data-pwned','onerror')"><a href="javascript:document.documentElement.setAttribute('data-pwned','url')">j</a><!-- "#;

/// A result.json with the payload in its free-text fields and in its times (an unparsable time
/// was written raw), rendered by the real binary and loaded in chromium: nothing of it runs.
#[test]
fn hostile_result_runs_nothing_in_chromium() {
    let Some(browser) = chromium_or_skip("hostile_result_runs_nothing_in_chromium") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    copy_dir(&root().join("tests/fixtures/run-etcd-split-buggy"), &dir);
    let path = dir.join("result.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let p = Value::from(PAYLOAD);
    v["check"]["name"] = p.clone();
    v["check"]["summary"] = p.clone();
    v["k3s"]["image"] = p.clone();
    v["run_id"] = p.clone();
    v["planned_steps"][0]["name"] = p.clone();
    v["steps"][0]["name"] = p.clone();
    v["steps"][0]["actions"][0]["at"] = p.clone();
    v["steps"][0]["finished_at"] = p.clone();
    v["steps"][1]["started_at"] = p.clone();
    v["steps"][0]["observations"][0]["reason"] = p.clone();
    v["steps"][0]["observations"][0]["evidence"][0]["text"] = p.clone();
    v["steps"][0]["observations"][0]["evidence"][0]["time"] = p.clone();
    v["boots"][0]["ready_at"] = p.clone();
    v["boots"][1]["ended_at"] = p.clone();
    v["verdict"]["reason"] = p.clone();
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = repro().arg("report").arg(&dir).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(dir.join("timeline.html")).unwrap();
    assert!(
        html.contains("&lt;script&gt;"),
        "the payload is not on the page"
    );
    let profile = tmp.path().join("profile");
    let out = headless(&browser, &profile)
        .arg("--virtual-time-budget=3000")
        .arg("--dump-dom")
        .arg(format!("file://{}", dir.join("timeline.html").display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", browser.display()));
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("</html>"), "chromium printed no page: {dom}");
    assert!(
        !dom.contains("data-pwned=\""),
        "the payload ran in the page:\n{}",
        dom.lines().next().unwrap_or("")
    );
    assert!(!dom.contains("<script"), "a script element from data");
}
