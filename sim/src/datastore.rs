//! The stand-in's "etcd": a small JSON file, not a database.
//!
//! There is no raft and no quorum. What repro can observe of etcd is modelled:
//! whether a node has etcd data on disk (which decides the bootstrap path),
//! the member list that join log lines print, and the apiserver addresses
//! etcd-only agents wait for. Members push changes to the server they joined
//! and pull its state, which is enough for the star topologies repro builds.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    pub peer_url: String,
    /// Added as a learner (k3s joins every member with `MemberAddAsLearner`): not a voting
    /// member until its name is in [`ClusterState::promoted`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub learner: bool,
}

/// etcd's refusal of a second learner (`rpctypes.ErrGRPCTooManyLearners`,
/// api/v3rpc/rpctypes/error.go): one learner at a time.
pub const TOO_MANY_LEARNERS: &str = "etcdserver: too many learner members in cluster";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterState {
    pub cluster_id: String,
    #[serde(default)]
    pub members: Vec<Member>,
    /// `https://ip:6443` of every server running an apiserver.
    #[serde(default)]
    pub apiservers: Vec<String>,
    /// Learners the leader promoted (`MemberPromote`): a set that only grows, so copies
    /// merged in any order agree, and a restarted learner cannot promote itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub promoted: Vec<String>,
}

impl ClusterState {
    /// Union of both; returns whether `self` changed.
    pub fn merge(&mut self, other: &ClusterState) -> bool {
        let mut changed = false;
        if self.cluster_id.is_empty() && !other.cluster_id.is_empty() {
            self.cluster_id = other.cluster_id.clone();
            changed = true;
        }
        for m in &other.members {
            if !self.members.iter().any(|x| x.name == m.name) {
                self.members.push(m.clone());
                changed = true;
            }
        }
        for a in &other.apiservers {
            if !self.apiservers.contains(a) {
                self.apiservers.push(a.clone());
                changed = true;
            }
        }
        for p in &other.promoted {
            if !self.promoted.contains(p) {
                self.promoted.push(p.clone());
                changed = true;
            }
        }
        changed
    }

    /// Whether `name` is a member still waiting to be promoted.
    pub fn is_learner(&self, name: &str) -> bool {
        self.members
            .iter()
            .any(|m| m.name == name && m.learner && !self.promoted.contains(&m.name))
    }

    /// The members still waiting to be promoted.
    pub fn learners(&self) -> Vec<String> {
        (self.members.iter())
            .filter(|m| self.is_learner(&m.name))
            .map(|m| m.name.clone())
            .collect()
    }

    /// etcd's `MemberAddAsLearner` check: a new learner while another one is unpromoted is
    /// refused with etcd's own text.
    pub fn admit(&self, incoming: &ClusterState) -> Result<(), String> {
        let new_learner = (incoming.members.iter())
            .any(|m| m.learner && !self.members.iter().any(|x| x.name == m.name));
        if new_learner && !self.learners().is_empty() {
            return Err(TOO_MANY_LEARNERS.to_string());
        }
        Ok(())
    }

    /// `MemberPromote` of the learners named in `caught_up`; returns those promoted.
    pub fn promote_learners(&mut self, caught_up: &[String]) -> Vec<String> {
        let names: Vec<String> = (self.learners().into_iter())
            .filter(|n| caught_up.contains(n))
            .collect();
        self.promoted.extend(names.iter().cloned());
        names
    }

    /// `name=peerURL` entries, as k3s prints the etcd cluster.
    pub fn member_strings(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect()
    }
}

/// Go's `%v` of a `[]string`: `[a b c]`.
pub fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Paths under the data dir, laid out like k3s's.
#[derive(Clone, Debug)]
pub struct Layout {
    pub data_dir: PathBuf,
}

impl Layout {
    pub fn etcd_dir(&self) -> PathBuf {
        self.data_dir.join("server/db/etcd")
    }
    fn wal_dir(&self) -> PathBuf {
        self.etcd_dir().join("member/wal")
    }
    fn state_file(&self) -> PathBuf {
        self.etcd_dir().join("repro-sim-cluster.json")
    }
    fn name_file(&self) -> PathBuf {
        self.etcd_dir().join("name")
    }
    pub fn token_file(&self) -> PathBuf {
        self.data_dir.join("server/token")
    }

