//! `repro audit`'s outputs: text for a terminal, JSON (schema/audit.schema.json) and the
//! Prometheus text format for node_exporter's textfile collector. The caller redacts.

use super::change::ChangePlan;
use super::{KeyOnNode, Report, Source};

fn shown(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(not set)".to_string())
}

fn runs_with_words(n: &KeyOnNode) -> String {
    match n.runs_with.as_slice() {
        [one] if one.server == n.node => format!("{} (its own)", shown(&one.value)),
        [one] => format!("{} (from {})", shown(&one.value), one.server),
        many => {
            let each: Vec<String> = many
                .iter()
                .map(|Source { server, value }| format!("{} from {server}", shown(value)))
                .collect();
            format!("whichever server its agent reached: {}", each.join(" or "))
        }
    }
}

/// The text report.
pub(crate) fn text(r: &Report, plan: Option<&ChangePlan>) -> String {
    let mut o = format!("{} cluster, read from {}\n\n", r.distribution, r.source);
    for n in &r.nodes {
        let borrow = match n.borrows_served_keys {
            Some(true) => ", etcd-only joiner without the fix of k3s #12753: takes served keys from the server its agent reaches",
            None => ", etcd-only joiner on a version the table cannot place: may take served keys from another server",
            Some(false) => "",
        };
        o.push_str(&format!(
            "  {} ({}, {}{}){}\n",
            n.name,
            n.role,
            n.version.as_deref().unwrap_or("version unknown"),
            n.joins
                .as_ref()
                .map(|j| format!(", joins {j}"))
                .unwrap_or_default(),
            borrow
        ));
    }
    for k in &r.keys {
        let kind = match (k.critical, k.served) {
            (true, true) => "critical, served to agents",
            (true, false) => "critical",
            _ => "served to agents",
        };
        o.push_str(&format!("\n{} ({kind})\n", k.key));
        for n in &k.nodes {
            let mut notes = Vec::new();
            if n.borrowed {
                notes.push("BORROWED: runs another server's value".to_string());
            }
            if n.pending {
                notes.push(format!(
                    "PENDING: edited to {}, not restarted",
                    shown(&n.configured)
                ));
            }
            if let Some(seen) = &n.observed {
                notes.push(format!("logs: {seen}"));
            }
            if n.unshared {
                notes.push("UNSHARED: the other etcd members run another value".to_string());
            }
            if r.refused_at_next_start
                .iter()
                .any(|x| x.node == n.node && x.keys.contains(&k.key))
            {
                notes.push("WILL BE REFUSED AT NEXT START".to_string());
            }
            o.push_str(&format!(
                "  {:<12} configured {:<14} runs with {}{}\n",
                n.node,
                shown(if n.configured.is_some() {
                    &n.configured
                } else {
                    &n.started_with
                }),
                runs_with_words(n),
                if notes.is_empty() {
                    String::new()
                } else {
                    format!("  <- {}", notes.join("; "))
                }
            ));
        }
    }
    o.push('\n');
    for x in &r.refused_at_next_start {
        o.push_str(&format!(
            "{} will be refused at next start: {}\n",
            x.node, x.why
        ));
    }
    if r.consistent {
        o.push_str("consistent: every server runs its own value, and no start is refused\n");
    } else {
        o.push_str("affected: see the lines above; to fix:\n");
        for f in &r.fixes {
            o.push_str(&format!("  - {f}\n"));
        }
    }
    if let Some(p) = plan {
        o.push_str(&plan_text(p));
    }
    o
}

/// The change plan in words.
pub(crate) fn plan_text(p: &ChangePlan) -> String {
    let what: Vec<String> = p.changes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut o = format!("\nchange {}:\n", what.join(", "));
    for (i, s) in p.steps.iter().enumerate() {
        o.push_str(&format!(
            "  {}. edit {}'s config ({}), restart it: {}\n",
            i + 1,
            s.node,
            what.join(", "),
            s.why
        ));
    }
    if !p.impossible.is_empty() {
        o.push_str("  no safe order on this version: after the steps above, every server left is stopped:\n");
        for w in &p.impossible {
            o.push_str(&format!("    {w}\n"));
        }
    }
    o
}

/// The JSON report (schema/audit.schema.json).
pub(crate) fn json(r: &Report, plan: Option<&ChangePlan>) -> String {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    if let (Some(p), Some(obj)) = (plan, v.as_object_mut()) {
        obj.insert("change".into(), serde_json::to_value(p).unwrap_or_default());
    }
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// A label value as the text format writes it.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The Prometheus text format: one gauge per node and key for drift, a borrowed value and a
/// predicted refusal, and one for the whole cluster.
pub(crate) fn prometheus(r: &Report) -> String {
    let mut o = String::new();
    let gauge = |o: &mut String, name: &str, help: &str| {
        o.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
    };
    let d = label(r.distribution);
    gauge(&mut o, "repro_audit_consistent", "1 when no server runs another server's value, none drifts and no start is predicted refused");
    o.push_str(&format!(
        "repro_audit_consistent{{distribution=\"{d}\"}} {}\n",
        u8::from(r.consistent)
    ));
    type Pick = fn(&KeyOnNode) -> bool;
    let series: [(&str, &str, Pick); 3] = [
        ("repro_audit_drift", "1 when the node's value of the key is edited and not restarted, or not shared by the other etcd members", |n| n.pending || n.unshared),
        ("repro_audit_borrowed_value", "1 when the node may run the key with another server's value (k3s #12753)", |n| n.borrowed),
        ("repro_audit_refusal_predicted", "1 when the node's next start is predicted refused over the key", |_| false),
    ];
    for (name, help, pick) in series {
        gauge(&mut o, name, help);
        for k in &r.keys {
            for n in &k.nodes {
                let on = if name == "repro_audit_refusal_predicted" {
                    r.refused_at_next_start
                        .iter()
                        .any(|x| x.node == n.node && x.keys.contains(&k.key))
                } else {
                    pick(n)
                };
                o.push_str(&format!(
                    "{name}{{distribution=\"{d}\",node=\"{}\",key=\"{}\"}} {}\n",
                    label(&n.node),
                    label(&k.key),
                    u8::from(on)
                ));
            }
        }
    }
    o
}
