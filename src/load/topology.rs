//! `topologies/*.yaml`: nodes, roles, joins, files — and every rule a topology must keep.

use super::*;

/// The `name:` of a topology file that may be otherwise broken, so a check naming it can say
/// "that topology has errors" instead of "does not exist".
pub(crate) fn topology_name(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct NameOnly {
        name: String,
    }
    serde_saphyr::from_str_with_options::<NameOnly>(text, crate::raw::yaml_options())
        .ok()
        .map(|n| n.name)
}

/// How many nodes one run can address on its own /24 (`docker/address.rs`).
pub(crate) const MAX_NODES: usize = crate::docker::address::MAX_NODES;

pub(crate) fn topology(path: &Path, text: &str) -> Result<Topology, Diagnostics> {
    topology_on(path, text, None)
}

/// The topology in `text`, on `on`'s distribution and with `on` as its version when it is given
/// and the file names no `distribution:` (`--version v1.32.5+rke2r1` on a topology written with
/// a k3s version): its relative file paths, role keys and config keys are then that
/// distribution's.
pub(crate) fn topology_on(
    path: &Path,
    text: &str,
    on: Option<&Version>,
) -> Result<Topology, Diagnostics> {
    let raw: TopologyFile = parse(path, text, FileKind::Topology)?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();

    check_slug(&d, &raw.name, "topology", &mut out);
    let (distro, default_version) = match (on, &raw.distribution) {
        (Some(v), None) => {
            // Still read the file's own version, so an error in it is not hidden.
            let _ = distribution_and_version(&d, &raw, &mut out);
            (v.distro, Some(v.clone()))
        }
        _ => distribution_and_version(&d, &raw, &mut out),
    };
    check_nodes(&d, distro, &raw, default_version.as_ref(), &mut out);
    // Written on every node: a key must be a flag of some node's command.
    let mut commands: Vec<FlagCommand> = raw
        .nodes
        .value
        .iter()
        .map(|n| crate::flags::command_of(n.role.value))
        .collect();
    commands.dedup();
    if commands.is_empty() {
        commands.push(FlagCommand::Server);
    }
    check_config_keys(
        &d,
        distro,
        &raw.config,
        &commands,
        default_version.as_ref(),
        &mut out,
    );
    check_files(&d, distro, &raw.files, &mut out);

    let Some(default_version) = default_version else {
        return Err(out);
    };
    if !out.is_empty() {
        return Err(out);
    }
    Ok(Topology {
        name: raw.name.value,
        description: raw.description,
        path: path.to_path_buf(),
        distro,
        default_version,
        config: unspan(raw.config),
        files: node_files(distro, raw.files),
        nodes: raw
            .nodes
            .value
            .into_iter()
            .map(|n| Node {
                name: n.name.value,
                role: n.role.value,
                init: n.init.is_some_and(|i| i.value),
                join: n.join.map(|j| j.value),
                deferred: n.deferred,
                config: unspan(n.config),
                files: node_files(distro, n.files),
                env: n.env.into_iter().map(|(k, v)| (k.value, v)).collect(),
            })
            .collect(),
    })
}

/// The topology's distribution and default version: `distribution:` when given, else the one
/// the version's build marker names (`+k3sN`). A version of another distribution than the one
/// named is an error at the version.
fn distribution_and_version(
    d: &FileDiag,
    raw: &TopologyFile,
    out: &mut Diagnostics,
) -> (Distro, Option<Version>) {
    let named = raw.distribution.as_ref().and_then(|s| {
        let found = Distro::from_name(&s.value);
        if found.is_none() {
            out.push(
                d.span(s, format!("`{}` is not a distribution repro knows", s.value))
                    .help(format!("write one of: {} (or leave `distribution:` out: the version's suffix names it)", Distro::names())),
            );
        }
        found
    });
    let s = &raw.version;
    let version = match s.value.parse::<Version>() {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(
                d.span(s, e.to_string())
                    .help(version_help(named.unwrap_or_default())),
            );
            None
        }
    };
    match (named, version) {
        (Some(n), Some(v)) if v.distro != n => {
            let facts = n.facts();
            out.push(
                d.span(
                    s,
                    format!(
                        "`{}` is a {} version, but the topology says `distribution: {n}`",
                        s.value, v.distro
                    ),
                )
                .help(format!(
                    "write a {n} version, e.g. {} or {}, or drop `distribution:`",
                    facts.example_version, facts.example_candidate
                )),
            );
            (n, None)
        }
        (Some(n), v) => (n, v),
        (None, Some(v)) => (v.distro, Some(v)),
        (None, None) => (Distro::default(), None),
    }
}

