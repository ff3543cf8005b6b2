//! Lines followed forward through a repository's later commits: did a later commit change
//! (or remove) them, and where are they afterwards? Each step diffs a commit against the one
//! before it on the walk (`git diff -U0 -M`), shifting the lines past every hunk above them
//! and following renames; a hunk that replaces or removes a line of the span, or inserts
//! lines inside it, changes it. The walk from one commit to a later one follows the later
//! commit's first-parent line.

use super::git::{git, git_bytes, GitError};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Inclusive 1-based lines of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// `start..=end`, in order, starting at line 1 at the earliest.
    pub fn new(start: u32, end: u32) -> Self {
        let (start, end) = (start.min(end).max(1), start.max(end).max(1));
        Self { start, end }
    }

    /// The span widened by `lines` on each side (not below line 1).
    pub fn widened(self, lines: u32) -> Self {
        Self::new(self.start.saturating_sub(lines), self.end.saturating_add(lines))
    }
}

/// One step of a walk: `commit`, diffed against `parent` (the commit before it on the walk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub parent: String,
    pub commit: String,
}

/// What became of lines followed through a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// `commit` changed or removed a line of the span (or, for a whole file, changed the file).
    Changed { commit: String, deleted: bool },
    /// No step changed them: their path and lines after the last step.
    Kept { path: String, span: Option<Span> },
}

/// One hunk's header: `-old_start,old_len +new_start,new_len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hunk {
    old_start: u32,
    old_len: u32,
    new_len: u32,
}

/// One file of a commit's diff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct FileChange {
    old_path: Option<String>,
    new_path: Option<String>,
    binary: bool,
    hunks: Vec<Hunk>,
}

/// Follows lines through commits of one repository; each step's diff is read once.
pub struct Tracer {
    repo: PathBuf,
    diffs: HashMap<(String, String), Rc<Vec<FileChange>>>,
}

impl Tracer {
    pub fn new(repo: &Path) -> Self {
        Self { repo: repo.to_path_buf(), diffs: HashMap::new() }
    }

