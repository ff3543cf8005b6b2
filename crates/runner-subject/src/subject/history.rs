//! A repository's own history as subjects: the first-parent commits of a range, the merge
//! commits on a range's first-parent line (pull requests), or listed commits — each reviewed as
//! the change it made against its first parent (a root commit against the empty tree). Changes a
//! reviewer cannot review (empty, binary files only, more changed lines than the limit) are
//! skipped with their reason; an optional seeded sample keeps some of the rest.
//!
//! Everything is read in two git calls (the commits with their `--numstat`, and `rev-parse` for
//! listed refs), so a long range resolves quickly; refs become full SHAs before anything is
//! hashed.

use super::git::{self, GitError};
use super::glob::Glob;
use super::TargetError;
use std::path::Path;

/// Which commits of a repository are the subjects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Commits {
    /// `commits = "A..B"`: every first-parent commit of the range, oldest first.
    Range(String),
    /// `commits = ["sha-or-ref", …]`: these commits, in the order written.
    Listed(Vec<String>),
    /// `pull-requests = "A..B"`: every merge commit on the range's first-parent line, each
    /// reviewed as what it brought in (first parent → merge).
    Merges(String),
}

impl Commits {
    /// What the selection is, in words: ``the first-parent commits of `A..B` ``.
    pub fn describe(&self) -> String {
        match self {
            Self::Range(range) => format!("the first-parent commits of `{range}`"),
            Self::Listed(refs) => format!("{} listed commit{}", refs.len(), if refs.len() == 1 { "" } else { "s" }),
            Self::Merges(range) => format!("the merge commits (pull requests) on the first-parent line of `{range}`"),
        }
    }
}

/// A seeded sample of the reviewable commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub size: usize,
    pub seed: u64,
}

/// Changed lines (added + removed) past which a commit is skipped unless `max-diff-lines` says
/// otherwise: about 200 KB of diff, more than most reviewers' context holds.
pub const DEFAULT_MAX_DIFF_LINES: u64 = 5_000;

/// `[target]`'s history selection: which commits, an optional sample, the size limit, and
/// which of the selected commits are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySpec {
    pub commits: Commits,
    pub sample: Option<Sample>,
    pub max_diff_lines: u64,
    pub filter: CommitFilter,
}

/// Which selected commits are reviewed: `paths` (a commit must change a path matching one),
/// `exclude-paths` (paths not counted: a commit changing only those is skipped),
/// `merges = false`, `exclude-authors` (globs over the author's name and email) and
/// `min-changed-lines` (over the paths counted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitFilter {
    pub paths: Vec<Glob>,
    pub exclude_paths: Vec<Glob>,
    pub merges: bool,
    pub exclude_authors: Vec<Glob>,
    pub min_changed_lines: u64,
}

impl Default for CommitFilter {
    fn default() -> Self {
        Self { paths: Vec::new(), exclude_paths: Vec::new(), merges: true, exclude_authors: Vec::new(), min_changed_lines: 0 }
    }
}

impl CommitFilter {
    /// Whether a path counts: not excluded, and matching `paths` when it is given.
    fn counts(&self, path: &str) -> bool {
        !Glob::any(&self.exclude_paths, path) && (self.paths.is_empty() || Glob::any(&self.paths, path))
    }

    /// Why `commit` is filtered out, if it is.
    fn rejects(&self, commit: &Commit) -> Option<Skip> {
        if !self.merges && commit.parents > 1 {
            return Some(Skip::Merge);
        }
        if let Some(glob) = self.exclude_authors.iter().find(|g| g.matches(&commit.author) || g.matches(&commit.email)) {
            return Some(Skip::Author { author: commit.author.clone(), pattern: glob.as_str().to_string() });
        }
        let filtering = !self.paths.is_empty() || !self.exclude_paths.is_empty();
        let counted: Vec<&(String, u64)> = commit.changed.iter().filter(|(path, _)| self.counts(path)).collect();
        if filtering && counted.is_empty() && !commit.changed.is_empty() {
            return Some(Skip::NoSelectedPath);
        }
        let lines: u64 = if filtering { counted.iter().map(|(_, n)| n).sum() } else { commit.lines };
        if self.min_changed_lines > 0 && lines < self.min_changed_lines && commit.files > 0 {
            return Some(Skip::FewLines { lines, min: self.min_changed_lines });
        }
        None
    }
}

