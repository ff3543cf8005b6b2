//! Putting a repository runner built in a staging directory into its final place, so a
//! materialized subject is either complete (it carries the ready marker) or absent.

use std::path::{Path, PathBuf};

/// The file a complete materialized repository carries in its `.git` directory.
pub const READY_MARKER: &str = "runner-ready";

/// Whether `dir` is a repository runner finished building.
pub fn is_ready(dir: &Path) -> bool {
    dir.join(".git").join(READY_MARKER).is_file()
}

/// Marks the repository in `staged` complete.
pub fn mark_ready(staged: &Path) -> std::io::Result<()> {
    std::fs::write(staged.join(".git").join(READY_MARKER), b"")
}

/// Moves the complete repository `staged` to `dir`. When another process put an identical one
/// there first, `staged` is removed and theirs kept. A directory already at `dir` without the
/// ready marker (a build cut off by a crash, or a partly restored work directory) is moved
/// aside, never deleted, to `.incomplete-<name>-<pid>-<nanos>` beside it; where it went is
/// returned.
pub fn put_in_place(staged: &Path, dir: &Path) -> Result<Option<PathBuf>, String> {
    match std::fs::rename(staged, dir) {
        Ok(()) => return Ok(None),
        Err(_) if is_ready(dir) => {
            let _ = std::fs::remove_dir_all(staged);
            return Ok(None);
        }
        Err(e) if !dir.exists() => return Err(format!("cannot move the repository into place: {e}")),
        Err(_) => {}
    }
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or_default();
    let aside = dir.with_file_name(format!(".incomplete-{name}-{}-{nanos}", std::process::id()));
    if let Err(e) = std::fs::rename(dir, &aside) {
        // Another process may have just replaced it with a complete one.
        if is_ready(dir) {
            let _ = std::fs::remove_dir_all(staged);
            return Ok(None);
        }
        return Err(format!("`{}` is an incomplete repository and cannot be moved aside: {e}", dir.display()));
    }
    match std::fs::rename(staged, dir) {
        Ok(()) => Ok(Some(aside)),
        Err(_) if is_ready(dir) => {
            let _ = std::fs::remove_dir_all(staged);
            Ok(Some(aside))
        }
        Err(e) => Err(format!("cannot move the repository into place: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repository(root: &Path, name: &str, ready: bool) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(dir.join(".git")).expect("git dir");
        std::fs::write(dir.join("file.txt"), name).expect("file");
        if ready {
            mark_ready(&dir).expect("marker");
        }
        dir
    }

    #[test]
    fn an_incomplete_directory_is_moved_aside_and_the_complete_one_put_in_its_place() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = repository(root.path(), "case-1", false);
        let staged = repository(root.path(), ".staging-1", true);
        let aside = put_in_place(&staged, &dir).expect("placed").expect("moved aside");
        assert!(is_ready(&dir));
        assert_eq!(std::fs::read_to_string(dir.join("file.txt")).expect("read"), ".staging-1");
        // Nothing is deleted: the incomplete build is kept beside it.
        assert_eq!(std::fs::read_to_string(aside.join("file.txt")).expect("read"), "case-1");
        assert!(aside.file_name().expect("name").to_string_lossy().starts_with(".incomplete-case-1-"));
    }

    #[test]
    fn a_complete_directory_already_there_is_kept_and_the_staged_copy_removed() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = repository(root.path(), "case-1", true);
        let staged = repository(root.path(), ".staging-1", true);
        assert_eq!(put_in_place(&staged, &dir).expect("placed"), None);
        assert_eq!(std::fs::read_to_string(dir.join("file.txt")).expect("read"), "case-1");
        assert!(!staged.exists());
    }
}
