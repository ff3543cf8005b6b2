//! What a fix changed and who wrote it: the fix's removed and modified lines (`git diff -U0`,
//! whitespace ignored, blank and comment-only lines dropped), and `git blame --porcelain` of
//! those lines at the fix's parent, with move and copy detection, read into the commits that
//! last wrote them and the lines as numbered in those commits.

use super::fixes::is_comment_or_blank;
use crate::subject::git::{self, GitError};
use std::collections::BTreeMap;
use std::path::Path;

/// The lines a fix removed or rewrote in one file, as numbered in the fix's parent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Touched {
    /// The file's path in the parent.
    pub path: String,
    pub lines: Vec<u32>,
}

/// What a fix's diff holds, over the files it is read for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FixDiff {
    /// Removed or rewritten lines per file (blank and comment-only lines left out).
    pub touched: Vec<Touched>,
    /// Lines it added (any file read).
    pub added: usize,
    /// Removed lines left out as blank or comments.
    pub ignored: usize,
    /// The diff's text, each file's hunks, for the record (capped).
    pub hunks: String,
}

/// The most of a fix's diff kept as its record.
const MAX_HUNK_BYTES: usize = 4_000;

/// Reads the unified diff (`-U0`) of a fix against its parent over `paths`.
pub(crate) fn fix_diff(repo: &Path, parent: &str, fix: &str, paths: &[String]) -> Result<FixDiff, GitError> {
    let mut args = vec!["diff", "-U0", "-w", "--ignore-blank-lines", "--no-color", "--no-ext-diff", "--no-textconv", "-M", parent, fix, "--"];
    args.extend(paths.iter().map(String::as_str));
    let bytes = git::git_bytes(repo, &args, &[])?;
    Ok(parse_diff(&String::from_utf8_lossy(&bytes)))
}

/// Reads a `-U0` diff: each `-` line's number in the old file, with what it held.
pub(crate) fn parse_diff(text: &str) -> FixDiff {
    let mut out = FixDiff::default();
    let mut old_path: Option<String> = None;
    let mut old_line = 0u32;
    let mut current: Option<Touched> = None;
    for line in text.lines() {
        if out.hunks.len() < MAX_HUNK_BYTES && !line.starts_with("index ") && !line.starts_with("diff --git") {
            out.hunks.push_str(line);
            out.hunks.push('\n');
        }
        if let Some(rest) = line.strip_prefix("--- ") {
            if let Some(t) = current.take().filter(|t| !t.lines.is_empty()) {
                out.touched.push(t);
            }
            old_path = rest.strip_prefix("a/").map(str::to_string);
            current = old_path.clone().map(|path| Touched { path, lines: Vec::new() });
        } else if line.starts_with("+++ ") {
        } else if let Some(rest) = line.strip_prefix("@@ -") {
            let old = rest.split_whitespace().next().unwrap_or("0");
            old_line = old.split(',').next().and_then(|n| n.parse().ok()).unwrap_or(0);
        } else if let Some(removed) = line.strip_prefix('-') {
            let path = old_path.as_deref().unwrap_or_default();
            if is_comment_or_blank(path, removed) {
                out.ignored += 1;
            } else if let Some(t) = current.as_mut() {
                t.lines.push(old_line);
            }
            old_line += 1;
        } else if line.starts_with('+') {
            out.added += 1;
        }
    }
    if let Some(t) = current.take().filter(|t| !t.lines.is_empty()) {
        out.touched.push(t);
    }
    out.hunks.truncate(floor_char_boundary(&out.hunks, MAX_HUNK_BYTES));
    out
}

fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0)
}

/// One blamed line: the commit that last wrote it, and where it was in that commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blamed {
    pub commit: String,
    pub path: String,
    pub line: u32,
    /// The commit is a boundary of the blame: the repository's root, or a shallow clone's edge.
    pub boundary: bool,
}