/// One commit of the selection and what its change holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The full SHA: the subject's id.
    pub sha: String,
    /// What the change is reviewed against: the first parent, or the empty tree for a root commit.
    pub base: String,
    /// How many parents the commit has (0: a root commit; 2 or more: a merge).
    pub parents: usize,
    /// The commit message's subject line.
    pub title: String,
    /// Files the change touches.
    pub files: usize,
    /// Of those, binary files.
    pub binary_files: usize,
    /// Changed lines of the text files, added + removed.
    pub lines: u64,
    /// A shallow clone's boundary: git shows it without parents because they were not
    /// fetched, so what it changed is unknown here.
    pub shallow_boundary: bool,
    /// The author's name and email.
    pub author: String,
    pub email: String,
    /// Each changed text file with its changed lines (binary files with 0).
    pub changed: Vec<(String, u64)>,
}

impl Commit {
    /// The SHA as people read it: its first 7 characters.
    pub fn short(&self) -> &str {
        short(&self.sha)
    }

    /// `1a2b3c4 Fix the parser`.
    pub fn label(&self) -> String {
        format!("{} {}", self.short(), self.title)
    }

    /// What a reader should know about how the commit is reviewed, when it is not a plain commit.
    pub fn note(&self, merges_expected: bool) -> Option<&'static str> {
        match self.parents {
            0 => Some("root commit: reviewed against the empty tree"),
            1 => None,
            _ if merges_expected => None,
            _ => Some("merge commit: reviewed against its first parent"),
        }
    }

    /// Why the commit cannot be reviewed, if it cannot.
    pub fn skip(&self, max_diff_lines: u64) -> Option<Skip> {
        if self.shallow_boundary {
            Some(Skip::ShallowBoundary)
        } else if self.files == 0 {
            Some(Skip::Empty)
        } else if self.lines == 0 && self.binary_files == self.files {
            Some(Skip::BinaryOnly { files: self.files })
        } else if self.lines == 0 {
            Some(Skip::NoChangedLines { files: self.files })
        } else if self.lines > max_diff_lines {
            Some(Skip::TooLarge { lines: self.lines, limit: max_diff_lines })
        } else {
            None
        }
    }
}

/// The first 7 characters of a SHA (all of a shorter text).
pub fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// Why a commit is not reviewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// The change is empty (an empty commit, or a merge that brought nothing in).
    Empty,
    /// Every changed file is binary: there is no line to review.
    BinaryOnly { files: usize },
    /// Files changed, but no line did (renames, mode changes, empty files).
    NoChangedLines { files: usize },
    /// More changed lines than `max-diff-lines`.
    TooLarge { lines: u64, limit: u64 },
    /// The boundary of a shallow clone: its parent was not fetched, so its change cannot be
    /// computed (reviewing it against the empty tree would review the whole tree).
    ShallowBoundary,
    /// A merge commit, with `merges = false`.
    Merge,
    /// Its author matches `exclude-authors`.
    Author { author: String, pattern: String },
    /// It changes no path `paths` selects (or only paths `exclude-paths` leaves out).
    NoSelectedPath,
    /// Fewer changed lines than `min-changed-lines`.
    FewLines { lines: u64, min: u64 },
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let files = |n: usize| format!("{n} file{}", if n == 1 { "" } else { "s" });
        match self {
            Self::Empty => write!(f, "empty change"),
            Self::BinaryOnly { files: n } => write!(f, "binary files only ({})", files(*n)),
            Self::NoChangedLines { files: n } => write!(f, "no changed lines ({}: renames, mode changes or empty files)", files(*n)),
            Self::TooLarge { lines, limit } => write!(f, "{lines} changed lines, over the limit of {limit} (`max-diff-lines`)"),
            Self::Merge => write!(f, "a merge commit (`merges = false`)"),
            Self::Author { author, pattern } => write!(f, "authored by `{author}`, which `exclude-authors` leaves out (`{pattern}`)"),
            Self::NoSelectedPath => write!(f, "changes no path that `paths` selects (or only paths `exclude-paths` leaves out)"),
            Self::FewLines { lines, min } => write!(f, "{lines} changed lines, fewer than `min-changed-lines` ({min})"),
            Self::ShallowBoundary => write!(
                f,
                "the boundary of a shallow clone: its parent was not fetched, so its change is unknown here (`git fetch --deepen=100` or `git fetch --unshallow` fetches it)"
            ),
        }
    }
}

