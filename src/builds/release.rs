//! A distribution's release artifacts (rke2's), fetched where its install script downloads
//! them when no `--artifacts` folder or `--image` is given: rke2's install.sh takes
//! `INSTALL_RKE2_GITHUB_URL=https://github.com/rancher/rke2` and downloads
//! `${INSTALL_RKE2_GITHUB_URL}/releases/download/${INSTALL_RKE2_VERSION}/sha256sum-${ARCH}.txt`
//! and `rke2.${SUFFIX}.tar.gz` beside it (`Facts::release_downloads_url`). The tarball's sha256
//! is checked against the sum file before anything is kept; the verified pair is cached under
//! `$XDG_CACHE_HOME/repro/<name>/<version>/` (checked again on reuse), and that folder is then
//! exactly an `--artifacts` folder.
//!
//! The air-gap images tarball (`rke2-images.linux-amd64.tar.zst`, about 800 MB, listed in the
//! same sum file: rke2's scripts/checksum sums every `${ARCH}` asset) is fetched too, streamed to
//! disk and checked the same way, unless `--no-images-tarball`: without it every node pulls every
//! image from Docker Hub at boot, inside the per-boot timeout and under its anonymous pull limit
//! (docs/rke2.md, step 3), which a run of several nodes is likely to hit.

use std::path::{Path, PathBuf};

use distro::{Distro, Version};

use super::fetch::{self, FetchError, GetError};
use crate::redact::without_userinfo;
use distro::ReleaseArtifacts;

/// Overrides the base URL the release artifacts are under (`<url>/<version>/<file>`): a mirror,
/// or a local server in tests. A `user:password@` in it is sent, never shown.
// Named after rke2, the one distribution with release artifacts to fetch (as REPRO_K3S_CI_URL
// is after k3s's CI storage).
pub(crate) const URL_ENV: &str = "REPRO_RKE2_RELEASES_URL";

/// The base URL: `REPRO_RKE2_RELEASES_URL`, else the distribution's; `None` when its nodes
/// need no release artifacts.
pub(crate) fn base_url(distro: Distro) -> Option<String> {
    let facts = distro.facts();
    facts.node_base_image?;
    if let Some(u) = std::env::var(URL_ENV).ok().filter(|u| !u.trim().is_empty()) {
        return Some(u.trim().trim_end_matches('/').to_string());
    }
    facts.release_downloads_url.map(str::to_string)
}

/// The URL of the release file `name` of `version` under `base`: the version as a path
/// segment, its `+` sent as `%2B` (what browsers send; GitHub answers both).
pub(crate) fn url(base: &str, version: &Version, name: &str) -> String {
    format!("{base}/{}/{name}", version.to_string().replace('+', "%2B"))
}

/// The sum file's and the tarball's URLs for `version` under `base` ([`url`]).
pub(crate) fn urls(base: &str, version: &Version, names: &ReleaseArtifacts) -> (String, String) {
    (
        url(base, version, names.checksums),
        url(base, version, names.tarball),
    )
}

/// `$XDG_CACHE_HOME/repro/<name>/<version>/`.
pub(crate) fn cache_dir(distro: Distro, version: &Version) -> Result<PathBuf, String> {
    Ok(fetch::cache_root(distro.facts().name)?.join(version.to_string()))
}

/// The sha256 of `dir/name` when it is the one the sum file in `dir` lists for it; None when it
/// differs, or the file, the sum file or its line is missing.
fn listed_sum(dir: &Path, names: &ReleaseArtifacts, name: &str) -> Option<String> {
    let want = std::fs::read_to_string(dir.join(names.checksums))
        .ok()
        .and_then(|t| fetch::sum_for(&t, name))?;
    fetch::file_sha256(&dir.join(name)).filter(|have| *have == want)
}

/// The tarball's sum when the cached pair in `dir` still matches; a damaged or partial pair is
/// removed (and fetched again), with the images tarball beside it, which was checked against
/// the sum file that goes.
fn cached(dir: &Path, names: &ReleaseArtifacts) -> Option<String> {
    let (tarball, sums) = (dir.join(names.tarball), dir.join(names.checksums));
    if !tarball.exists() && !sums.exists() {
        return None;
    }
    if let Some(sum) = listed_sum(dir, names, names.tarball) {
        return Some(sum);
    }
    errln!(
        "repro: the cached {} does not match {} beside it; fetching both again",
        tarball.display(),
        names.checksums
    );
    let _ = std::fs::remove_file(&tarball);
    let _ = std::fs::remove_file(&sums);
    let _ = std::fs::remove_file(dir.join(names.images));
    None
}

