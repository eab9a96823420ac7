//! The stand-in's admin credential for a kept run's kubeconfig (`repro audit` reads the node
//! list with it): derived from the cluster token, so the token itself never lands in the
//! results folder, and computed the same way by repro (which writes the kubeconfig) and the
//! stand-in (which accepts it as a bearer token).

/// The bearer token the stand-in's API accepts as its admin: FNV-1a of the cluster's token
/// password under a fixed prefix (not reversible to the token; the stand-in is no security
/// boundary, the point is that no copy of the token is written).
pub fn bearer(password: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in "repro-sim-kubeconfig:".bytes().chain(password.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("repro-sim-admin.{h:016x}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bearer_holds_no_copy_of_the_token_and_differs_per_token() {
        let a = super::bearer("plantedClusterToken0001");
        assert!(!a.contains("plantedClusterToken0001") && a.starts_with("repro-sim-admin."));
        assert_eq!(a, super::bearer("plantedClusterToken0001"));
        assert_ne!(a, super::bearer("plantedClusterToken0002"));
    }
}
