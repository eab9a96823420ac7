//! `/etc/rancher/k3s/registries.yaml`: only which registries are mirrored.
//!
//! k3s's embedded registry (spegel) starts only for registries listed under
//! `mirrors:`; with none it logs an error and stays off. That is all the
//! stand-in needs from the file.

use std::path::Path;

/// Mirrored registry names, sorted; empty when the file is absent or has no
/// `mirrors`. A broken file reads as empty and is reported.
pub fn mirrored_registries(path: &Path) -> (Vec<String>, Option<String>) {
    match std::fs::read_to_string(path) {
        Ok(text) => match parse_mirrors(&text) {
            Ok(names) => (names, None),
            Err(e) => (
                Vec::new(),
                Some(format!("failed to parse {}: {e}", path.display())),
            ),
        },
        Err(_) => (Vec::new(), None),
    }
}

pub fn parse_mirrors(text: &str) -> Result<Vec<String>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: serde_json::Value = serde_saphyr::from_str(text).map_err(|e| {
        e.to_string()
            .lines()
            .next()
            .unwrap_or("invalid YAML")
            .to_string()
    })?;
    let mut names: Vec<String> = value
        .get("mirrors")
        .and_then(|m| m.as_object())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_mirrors() {
        assert_eq!(
            parse_mirrors("mirrors:\n  registry.k8s.io: {}\n  docker.io:\n").expect("yaml"),
            vec!["docker.io", "registry.k8s.io"]
        );
        assert!(parse_mirrors("configs: {}\n").expect("yaml").is_empty());
        assert!(parse_mirrors("").expect("yaml").is_empty());
        assert!(parse_mirrors("mirrors: [\n").is_err());
    }
}