    /// The full SHA of a commit, or `None` when the repository has no such commit.
    pub fn commit(&self, rev: &str) -> Option<String> {
        git(&self.repo, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
    }

    /// Whether `path` exists in `commit`.
    pub fn has_file(&self, commit: &str, path: &str) -> bool {
        git(&self.repo, &["cat-file", "-e", &format!("{commit}:{path}")]).is_ok()
    }

    /// The walk from `from` to the later commit `to`, at most `limit` steps: `to`'s
    /// first-parent line from `from` on; when `from` lies on a branch merged into that line,
    /// the branch's own first-parent commits up to the merge, then the line. `None` when `from`
    /// is not an ancestor of `to`; empty when they are the same commit.
    pub fn walk(&self, from: &str, to: &str, limit: Option<usize>) -> Result<Option<Vec<Step>>, GitError> {
        if from == to {
            return Ok(Some(Vec::new()));
        }
        let listing = git(&self.repo, &["rev-list", "--ancestry-path", "--topo-order", "--reverse", "--parents", &format!("{from}..{to}")])?;
        let mut order: Vec<&str> = Vec::new();
        let mut parents: HashMap<&str, Vec<&str>> = HashMap::new();
        for line in listing.lines() {
            let mut words = line.split_whitespace();
            let Some(commit) = words.next() else { continue };
            order.push(commit);
            parents.insert(commit, words.collect());
        }
        if !parents.contains_key(to) {
            return Ok(None);
        }
        // `to`'s first-parent line within the commits between them.
        let mut line_of_to: BTreeSet<&str> = BTreeSet::new();
        let mut at = to;
        loop {
            line_of_to.insert(at);
            match parents.get(at).and_then(|p| p.first()) {
                Some(p) if parents.contains_key(p) => at = p,
                _ => break,
            }
        }
        let mut children: BTreeMap<&str, Vec<(&str, bool)>> = BTreeMap::new();
        for commit in &order {
            for (i, parent) in parents[commit].iter().enumerate() {
                children.entry(parent).or_default().push((commit, i == 0));
            }
        }
        let mut steps = Vec::new();
        let mut at = from;
        while at != to && limit.is_none_or(|l| steps.len() < l) {
            let next = children.get(at).and_then(|kids| {
                let on_line = |first: bool| kids.iter().find(|(c, f)| line_of_to.contains(c) && (*f || !first)).map(|(c, _)| *c);
                on_line(true).or_else(|| on_line(false)).or_else(|| kids.iter().find(|(_, f)| *f).map(|(c, _)| *c)).or_else(|| kids.first().map(|(c, _)| *c))
            });
            let Some(next) = next else { break };
            steps.push(Step { parent: at.to_string(), commit: next.to_string() });
            at = next;
        }
        Ok(Some(steps))
    }

    /// Follows `span` of `path` (the whole file when `None`) through `steps`.
    pub fn follow(&mut self, path: &str, span: Option<Span>, steps: &[Step]) -> Result<Fate, GitError> {
        let mut path = path.to_string();
        let mut span = span;
        for step in steps {
            let changes = self.diff(step)?;
            let Some(change) = changes.iter().find(|c| c.old_path.as_deref() == Some(path.as_str())) else { continue };
            let Some(new_path) = &change.new_path else {
                return Ok(Fate::Changed { commit: step.commit.clone(), deleted: true });
            };
            if change.binary && (change.hunks.is_empty() || span.is_none()) {
                return Ok(Fate::Changed { commit: step.commit.clone(), deleted: false });
            }
            match span {
                None if !change.hunks.is_empty() => return Ok(Fate::Changed { commit: step.commit.clone(), deleted: false }),
                None => {}
                Some(s) => match shift(s, &change.hunks) {
                    Some(moved) => span = Some(moved),
                    None => return Ok(Fate::Changed { commit: step.commit.clone(), deleted: false }),
                },
            }
            path = new_path.clone();
        }
        Ok(Fate::Kept { path, span })
    }

    fn diff(&mut self, step: &Step) -> Result<Rc<Vec<FileChange>>, GitError> {
        let key = (step.parent.clone(), step.commit.clone());
        if let Some(d) = self.diffs.get(&key) {
            return Ok(d.clone());
        }
        let out = git_bytes(
            &self.repo,
            &[
                "diff",
                "-U0",
                "-M",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--no-relative",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                &step.parent,
                &step.commit,
            ],
            &[],
        )?;
        let parsed = Rc::new(parse(&String::from_utf8_lossy(&out)));
        self.diffs.insert(key, parsed.clone());
        Ok(parsed)
    }
}

/// The span after a file's hunks, or `None` when a hunk changes it: one that replaces or
/// removes a line of the span, or inserts lines between two of its lines.
fn shift(span: Span, hunks: &[Hunk]) -> Option<Span> {
    let mut delta: i64 = 0;
    for h in hunks {
        if h.old_len == 0 {
            // Inserted after old line `old_start`.
            if h.old_start >= span.start && h.old_start < span.end {
                return None;
            }
            if h.old_start < span.start {
                delta += h.new_len as i64;
            }
        } else {
            let last = h.old_start + h.old_len - 1;
            if h.old_start <= span.end && last >= span.start {
                return None;
            }
            if last < span.start {
                delta += h.new_len as i64 - h.old_len as i64;
            }
        }
    }
    let at = |line: u32| (line as i64 + delta).clamp(1, u32::MAX as i64) as u32;
    Some(Span::new(at(span.start), at(span.end)))
}

/// A path as git prints it in a diff header: plain, or C-quoted (`"a/t\303\251st"`), with the
/// prefix (`a/`, `b/`) removed; `None` for `/dev/null`.
fn header_path(text: &str, prefix: &str) -> Option<String> {
    let text = text.strip_suffix('\t').unwrap_or(text);
    if text == "/dev/null" {
        return None;
    }
    let name = if text.starts_with('"') { unquote(text).0 } else { text.to_string() };
    Some(name.strip_prefix(prefix).map(str::to_string).unwrap_or(name))
}

/// A C-quoted string at the start of `text` and the rest after it.
fn unquote(text: &str) -> (String, &str) {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return (String::from_utf8_lossy(&out).into_owned(), &text[i + 1..]),
            b'\\' if i + 1 < bytes.len() => {
                let c = bytes[i + 1];
                match c {
                    b'0'..=b'7' if i + 3 < bytes.len() => {
                        let octal = &text[i + 1..i + 4];
                        out.push(u8::from_str_radix(octal, 8).unwrap_or(b'?'));
                        i += 4;
                        continue;
                    }
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'v' => out.push(11),
                    other => out.push(other),
                }
                i += 2;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), "")
}