/// A sample as taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleTaken {
    /// Commits kept.
    pub size: usize,
    /// Reviewable commits they were drawn from.
    pub of: usize,
    pub seed: u64,
}

/// The selection resolved: the commits it names, which are reviewed and which are skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    /// ``the first-parent commits of `A..B` ``.
    pub selection: String,
    /// Whether the selection is of merges (pull requests), so a merge needs no note.
    pub merges: bool,
    /// Commits the selection names.
    pub considered: usize,
    /// The commits reviewed, oldest first (for a list, in the order written).
    pub planned: Vec<Commit>,
    /// The commits not reviewed, in the same order, with why.
    pub skipped: Vec<(Commit, Skip)>,
    /// The sample, when one was asked for.
    pub sample: Option<SampleTaken>,
    pub max_diff_lines: u64,
}

/// Resolves the selection in `repo`: lists its commits with their changes' sizes, skips what
/// cannot be reviewed, and samples the rest when asked.
pub fn select(repo: &Path, spec: &HistorySpec) -> Result<History, TargetError> {
    // git's own first line says what is wrong (`bad revision 'HEAD~100..HEAD'`).
    let resolve_error = |rev: &str, e: GitError| {
        let message = match e {
            GitError::Failed { stderr, .. } => stderr.lines().next().unwrap_or_default().trim_start_matches("fatal: ").to_string(),
            other => other.to_string(),
        };
        TargetError::Resolve { repo: repo.display().to_string(), rev: rev.to_string(), message }
    };
    let log = |args: &[&str], rev: &str| -> Result<Vec<Commit>, TargetError> {
        let mut all = vec![
            "log",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-show-signature",
            "--no-mailmap",
            "--root",
            "--diff-merges=first-parent",
            "--numstat",
            "--format=%x1e%H %P%x1f%an%x1f%ae%x1f%s",
        ];
        all.extend_from_slice(args);
        all.push("--");
        let out = git::git_bytes(repo, &all, &[]).map_err(|e| resolve_error(rev, e))?;
        Ok(parse_log(&String::from_utf8_lossy(&out)))
    };
    let (mut commits, merges) = match &spec.commits {
        Commits::Range(range) => (log(&["--first-parent", "--reverse", "--end-of-options", range], range)?, false),
        Commits::Merges(range) => (log(&["--first-parent", "--merges", "--reverse", "--end-of-options", range], range)?, true),
        Commits::Listed(refs) => {
            let revs: Vec<&str> = refs.iter().map(String::as_str).collect();
            let shas = git::resolve_commits(repo, &revs).map_err(|e| resolve_error(&refs.join(", "), e))?;
            let mut unique: Vec<&str> = Vec::with_capacity(shas.len());
            for sha in &shas {
                if !unique.contains(&sha.as_str()) {
                    unique.push(sha);
                }
            }
            let mut args = vec!["--no-walk=unsorted", "--end-of-options"];
            args.extend(unique.iter().copied());
            let mut found = log(&args, &refs.join(", "))?;
            // `--no-walk=unsorted` keeps the order given; sort once more so it never depends on it.
            found.sort_by_key(|c| unique.iter().position(|s| *s == c.sha));
            (found, false)
        }
    };
    if commits.iter().any(|c| c.parents == 0) {
        let boundary = shallow_boundary(repo);
        for c in commits.iter_mut().filter(|c| c.parents == 0) {
            c.shallow_boundary = boundary.contains(&c.sha);
        }
        let empty_tree = git::git(repo, &["hash-object", "-t", "tree", "/dev/null"]).map_err(|e| resolve_error("the empty tree", e))?;
        for c in commits.iter_mut().filter(|c| c.parents == 0) {
            c.base = empty_tree.trim().to_string();
        }
    }
    let considered = commits.len();
    if considered == 0 {
        return Err(TargetError::History(match &spec.commits {
            Commits::Merges(range) => format!(
                "`pull-requests = \"{range}\"` selects no merge commit on the first-parent line of `{}`: pull requests merged by rebase or squash leave none; review them with `commits = \"{range}\"`",
                repo.display()
            ),
            other => format!("{} select no commit in `{}`", other.describe(), repo.display()),
        }));
    }
    let (mut planned, mut skipped) = (Vec::new(), Vec::new());
    for commit in commits {
        match commit.skip(spec.max_diff_lines).or_else(|| spec.filter.rejects(&commit)) {
            Some(why) => skipped.push((commit, why)),
            None => planned.push(commit),
        }
    }
    if planned.is_empty() {
        let shown: Vec<String> = skipped.iter().take(5).map(|(c, why)| format!("{} ({why})", c.label())).collect();
        let more = if skipped.len() > 5 { format!(" and {} more", skipped.len() - 5) } else { String::new() };
        return Err(TargetError::History(format!(
            "{} in `{}` leave nothing to review: every commit is skipped: {}{more}",
            spec.commits.describe(),
            repo.display(),
            shown.join("; ")
        )));
    }
    let sample = spec.sample.map(|s| {
        let of = planned.len();
        planned = sample(std::mem::take(&mut planned), s);
        SampleTaken { size: planned.len(), of, seed: s.seed }
    });
    Ok(History { selection: spec.commits.describe(), merges, considered, planned, skipped, sample, max_diff_lines: spec.max_diff_lines })
}

