//! The run network's address plan, in one place: every run (and each of the doctor's trials)
//! gets a bridge network on its own /24 of 10.213.0.0/16 (unusual enough to stay clear of the
//! engine's usual 172.17+/192.168 pools), the first free one; its gateway is .1, throwaway trial
//! containers take .2 and .3, a kept baseline's network keeper (`run/baseline.rs`) .4, and the plan's `i`-th node the fixed address .(10 + i) — etcd peer
//! URLs embed the IP (k3d #550), so a node keeps its address across restarts, and every node's
//! `/etc/hosts` lists them all. Two runs at once (`--jobs`, two campaigns on one engine) race
//! for a /24 at most: the loser's network create fails with an overlap and it takes the next.

/// The /16 every run network is carved from: 10.213.0.0/16.
const PREFIX: &str = "10.213";

/// The third octets a run network may take, tried in this order.
pub(crate) const THIRDS: std::ops::RangeInclusive<u8> = 0..=254;

/// The host part of the first node's address.
const FIRST_NODE: usize = 10;

/// How many nodes one run can address: .10 to .254 (.255 is the broadcast address).
pub(crate) const MAX_NODES: usize = 254 - FIRST_NODE + 1;

/// The run network of third octet `third`: `10.213.<third>.0/24`.
pub(crate) fn subnet(third: u8) -> String {
    format!("{PREFIX}.{third}.0/24")
}

/// Its gateway: `.1`.
pub(crate) fn gateway(third: u8) -> String {
    format!("{PREFIX}.{third}.1")
}

/// The fixed address of the plan's `i`-th node: `.(10 + i)`.
pub(crate) fn node_ip(third: u8, i: usize) -> String {
    format!("{PREFIX}.{third}.{}", FIRST_NODE + i)
}

/// The address of the doctor's `k`-th throwaway trial container (0 or 1): `.2`, `.3`, below
/// every node's.
pub(crate) fn trial_ip(third: u8, k: u8) -> String {
    format!("{PREFIX}.{third}.{}", 2 + k.min(1))
}

/// The address of a kept baseline's network keeper (`run/baseline.rs`): `.4`, below every
/// node's and apart from the doctor's trials.
pub(crate) fn keeper_ip(third: u8) -> String {
    format!("{PREFIX}.{third}.4")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_of_one_run_network() {
        assert_eq!(subnet(7), "10.213.7.0/24");
        assert_eq!(gateway(7), "10.213.7.1");
        assert_eq!(node_ip(7, 0), "10.213.7.10");
        assert_eq!(node_ip(7, MAX_NODES - 1), "10.213.7.254");
        assert_eq!(
            (trial_ip(0, 0), trial_ip(0, 1)),
            ("10.213.0.2".into(), "10.213.0.3".into())
        );
        // every address of the plan lies in the run range's /16
        assert_eq!(subnet(*THIRDS.end()), "10.213.254.0/24");
        assert_eq!(keeper_ip(7), "10.213.7.4");
        // trials, the keeper and the gateway never take a node's address, nor each other's
        let nodes: Vec<String> = (0..MAX_NODES).map(|i| node_ip(3, i)).collect();
        let others = [gateway(3), trial_ip(3, 0), trial_ip(3, 1), keeper_ip(3)];
        let distinct: std::collections::HashSet<&String> = others.iter().collect();
        assert_eq!(distinct.len(), others.len());
        for other in others {
            assert!(!nodes.contains(&other), "{other}");
        }
    }
}
