//! External changes as a target: changes reviewed elsewhere, without a repository here — an id,
//! a title and a URL, and optionally the change's unified diff. `changes.json` is an array of
//! `{"id", "title"?, "url"?, "diff"?}`; `diff` is a path relative to the file's directory (it
//! may not leave it). A change without a diff can only be compared at change level: a replay
//! reviewer reads what another tool said about it; nothing here can review it again.

use super::corpus::is_safe_relative_path;
use super::files::{read_text, MAX_FILE_BYTES};
use super::{diff, Subject, TargetError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One change of an external target, as `changes.json` lists it, its diff read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalChange {
    pub id: String,
    pub title: Option<String>,
    pub url: Option<String>,
    /// The diff file as written (relative to `changes.json`), when the change has one.
    pub diff_path: Option<String>,
    /// The diff's bytes, read at plan time so the identity and the review see the same bytes.
    pub diff: Option<Vec<u8>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChange {
    id: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    diff: Option<String>,
}

/// What a change's identity hashes: everything a review of it can depend on.
#[derive(Serialize)]
struct IdentityInputs<'a> {
    kind: &'static str,
    id: &'a str,
    title: Option<&'a str>,
    url: Option<&'a str>,
    /// blake3 of the diff's bytes.
    diff: Option<String>,
}

impl ExternalChange {
    /// blake3 over the id, title, URL and diff bytes.
    pub fn identity(&self) -> String {
        let inputs = IdentityInputs {
            kind: "external",
            id: &self.id,
            title: self.title.as_deref(),
            url: self.url.as_deref(),
            diff: self.diff.as_ref().map(|d| blake3::hash(d).to_hex().to_string()),
        };
        blake3::hash(&serde_json::to_vec(&inputs).unwrap_or_default()).to_hex().to_string()
    }
}

/// An id usable as a subject: letters, digits, `-`, `_`, `.`, `/` and `@` (a benchmark's
/// `OWNER__REPO@SHA7`), not starting with `.` or `/`, at most 200 characters.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with(['.', '/'])
        && !id.contains("..")
        && id.chars().all(|c| c.is_ascii_alphanumeric() || "-_./@".contains(c))
}

fn invalid(path: &Path, message: String) -> TargetError {
    TargetError::External(format!("`{}`: {message}", path.display()))
}