/// Whether the images tarball cached in `dir` matches its line in the cached sum file (the pair
/// beside it already checked by [`cached`]). A damaged one, or one the sum file does not list,
/// is removed (and fetched again); hashing it reads about 800 MB, a few seconds.
fn cached_images(dir: &Path, names: &ReleaseArtifacts) -> bool {
    let images = dir.join(names.images);
    if !images.exists() {
        return false;
    }
    if listed_sum(dir, names, names.images).is_some() {
        return true;
    }
    errln!(
        "repro: the cached {} does not match {} beside it; fetching it again",
        images.display(),
        names.checksums
    );
    let _ = std::fs::remove_file(&images);
    false
}

/// One file to download into the cache: its name, its URL (maybe with credentials), the most
/// it may be and the sum the sum file lists for it.
struct Wanted<'a> {
    name: &'a str,
    url: String,
    max: u64,
    sum: String,
}

/// Where a release's files come from: the HTTP agent, and what a missing file means.
struct Source {
    distro: Distro,
    version: Version,
    agent: ureq::Agent,
}

impl Source {
    /// GET `real` (which may carry credentials): a missing file names the version as wrong.
    fn get(&self, real: &str) -> Result<ureq::http::Response<ureq::Body>, FetchError> {
        let (distro, version) = (self.distro, &self.version);
        fetch::get(&self.agent, real).map_err(|e| match e {
            GetError::Missing(code) => FetchError::NotFound(format!(
                "no {distro} release {version} at {} (HTTP {code}): check the version (the releases are listed at {}), or set {URL_ENV} to a mirror that has it",
                without_userinfo(real),
                distro.facts().release_downloads_url.unwrap_or("the project's releases page")
            )),
            GetError::Failed(m) => FetchError::Failed(m),
        })
    }
}

/// The folder holding the verified release artifacts of `version` — the tarball and the sum
/// file, and with `images` rke2's air-gap images tarball — the cache's if they still match, else
/// downloaded (streamed to disk, a progress bar on stderr when `live`) and checked against the
/// sum file first. Nothing of a download is kept unless every file it brought matches: on a
/// mismatch nothing new is left in the cache.
pub(crate) fn fetch(
    distro: Distro,
    version: &Version,
    live: bool,
    images: bool,
) -> Result<PathBuf, FetchError> {
    let (Some(base), Some(names)) = (base_url(distro), distro.facts().release_artifacts.as_ref())
    else {
        return Err(FetchError::Failed(format!(
            "{distro} nodes run a published image: there are no release artifacts to fetch"
        )));
    };
    // The node image is amd64 (sim/image/rke2/Dockerfile.in), as the tarball's name says.
    if std::env::consts::ARCH != "x86_64" {
        return Err(FetchError::Failed(format!(
            "{distro}'s release artifacts are fetched for amd64 only ({}); on {} give --artifacts DIR with your architecture's",
            names.tarball,
            std::env::consts::ARCH
        )));
    }
    let dir = cache_dir(distro, version).map_err(FetchError::Failed)?;
    let pair = cached(&dir, names);
    let images_cached = pair.is_some() && images && cached_images(&dir, names);
    if let Some(sum) = &pair {
        if !images || images_cached {
            let with = if images_cached {
                format!(" and {}", names.images)
            } else {
                String::new()
            };
            errln!(
                "repro: {distro} {version}'s release artifacts are cached and verified ({} sha256 {sum}{with}): {}",
                names.tarball,
                dir.display()
            );
            return Ok(dir);
        }
    }
    let source = Source {
        distro,
        version: version.clone(),
        agent: fetch::agent(),
    };
    let shown_sum = without_userinfo(&url(&base, version, names.checksums));
    // The sum file: the cached one when the pair is cached (the images tarball is checked
    // against the file the tarball was), else the release's.
    let text = match pair {
        Some(_) => {
            let path = dir.join(names.checksums);
            std::fs::read_to_string(&path)
                .map_err(|e| FetchError::Failed(format!("cannot read {}: {e}", path.display())))?
        }
        None => fetch::read_text(
            source.get(&url(&base, version, names.checksums))?,
            &shown_sum,
        )
        .map_err(FetchError::Failed)?,
    };
    let listed = |name: &str, help: &str| {
        fetch::sum_for(&text, name).ok_or_else(|| {
            FetchError::Failed(format!(
                "{shown_sum} has no sha256 line for `{name}` (expected `<64 hex>  {name}`, as sha256sum writes it){help}"
            ))
        })
    };
    let mut wanted = Vec::new();
    if pair.is_none() {
        wanted.push(Wanted {
            name: names.tarball,
            url: url(&base, version, names.tarball),
            max: fetch::MAX_DOWNLOAD_BYTES,
            sum: listed(names.tarball, "")?,
        });
    }
    if images && !images_cached {
        wanted.push(Wanted {
            name: names.images,
            url: url(&base, version, names.images),
            max: fetch::MAX_IMAGES_BYTES,
            sum: listed(
                names.images,
                "; --no-images-tarball runs without it (every node then pulls its images)",
            )?,
        });
    }
    announce(distro, version, names, &wanted, images);
    crate::safe_fs::private_dir(&dir)
        .map_err(|e| FetchError::Failed(format!("cannot create {}: {e}", dir.display())))?;
    let parts = download_all(&source, &dir, &wanted, names, &shown_sum, live)?;
    let failed =
        |e: std::io::Error| FetchError::Failed(format!("cannot write {}: {e}", dir.display()));
    for (part, w) in parts.iter().zip(&wanted) {
        std::fs::rename(part, dir.join(w.name)).map_err(failed)?;
    }
    if pair.is_none() {
        // The sum file as published (rke2's lists every asset); `--artifacts` reads the
        // tarball's line, rke2's install script the images tarball's.
        std::fs::write(dir.join(names.checksums), &text).map_err(failed)?;
    }
    for w in &wanted {
        errln!(
            "repro: downloaded and verified {} (sha256 {}) into {}",
            w.name,
            w.sum,
            dir.display()
        );
    }
    Ok(dir)
}

