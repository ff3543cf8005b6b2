//! Seed 003's eval sets as a target: each case's `Range: base..tip` is one subject, reviewed
//! blind — in a fresh clone that holds the history up to the tip only and not the eval set
//! (seed 003's strict `--archive` run, kept a git repository so every reviewer works), with
//! the review guide (`REVIEW.md`) less the lines tagged with the case or its groups.

use super::corpus::is_safe_relative_path;
use super::git::git;
use super::{diff, Subject, TargetError};
use std::path::Path;

/// The review guide the reviewer reads (`REVIEW.md`), put into each blind clone.
pub const REVIEW_FILE: &str = "REVIEW.md";

fn sanitize(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// Clones `base..tip` blind under `work_dir/evals/`, reusing a finished clone.
pub(crate) fn materialize(
    id: &str,
    identity: &str,
    repo: &Path,
    (base, tip): (&str, &str),
    strip: Option<&Path>,
    review: Option<&str>,
    work_dir: &Path,
) -> Result<Subject, TargetError> {
    let root = work_dir.join("evals");
    let dir = root.join(format!("{}-{}", sanitize(id), &identity[..16.min(identity.len())]));
    let fail = |message: String| TargetError::Resolve { repo: repo.display().to_string(), rev: format!("{base}..{tip}"), message };
    if !super::staging::is_ready(&dir) {
        std::fs::create_dir_all(&root).map_err(|e| fail(format!("cannot create `{}`: {e}", root.display())))?;
        let staging = tempfile::Builder::new().prefix(".staging-").tempdir_in(&root).map_err(|e| fail(format!("cannot create a staging directory: {e}")))?;
        let work = staging.path();
        let source = repo.canonicalize().map_err(|e| fail(format!("cannot resolve the repository: {e}")))?;
        git(work, &["init", "--quiet", "--initial-branch=main"])?;
        git(work, &["config", "user.name", "runner"])?;
        git(work, &["config", "user.email", "runner@localhost"])?;
        git(work, &["config", "commit.gpgsign", "false"])?;
        git(work, &["fetch", "--quiet", "--no-tags", &source.display().to_string(), base, tip])?;
        git(work, &["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", tip])?;
        if let Some(rel) = strip.filter(|p| is_safe_relative_path(&p.to_string_lossy())) {
            let evals = work.join(rel);
            // The clone's own files only: a directory on the way that is a committed link
            // (`docs -> /home/me`) would make the removal reach outside the clone.
            let mut on_the_way = work.to_path_buf();
            for part in rel.components() {
                on_the_way.push(part);
                if on_the_way != evals && std::fs::symlink_metadata(&on_the_way).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(fail(format!("`{}` is a symbolic link in the reviewed commit: the eval set is not removed through it", on_the_way.display())));
                }
            }
            if std::fs::symlink_metadata(&evals).is_ok() {
                std::fs::remove_dir_all(&evals).map_err(|e| fail(format!("cannot remove the eval set from the clone: {e}")))?;
            }
        }
        if let Some(text) = review {
            let guide = work.join(REVIEW_FILE);
            std::fs::write(&guide, text).map_err(|e| fail(format!("cannot write `{}`: {e}", guide.display())))?;
        }
        super::staging::mark_ready(work).map_err(|e| fail(e.to_string()))?;
        super::staging::put_in_place(&staging.keep(), &dir).map_err(fail)?;
    }
    let raw = super::git::diff_bytes(&dir, base, tip)?;
    let parsed = diff::parse(&raw);
    Ok(Subject {
        id: id.to_string(),
        repo_dir: dir,
        base_sha: base.to_string(),
        head_sha: tip.to_string(),
        files: parsed.files,
        stet_error: parsed.stet_error,
        diff: String::from_utf8_lossy(&raw).into_owned(),
        review_task: None,
        spec: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reviewed commit whose path to the eval set runs through a committed link to a
    /// directory outside: the blind clone is refused and nothing outside is removed.
    #[test]
    fn the_eval_set_is_never_removed_through_a_committed_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (repo, outside) = (dir.path().join("repo"), dir.path().join("outside"));
        std::fs::create_dir_all(outside.join("evals")).expect("mkdir");
        std::fs::write(outside.join("evals/precious.txt"), "keep").expect("write");
        std::fs::create_dir_all(&repo).expect("mkdir");
        for args in [&["init", "--quiet", "--initial-branch=main"][..], &["config", "user.name", "t"], &["config", "user.email", "t@e"]] {
            git(&repo, args).expect("git");
        }
        std::fs::write(repo.join("a.txt"), "a\n").expect("write");
        git(&repo, &["add", "--all"]).expect("add");
        git(&repo, &["commit", "--quiet", "-m", "base"]).expect("commit");
        std::os::unix::fs::symlink(&outside, repo.join("docs")).expect("symlink");
        std::fs::write(repo.join("a.txt"), "b\n").expect("write");
        git(&repo, &["add", "--all"]).expect("add");
        git(&repo, &["commit", "--quiet", "-m", "tip"]).expect("commit");
        let work = dir.path().join("work");
        let (base, tip) = (git(&repo, &["rev-parse", "HEAD~1"]).expect("base"), git(&repo, &["rev-parse", "HEAD"]).expect("tip"));
        let e = materialize("case", "0123456789abcdef0123", &repo, (base.trim(), tip.trim()), Some(Path::new("docs/evals")), None, &work)
            .expect_err("through a link");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(outside.join("evals/precious.txt")).expect("still there"), "keep");
    }
}