/// The commits at which a shallow clone's history is cut (`.git/shallow`, one SHA a line);
/// none in a complete clone.
pub fn shallow_boundary(repo: &Path) -> Vec<String> {
    let Ok(path) = git::git(repo, &["rev-parse", "--path-format=absolute", "--git-path", "shallow"]) else { return Vec::new() };
    let Ok(text) = crate::subject::files::read_text(Path::new(path.trim())) else { return Vec::new() };
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// `size` of the commits, chosen by seed: each commit ranked by blake3 over the seed and its
/// SHA, the lowest kept, in their original order. A commit's rank does not depend on the other
/// commits, so widening the range keeps every commit that still ranks among the lowest.
pub fn sample(commits: Vec<Commit>, s: Sample) -> Vec<Commit> {
    if s.size >= commits.len() {
        return commits;
    }
    let mut ranked: Vec<(blake3::Hash, usize)> =
        commits.iter().enumerate().map(|(i, c)| (blake3::hash(format!("runner sample\0{}\0{}", s.seed, c.sha).as_bytes()), i)).collect();
    ranked.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut keep: Vec<usize> = ranked.into_iter().take(s.size).map(|(_, i)| i).collect();
    keep.sort_unstable();
    let mut keep = keep.into_iter().peekable();
    commits
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| {
            (keep.peek() == Some(&i)).then(|| {
                keep.next();
                c
            })
        })
        .collect()
}

/// Reads `git log --numstat --format=%x1e%H %P%x1f%an%x1f%ae%x1f%s`: a header line per commit
/// (record separator, SHA, parents, then unit-separated author, email and subject line), then
/// one `added\tremoved\tpath` line per file (`-\t-\t` for a binary file).
fn parse_log(text: &str) -> Vec<Commit> {
    let mut out: Vec<Commit> = Vec::new();
    for line in text.lines() {
        if let Some(header) = line.strip_prefix('\u{1e}') {
            let mut fields = header.splitn(4, '\u{1f}');
            let ids = fields.next().unwrap_or_default();
            let (author, email, title) = match (fields.next(), fields.next(), fields.next()) {
                (Some(a), Some(e), Some(t)) => (a, e, t),
                (Some(t), None, None) => ("", "", t),
                _ => ("", "", ""),
            };
            let mut ids = ids.split_whitespace();
            let sha = ids.next().unwrap_or_default().to_string();
            let parents: Vec<&str> = ids.collect();
            out.push(Commit {
                base: parents.first().map(|p| p.to_string()).unwrap_or_default(),
                parents: parents.len(),
                sha,
                title: title.trim().to_string(),
                files: 0,
                binary_files: 0,
                lines: 0,
                shallow_boundary: false,
                author: author.to_string(),
                email: email.to_string(),
                changed: Vec::new(),
            });
            continue;
        }
        let Some(commit) = out.last_mut() else { continue };
        let mut fields = line.splitn(3, '\t');
        let (Some(added), Some(removed), Some(path)) = (fields.next(), fields.next(), fields.next()) else { continue };
        match (added.parse::<u64>(), removed.parse::<u64>()) {
            (Ok(a), Ok(r)) => {
                commit.files += 1;
                commit.lines += a + r;
                commit.changed.push((renamed_to(path), a + r));
            }
            _ if added == "-" && removed == "-" => {
                commit.files += 1;
                commit.binary_files += 1;
                commit.changed.push((renamed_to(path), 0));
            }
            _ => {}
        }
    }
    out
}

