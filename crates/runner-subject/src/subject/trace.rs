//! Lines followed forward through a repository's later commits: did a later commit change
//! (or remove) them, and where are they afterwards? Each step diffs a commit against the one
//! before it on the walk (`git diff -U0 -M`), shifting the lines past every hunk above them
//! and following renames; a hunk that replaces or removes a line of the span, or inserts
//! lines inside it, changes it. The walk from one commit to a later one follows the later
//! commit's first-parent line.
//!
//! A [`Tracer`] starts few git processes however many lines it follows: commits and files
//! are looked up through one `git cat-file --batch` process it keeps (each commit and each
//! file at a commit once), each walk and each step's diff is read once, and a path's changes
//! along a walk are collected once ([`PathTrace`]) and then answer every span of that path.

use super::git::{command, git, git_bytes, GitError};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
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

/// What a path names at a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileAt {
    /// Nothing at that path (or a submodule, whose commit the repository does not hold).
    Missing,
    /// Something other than a file: `tree` (a directory), `commit`, `tag`.
    NotAFile(String),
    /// A file of that many lines (a last line without a newline counts).
    File { lines: u64 },
}

/// A path as an export or a finding wrote it, made a path inside the repository: `.`
/// components dropped (`./app.py` is `app.py`); refused, with why, when it is empty, absolute,
/// climbs out with `..`, has an empty component (`a//b`, a trailing `/`), or holds a NUL or a
/// line break (which no git lookup can carry).
pub fn repo_path(path: &str) -> Result<String, String> {
    if path.is_empty() {
        return Err("an empty path".into());
    }
    if path.contains(['\0', '\n', '\r']) {
        return Err("a path with a NUL or a line break".into());
    }
    if path.starts_with('/') {
        return Err("an absolute path, not one inside the repository".into());
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "." => {}
            ".." => return Err("a path that climbs out with `..`".into()),
            "" => return Err("a path with an empty component".into()),
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return Err("a path that names no file".into());
    }
    Ok(parts.join("/"))
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

/// One step's diff: its files, and where each old path is among them.
#[derive(Debug, Default)]
struct Diff {
    files: Vec<FileChange>,
    /// Old path → the first file of `files` with it.
    by_old: HashMap<String, usize>,
}

impl Diff {
    fn new(files: Vec<FileChange>) -> Self {
        let mut by_old = HashMap::new();
        for (i, f) in files.iter().enumerate() {
            if let Some(old) = &f.old_path {
                by_old.entry(old.clone()).or_insert(i);
            }
        }
        Self { files, by_old }
    }
}

/// One path's changes along a walk, read once: each step that touched the file the path
/// named by then (renames followed), up to its deletion. [`PathTrace::fate`] answers any span
/// of the path from it without reading git again.
#[derive(Debug, Clone)]
pub struct PathTrace {
    /// (the step's commit, its diff, the file's change in it).
    touched: Vec<(String, Rc<Diff>, usize)>,
    /// The path after the last step (when the file was not deleted).
    end: String,
}

impl PathTrace {
    /// What became of `span` (the whole file when `None`) of the path.
    pub fn fate(&self, span: Option<Span>) -> Fate {
        let mut span = span;
        for (commit, diff, index) in &self.touched {
            let change = &diff.files[*index];
            if change.new_path.is_none() {
                return Fate::Changed { commit: commit.clone(), deleted: true };
            }
            if change.binary && (change.hunks.is_empty() || span.is_none()) {
                return Fate::Changed { commit: commit.clone(), deleted: false };
            }
            match span {
                None if !change.hunks.is_empty() => return Fate::Changed { commit: commit.clone(), deleted: false },
                None => {}
                Some(s) => match shift(s, &change.hunks) {
                    Some(moved) => span = Some(moved),
                    None => return Fate::Changed { commit: commit.clone(), deleted: false },
                },
            }
        }
        Fate::Kept { path: self.end.clone(), span }
    }
}

/// A `git cat-file --batch` process: objects asked for one line at a time, each answer read
/// whole before the next question.
struct CatFile {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

/// What `cat-file` said about one object.
enum Object {
    Missing,
    /// Its full name, its type and, for a blob, its lines.
    Found {
        oid: String,
        kind: String,
        lines: u64,
    },
}

impl CatFile {
    fn spawn(repo: &Path) -> Result<Self, GitError> {
        let spawn_error = |source| GitError::Spawn { dir: repo.display().to_string(), source };
        let mut child =
            command(repo).args(["cat-file", "--batch"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().map_err(spawn_error)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(spawn_error(std::io::Error::other("no pipes to git cat-file")));
        };
        Ok(Self { child, stdin: Some(stdin), stdout: BufReader::new(stdout) })
    }

    /// Asks for `name` (a line without a line break). An I/O failure or an answer out of
    /// protocol is an error, after which the process is not asked again.
    fn ask(&mut self, name: &str) -> std::io::Result<Object> {
        let stdin = self.stdin.as_mut().ok_or_else(|| std::io::Error::other("git cat-file was closed"))?;
        stdin.write_all(name.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        let mut header = Vec::new();
        self.stdout.read_until(b'\n', &mut header)?;
        if header.pop() != Some(b'\n') {
            return Err(std::io::Error::other("git cat-file stopped answering"));
        }
        let header = String::from_utf8_lossy(&header);
        let words: Vec<&str> = header.split(' ').collect();
        if matches!(words.last(), Some(&"missing") | Some(&"ambiguous")) {
            return Ok(Object::Missing);
        }
        let [oid, kind, size] = words[..] else { return Err(std::io::Error::other(format!("unexpected answer from git cat-file: {header}"))) };
        let size: u64 = size.parse().map_err(|_| std::io::Error::other(format!("unexpected answer from git cat-file: {header}")))?;
        // The content, counted and dropped, then the newline after it.
        let mut content = (&mut self.stdout).take(size);
        let (mut read, mut newlines, mut last) = (0u64, 0u64, b'\n');
        let mut buffer = [0u8; 64 * 1024];
        loop {
            let n = content.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            read += n as u64;
            newlines += buffer[..n].iter().filter(|b| **b == b'\n').count() as u64;
            last = buffer[n - 1];
        }
        let mut end = [0u8; 1];
        if read != size || self.stdout.read(&mut end)? != 1 || end[0] != b'\n' {
            return Err(std::io::Error::other("git cat-file's answer was cut short"));
        }
        let lines = newlines + u64::from(last != b'\n');
        Ok(Object::Found { oid: oid.to_string(), kind: kind.to_string(), lines })
    }
}

impl Drop for CatFile {
    fn drop(&mut self) {
        // Closing its input ends it; it is killed in case it does not.
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Commits and files looked up, each once, through one `cat-file` process.
#[derive(Default)]
struct Objects {
    process: Option<CatFile>,
    commits: HashMap<String, Option<String>>,
    files: HashMap<(String, String), FileAt>,
}

impl Objects {
    fn ask(&mut self, repo: &Path, name: &str) -> Result<Object, GitError> {
        let failed = |e: std::io::Error| GitError::Failed { dir: repo.display().to_string(), args: "cat-file --batch".into(), stderr: e.to_string() };
        if self.process.is_none() {
            self.process = Some(CatFile::spawn(repo)?);
        }
        let Some(process) = self.process.as_mut() else { return Err(failed(std::io::Error::other("not started"))) };
        process.ask(name).map_err(|e| {
            self.process = None;
            failed(e)
        })
    }
}

/// Walks already read: (from, to, limit) → the walk, or `None` when `from` is not an ancestor.
type Walks = HashMap<(String, String, Option<usize>), Option<Vec<Step>>>;

/// Follows lines through commits of one repository; each step's diff, each walk, and each
/// commit and file looked up are read once.
pub struct Tracer {
    repo: PathBuf,
    diffs: HashMap<(String, String), Rc<Diff>>,
    objects: RefCell<Objects>,
    walks: RefCell<Walks>,
    /// Git processes started so far.
    processes: std::cell::Cell<usize>,
}

impl Tracer {
    pub fn new(repo: &Path) -> Self {
        Self {
            repo: repo.to_path_buf(),
            diffs: HashMap::new(),
            objects: RefCell::new(Objects::default()),
            walks: RefCell::new(HashMap::new()),
            processes: std::cell::Cell::new(0),
        }
    }

    /// How many git processes this tracer has started: one `cat-file` (again only after one
    /// failed), one `rev-list` per distinct walk, one `diff` per distinct step.
    pub fn processes(&self) -> usize {
        self.processes.get()
    }

    /// Asks the `cat-file` process about `name`, starting it when none runs.
    fn ask(&self, objects: &mut Objects, name: &str) -> Result<Object, GitError> {
        if objects.process.is_none() {
            self.processes.set(self.processes.get() + 1);
        }
        objects.ask(&self.repo, name)
    }

    /// The full SHA of a commit, or `None` when the repository has no such commit.
    pub fn commit(&self, rev: &str) -> Option<String> {
        if rev.is_empty() || rev.contains(['\0', '\n', '\r']) {
            return None;
        }
        let mut objects = self.objects.borrow_mut();
        if let Some(known) = objects.commits.get(rev) {
            return known.clone();
        }
        let found = match self.ask(&mut objects, &format!("{rev}^{{commit}}")) {
            Ok(Object::Found { oid, kind, .. }) if kind == "commit" => Some(oid),
            _ => None,
        };
        objects.commits.insert(rev.to_string(), found.clone());
        found
    }

    /// What `path` (a path inside the repository, see [`repo_path`]) names in `commit`.
    pub fn file_at(&self, commit: &str, path: &str) -> Result<FileAt, GitError> {
        if path.is_empty() || commit.is_empty() || path.contains(['\0', '\n', '\r']) || commit.contains(['\0', '\n', '\r']) {
            return Ok(FileAt::Missing);
        }
        let mut objects = self.objects.borrow_mut();
        let key = (commit.to_string(), path.to_string());
        if let Some(known) = objects.files.get(&key) {
            return Ok(known.clone());
        }
        let at = match self.ask(&mut objects, &format!("{commit}:{path}"))? {
            Object::Missing => FileAt::Missing,
            Object::Found { kind, lines, .. } if kind == "blob" => FileAt::File { lines },
            Object::Found { kind, .. } => FileAt::NotAFile(kind),
        };
        objects.files.insert(key, at.clone());
        Ok(at)
    }

    /// Whether `path` is a file of `commit`.
    pub fn has_file(&self, commit: &str, path: &str) -> bool {
        matches!(self.file_at(commit, path), Ok(FileAt::File { .. }))
    }

    /// The walk from `from` to the later commit `to`, at most `limit` steps: `to`'s
    /// first-parent line from `from` on; when `from` lies on a branch merged into that line,
    /// the branch's own first-parent commits up to the merge, then the line. `None` when `from`
    /// is not an ancestor of `to`; empty when they are the same commit. Each walk is read once.
    pub fn walk(&self, from: &str, to: &str, limit: Option<usize>) -> Result<Option<Vec<Step>>, GitError> {
        let key = (from.to_string(), to.to_string(), limit);
        if let Some(known) = self.walks.borrow().get(&key) {
            return Ok(known.clone());
        }
        let walk = self.read_walk(from, to, limit)?;
        self.walks.borrow_mut().insert(key, walk.clone());
        Ok(walk)
    }

    fn read_walk(&self, from: &str, to: &str, limit: Option<usize>) -> Result<Option<Vec<Step>>, GitError> {
        if from == to {
            return Ok(Some(Vec::new()));
        }
        self.processes.set(self.processes.get() + 1);
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
        Ok(self.path_trace(path, steps)?.fate(span))
    }

    /// `path`'s changes through `steps`, which then answer every span of it.
    pub fn path_trace(&mut self, path: &str, steps: &[Step]) -> Result<PathTrace, GitError> {
        let mut path = path.to_string();
        let mut touched = Vec::new();
        for step in steps {
            let diff = self.diff(step)?;
            let Some(index) = diff.by_old.get(path.as_str()).copied() else { continue };
            let next = diff.files[index].new_path.clone();
            touched.push((step.commit.clone(), diff.clone(), index));
            match next {
                Some(next) => path = next,
                None => break,
            }
        }
        Ok(PathTrace { touched, end: path })
    }

    fn diff(&mut self, step: &Step) -> Result<Rc<Diff>, GitError> {
        let key = (step.parent.clone(), step.commit.clone());
        if let Some(d) = self.diffs.get(&key) {
            return Ok(d.clone());
        }
        self.processes.set(self.processes.get() + 1);
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
        let parsed = Rc::new(Diff::new(parse(&String::from_utf8_lossy(&out))));
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
            let last = (u64::from(h.old_start) + u64::from(h.old_len)).saturating_sub(1);
            if h.old_start <= span.end && last >= u64::from(span.start) {
                return None;
            }
            if last < u64::from(span.start) {
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
                    b'0'..=b'7' if i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) => {
                        // Three octal digits (bytes, so text after them may be any UTF-8).
                        let value = bytes[i + 1..i + 4].iter().fold(0u32, |v, b| v * 8 + u32::from(b - b'0'));
                        out.push(u8::try_from(value).unwrap_or(b'?'));
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
    fn files_and_commits_are_looked_up_once_through_one_cat_file_process() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path();
        run(repo, &["init", "-q", "--initial-branch=main"]);
        std::fs::create_dir_all(repo.join("sub")).expect("mkdir");
        std::fs::write(repo.join("sub/no-newline.txt"), "a\nb\nc").expect("write");
        std::fs::write(repo.join("empty.txt"), "").expect("write");
        let head = commit(repo, "f.txt", "1\n2\n3\n", "a");
        let tracer = Tracer::new(repo);
        assert_eq!(tracer.file_at(&head, "f.txt").expect("git"), FileAt::File { lines: 3 });
        assert_eq!(tracer.file_at(&head, "sub/no-newline.txt").expect("git"), FileAt::File { lines: 3 }, "a last line without a newline counts");
        assert_eq!(tracer.file_at(&head, "empty.txt").expect("git"), FileAt::File { lines: 0 });
        assert_eq!(tracer.file_at(&head, "sub").expect("git"), FileAt::NotAFile("tree".into()));
        assert_eq!(tracer.file_at(&head, "none.txt").expect("git"), FileAt::Missing);
        assert_eq!(tracer.file_at(&head, "f.txt\nHEAD").expect("no lookup"), FileAt::Missing);
        let pid = tracer.objects.borrow().process.as_ref().map(|p| p.child.id());
        assert!(pid.is_some());
        for _ in 0..50 {
            assert_eq!(tracer.commit("HEAD").as_deref(), Some(head.as_str()));
            assert_eq!(tracer.commit("main").as_deref(), Some(head.as_str()));
            assert!(tracer.has_file(&head, "f.txt") && !tracer.has_file(&head, "sub"));
        }
        assert_eq!(tracer.commit(&format!("{head}:f.txt")), None, "a blob is not a commit");
        assert_eq!(tracer.commit("no-such-branch"), None);
        assert_eq!(tracer.objects.borrow().process.as_ref().map(|p| p.child.id()), pid, "the same process answered every question");
        assert_eq!(tracer.objects.borrow().files.len(), 5, "each (commit, path) asked once");
    }

    #[test]
    fn a_path_is_traced_once_and_answers_every_span() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path();
        run(repo, &["init", "-q", "--initial-branch=main"]);
        let lines = |n: u32| (1..=n).map(|i| format!("line {i}\n")).collect::<String>();
        let a = commit(repo, "f.txt", &lines(10), "a");
        let b = commit(repo, "f.txt", &format!("top\n{}", lines(10).replace("line 6\n", "six\n")), "b");
        run(repo, &["mv", "f.txt", "g.txt"]);
        let c = commit(repo, "g.txt", &format!("top\n{}", lines(10).replace("line 6\n", "six\n")), "c");
        let mut tracer = Tracer::new(repo);
        let walk = tracer.walk(&a, &c, None).expect("git").expect("ancestor");
        let trace = tracer.path_trace("f.txt", &walk).expect("git");
        for (span, fate) in [
            (Some(Span::new(2, 3)), Fate::Kept { path: "g.txt".into(), span: Some(Span::new(3, 4)) }),
            (Some(Span::new(5, 6)), Fate::Changed { commit: b.clone(), deleted: false }),
            (Some(Span::new(8, 10)), Fate::Kept { path: "g.txt".into(), span: Some(Span::new(9, 11)) }),
            (None, Fate::Changed { commit: b.clone(), deleted: false }),
        ] {
            assert_eq!(trace.fate(span), fate, "{span:?}");
            assert_eq!(tracer.follow("f.txt", span, &walk).expect("git"), fate, "{span:?}");
        }
        assert_eq!(tracer.diffs.len(), 2, "each step's diff read once");
    }

    #[test]
    fn paths_are_made_paths_inside_the_repository_or_refused_with_why() {
        assert_eq!(repo_path("./app.py").as_deref(), Ok("app.py"));
        assert_eq!(repo_path("src/./a.rs").as_deref(), Ok("src/a.rs"));
        assert_eq!(repo_path("a b/é.txt").as_deref(), Ok("a b/é.txt"));
        assert!(repo_path("").is_err_and(|e| e.contains("empty")));
        assert!(repo_path("/etc/passwd").is_err_and(|e| e.contains("absolute")));
        assert!(repo_path("src/../../x").is_err_and(|e| e.contains("..")));
        assert!(repo_path("a//b").is_err_and(|e| e.contains("empty component")));
        assert!(repo_path(".").is_err_and(|e| e.contains("names no file")));
        assert!(repo_path("a\nb").is_err_and(|e| e.contains("line break")));
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
        // An escape cut short before a multi-byte character, and lines of any bytes, read without a panic.
        let odd = parse("diff --git \"a/\\1\u{fffd}x\" \"b/\\1\u{fffd}x\"\n--- \"a/\\1\u{fffd}\"\n@@ -4294967295,4294967295 +1 @@\n");
        assert_eq!(odd.len(), 1);
        assert_eq!(shift(Span::new(1, 2), &odd[0].hunks), Some(Span::new(1, 2)));
    }
}
