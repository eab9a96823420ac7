//! A live cluster's nodes, through the user's kubeconfig as kubectl reads it (`--kubeconfig`,
//! else `KUBECONFIG`, else `~/.kube/config`; `--context`; client certificates, tokens, exec
//! plugins), with the Kubernetes ecosystem's client (`kube`).

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Why the nodes could not be read.
#[derive(Debug)]
pub(crate) enum LiveError {
    /// The kubeconfig or context is wrong (exit 2).
    Input(String, String),
    /// The cluster did not answer, or refused us (exit 3).
    Unreachable(String),
}

/// How long the API server may take to answer.
const TIMEOUT: Duration = Duration::from_secs(20);

/// The nodes of the cluster the kubeconfig's context names, and that context in words.
pub(crate) async fn list_nodes(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<(Vec<Node>, String), LiveError> {
    let kc = match kubeconfig {
        Some(p) => Kubeconfig::read_from(p).map_err(|e| {
            LiveError::Input(
                format!("{}: cannot read the kubeconfig: {e}", p.display()),
                "give a kubeconfig kubectl reads (`kubectl --kubeconfig FILE get nodes`)".into(),
            )
        })?,
        None => Kubeconfig::read().map_err(|e| {
            LiveError::Input(
                format!("no kubeconfig: {e}"),
                "give --kubeconfig FILE, set KUBECONFIG, or audit files instead (--config NODE=PATH, --nodes FILE)".into(),
            )
        })?,
    };
    let name = context
        .map(str::to_string)
        .or_else(|| kc.current_context.clone())
        .unwrap_or_default();
    if let Some(c) = context {
        if !kc.contexts.iter().any(|x| x.name == c) {
            let known: Vec<&str> = kc.contexts.iter().map(|x| x.name.as_str()).collect();
            return Err(LiveError::Input(
                format!("the kubeconfig has no context `{c}`"),
                format!("its contexts: {}", known.join(", ")),
            ));
        }
    }
    let opts = KubeConfigOptions {
        context: context.map(str::to_string),
        cluster: None,
        user: None,
    };
    let mut config = kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .map_err(|e| {
            LiveError::Input(
                format!("context `{name}`: {e}"),
                "the context must name a cluster with a server and a user kubectl can use".into(),
            )
        })?;
    config.connect_timeout = Some(TIMEOUT);
    config.read_timeout = Some(TIMEOUT);
    let server = config.cluster_url.to_string();
    let described = format!("context `{name}` (server {server})");
    let client = kube::Client::try_from(config)
        .map_err(|e| LiveError::Unreachable(format!("{described}: {e}")))?;
    let api: Api<Node> = Api::all(client);
    let list = tokio::time::timeout(TIMEOUT * 2, api.list(&ListParams::default()))
        .await
        .map_err(|_| {
            LiveError::Unreachable(format!(
                "{described}: no answer within {}s",
                TIMEOUT.as_secs() * 2
            ))
        })?
        .map_err(|e| LiveError::Unreachable(format!("{described}: cannot list nodes: {e}")))?;
    Ok((list.items, described))
}