/// The path a numstat line names after the change: `a => b` and `dir/{a => b}/f` give the new one.
fn renamed_to(path: &str) -> String {
    match (path.find('{'), path.find(" => "), path.find('}')) {
        (Some(open), Some(arrow), Some(close)) if open < arrow && arrow < close => {
            format!("{}{}{}", &path[..open], &path[arrow + 4..close], &path[close + 1..]).replace("//", "/")
        }
        (None, Some(arrow), _) => path[arrow + 4..].to_string(),
        _ => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(sha: &str, parents: usize, files: usize, binary_files: usize, lines: u64) -> Commit {
        Commit {
            sha: sha.into(),
            base: "b".into(),
            parents,
            title: format!("t {sha}"),
            files,
            binary_files,
            lines,
            shallow_boundary: false,
            author: "Dev".into(),
            email: "dev@example.com".into(),
            changed: Vec::new(),
        }
    }

    #[test]
    fn the_log_is_read_commit_by_commit() {
        let text = "\u{1e}aaa p1\u{1f}Ann\u{1f}ann@x\u{1f}first | change\n\n3\t1\ta.txt\n-\t-\tlogo.png\n\u{1e}bbb\u{1f}Bo\u{1f}bo@x\u{1f}root\n\u{1e}ccc p1 p2\u{1f}Cy\u{1f}cy@x\u{1f}Merge pull request #2\n\n0\t0\t{x => y}/z\n";
        let commits = parse_log(text);
        assert_eq!(commits.len(), 3);
        assert_eq!(
            commits[0],
            Commit {
                sha: "aaa".into(),
                base: "p1".into(),
                parents: 1,
                title: "first | change".into(),
                files: 2,
                binary_files: 1,
                lines: 4,
                shallow_boundary: false,
                author: "Ann".into(),
                email: "ann@x".into(),
                changed: vec![("a.txt".into(), 4), ("logo.png".into(), 0)],
            }
        );
        assert_eq!(commits[2].changed, vec![("y/z".to_string(), 0)], "a rename's new path");
        assert_eq!((commits[1].parents, commits[1].files, commits[1].base.as_str()), (0, 0, ""));
        assert_eq!((commits[2].parents, commits[2].base.as_str(), commits[2].files, commits[2].lines), (2, "p1", 1, 0));
    }

    #[test]
    fn the_filter_keeps_commits_by_path_author_merge_and_size() {
        let with = |paths: &[(&str, u64)], parents: usize, author: &str| Commit {
            changed: paths.iter().map(|(p, n)| (p.to_string(), *n)).collect(),
            files: paths.len(),
            lines: paths.iter().map(|(_, n)| n).sum(),
            author: author.into(),
            ..commit("a", parents, 0, 0, 0)
        };
        let filter = CommitFilter {
            paths: vec![Glob::new("src/**")],
            exclude_paths: vec![Glob::new("*.lock")],
            merges: false,
            exclude_authors: vec![Glob::new("*[bot]"), Glob::new("renovate*")],
            min_changed_lines: 3,
        };
        assert_eq!(filter.rejects(&with(&[("src/a.rs", 5)], 1, "Dev")), None);
        assert_eq!(filter.rejects(&with(&[("docs/a.md", 5)], 1, "Dev")), Some(Skip::NoSelectedPath));
        assert_eq!(filter.rejects(&with(&[("src/Cargo.lock", 50)], 1, "Dev")), Some(Skip::NoSelectedPath), "only excluded paths");
        assert_eq!(
            filter.rejects(&with(&[("src/a.rs", 2), ("README.md", 40)], 1, "Dev")),
            Some(Skip::FewLines { lines: 2, min: 3 }),
            "lines of selected paths only"
        );
        assert_eq!(filter.rejects(&with(&[("src/a.rs", 5)], 2, "Dev")), Some(Skip::Merge));
        let bot = filter.rejects(&with(&[("src/a.rs", 5)], 1, "dependabot[bot]"));
        assert_eq!(bot, Some(Skip::Author { author: "dependabot[bot]".into(), pattern: "*[bot]".into() }));
        assert!(bot.map(|b| b.to_string()).is_some_and(|t| t.contains("exclude-authors")));
        assert_eq!(CommitFilter::default().rejects(&with(&[("x", 1)], 2, "dependabot[bot]")), None, "the default keeps everything");
    }

    #[test]
    fn each_unreviewable_change_has_its_reason() {
        assert_eq!(commit("a", 1, 0, 0, 0).skip(10), Some(Skip::Empty));
        assert_eq!(commit("a", 1, 2, 2, 0).skip(10), Some(Skip::BinaryOnly { files: 2 }));
        assert_eq!(commit("a", 1, 1, 0, 0).skip(10), Some(Skip::NoChangedLines { files: 1 }));
        assert_eq!(commit("a", 1, 1, 0, 11).skip(10), Some(Skip::TooLarge { lines: 11, limit: 10 }));
        assert_eq!(commit("a", 1, 2, 1, 10).skip(10), None, "a binary file beside changed lines is reviewed");
        assert_eq!(Skip::TooLarge { lines: 11, limit: 10 }.to_string(), "11 changed lines, over the limit of 10 (`max-diff-lines`)");
        assert_eq!(commit("a", 0, 1, 0, 1).note(false), Some("root commit: reviewed against the empty tree"));
        assert_eq!(commit("a", 2, 1, 0, 1).note(false), Some("merge commit: reviewed against its first parent"));
        assert_eq!(commit("a", 2, 1, 0, 1).note(true), None);
    }

    /// A repository whose config names a textconv program for every `.txt` file: listing its
    /// commits runs nothing (as `git diff` does not: `--no-textconv`, `--no-ext-diff`); a list
    /// keeps its order, each commit once; a root commit's base is the empty tree.
    #[test]
    fn listing_commits_runs_no_program_the_repository_configures() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        let log = dir.path().join("ran.log");
        std::fs::create_dir_all(&repo).expect("mkdir");
        let script = dir.path().join("evil.sh");
        std::fs::write(&script, format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\ncat \"$1\"\n", log.display())).expect("write");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        for args in [&["init", "--quiet", "--initial-branch=main"][..], &["config", "user.name", "t"], &["config", "user.email", "t@e"]] {
            git::git(&repo, args).expect("git");
        }
        git::git(&repo, &["config", "diff.evil.textconv", &script.display().to_string()]).expect("config");
        git::git(&repo, &["config", "diff.external", &script.display().to_string()]).expect("config");
        std::fs::write(repo.join(".gitattributes"), "*.txt diff=evil\n").expect("write");
        for (i, text) in ["a\n", "a\nb\n"].iter().enumerate() {
            std::fs::write(repo.join("a.txt"), text).expect("write");
            git::git(&repo, &["add", "--all"]).expect("add");
            git::git(&repo, &["commit", "--quiet", "-m", &format!("c{i}")]).expect("commit");
        }
        let spec = HistorySpec {
            commits: Commits::Range("HEAD~1..HEAD".into()),
            sample: None,
            max_diff_lines: DEFAULT_MAX_DIFF_LINES,
            filter: CommitFilter::default(),
        };
        let history = select(&repo, &spec).expect("selected");
        assert_eq!((history.planned.len(), history.planned[0].lines, history.planned[0].title.as_str()), (1, 1, "c1"));
        let listed = Commits::Listed(vec!["HEAD~1".into(), "HEAD".into(), "HEAD~1".into()]);
        let history = select(&repo, &HistorySpec { commits: listed, ..spec }).expect("selected");
        assert_eq!(history.planned.iter().map(|c| c.title.as_str()).collect::<Vec<_>>(), ["c0", "c1"], "as listed, each once");
        assert_eq!(history.planned[0].parents, 0);
        assert!(history.planned[0].base.starts_with("4b825dc"), "the root against the empty tree: {}", history.planned[0].base);
        assert!(!log.exists(), "a configured program ran: {}", std::fs::read_to_string(&log).unwrap_or_default());
    }

    /// A clone one commit deep shows its commit without parents: it is skipped as the
    /// boundary, never reviewed against the empty tree; a real root commit still is.
    #[test]
    fn a_shallow_clones_boundary_is_skipped_with_its_reason() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir");
        for args in [&["init", "--quiet", "--initial-branch=main"][..], &["config", "user.name", "t"], &["config", "user.email", "t@e"]] {
            git::git(&repo, args).expect("git");
        }
        for i in 0..3 {
            std::fs::write(repo.join("a.txt"), "x\n".repeat(i + 1)).expect("write");
            git::git(&repo, &["add", "--all"]).expect("add");
            git::git(&repo, &["commit", "--quiet", "-m", &format!("c{i}")]).expect("commit");
        }
        let shallow = dir.path().join("shallow");
        let url = format!("file://{}", repo.display());
        git::git(dir.path(), &["clone", "--quiet", "--depth", "2", &url, &shallow.display().to_string()]).expect("clone");
        assert_eq!(shallow_boundary(&shallow).len(), 1);
        let spec = HistorySpec {
            commits: Commits::Listed(vec!["HEAD~1".into(), "HEAD".into()]),
            sample: None,
            max_diff_lines: DEFAULT_MAX_DIFF_LINES,
            filter: CommitFilter::default(),
        };
        let history = select(&shallow, &spec).expect("selected");
        assert_eq!(history.planned.iter().map(|c| c.title.as_str()).collect::<Vec<_>>(), ["c2"]);
        assert_eq!(history.skipped.len(), 1);
        assert_eq!((history.skipped[0].0.title.as_str(), &history.skipped[0].1), ("c1", &Skip::ShallowBoundary));
        assert!(history.skipped[0].1.to_string().contains("shallow clone"), "{}", history.skipped[0].1);
        // Only the boundary: nothing left to review, and the error says why.
        let only = HistorySpec { commits: Commits::Listed(vec!["HEAD~1".into()]), ..spec };
        let e = select(&shallow, &only).expect_err("nothing to review");
        assert!(e.to_string().contains("shallow clone"), "{e}");
        // In the full repository the root is a root, reviewed against the empty tree.
        let full = select(
            &repo,
            &HistorySpec {
                commits: Commits::Listed(vec!["HEAD~2".into()]),
                sample: None,
                max_diff_lines: DEFAULT_MAX_DIFF_LINES,
                filter: CommitFilter::default(),
            },
        )
        .expect("selected");
        assert_eq!((full.planned.len(), shallow_boundary(&repo).len()), (1, 0));
    }

    #[test]
    fn a_sample_depends_on_the_seed_keeps_history_order_and_survives_a_wider_range() {
        let commits: Vec<Commit> = (0..40).map(|i| commit(&format!("{i:040x}"), 1, 1, 0, 1)).collect();
        let pick = |seed, from: &[Commit]| sample(from.to_vec(), Sample { size: 5, seed }).into_iter().map(|c| c.sha).collect::<Vec<_>>();
        let a = pick(1, &commits);
        assert_eq!(a.len(), 5);
        assert_eq!(a, pick(1, &commits), "the same seed takes the same commits");
        assert_ne!(a, pick(2, &commits), "another seed takes others");
        let positions: Vec<usize> = a.iter().map(|s| commits.iter().position(|c| &c.sha == s).expect("kept")).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "history order: {positions:?}");
        // Keeping only the sampled commits and one other, the same five are drawn again.
        let narrowed: Vec<Commit> = commits.iter().filter(|c| a.contains(&c.sha) || c.sha == commits[0].sha).cloned().collect();
        let again: Vec<String> = sample(narrowed, Sample { size: 5, seed: 1 }).into_iter().map(|c| c.sha).collect();
        assert_eq!(again, a);
        assert_eq!(sample(commits[..3].to_vec(), Sample { size: 5, seed: 1 }).len(), 3, "a sample larger than the commits takes them all");
    }
}