/// Says what is being fetched, and whether the images tarball is (about 800 MB) or left out.
fn announce(
    distro: Distro,
    version: &Version,
    names: &ReleaseArtifacts,
    wanted: &[Wanted<'_>],
    images: bool,
) {
    let what: Vec<&str> = wanted.iter().map(|w| w.name).collect();
    let (what, sums, img) = (what.join(" and "), names.checksums, names.images);
    if images {
        errln!(
            "repro: fetching {distro} {version}'s release artifacts ({what}, checked against {sums}); {img} is about 800 MB, built into the node image so that no node pulls from Docker Hub (--no-images-tarball to leave it out)"
        );
    } else {
        errln!(
            "repro: fetching {distro} {version}'s release artifacts ({what}, checked against {sums}); not {img} (--no-images-tarball): every node pulls its images at boot"
        );
    }
}

/// Downloads each wanted file into a part file in `dir` and checks it against its sum; returns
/// the part files, in `wanted`'s order. On any failure every part file goes, and `dir` with
/// them when it holds nothing else: nothing of this fetch is kept.
fn download_all(
    source: &Source,
    dir: &Path,
    wanted: &[Wanted<'_>],
    names: &ReleaseArtifacts,
    shown_sum: &str,
    live: bool,
) -> Result<Vec<PathBuf>, FetchError> {
    let mut parts: Vec<PathBuf> = Vec::new();
    for w in wanted {
        let shown = without_userinfo(&w.url);
        let part = dir.join(format!("{}.part-{}", w.name, std::process::id()));
        parts.push(part.clone());
        // The sum file named the version: a missing images tarball is the mirror's gap, not a
        // wrong version (exit 3, with the way to run without it).
        let got = source
            .get(&w.url)
            .map_err(|e| match e {
                FetchError::NotFound(_) if w.name == names.images => FetchError::Failed(format!(
                    "{shown} is missing (the sum file lists it): set {URL_ENV} to a mirror that has it, or give --no-images-tarball (every node then pulls its images)"
                )),
                e => e,
            })
            .and_then(|r| {
                fetch::download(r, &shown, &part, live, w.max).map_err(FetchError::Failed)
            })
            .and_then(|got| match got == w.sum {
                true => Ok(()),
                false => Err(FetchError::Mismatch(format!(
                    "the download of {shown} has sha256 {got}, but {shown_sum} says {}: refused, nothing was created or kept (a corrupted or replaced file; try again, or check the mirror)",
                    w.sum
                ))),
            });
        if let Err(e) = got {
            for p in &parts {
                let _ = std::fs::remove_file(p);
            }
            let _ = std::fs::remove_dir(dir);
            return Err(e);
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> &'static ReleaseArtifacts {
        distro::Distro::Rke2
            .facts()
            .release_artifacts
            .as_ref()
            .expect("rke2's")
    }

    #[test]
    fn urls_are_install_shs_with_the_plus_encoded() {
        let v: Version = "v1.32.5+rke2r1".parse().unwrap();
        let base = Distro::Rke2.facts().release_downloads_url.unwrap();
        assert_eq!(
            urls(base, &v, names()),
            (
                "https://github.com/rancher/rke2/releases/download/v1.32.5%2Brke2r1/sha256sum-amd64.txt".to_string(),
                "https://github.com/rancher/rke2/releases/download/v1.32.5%2Brke2r1/rke2.linux-amd64.tar.gz".to_string(),
            )
        );
        let rc: Version = "v1.33.5-rc1+rke2r1".parse().unwrap();
        assert!(urls("http://m", &rc, names())
            .1
            .starts_with("http://m/v1.33.5-rc1%2Brke2r1/"));
        // k3s's nodes run a published image: nothing to fetch, whatever the environment says.
        assert_eq!(base_url(Distro::K3s), None);
    }

    #[test]
    fn the_tarballs_sum_is_read_from_rke2s_sum_file() {
        // rke2's sha256sum-amd64.txt lists every amd64 asset of the release.
        let (a, b, c) = ("1a".repeat(32), "2b".repeat(32), "3C".repeat(32));
        let text = format!(
            "{a}  rke2-images.linux-amd64.tar.zst\n{b}  rke2.linux-amd64.tar.gz\n{c}  rke2.linux-amd64\n"
        );
        assert_eq!(fetch::sum_for(&text, names().tarball), Some(b.clone()));
        assert_eq!(
            fetch::sum_for(&text, "rke2.linux-amd64"),
            Some(c.to_ascii_lowercase())
        );
        assert_eq!(
            fetch::sum_for(
                &format!("{a}  rke2.linux-amd64.tar.gz.sig\n"),
                names().tarball
            ),
            None
        );
    }

    #[test]
    fn a_damaged_cache_is_dropped_and_a_good_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(cached(dir.path(), names()), None);
        std::fs::write(dir.path().join(names().tarball), b"tarball").unwrap();
        let sum = crate::build_file::sha256_hex(b"tarball");
        std::fs::write(
            dir.path().join(names().checksums),
            format!("{sum}  {}\n", names().tarball),
        )
        .unwrap();
        assert_eq!(cached(dir.path(), names()), Some(sum));
        std::fs::write(dir.path().join(names().tarball), b"tarbal!").unwrap();
        assert_eq!(cached(dir.path(), names()), None);
        assert!(
            !dir.path().join(names().tarball).exists()
                && !dir.path().join(names().checksums).exists()
        );
    }

    #[test]
    fn a_cached_images_tarball_is_kept_only_while_it_matches_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let (d, n) = (dir.path(), names());
        assert!(!cached_images(d, n), "none cached");
        let sums = |images: &[u8]| {
            format!(
                "{}  {}\n{}  {}\n",
                crate::build_file::sha256_hex(images),
                n.images,
                crate::build_file::sha256_hex(b"tarball"),
                n.tarball
            )
        };
        std::fs::write(d.join(n.tarball), b"tarball").unwrap();
        std::fs::write(d.join(n.checksums), sums(b"images")).unwrap();
        std::fs::write(d.join(n.images), b"images").unwrap();
        assert!(cached_images(d, n));
        std::fs::write(d.join(n.images), b"imageZ").unwrap();
        assert!(!cached_images(d, n), "damaged");
        assert!(!d.join(n.images).exists(), "a damaged one is removed");
        assert!(d.join(n.tarball).exists(), "the pair beside it stays");
        // A sum file without the images tarball's line: not kept either.
        std::fs::write(
            d.join(n.checksums),
            format!(
                "{}  {}\n",
                crate::build_file::sha256_hex(b"tarball"),
                n.tarball
            ),
        )
        .unwrap();
        std::fs::write(d.join(n.images), b"images").unwrap();
        assert!(!cached_images(d, n));
        // A damaged pair takes the images tarball with it: it was checked against that sum file.
        std::fs::write(d.join(n.checksums), sums(b"images")).unwrap();
        std::fs::write(d.join(n.images), b"images").unwrap();
        std::fs::write(d.join(n.tarball), b"tarbal!").unwrap();
        assert_eq!(cached(d, n), None);
        assert!(!d.join(n.images).exists());
    }
}