/// The two paths of `diff --git a/X b/Y`, read when no other header names them (a deleted
/// empty file, a mode change).
fn git_line_paths(rest: &str) -> Option<(String, String)> {
    if rest.starts_with('"') {
        let (old, after) = unquote(rest);
        let new = after.trim_start();
        let new = if new.starts_with('"') { unquote(new).0 } else { new.to_string() };
        return Some((old.strip_prefix("a/")?.to_string(), new.strip_prefix("b/")?.to_string()));
    }
    // `a/P b/P`: the same path twice.
    let n = rest.len().checked_sub(5)? / 2;
    let (old, new) = (rest.get(2..2 + n)?, rest.get(n + 5..)?);
    (rest.starts_with("a/") && rest.get(n + 2..n + 5) == Some(" b/") && old == new).then(|| (old.to_string(), new.to_string()))
}

/// `-U0` diff text into its files and hunk headers.
fn parse(text: &str) -> Vec<FileChange> {
    let mut files: Vec<FileChange> = Vec::new();
    let (mut old_left, mut new_left) = (0u32, 0u32);
    for line in text.lines() {
        if old_left > 0 || new_left > 0 {
            match line.as_bytes().first() {
                Some(b'-') => old_left = old_left.saturating_sub(1),
                Some(b'+') => new_left = new_left.saturating_sub(1),
                Some(b'\\') => {}
                _ => {
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                }
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let (old, new) = git_line_paths(rest).map_or((None, None), |(o, n)| (Some(o), Some(n)));
            files.push(FileChange { old_path: old, new_path: new, ..FileChange::default() });
            continue;
        }
        let Some(file) = files.last_mut() else { continue };
        if let Some(rest) = line.strip_prefix("rename from ") {
            file.old_path = header_path(rest, "");
        } else if let Some(rest) = line.strip_prefix("rename to ") {
            file.new_path = header_path(rest, "");
        } else if line.starts_with("deleted file mode") {
            file.new_path = None;
        } else if line.starts_with("new file mode") {
            file.old_path = None;
        } else if let Some(rest) = line.strip_prefix("--- ") {
            file.old_path = header_path(rest, "a/");
        } else if let Some(rest) = line.strip_prefix("+++ ") {
            file.new_path = header_path(rest, "b/");
        } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
            file.binary = true;
        } else if let Some(rest) = line.strip_prefix("@@ -") {
            let mut parts = rest.split(' ');
            let range = |text: Option<&str>| -> (u32, u32) {
                let text = text.unwrap_or("");
                let (start, len) = text.split_once(',').unwrap_or((text, "1"));
                (start.parse().unwrap_or(0), len.parse().unwrap_or(1))
            };
            let (old_start, old_len) = range(parts.next());
            let (_, new_len) = range(parts.next().and_then(|p| p.strip_prefix('+')));
            file.hunks.push(Hunk { old_start, old_len, new_len });
            (old_left, new_left) = (old_len, new_len);
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::subject::git::run_for_test as run;

    fn commit(dir: &Path, path: &str, text: &str, message: &str) -> String {
        std::fs::write(dir.join(path), text).expect("write");
        run(dir, &["add", "-A"]);
        run(dir, &["commit", "-q", "-m", message]);
        run(dir, &["rev-parse", "HEAD"])
    }

    #[test]
    fn lines_are_followed_along_the_first_parent_line_and_into_a_merge() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path();
        run(repo, &["init", "-q", "--initial-branch=main"]);
        let lines = |n: u32| (1..=n).map(|i| format!("line {i}\n")).collect::<String>();
        let a = commit(repo, "f.txt", &lines(6), "a");
        run(repo, &["checkout", "-q", "-b", "side"]);
        let s1 = commit(repo, "f.txt", &lines(6).replace("line 5\n", "line five\n"), "s1");
        run(repo, &["checkout", "-q", "main"]);
        let m1 = commit(repo, "f.txt", &format!("top\n{}", lines(6)), "m1");
        run(repo, &["merge", "-q", "--no-ff", "-m", "m2", "side"]);
        let m2 = run(repo, &["rev-parse", "HEAD"]);
        let m3 = commit(repo, "g.txt", "other\n", "m3");
        let tracer = Tracer::new(repo);
        let step = |p: &str, c: &str| Step { parent: p.to_string(), commit: c.to_string() };
        // From the first commit, the first-parent line (not the side branch).
        assert_eq!(tracer.walk(&a, &m3, None).expect("git"), Some(vec![step(&a, &m1), step(&m1, &m2), step(&m2, &m3)]));
        assert_eq!(tracer.walk(&a, &m3, Some(2)).expect("git").map(|w| w.len()), Some(2), "a window of 2 commits");
        // From the side branch, into the merge and on.
        assert_eq!(tracer.walk(&s1, &m3, None).expect("git"), Some(vec![step(&s1, &m2), step(&m2, &m3)]));
        assert_eq!(tracer.walk(&s1, &m1, None).expect("git"), None, "not an ancestor");
        assert_eq!(tracer.walk(&m3, &m3, None).expect("git"), Some(Vec::new()));

        let mut tracer = tracer;
        let walk = tracer.walk(&a, &m3, None).expect("git").expect("ancestor");
        // Line 3 moves down one (m1's line on top), and nothing rewrites it.
        assert_eq!(tracer.follow("f.txt", Some(Span::new(3, 3)), &walk).expect("git"), Fate::Kept { path: "f.txt".into(), span: Some(Span::new(4, 4)) });
        // Line 5 is rewritten by the side branch, which the merge brings in.
        assert_eq!(tracer.follow("f.txt", Some(Span::new(5, 5)), &walk).expect("git"), Fate::Changed { commit: m2.clone(), deleted: false });
        // The whole file changes in m1 already.
        assert_eq!(tracer.follow("f.txt", None, &walk).expect("git"), Fate::Changed { commit: m1, deleted: false });
        assert!(tracer.has_file(&a, "f.txt") && !tracer.has_file(&a, "g.txt"));
        assert_eq!(tracer.commit("HEAD").as_deref(), Some(m3.as_str()));
        assert_eq!(tracer.commit("0123456789abcdef0123456789abcdef01234567"), None);
    }

    #[test]
    fn hunks_above_shift_the_span_and_hunks_inside_change_it() {
        let span = Span::new(10, 12);
        // 2 lines replaced by 5 above: +3.
        assert_eq!(shift(span, &[Hunk { old_start: 3, old_len: 2, new_len: 5 }]), Some(Span::new(13, 15)));
        // 1 line inserted after line 4, 2 removed at 6–7: −1.
        assert_eq!(shift(span, &[Hunk { old_start: 4, old_len: 0, new_len: 1 }, Hunk { old_start: 6, old_len: 2, new_len: 0 }]), Some(Span::new(9, 11)));
        // Below the span: nothing moves.
        assert_eq!(shift(span, &[Hunk { old_start: 13, old_len: 1, new_len: 3 }]), Some(span));
        // An insertion right after the span's last line leaves it, one inside changes it.
        assert_eq!(shift(span, &[Hunk { old_start: 12, old_len: 0, new_len: 2 }]), Some(span));
        assert_eq!(shift(span, &[Hunk { old_start: 11, old_len: 0, new_len: 1 }]), None);
        // A replaced or removed line of the span changes it.
        assert_eq!(shift(span, &[Hunk { old_start: 12, old_len: 1, new_len: 1 }]), None);
        assert_eq!(shift(span, &[Hunk { old_start: 8, old_len: 3, new_len: 0 }]), None);
    }

    #[test]
    fn diff_headers_renames_deletions_and_quoted_paths_are_read() {
        let text = "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\nindex 1..2 100644\n--- a/old.py\n+++ b/new.py\n@@ -3 +3,2 @@ def f():\n--- x\n+++ y\n+z\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\nindex e69de29..0000000\ndiff --git \"a/t\\303\\251st.md\" \"b/t\\303\\251st.md\"\n--- \"a/t\\303\\251st.md\"\n+++ \"b/t\\303\\251st.md\"\n@@ -0,0 +1 @@\n+hi\n";
        let files = parse(text);
        assert_eq!(files.len(), 3, "{files:?}");
        assert_eq!((files[0].old_path.as_deref(), files[0].new_path.as_deref()), (Some("old.py"), Some("new.py")));
        // The removed line `-- x` printed as `--- x` is hunk content, not a header.
        assert_eq!(files[0].hunks, vec![Hunk { old_start: 3, old_len: 1, new_len: 2 }]);
        assert_eq!((files[1].old_path.as_deref(), files[1].new_path.as_deref()), (Some("gone.txt"), None));
        assert_eq!(files[2].old_path.as_deref(), Some("tést.md"));
        assert_eq!(files[2].hunks, vec![Hunk { old_start: 0, old_len: 0, new_len: 1 }]);
    }
}
