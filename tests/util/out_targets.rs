//! What a user-named output file (`--out`) may be pointed at (#42): a character device, a FIFO,
//! a link and a folder, made in a temporary folder, and the check that none was replaced.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

/// In `dir`: a character device made with mknod (the null device's numbers; `/dev/null` itself
/// when mknod is not allowed), a FIFO, a link to a file and a folder: what `--out` is pointed
/// at, each with the words its refusal names (none for the device: written through).
pub fn out_targets(dir: &Path) -> Vec<(std::path::PathBuf, Option<&'static str>)> {
    let dev = dir.join("null");
    let made = Command::new("mknod")
        .arg(&dev)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    let dev = if made { dev } else { "/dev/null".into() };
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep").unwrap();
    let link = dir.join("link.md");
    symlink(&victim, &link).unwrap();
    let folder = dir.join("folder");
    std::fs::create_dir(&folder).unwrap();
    vec![
        (dev, None),
        (fifo, Some("named pipe")),
        (link, Some("symbolic link")),
        (folder, Some("a folder")),
    ]
}

/// Each target is what it was: a device still a device, the FIFO a FIFO, the link a link to an
/// untouched file, the folder a folder.
pub fn assert_kept(dir: &Path, targets: &[(std::path::PathBuf, Option<&str>)]) {
    use std::os::unix::fs::FileTypeExt;
    let kind = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type();
    assert!(kind(&targets[0].0).is_char_device());
    assert!(kind(&targets[1].0).is_fifo());
    assert!(kind(&targets[2].0).is_symlink());
    assert!(kind(&targets[3].0).is_dir());
    assert_eq!(
        std::fs::read_to_string(dir.join("victim.txt")).unwrap(),
        "keep"
    );
}
