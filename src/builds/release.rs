//! A distribution's release artifacts (rke2's), fetched where its install script downloads
//! them when no `--artifacts` folder or `--image` is given: rke2's install.sh takes
//! `INSTALL_RKE2_GITHUB_URL=https://github.com/rancher/rke2` and downloads
//! `${INSTALL_RKE2_GITHUB_URL}/releases/download/${INSTALL_RKE2_VERSION}/sha256sum-${ARCH}.txt`
//! and `rke2.${SUFFIX}.tar.gz` beside it (`Facts::release_downloads_url`). The tarball's sha256
//! is checked against the sum file before anything is kept; the verified pair is cached under
//! `$XDG_CACHE_HOME/repro/<name>/<version>/` (checked again on reuse), and that folder is then
//! exactly an `--artifacts` folder. The air-gap images tarball is not fetched: rke2 pulls its
//! images at boot when it is online.

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

/// The sum file's and the tarball's URLs for `version` under `base`: the version as a path
/// segment, its `+` sent as `%2B` (what browsers send; GitHub answers both).
pub(crate) fn urls(base: &str, version: &Version, names: &ReleaseArtifacts) -> (String, String) {
    let v = version.to_string().replace('+', "%2B");
    (
        format!("{base}/{v}/{}", names.checksums),
        format!("{base}/{v}/{}", names.tarball),
    )
}

/// `$XDG_CACHE_HOME/repro/<name>/<version>/`.
pub(crate) fn cache_dir(distro: Distro, version: &Version) -> Result<PathBuf, String> {
    Ok(fetch::cache_root(distro.facts().name)?.join(version.to_string()))
}

/// The tarball's sum when the cached pair in `dir` still matches; a damaged or partial pair is
/// removed (and fetched again).
fn cached(dir: &Path, names: &ReleaseArtifacts) -> Option<String> {
    let (tarball, sums) = (dir.join(names.tarball), dir.join(names.checksums));
    if !tarball.exists() && !sums.exists() {
        return None;
    }
    let want = std::fs::read_to_string(&sums)
        .ok()
        .and_then(|t| fetch::sum_for(&t, names.tarball));
    let have = fetch::file_sha256(&tarball);
    if want.is_some() && want == have {
        return have;
    }
    errln!(
        "repro: the cached {} does not match {} beside it; fetching both again",
        tarball.display(),
        names.checksums
    );
    let _ = std::fs::remove_file(&tarball);
    let _ = std::fs::remove_file(&sums);
    None
}

/// The folder holding the verified release artifacts of `version` (the tarball and the sum
/// file): the cache's if it still matches, else downloaded and checked first. `live`: a
/// progress bar on stderr. On a mismatch nothing is kept.
pub(crate) fn fetch(distro: Distro, version: &Version, live: bool) -> Result<PathBuf, FetchError> {
    let (Some(base), Some(names)) = (base_url(distro), distro.facts().release_artifacts.as_ref())
    else {
        return Err(FetchError::Failed(format!(
            "{distro} nodes run a published image: there are no release artifacts to fetch"
        )));
    };
    let ReleaseArtifacts {
        tarball,
        checksums,
        images,
        ..
    } = names;
    // The node image is amd64 (sim/image/rke2/Dockerfile.in), as the tarball's name says.
    if std::env::consts::ARCH != "x86_64" {
        return Err(FetchError::Failed(format!(
            "{distro}'s release artifacts are fetched for amd64 only ({tarball}); on {} give --artifacts DIR with your architecture's",
            std::env::consts::ARCH
        )));
    }
    let dir = cache_dir(distro, version).map_err(FetchError::Failed)?;
    if let Some(sum) = cached(&dir, names) {
        errln!(
            "repro: {distro} {version}'s release artifacts are cached and verified ({tarball} sha256 {sum}): {}",
            dir.display()
        );
        return Ok(dir);
    }
    let (sum_url, url) = urls(&base, version, names);
    let (shown_sum, shown) = (without_userinfo(&sum_url), without_userinfo(&url));
    let agent = fetch::agent();
    let get = |real: &str| {
        fetch::get(&agent, real).map_err(|e| match e {
            GetError::Missing(code) => FetchError::NotFound(format!(
                "no {distro} release {version} at {} (HTTP {code}): check the version (the releases are listed at {}), or set {URL_ENV} to a mirror that has it",
                without_userinfo(real),
                distro.facts().release_downloads_url.unwrap_or("the project's releases page")
            )),
            GetError::Failed(m) => FetchError::Failed(m),
        })
    };
    let text = fetch::read_text(get(&sum_url)?, &shown_sum).map_err(FetchError::Failed)?;
    let expected = fetch::sum_for(&text, tarball).ok_or_else(|| {
        FetchError::Failed(format!(
            "{shown_sum} has no sha256 line for `{tarball}` (expected `<64 hex>  {tarball}`, as sha256sum writes it)"
        ))
    })?;
    errln!(
        "repro: fetching {distro} {version}'s release artifacts ({tarball}, checked against {checksums}); not {images} (about 800 MB): rke2 pulls its images at boot when online — on an air-gapped host give --artifacts DIR holding it"
    );
    crate::safe_fs::private_dir(&dir)
        .map_err(|e| FetchError::Failed(format!("cannot create {}: {e}", dir.display())))?;
    // Nothing is kept unless verified: the part file goes, and the version's folder with it
    // when it holds nothing else.
    let discard = |part: &Path| {
        let _ = std::fs::remove_file(part);
        let _ = std::fs::remove_dir(&dir);
    };
    let part = dir.join(format!("{tarball}.part-{}", std::process::id()));
    let got = match get(&url)
        .and_then(|r| fetch::download(r, &shown, &part, live).map_err(FetchError::Failed))
    {
        Ok(got) => got,
        Err(e) => {
            discard(&part);
            return Err(e);
        }
    };
    if got != expected {
        discard(&part);
        return Err(FetchError::Mismatch(format!(
            "the download of {shown} has sha256 {got}, but {shown_sum} says {expected}: refused, nothing was created or kept (a corrupted or replaced file; try again, or check the mirror)"
        )));
    }
    let failed =
        |e: std::io::Error| FetchError::Failed(format!("cannot write {}: {e}", dir.display()));
    std::fs::rename(&part, dir.join(tarball)).map_err(failed)?;
    // The sum file as published (rke2's lists every asset); `--artifacts` reads the tarball's line.
    std::fs::write(dir.join(checksums), &text).map_err(failed)?;
    errln!(
        "repro: downloaded and verified {shown} (sha256 {got}) into {}",
        dir.display()
    );
    Ok(dir)
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
        let sum = crate::builds::sha256_hex(b"tarball");
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
}
