//! Prometheus text for `/metrics`.
//!
//! k3s runs every component in one process with one Prometheus registry, so
//! ALL its `/metrics` endpoints (supervisor with `supervisor-metrics`,
//! apiserver, kubelet) expose the same families (docs.k3s.io/reference/metrics:
//! "metrics for all components are available via all exposed metrics
//! endpoints"). The stand-in keeps that: one body per node, served by whichever
//! handler answers. Families come out sorted by name, as promhttp writes them.

/// What the node's registry holds right now.
pub struct Registry<'a> {
    pub node_name: &'a str,
    pub version: &'a str,
    /// kube-apiserver runs in this process.
    pub apiserver: bool,
    /// The agent load balancer runs (etcd-only nodes).
    pub agent_loadbalancer: Option<&'a str>,
    /// Spegel is up.
    pub registry: bool,
    /// Resident set size of the process, for `process_resident_memory_bytes`.
    pub rss_bytes: u64,
}

struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    samples: Vec<String>,
}

pub fn render(reg: &Registry<'_>) -> String {
    let mut families = vec![
        Family {
            name: "go_goroutines",
            help: "Number of goroutines that currently exist.",
            kind: "gauge",
            samples: vec!["go_goroutines 214".into()],
        },
        Family {
            name: "k3s_certificate_expiration_seconds",
            help: "Remaining lifetime in seconds of the certificate, labeled by certificate subject and usages.",
            kind: "gauge",
            samples: vec![format!(
                "k3s_certificate_expiration_seconds{{subject=\"CN=system:node:{},O=system:nodes\",usage=\"ClientAuth\"}} 3.1535e+07",
                reg.node_name
            )],
        },
        Family {
            name: "k3s_repro_sim_info",
            help: "Marks metrics served by the repro k3s stand-in (not k3s).",
            kind: "gauge",
            samples: vec![format!("k3s_repro_sim_info{{version=\"{}\"}} 1", reg.version)],
        },
        Family {
            name: "process_resident_memory_bytes",
            help: "Resident memory size in bytes.",
            kind: "gauge",
            samples: vec![format!("process_resident_memory_bytes {}", reg.rss_bytes)],
        },
        Family {
            name: "rest_client_requests_total",
            help: "[ALPHA] Number of HTTP requests, partitioned by status code, method, and host.",
            kind: "counter",
            samples: vec![
                "rest_client_requests_total{code=\"200\",host=\"127.0.0.1:6443\",method=\"GET\"} 42".into(),
            ],
        },
    ];
    if reg.apiserver {
        families.push(Family {
            name: "apiserver_request_total",
            help: "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            kind: "counter",
            samples: vec![
                "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"nodes\",scope=\"cluster\",subresource=\"\",verb=\"LIST\",version=\"v1\"} 17".into(),
            ],
        });
    }
    if let Some(server) = reg.agent_loadbalancer {
        families.push(Family {
            name: "k3s_loadbalancer_server_connections",
            help: "Count of current connections to loadbalancer server",
            kind: "gauge",
            samples: vec![format!(
                "k3s_loadbalancer_server_connections{{name=\"k3s-agent-load-balancer\",server=\"{server}\"}} 1"
            )],
        });
    }
    if reg.registry {
        families.push(Family {
            name: "spegel_advertised_images",
            help: "Number of images advertised to be available.",
            kind: "gauge",
            samples: vec!["spegel_advertised_images{registry=\"docker.io\"} 0".into()],
        });
    }
    families.sort_by_key(|f| f.name);
    let mut out = String::new();
    for f in families {
        out.push_str(&format!(
            "# HELP {} {}\n# TYPE {} {}\n",
            f.name, f.help, f.name, f.kind
        ));
        for s in f.samples {
            out.push_str(&s);
            out.push('\n');
        }
    }
    out
}

/// RSS from `/proc/self/statm` (pages × 4 KiB); 0 when unavailable.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(apiserver: bool) -> Registry<'static> {
        Registry {
            node_name: "etcd-1",
            version: "v1.33.4+k3s1",
            apiserver,
            agent_loadbalancer: None,
            registry: false,
            rss_bytes: 1,
        }
    }

    #[test]
    fn starts_with_help_and_is_sorted() {
        let body = render(&reg(true));
        assert!(body.starts_with("# HELP apiserver_request_total "));
        let names: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix("# HELP "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(render(&reg(false)).starts_with("# HELP go_goroutines "));
    }
}