/// Blames `lines` of `path` at `parent`: whitespace ignored (`-w`), lines moved or copied
/// within and across files followed (`-M -C`), the revisions of `.git-blame-ignore-revs`
/// skipped when the file is given.
pub(crate) fn blame(repo: &Path, parent: &str, path: &str, lines: &[u32], ignore_revs: Option<&Path>) -> Result<Vec<Blamed>, GitError> {
    let ranges = ranges(lines);
    let specs: Vec<String> = ranges.iter().map(|(a, b)| format!("{a},{b}")).collect();
    let mut args: Vec<String> = ["blame", "--porcelain", "-w", "-M", "-C"].map(String::from).to_vec();
    if let Some(file) = ignore_revs {
        args.push(format!("--ignore-revs-file={}", file.display()));
    }
    for spec in &specs {
        args.push("-L".into());
        args.push(spec.clone());
    }
    args.extend([parent.to_string(), "--".into(), path.to_string()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let bytes = git::git_bytes(repo, &refs, &[])?;
    Ok(parse_porcelain(&String::from_utf8_lossy(&bytes)))
}

/// Consecutive lines as ranges, sorted.
pub(crate) fn ranges(lines: &[u32]) -> Vec<(u32, u32)> {
    let mut sorted: Vec<u32> = lines.iter().copied().filter(|l| *l > 0).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for l in sorted {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == l => *end = l,
            _ => out.push((l, l)),
        }
    }
    out
}

/// Reads `git blame --porcelain`: a header per line group (`sha orig final [count]`), the
/// commit's details the first time it appears (`filename` and `boundary` among them), then
/// the line itself after a tab.
pub(crate) fn parse_porcelain(text: &str) -> Vec<Blamed> {
    let mut out = Vec::new();
    let mut filenames: BTreeMap<String, String> = BTreeMap::new();
    let mut boundaries: BTreeMap<String, bool> = BTreeMap::new();
    let mut pending: Option<(String, u32)> = None;
    for line in text.lines() {
        if line.starts_with('\t') {
            if let Some((commit, orig)) = pending.take() {
                let path = filenames.get(&commit).cloned().unwrap_or_default();
                let boundary = boundaries.get(&commit).copied().unwrap_or(false);
                out.push(Blamed { commit, path, line: orig, boundary });
            }
            continue;
        }
        let mut fields = line.split(' ');
        let first = fields.next().unwrap_or_default();
        if first.len() == 40 && first.bytes().all(|b| b.is_ascii_hexdigit()) {
            let orig = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            pending = Some((first.to_string(), orig));
            continue;
        }
        let Some((commit, _)) = &pending else { continue };
        if let Some(name) = line.strip_prefix("filename ") {
            filenames.insert(commit.clone(), name.to_string());
        } else if line == "boundary" {
            boundaries.insert(commit.clone(), true);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fix_diff_gives_the_removed_lines_as_numbered_before_it() {
        let diff = "diff --git a/app.py b/app.py\nindex 1..2 100644\n--- a/app.py\n+++ b/app.py\n@@ -3,2 +3,2 @@ def f():\n-    return a / b\n-    # old note\n+    return a / b if b else 0\n+    # new note\n@@ -10 +9,0 @@\n-    print(x)\ndiff --git a/new.py b/new.py\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x = 1\n";
        let d = parse_diff(diff);
        assert_eq!(d.touched, vec![Touched { path: "app.py".into(), lines: vec![3, 10] }]);
        assert_eq!((d.added, d.ignored), (3, 1));
        assert!(d.hunks.contains("@@ -3,2 +3,2 @@") && !d.hunks.contains("index 1..2"));
    }

    #[test]
    fn porcelain_blame_is_read_per_line_with_its_commit_path_and_boundary() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let text = format!(
            "{a} 5 10 2\nauthor x\nfilename old/app.py\n\tline ten\n{a} 6 11\n\tline eleven\n{b} 1 12 1\nauthor y\nboundary\nfilename app.py\n\tline twelve\n"
        );
        let blamed = parse_porcelain(&text);
        assert_eq!(blamed.len(), 3);
        assert_eq!((blamed[0].commit.as_str(), blamed[0].path.as_str(), blamed[0].line, blamed[0].boundary), (a.as_str(), "old/app.py", 5, false));
        assert_eq!((blamed[1].line, blamed[1].path.as_str()), (6, "old/app.py"));
        assert_eq!((blamed[2].commit.as_str(), blamed[2].line, blamed[2].boundary), (b.as_str(), 1, true));
        assert_eq!(ranges(&[7, 3, 4, 5, 9, 4]), vec![(3, 5), (7, 7), (9, 9)]);
    }
}