    /// k3s's `IsInitialized`: the etcd WAL directory exists and is not empty.
    pub fn has_etcd_data(&self) -> bool {
        std::fs::read_dir(self.wal_dir())
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
    }

    pub fn load_state(&self) -> Option<ClusterState> {
        let text = std::fs::read_to_string(self.state_file()).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes state first and the WAL marker last, so a crash in between
    /// leaves a node that still counts as uninitialized.
    pub fn save_state(&self, state: &ClusterState) -> Result<(), String> {
        let dir = self.etcd_dir();
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let json = serde_json::to_string_pretty(state).map_err(|e| e.to_string())?;
        write_atomic(&self.state_file(), json.as_bytes())?;
        let wal = self.wal_dir();
        std::fs::create_dir_all(&wal).map_err(|e| format!("mkdir {}: {e}", wal.display()))?;
        let marker = wal.join("0000000000000000-0000000000000000.wal");
        if !marker.exists() {
            write_atomic(&marker, b"repro-sim stand-in: not a real etcd WAL\n")?;
        }
        Ok(())
    }

    /// The etcd member name, `<node>-<8 hex>`, kept across restarts.
    pub fn member_name(&self, node_name: &str) -> Result<String, String> {
        if let Ok(name) = std::fs::read_to_string(self.name_file()) {
            let name = name.trim();
            if !name.is_empty() {
                return Ok(name.to_string());
            }
        }
        let name = format!("{node_name}-{}", random_hex(8));
        std::fs::create_dir_all(self.etcd_dir()).map_err(|e| e.to_string())?;
        write_atomic(&self.name_file(), name.as_bytes())?;
        Ok(name)
    }

    pub fn read_token(&self) -> Option<String> {
        std::fs::read_to_string(self.token_file())
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    }

    /// `server/token` and `server/node-token` in k3s's `K10…::server:…` form.
    pub fn write_token(&self, full_token: &str) -> Result<(), String> {
        let dir = self.data_dir.join("server");
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let line = format!("{full_token}\n");
        write_atomic(&self.token_file(), line.as_bytes())?;
        write_atomic(&dir.join("node-token"), line.as_bytes())
    }
}

pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("repro-sim-tmp");
    std::fs::write(&tmp, data).map_err(|e| format!("write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("rename {}: {e}", path.display()))
}

/// Hex from std's randomly keyed hasher: enough for names and fake secrets,
/// not for cryptography (nothing here is secret).
pub fn random_hex(len: usize) -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::new();
    let mut counter: u64 = 0;
    while out.len() < len {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(counter);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
        counter += 1;
    }
    out.truncate(len);
    out
}

/// The cluster's admin client certificate as the kubeconfig carries it
/// (`client-certificate-data`). Not a certificate: a marker every server of
/// the cluster derives from the shared token password, so any of them
/// accepts the kubeconfig another one wrote — as k3s's shared client CA does.
/// FNV-1a, so the password itself never lands in the file.
pub fn admin_certificate_data(password: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in "repro-sim-admin:".bytes().chain(password.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    crate::http::base64_encode(
        format!(
            "repro-sim stand-in client certificate CN=system:admin,O=system:masters id={h:016x}"
        )
        .as_bytes(),
    )
}

/// The password part of a k3s token: `K10<hash>::<user>:<password>` or a bare
/// password (k3s's `parseToken`).
pub fn token_password(token: &str) -> Result<String, String> {
    let token = token.trim();
    if token.is_empty() {
        return Err("token must not be empty".into());
    }
    let Some(rest) = token.strip_prefix("K10") else {
        return Ok(token.to_string());
    };
    let creds = match rest.split_once("::") {
        Some((hash, creds)) => {
            if !hash.is_empty() && hash.len() != 64 {
                return Err("invalid token CA hash length".into());
            }
            creds
        }
        None => rest,
    };
    match creds.split_once(':') {
        Some((_, pw)) if !pw.is_empty() => Ok(pw.to_string()),
        _ => Err("invalid token format".into()),
    }
}

/// A full token for `password` (the CA hash is fake: there is no CA).
pub fn full_token(cluster_id: &str, password: &str) -> String {
    let mut hash = String::new();
    while hash.len() < 64 {
        hash.push_str(cluster_id);
        hash.push('0');
    }
    let hash: String = hash
        .chars()
        .map(|c| {
            if c.is_ascii_hexdigit() {
                c.to_ascii_lowercase()
            } else {
                '0'
            }
        })
        .take(64)
        .collect();
    format!("K10{hash}::server:{password}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_forms() {
        assert_eq!(token_password("secret"), Ok("secret".into()));
        let full = full_token("abc123", "pw");
        assert_eq!(full.len(), 3 + 64 + 2 + 7 + 2);
        assert_eq!(token_password(&full), Ok("pw".into()));
        assert_eq!(token_password("K10::server:pw"), Ok("pw".into()));
        assert!(token_password("K10abc::server:pw").is_err());
        assert!(token_password("K10::server:").is_err());
        assert!(token_password(" ").is_err());
    }

    #[test]
    fn merge_is_a_union() {
        let mut a = ClusterState {
            cluster_id: "c".into(),
            members: vec![Member {
                name: "etcd-1-aa".into(),
                peer_url: "https://10.0.0.2:2380".into(),
                learner: false,
            }],
            apiservers: vec![],
            promoted: vec![],
        };
        let b = ClusterState {
            cluster_id: "c".into(),
            members: vec![
                a.members[0].clone(),
                Member {
                    name: "etcd-2-bb".into(),
                    peer_url: "https://10.0.0.3:2380".into(),
                    learner: false,
                },
            ],
            apiservers: vec!["https://10.0.0.5:6443".into()],
            promoted: vec![],
        };
        assert!(a.merge(&b));
        assert!(!a.merge(&b));
        assert_eq!(
            go_list(&a.member_strings()),
            "[etcd-1-aa=https://10.0.0.2:2380 etcd-2-bb=https://10.0.0.3:2380]"
        );
    }

    #[test]
    fn one_learner_at_a_time_and_promotion_survives_any_merge_order() {
        let member = |name: &str, learner: bool| Member {
            name: name.into(),
            peer_url: format!("https://{name}:2380"),
            learner,
        };
        let join = |name: &str| ClusterState {
            members: vec![member(name, true)],
            ..ClusterState::default()
        };
        let mut leader = ClusterState {
            cluster_id: "c".into(),
            members: vec![member("etcd-1", false)],
            ..ClusterState::default()
        };
        assert_eq!(leader.admit(&join("etcd-2")), Ok(()));
        leader.merge(&join("etcd-2"));
        assert!(leader.is_learner("etcd-2"));
        assert_eq!(
            leader.admit(&join("etcd-3")),
            Err("etcdserver: too many learner members in cluster".to_string())
        );
        // The learner's own copy, pushed back, is no new learner.
        let copy = leader.clone();
        assert_eq!(leader.admit(&copy), Ok(()));
        assert_eq!(leader.promote_learners(&[]), Vec::<String>::new());
        let caught_up = vec!["etcd-2".to_string(), "etcd-9".to_string()];
        assert_eq!(
            leader.promote_learners(&caught_up),
            vec!["etcd-2".to_string()]
        );
        assert!(!leader.is_learner("etcd-2"));
        assert_eq!(leader.admit(&join("etcd-3")), Ok(()));
        // An old copy (etcd-2 still a learner) merged into the leader does not demote it, and
        // the promotion reaches the old copy.
        let mut old = copy;
        leader.merge(&old);
        assert!(!leader.is_learner("etcd-2"));
        old.merge(&leader);
        assert!(!old.is_learner("etcd-2"));
        // A restarted learner re-adding itself as a voter does not promote itself.
        let mut state = join("etcd-4");
        state.merge(&ClusterState {
            members: vec![member("etcd-4", false)],
            ..ClusterState::default()
        });
        assert!(state.is_learner("etcd-4"));
    }

    #[test]
    fn data_on_disk_round_trips() {
        let dir = std::env::temp_dir().join(format!("repro-sim-test-{}", random_hex(12)));
        let layout = Layout {
            data_dir: dir.clone(),
        };
        assert!(!layout.has_etcd_data());
        let state = ClusterState {
            cluster_id: "c1".into(),
            ..ClusterState::default()
        };
        layout.save_state(&state).expect("save");
        assert!(layout.has_etcd_data());
        assert_eq!(layout.load_state(), Some(state));
        let name = layout.member_name("etcd-1").expect("name");
        assert!(name.starts_with("etcd-1-") && name.len() == "etcd-1-".len() + 8);
        assert_eq!(layout.member_name("etcd-1").expect("name"), name);
        layout.write_token("K10x::server:pw").expect("token");
        assert_eq!(layout.read_token().as_deref(), Some("K10x::server:pw"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