fn check_nodes(
    d: &FileDiag,
    distro: Distro,
    raw: &TopologyFile,
    version: Option<&Version>,
    out: &mut Diagnostics,
) {
    let nodes = &raw.nodes.value;
    if nodes.is_empty() {
        out.push(
            d.span(&raw.nodes, "a topology needs at least one node")
                .help("list the nodes, e.g. `- {name: etcd-1, role: etcd, init: true}`"),
        );
        return;
    }
    if nodes.len() > MAX_NODES {
        out.push(
            d.span(&raw.nodes, format!("{} nodes do not fit the run's network: at most {MAX_NODES}", nodes.len()))
                .help(format!("a run's nodes get the fixed addresses .10 to .254 of one /24 network (etcd peer URLs embed them); split the topology into ones of at most {MAX_NODES} nodes")),
        );
    }
    check_names(d, nodes, out);
    let has_init = check_init(d, distro, nodes, out);
    check_joins(d, distro, nodes, has_init, out);
    for n in nodes {
        check_node_settings(d, distro, n, version, out);
    }
}

/// Every node's name: a DNS label (it is a container's host name), not one that means the
/// node itself, and not another node's.
fn check_names(d: &FileDiag, nodes: &[crate::raw::NodeFile], out: &mut Diagnostics) {
    let mut names: HashMap<&str, &Spanned<String>> = HashMap::new();
    for n in nodes {
        if !DNS_LABEL.is_match(&n.name.value) {
            out.push(
                d.span(
                    &n.name,
                    format!("`{}` is not a valid node name", n.name.value),
                )
                .help("use lowercase letters, digits and `-` (it becomes a container host name)"),
            );
        }
        // A node's name is its container's host name, which every other node dials: a name
        // that means the node itself (`localhost`) makes a joiner dial its own loopback and
        // the run end inconclusive after its timeout (issue #24).
        if is_loopback_name(&n.name.value) {
            out.push(
                d.span(
                    &n.name,
                    format!(
                        "`{}` names the node itself: the other nodes could not reach it by that name",
                        n.name.value
                    ),
                )
                .help("name nodes for their role (`server-1`, `etcd-2`); `localhost`, `ip6-localhost` and `ip6-loopback` resolve to the node's own loopback"),
            );
        }
        if let Some(first) = names.insert(&n.name.value, &n.name) {
            out.push(
                d.span(
                    &n.name,
                    format!(
                        "duplicate node name `{}` (first defined at line {})",
                        n.name.value,
                        first.referenced.line()
                    ),
                )
                .help("give every node its own name"),
            );
        }
    }
}

fn is_init(n: &crate::raw::NodeFile) -> bool {
    n.init.as_ref().is_some_and(|i| i.value)
}

/// Exactly one node creates the cluster (`init: true`); whether there is one at all (without
/// one there is no start order for [`check_joins`] to judge).
fn check_init(
    d: &FileDiag,
    distro: Distro,
    nodes: &[crate::raw::NodeFile],
    out: &mut Diagnostics,
) -> bool {
    let inits: Vec<_> = nodes.iter().filter(|n| is_init(n)).collect();
    match inits.as_slice() {
        [] => out.push(
            d.span(&nodes[0].name, "no node creates the cluster (no `init: true`)")
                .help(format!("mark exactly one node that runs etcd (role etcd or all) `init: true`; it starts with {}", distro.facts().init_marker())),
        ),
        [_] => {}
        [first, rest @ ..] => {
            for n in rest {
                let at = n.init.as_ref().map_or(&n.name.referenced, |i| &i.referenced);
                out.push(
                    d.at(at, format!("`{}` is a second init node; only one node creates the cluster", n.name.value))
                        .help(format!("keep `init: true` on `{}` only and give `{}` a `join:`", first.name.value, n.name.value)),
                );
            }
        }
    }
    !inits.is_empty()
}