/// Reads `changes.json` and each change's diff; every problem is an error naming the file.
pub fn load_changes(path: &Path) -> Result<Vec<ExternalChange>, TargetError> {
    let text = read_text(path).map_err(|e| invalid(path, format!("cannot read it: {e}")))?;
    let raw: Vec<RawChange> = serde_json::from_str(&text)
        .map_err(|e| invalid(path, format!("{e} (expected an array of {{\"id\", \"title\", \"url\", \"diff\"}}, `diff` a path relative to this file)")))?;
    if raw.is_empty() {
        return Err(invalid(path, "lists no change".into()));
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut out: Vec<ExternalChange> = Vec::with_capacity(raw.len());
    for change in raw {
        if !valid_id(&change.id) {
            return Err(invalid(path, format!("change id `{}` must be letters, digits, `-`, `_`, `.`, `/` or `@` (not leading, no `..`)", change.id)));
        }
        if out.iter().any(|c| c.id == change.id) {
            return Err(invalid(path, format!("change id `{}` is listed twice", change.id)));
        }
        let diff = match &change.diff {
            None => None,
            Some(rel) if !is_safe_relative_path(rel) => {
                return Err(invalid(path, format!("change `{}`: diff path `{rel}` must stay inside `{}`", change.id, dir.display())));
            }
            Some(rel) => Some(read_diff(&dir.join(rel)).map_err(|e| invalid(path, format!("change `{}`: cannot read its diff `{rel}`: {e}", change.id)))?),
        };
        out.push(ExternalChange { id: change.id, title: change.title, url: change.url, diff_path: change.diff, diff });
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// A diff file's bytes: a regular file (not a symlink to one elsewhere) of at most
/// [`MAX_FILE_BYTES`]; any bytes, as git writes them.
fn read_diff(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::bounded::read(path, MAX_FILE_BYTES, crate::bounded::Links::Refuse, "diff files")
}

fn sanitize(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// An external change for a reviewer: an empty directory of its own under `work_dir/external/`
/// (there is no repository) and the change's diff, empty when it has none. No commits.
pub fn materialize(change: &ExternalChange, identity: &str, work_dir: &Path) -> Result<Subject, TargetError> {
    let dir: PathBuf = work_dir.join("external").join(format!("{}-{}", sanitize(&change.id), &identity[..16.min(identity.len())]));
    std::fs::create_dir_all(&dir).map_err(|e| TargetError::Resolve {
        repo: dir.display().to_string(),
        rev: change.id.clone(),
        message: format!("cannot create the external change's directory: {e}"),
    })?;
    let raw = change.diff.clone().unwrap_or_default();
    let parsed = diff::parse(&raw);
    Ok(Subject {
        id: change.id.clone(),
        repo_dir: dir,
        base_sha: String::new(),
        head_sha: String::new(),
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

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    const DIFF: &str = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";

    #[test]
    fn changes_load_sorted_with_their_diffs_and_identities_hash_what_a_review_sees() {
        let tmp = tempfile::tempdir().expect("tempdir");
        write(tmp.path(), "x.diff", DIFF);
        let path = write(tmp.path(), "changes.json", r#"[{"id":"p-2","title":"T","url":"https://h/2"},{"id":"p-1","diff":"x.diff"}]"#);
        let changes = load_changes(&path).expect("loads");
        assert_eq!(changes.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["p-1", "p-2"]);
        assert_eq!(changes[0].diff.as_deref(), Some(DIFF.as_bytes()));
        assert_eq!(changes[1].diff, None);
        let base = changes[1].identity();
        let mut other = changes[1].clone();
        other.title = Some("T2".into());
        assert_ne!(other.identity(), base, "the title is hashed");
        let mut other = changes[1].clone();
        other.url = None;
        assert_ne!(other.identity(), base, "the URL is hashed");
        let mut other = changes[1].clone();
        other.diff = Some(b"x".to_vec());
        assert_ne!(other.identity(), base, "the diff is hashed");
        let mut other = changes[1].clone();
        other.diff_path = Some("elsewhere.diff".into());
        assert_eq!(other.identity(), base, "where the diff lies is not");

        let work = tempfile::tempdir().expect("work");
        let subject = materialize(&changes[0], &changes[0].identity(), work.path()).expect("materializes");
        assert_eq!(subject.diff, DIFF);
        assert_eq!(subject.files.len(), 1);
        assert!(subject.repo_dir.is_dir() && subject.repo_dir.starts_with(work.path()));
        let bare = materialize(&changes[1], &base, work.path()).expect("materializes");
        assert!(bare.diff.is_empty() && bare.files.is_empty());
    }

    #[test]
    fn hostile_or_malformed_changes_are_refused_with_the_file_named() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cases = [
            (r#"[{"id":"a","diff":"../outside.diff"}]"#, "must stay inside"),
            (r#"[{"id":"a","diff":"/etc/passwd"}]"#, "must stay inside"),
            (r#"[{"id":"a","diff":"missing.diff"}]"#, "cannot read its diff"),
            (r#"[{"id":"a"},{"id":"a"}]"#, "listed twice"),
            (r#"[{"id":"../a"}]"#, "must be letters"),
            (r#"[{"id":""}]"#, "must be letters"),
            (r#"[{"id":"a","label":"x"}]"#, "unknown field"),
            (r#"[]"#, "lists no change"),
            (r#"{"id":"a"}"#, "expected an array"),
        ];
        for (text, expected) in cases {
            let path = write(tmp.path(), "changes.json", text);
            let e = load_changes(&path).expect_err(text).to_string();
            assert!(e.contains(expected) && e.contains("changes.json"), "{text}: {e}");
        }
    }
}