/// Every node but the init node joins a server that is up when it starts.
fn check_joins(
    d: &FileDiag,
    distro: Distro,
    nodes: &[crate::raw::NodeFile],
    has_init: bool,
    out: &mut Diagnostics,
) {
    // Start order (see `plan::start_needs`): the init node first, the other etcd-running
    // servers one at a time in file order; every other node once the server it joins is up.
    // A node can only join a node that is already up when it starts.
    let position: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.value.as_str(), i))
        .collect();
    let known = names_list(nodes.iter().map(|n| n.name.value.as_str()));
    // Whether `target` (at index `ti`) is up before an etcd-running node at index `i` starts.
    let starts_before = |target: &crate::raw::NodeFile, ti: usize, i: usize| {
        is_init(target) || (target.role.value.runs_etcd() && ti < i)
    };
    for (i, n) in nodes.iter().enumerate() {
        let role = n.role.value;
        if is_init(n) {
            check_init_node(d, n, out);
            continue;
        }
        let Some(j) = &n.join else {
            out.push(
                d.span(&n.name, format!("node `{}` neither creates the cluster nor joins a node", n.name.value))
                    .help("add `join: <node>` naming a server, or `init: true` if this is the one node that creates the cluster"),
            );
            continue;
        };
        if j.value == n.name.value {
            out.push(
                d.span(j, format!("node `{}` joins itself", n.name.value))
                    .help("join another server, e.g. the init node"),
            );
            continue;
        }
        let Some(&ti) = position.get(j.value.as_str()) else {
            out.push(
                d.span(
                    j,
                    format!("`{}` joins unknown node `{}`", n.name.value, j.value),
                )
                .help(format!("join one of the nodes of this topology: {known}")),
            );
            continue;
        };
        let target = &nodes[ti];
        let trole = target.role.value;
        if !trole.is_server() {
            out.push(
                d.span(
                    j,
                    format!(
                        "`{}` joins `{}`, an agent, which runs no supervisor",
                        n.name.value, j.value
                    ),
                )
                .help("join a server node (role etcd, control-plane or all)"),
            );
        } else if role == Role::ControlPlane && !trole.runs_etcd() {
            out.push(
                d.span(j, format!("control-plane-only `{}` joins `{}`, which runs no etcd", n.name.value, j.value))
                    .help(format!("a control-plane-only server ({}) must join a node that runs etcd (role etcd or all)", distro.facts().role_keys.control_plane_only.join(", "))),
            );
        } else if has_init && role.runs_etcd() && !starts_before(target, ti, i) {
            // (Without an init node there is no start order to judge; that is reported above.)
            out.push(
                d.span(j, format!("`{}` joins `{}`, which is not up yet when `{}` starts", n.name.value, j.value, n.name.value))
                    .help("servers that run etcd start one at a time in file order: join the init node or an etcd node listed above"),
            );
        } else if target.deferred && !n.deferred {
            out.push(
                d.span(j, format!("`{}` joins `{}`, which is deferred and not running when the cluster starts", n.name.value, j.value))
                    .help("join a node that starts with the cluster, or make this node deferred too"),
            );
        }
    }
}

/// The init node creates the cluster: it runs etcd, joins nothing and starts with the cluster.
fn check_init_node(d: &FileDiag, n: &crate::raw::NodeFile, out: &mut Diagnostics) {
    let role = n.role.value;
    let at = n
        .init
        .as_ref()
        .map_or(&n.name.referenced, |i| &i.referenced);
    if !role.runs_etcd() {
        out.push(
            d.at(
                at,
                format!(
                    "init node `{}` has role {}; only a node that runs etcd can create the cluster",
                    n.name.value,
                    role.as_str()
                ),
            )
            .help("make an `etcd` or `all` node the init node, and let this one `join:` it"),
        );
    }
    if let Some(j) = &n.join {
        out.push(
            d.span(j, format!("init node `{}` cannot join another node", n.name.value))
                .help("remove `join:` from the init node (it creates the cluster), or remove its `init: true`"),
        );
    }
    if n.deferred {
        out.push(
            d.at(at, "the init node cannot be deferred")
                .help("remove `deferred: true`: the cluster starts with its init node"),
        );
    }
}

/// A node's config keys, files and environment (none of the variables repro sets itself).
fn check_node_settings(
    d: &FileDiag,
    distro: Distro,
    n: &crate::raw::NodeFile,
    version: Option<&Version>,
    out: &mut Diagnostics,
) {
    check_config_keys(
        d,
        distro,
        &n.config,
        &[crate::flags::command_of(n.role.value)],
        version,
        out,
    );
    check_files(d, distro, &n.files, out);
    for k in n.env.keys() {
        if !ENV_NAME.is_match(&k.value) {
            out.push(
                d.span(k, format!("`{}` is not a valid environment variable name", k.value))
                    .help("use letters, digits and `_`, not starting with a digit (a `=` in the name would set another variable)"),
            );
            continue;
        }
        let facts = distro.facts();
        if [facts.token_env, facts.agent_token_env, facts.url_env].contains(&k.value.as_str()) {
            out.push(
                d.span(k, format!("`{}` is set by repro", k.value))
                    .help(format!(
                    "leave it out: repro sets {} (random per run) and the join URL from `join:`",
                    facts.token_env
                )),
            );
        }
    }
}

/// Host names that resolve to the container itself (its /etc/hosts): `localhost` (and names
/// under it) and Docker's `ip6-localhost` / `ip6-loopback`.
fn is_loopback_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "localhost" || n.ends_with(".localhost") || n == "ip6-localhost" || n == "ip6-loopback"
}
