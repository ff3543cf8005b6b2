//! `runner oracle mine`: the bugs a repository shipped, mined from the commits that fixed them
//! (SZZ, after Śliwerski, Zimmermann and Zeller, with the refinements later evaluations found
//! to matter). A fix is a commit whose message says so (fix words, issues it closes), a revert,
//! or a commit listed in `--fixes`; merges, bots, changes to tests, docs or configuration only
//! and tangled changes (over `max_files` source files) are skipped with their reason. Its
//! removed and rewritten source lines — whitespace, blank and comment-only changes ignored —
//! are blamed at its parent with move and copy detection, skipping the revisions of
//! `.git-blame-ignore-revs`; a fix that only adds lines is unmapped, not guessed. A message
//! that names the change it repairs (a revert's commit, a commit's hash, `regression from
//! #123`) decides outright; otherwise every blamed commit is a candidate, except one dated
//! after the fix, a merge, or the repository's root import, each dropped with its reason.
//!
//! The result is an oracle keyed by inducing commit, which a `commits` target reviews as it is:
//! each inducing commit a subject, each bug it introduced an oracle finding at the lines (as
//! numbered in that commit) that the fix later changed, described by the fix, with the fix's
//! date. Each fix's result is kept under the work directory by its SHA and the options, so
//! mining again after new commits examines only the new fixes.

pub(crate) mod blame;
pub mod fixes;

use crate::ground_truth::oracle::{Oracle, OracleCase, OracleFinding, Skipped};
use crate::subject::git::{self, GitError};
use fixes::{FixSignal, LoggedCommit};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The default limit of source files a fix may touch before it is taken for tangled.
pub const DEFAULT_MAX_FILES: usize = 10;

/// What to mine, and how.
#[derive(Debug, Clone)]
pub struct MineOptions {
    /// The commits examined: `A..B`, or a ref for all its history (`HEAD`).
    pub range: String,
    /// Fix commits listed by an issue tracker (`--fixes`): fixes whatever their message says.
    pub listed: Vec<String>,
    /// Words that mark a fix in a message.
    pub fix_words: BTreeSet<String>,
    pub max_files: usize,
    pub include_bots: bool,
    /// Where each fix's result is kept between runs (`None`: nothing kept).
    pub memo_dir: Option<PathBuf>,
    /// Threads blaming fixes side by side.
    pub jobs: usize,
    /// Which of several blame candidates are kept.
    pub candidates: Candidates,
}

/// Which of several blame candidates a fix keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Candidates {
    /// The one committed last (R-SZZ's rule: da Costa et al., TSE 2017; the best-scoring
    /// published variant on Rosa et al.'s developer-informed oracle, ICSE 2021).
    #[default]
    Latest,
    /// Every one (B-SZZ and AG-SZZ report them all).
    All,
}

impl Candidates {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Latest => "latest",
            Self::All => "all",
        }
    }
}

impl Default for MineOptions {
    fn default() -> Self {
        Self {
            range: "HEAD".into(),
            listed: Vec::new(),
            fix_words: fixes::DEFAULT_FIX_WORDS.iter().map(|w| w.to_string()).collect(),
            max_files: DEFAULT_MAX_FILES,
            include_bots: false,
            memo_dir: None,
            jobs: 2,
            candidates: Candidates::default(),
        }
    }
}

impl MineOptions {
    /// What in the options changes a fix's result: its memo's key holds it.
    fn fingerprint(&self) -> String {
        let words: Vec<&str> = self.fix_words.iter().map(String::as_str).collect();
        format!("mine v2\0{}\0{}\0{}\0{}", words.join(","), self.max_files, self.include_bots, self.candidates.as_str())
    }
}

/// How an inducing commit was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum How {
    /// The fix's message names it (its hash, or the pull request that brought it).
    ExplicitReference,
    /// The fix reverts it.
    Revert,
    /// The only commit blame gives for the fix's lines.
    SingleBlameCandidate,
    /// One of several commits blame gives (`--candidates all`).
    SeveralBlameCandidates,
    /// The one committed last of several commits blame gives (`--candidates latest`).
    LatestBlameCandidate,
}

impl How {
    pub fn words(self) -> &'static str {
        match self {
            Self::ExplicitReference => "explicit reference",
            Self::Revert => "revert",
            Self::SingleBlameCandidate => "single blame candidate",
            Self::SeveralBlameCandidates => "several blame candidates",
            Self::LatestBlameCandidate => "latest of several blame candidates",
        }
    }
}

/// A line in an inducing commit that a fix later changed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Place {
    pub path: String,
    /// As numbered in the inducing commit's version of the file.
    pub line: u32,
}

/// A commit found to have introduced a bug a fix repaired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inducing {
    pub sha: String,
    pub how: How,
    /// Author date.
    pub date: String,
    pub title: String,
    pub lines: Vec<Place>,
}

/// A blame candidate left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    pub sha: String,
    pub reason: String,
}

/// One fix commit and what mining it gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixResult {
    pub sha: String,
    pub date: String,
    pub title: String,
    pub message: String,
    /// Why it is a fix: `listed`, `revert`, `message`.
    pub signal: String,
    /// The fix's diff over the source files it changed (capped).
    pub hunks: String,
    pub inducing: Vec<Inducing>,
    pub dropped: Vec<Dropped>,
    /// Why no inducing commit was found, when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmapped: Option<String>,
}

/// A fix commit not mined, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFix {
    pub sha: String,
    pub title: String,
    pub reason: String,
}

/// What a mining run saw and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub range: String,
    /// Commits the range holds.
    pub commits: usize,
    /// Of those, fix commits (by message, revert or list).
    pub fixes: usize,
    /// Fixes mined (not skipped).
    pub examined: usize,
    /// Fixes mapped to at least one inducing commit.
    pub mapped: usize,
    pub unmapped: usize,
    /// Fixes whose result came from an earlier run.
    pub from_memo: usize,
    /// Distinct inducing commits.
    pub inducing_commits: usize,
    /// How many fixes had 1, 2, … inducing commits.
    pub candidates_per_fix: BTreeMap<usize, usize>,
    /// Inducing commits by how they were found.
    pub by_how: BTreeMap<String, usize>,
    /// Fix commits skipped, each with why.
    pub skipped: Vec<SkippedFix>,
    /// Listed fixes (`--fixes`) that are not commits of the repository.
    pub not_found: Vec<String>,
}

/// A mining run's result: the oracle, every fix's record, and the summary.
#[derive(Debug, Clone)]
pub struct Mined {
    pub oracle: Oracle,
    pub fixes: Vec<FixResult>,
    pub summary: Summary,
}

#[derive(Debug, thiserror::Error)]
pub enum MineError {
    #[error("`{repo}` is not a git repository: {message}")]
    NotARepository { repo: String, message: String },
    #[error("the range `{range}` cannot be read in `{repo}`: {message}")]
    Range { repo: String, range: String, message: String },
    #[error(transparent)]
    Git(#[from] GitError),
}

/// Mines `repo` as `options` say.
pub fn mine(repo: &Path, options: &MineOptions) -> Result<Mined, MineError> {
    git::git(repo, &["rev-parse", "--git-dir"]).map_err(|e| MineError::NotARepository { repo: repo.display().to_string(), message: first_line(&e) })?;
    let commits = log(repo, &options.range)?;
    let by_sha: HashMap<&str, &LoggedCommit> = commits.iter().map(|c| (c.sha.as_str(), c)).collect();
    let roots: BTreeSet<String> = git::git(repo, &["rev-list", "--max-parents=0", "HEAD"]).map(|t| t.lines().map(str::to_string).collect()).unwrap_or_default();
    let listed = resolve_listed(repo, &options.listed);
    let mut summary = Summary { range: options.range.clone(), commits: commits.len(), ..Summary::default() };
    summary.not_found = listed.iter().filter(|(_, sha)| sha.is_none()).map(|(given, _)| given.clone()).collect();
    let listed: BTreeSet<String> = listed.into_iter().filter_map(|(_, sha)| sha).collect();

    // Which commits are fixes, and which of them are mined.
    let mut to_mine: Vec<(&LoggedCommit, FixSignal)> = Vec::new();
    for commit in &commits {
        let named = fixes::named_in(&commit.message);
        let signal = if listed.contains(&commit.sha) {
            FixSignal::Listed
        } else if let Some(reverted) = named.reverted.clone() {
            FixSignal::Revert(reverted)
        } else if fixes::says_fix(&commit.message, &options.fix_words) {
            FixSignal::Message
        } else if !named.commits.is_empty() || !named.pulls.is_empty() {
            FixSignal::Named
        } else {
            continue;
        };
        summary.fixes += 1;
        match fixes::skip_reason(commit, options.include_bots, options.max_files) {
            Some(reason) => summary.skipped.push(SkippedFix { sha: commit.sha.clone(), title: commit.subject().to_string(), reason }),
            None => to_mine.push((commit, signal)),
        }
    }
    summary.examined = to_mine.len();

    // Each fix on its own, side by side; a fix mined before is read back.
    let fingerprint = options.fingerprint();
    let pulls = pull_commits(&commits);
    let context = Context { repo, roots: &roots, by_sha: &by_sha, pulls: &pulls, candidates: options.candidates };
    let results = parallel_map(&to_mine, options.jobs.max(1), |(commit, signal)| {
        let memo = options.memo_dir.as_ref().map(|d| memo_path(d, &fingerprint, &commit.sha));
        if let Some(found) = memo.as_deref().and_then(read_memo) {
            return (found, true);
        }
        let result = mine_fix(&context, commit, signal);
        if let Some(path) = memo {
            write_memo(&path, &result);
        }
        (result, false)
    });
    let mut fixes_out = Vec::with_capacity(results.len());
    for (result, from_memo) in results {
        summary.from_memo += usize::from(from_memo);
        if result.inducing.is_empty() {
            summary.unmapped += 1;
        } else {
            summary.mapped += 1;
            *summary.candidates_per_fix.entry(result.inducing.len()).or_default() += 1;
            for i in &result.inducing {
                *summary.by_how.entry(i.how.words().to_string()).or_default() += 1;
            }
        }
        fixes_out.push(result);
    }
    let oracle = to_oracle(&fixes_out, &summary);
    summary.inducing_commits = oracle.cases.len();
    Ok(Mined { oracle, fixes: fixes_out, summary })
}

/// What every fix's mining reads.
struct Context<'a> {
    repo: &'a Path,
    roots: &'a BTreeSet<String>,
    by_sha: &'a HashMap<&'a str, &'a LoggedCommit>,
    /// Pull request number → the commit that brought it (its merge, or its squashed commit).
    pulls: &'a BTreeMap<u64, String>,
    candidates: Candidates,
}

/// Mines one fix: its lines, their blame, the candidates, the named commits.
fn mine_fix(ctx: &Context<'_>, fix: &LoggedCommit, signal: &FixSignal) -> FixResult {
    let mut result = FixResult {
        sha: fix.sha.clone(),
        date: fix.date.clone(),
        title: fix.subject().to_string(),
        message: fix.message.trim().to_string(),
        signal: match signal {
            FixSignal::Listed => "listed",
            FixSignal::Revert(_) => "revert",
            FixSignal::Message => "message",
            FixSignal::Named => "names what it repairs",
        }
        .to_string(),
        hunks: String::new(),
        inducing: Vec::new(),
        dropped: Vec::new(),
        unmapped: None,
    };
    let parent = fix.parents.first().cloned().unwrap_or_default();
    let sources: Vec<String> = fix.paths.iter().filter(|p| fixes::path_kind(p) == fixes::PathKind::Source).cloned().collect();
    let diff = match blame::fix_diff(ctx.repo, &parent, &fix.sha, &sources) {
        Ok(d) => d,
        Err(e) => {
            result.unmapped = Some(format!("its diff could not be read: {}", first_line(&e)));
            return result;
        }
    };
    result.hunks = diff.hunks.clone();

    // Blame: each candidate commit with the lines it wrote.
    let ignore_revs = ignore_revs_file(ctx.repo, &parent);
    let mut blamed: BTreeMap<String, (bool, BTreeSet<Place>)> = BTreeMap::new();
    for touched in &diff.touched {
        match blame::blame(ctx.repo, &parent, &touched.path, &touched.lines, ignore_revs.as_ref().map(|f| f.path())) {
            Ok(lines) => {
                for b in lines {
                    let entry = blamed.entry(b.commit).or_insert_with(|| (false, BTreeSet::new()));
                    entry.0 |= b.boundary;
                    entry.1.insert(Place { path: b.path, line: b.line });
                }
            }
            Err(e) => result.dropped.push(Dropped { sha: String::new(), reason: format!("`{}` could not be blamed: {}", touched.path, first_line(&e)) }),
        }
    }

    // What the message names decides outright.
    let named = named_commits(ctx, fix, signal);
    if !named.is_empty() {
        for (sha, how) in named {
            let lines = match blamed.get(&sha) {
                Some((_, lines)) if !lines.is_empty() => lines.iter().cloned().collect(),
                _ => added_lines(ctx.repo, &sha, &sources),
            };
            let (date, title) = commit_info(ctx, &sha);
            result.inducing.push(Inducing { sha, how, date, title, lines });
        }
        let chosen: BTreeSet<&str> = result.inducing.iter().map(|i| i.sha.as_str()).collect();
        for sha in blamed.keys().filter(|s| !chosen.contains(s.as_str())) {
            result.dropped.push(Dropped { sha: sha.clone(), reason: "the fix's message names the change it repairs, and this is not it".into() });
        }
        return result;
    }
    if diff.touched.is_empty() {
        result.unmapped = Some(if diff.added > 0 {
            "the fix only adds lines: nothing it changed can be blamed".to_string()
        } else {
            "the fix changes only whitespace, blank or comment lines in source files".to_string()
        });
        return result;
    }

    // Blame candidates, less those that cannot have introduced the bug.
    let infos = candidate_infos(ctx.repo, blamed.keys().map(String::as_str));
    let mut kept: Vec<(String, Vec<Place>)> = Vec::new();
    for (sha, (boundary, lines)) in blamed {
        let info = infos.get(&sha);
        let reason = if boundary || ctx.roots.contains(&sha) {
            Some("the repository's root import (or a shallow clone's edge): everything was added there".to_string())
        } else if info.is_some_and(|i| i.parents > 1) {
            Some("a merge commit: the change is blamed on the commits it merged".to_string())
        } else if info.is_some_and(|i| i.time > fix.time) {
            Some(format!("dated after the fix ({} > {})", info.map(|i| i.date.as_str()).unwrap_or_default(), fix.date))
        } else {
            None
        };
        match reason {
            Some(reason) => result.dropped.push(Dropped { sha, reason }),
            None => kept.push((sha, lines.into_iter().collect())),
        }
    }
    let mut how = if kept.len() == 1 { How::SingleBlameCandidate } else { How::SeveralBlameCandidates };
    if kept.len() > 1 && ctx.candidates == Candidates::Latest {
        let committed = |sha: &str| infos.get(sha).map_or((0, 0), |i| (i.committed, i.time));
        let latest = kept.iter().map(|(sha, _)| sha.clone()).max_by(|a, b| committed(a).cmp(&committed(b)).then_with(|| a.cmp(b))).unwrap_or_default();
        let short_latest = short(&latest).to_string();
        kept.retain(|(sha, _)| {
            let keep = *sha == latest;
            if !keep {
                result.dropped.push(Dropped {
                    sha: sha.clone(),
                    reason: format!("committed before {short_latest}, the latest of the blame candidates (`--candidates all` keeps every one)"),
                });
            }
            keep
        });
        how = How::LatestBlameCandidate;
    }
    for (sha, lines) in kept {
        let info = infos.get(&sha);
        let (date, title) = info.map(|i| (i.date.clone(), i.title.clone())).unwrap_or_default();
        result.inducing.push(Inducing { sha, how, date, title, lines });
    }
    if result.inducing.is_empty() {
        result.unmapped = Some("every blamed commit was dropped (see dropped)".into());
    }
    result
}

/// The commits a fix's message names as the change it repairs, resolved and checked to be
/// earlier commits of its history.
fn named_commits(ctx: &Context<'_>, fix: &LoggedCommit, signal: &FixSignal) -> Vec<(String, How)> {
    let named = fixes::named_in(&fix.message);
    let mut out: Vec<(String, How)> = Vec::new();
    let mut push = |sha: String, how: How| {
        if sha != fix.sha && !out.iter().any(|(s, _)| *s == sha) {
            out.push((sha, how));
        }
    };
    if let FixSignal::Revert(reverted) = signal {
        if let Some(sha) = resolve_ancestor(ctx.repo, reverted, &fix.sha) {
            push(sha, How::Revert);
        }
    }
    for prefix in &named.commits {
        if let Some(sha) = resolve_ancestor(ctx.repo, prefix, &fix.sha) {
            push(sha, How::ExplicitReference);
        }
    }
    for pull in &named.pulls {
        if let Some(sha) = ctx.pulls.get(pull) {
            if ctx.by_sha.get(sha.as_str()).is_some_and(|c| c.time <= fix.time) {
                push(sha.clone(), How::ExplicitReference);
            }
        }
    }
    out
}

/// `prefix` as a full SHA when it names a commit that is an ancestor of `fix`.
fn resolve_ancestor(repo: &Path, prefix: &str, fix: &str) -> Option<String> {
    let sha = git::git(repo, &["rev-parse", "--verify", "--quiet", "--end-of-options", &format!("{prefix}^{{commit}}")]).ok()?.trim().to_string();
    let ancestor = git::command(repo).args(["merge-base", "--is-ancestor", &sha, fix]).output().ok()?.status.success();
    (ancestor && sha != fix).then_some(sha)
}

/// The lines a commit added to `paths` (all its files when none of `paths` changed), as
/// numbered in it: where a named commit's change is, when blame gave none of its lines.
fn added_lines(repo: &Path, sha: &str, paths: &[String]) -> Vec<Place> {
    let read = |only: &[String]| -> Vec<Place> {
        let mut args = vec!["show", "-U0", "--format=", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--first-parent", sha, "--"];
        args.extend(only.iter().map(String::as_str));
        let Ok(bytes) = git::git_bytes(repo, &args, &[]) else { return Vec::new() };
        let mut out = Vec::new();
        let (mut path, mut line) = (String::new(), 0u32);
        for l in String::from_utf8_lossy(&bytes).lines() {
            if let Some(p) = l.strip_prefix("+++ ") {
                path = p.strip_prefix("b/").unwrap_or(p).to_string();
            } else if let Some(rest) = l.strip_prefix("@@ -") {
                line = rest.split_whitespace().nth(1).and_then(|n| n.trim_start_matches('+').split(',').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
            } else if l.starts_with('+') && path != "/dev/null" && out.len() < 200 {
                out.push(Place { path: path.clone(), line });
                line += 1;
            }
        }
        out
    };
    let found = read(paths);
    if found.is_empty() {
        read(&[])
    } else {
        found
    }
}

/// What the miner needs of a candidate commit.
#[derive(Debug, Clone)]
struct CandidateInfo {
    parents: usize,
    date: String,
    /// Author time, seconds since the epoch.
    time: i64,
    /// Committer time, seconds since the epoch.
    committed: i64,
    title: String,
}

/// Parents, author date and title of `shas`, in one git call.
fn candidate_infos<'a>(repo: &Path, shas: impl Iterator<Item = &'a str>) -> HashMap<String, CandidateInfo> {
    let mut args = vec!["log", "--no-walk=unsorted", "--no-color", "--format=%H%x1f%P%x1f%aI%x1f%at%x1f%ct%x1f%s", "--end-of-options"];
    let shas: Vec<&str> = shas.collect();
    if shas.is_empty() {
        return HashMap::new();
    }
    args.extend(shas.iter().copied());
    let Ok(text) = git::git(repo, &args) else { return HashMap::new() };
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('\u{1f}');
            let sha = f.next()?.to_string();
            let parents = f.next()?.split_whitespace().count();
            let date = f.next()?.to_string();
            let time = f.next()?.trim().parse().unwrap_or(0);
            let committed = f.next()?.trim().parse().unwrap_or(0);
            let title = f.next().unwrap_or_default().to_string();
            Some((sha, CandidateInfo { parents, date, time, committed, title }))
        })
        .collect()
}

/// Date and title of a commit: from the range's log when it is there.
fn commit_info(ctx: &Context<'_>, sha: &str) -> (String, String) {
    if let Some(c) = ctx.by_sha.get(sha) {
        return (c.date.clone(), c.subject().to_string());
    }
    candidate_infos(ctx.repo, std::iter::once(sha)).remove(sha).map(|i| (i.date, i.title)).unwrap_or_default()
}

/// `.git-blame-ignore-revs` as the fix's parent has it, written to a file for `git blame`
/// (full SHAs only: git refuses the file over a name it cannot resolve).
fn ignore_revs_file(repo: &Path, parent: &str) -> Option<tempfile::NamedTempFile> {
    let text = git::git(repo, &["show", &format!("{parent}:.git-blame-ignore-revs")]).ok()?;
    let shas: Vec<&str> = text.lines().map(str::trim).filter(|l| l.len() == 40 && l.bytes().all(|b| b.is_ascii_hexdigit())).collect();
    let mut check = git::command(repo);
    check.args(["cat-file", "--batch-check"]).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    let known: Vec<&str> = {
        use std::io::Write;
        let mut child = check.spawn().ok()?;
        let mut stdin = child.stdin.take()?;
        let input = shas.join("\n") + "\n";
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().ok()?;
        let _ = writer.join();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let present: BTreeSet<String> =
            text.lines().filter(|l| l.ends_with(" commit") || l.contains(" commit ")).filter_map(|l| l.split(' ').next().map(str::to_string)).collect();
        shas.into_iter().filter(|s| present.contains(*s)).collect()
    };
    if known.is_empty() {
        return None;
    }
    let mut file = tempfile::NamedTempFile::new().ok()?;
    std::io::Write::write_all(&mut file, (known.join("\n") + "\n").as_bytes()).ok()?;
    Some(file)
}

/// Pull request number → the commit that brought it: `Merge pull request #N …` merges and
/// squashed commits titled `… (#N)`.
fn pull_commits(commits: &[LoggedCommit]) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    for c in commits {
        let subject = c.subject();
        let number = subject
            .strip_prefix("Merge pull request #")
            .and_then(|r| r.split_whitespace().next())
            .or_else(|| subject.rsplit_once("(#").and_then(|(_, r)| r.strip_suffix(')')))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(n) = number {
            out.entry(n).or_insert_with(|| c.sha.clone());
        }
    }
    out
}

/// Each `--fixes` entry with the commit it names (`None`: not a commit here).
fn resolve_listed(repo: &Path, listed: &[String]) -> Vec<(String, Option<String>)> {
    listed
        .iter()
        .map(|given| {
            let sha =
                git::git(repo, &["rev-parse", "--verify", "--quiet", "--end-of-options", &format!("{given}^{{commit}}")]).ok().map(|s| s.trim().to_string());
            (given.clone(), sha.filter(|s| s.len() == 40))
        })
        .collect()
}

/// The range's commits, newest first, with their messages and the paths they touch, in one
/// git call.
fn log(repo: &Path, range: &str) -> Result<Vec<LoggedCommit>, MineError> {
    let args = [
        "log",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-show-signature",
        "--no-mailmap",
        "--no-renames",
        "--diff-merges=first-parent",
        "--name-only",
        "--format=%x1e%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%at%x1f%B%x1f",
        "--end-of-options",
        range,
        "--",
    ];
    let bytes = git::git_bytes(repo, &args, &[]).map_err(|e| MineError::Range {
        repo: repo.display().to_string(),
        range: range.to_string(),
        message: match &e {
            GitError::Failed { stderr, .. } => stderr.lines().next().unwrap_or_default().trim_start_matches("fatal: ").to_string(),
            other => first_line(other),
        },
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out = Vec::new();
    for record in text.split('\u{1e}').filter(|r| !r.trim().is_empty()) {
        let fields: Vec<&str> = record.splitn(8, '\u{1f}').collect();
        if fields.len() < 8 {
            continue;
        }
        out.push(LoggedCommit {
            sha: fields[0].trim().to_string(),
            parents: fields[1].split_whitespace().map(str::to_string).collect(),
            author: fields[2].to_string(),
            email: fields[3].to_string(),
            date: fields[4].to_string(),
            time: fields[5].trim().parse().unwrap_or(0),
            message: fields[6].to_string(),
            paths: fields[7].lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect(),
        });
    }
    Ok(out)
}

/// The oracle: one case per inducing commit, one finding per (fix, inducing commit) at the
/// largest block of its lines the fix changed; every fix unmapped or skipped listed with why.
fn to_oracle(fixes: &[FixResult], summary: &Summary) -> Oracle {
    let mut findings = Vec::new();
    let mut cases: BTreeMap<String, (Vec<String>, BTreeSet<String>)> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    // Oldest fix first, so ids and cases read in history order.
    for fix in fixes.iter().rev() {
        for (n, inducing) in fix.inducing.iter().enumerate() {
            let id = format!("bug-{}-{}", &fix.sha[..fix.sha.len().min(10)], n + 1);
            let (path, start, end) = largest_block(&inducing.lines);
            let others = inducing.lines.len().saturating_sub((end + 1).saturating_sub(start) as usize);
            let also = if others > 0 { format!(" ({others} more changed lines elsewhere in the change)") } else { String::new() };
            findings.push(OracleFinding {
                id: id.clone(),
                case_id: Some(inducing.sha.clone()),
                description: format!(
                    "{} — fixed later by {} ({}, {}){also}",
                    fix.title,
                    &fix.sha[..fix.sha.len().min(10)],
                    date_only(&fix.date),
                    inducing.how.words()
                ),
                file: (!path.is_empty()).then(|| path.clone()),
                line: (start > 0).then_some(start),
                range: (start > 0 && end > start).then_some(crate::finding::LineRange { start, end }),
                category: None,
                severity: None,
                blocking: false,
                severity_label: None,
                resolved: None,
                class: Some(inducing.how.words().to_string()),
                fixed: Some(date_only(&fix.date).to_string()),
            });
            if !cases.contains_key(&inducing.sha) {
                order.push(inducing.sha.clone());
            }
            let entry = cases.entry(inducing.sha.clone()).or_default();
            entry.0.push(id);
            entry.1.insert(format!("{} ({})", &fix.sha[..fix.sha.len().min(10)], date_only(&fix.date)));
        }
    }
    let cases = order
        .into_iter()
        .filter_map(|sha| {
            let (ids, fixed_by) = cases.remove(&sha)?;
            Some(OracleCase {
                id: sha,
                expected_finding_ids: ids,
                rationale: format!("mined: introduced bugs that later fixes repaired: {}", fixed_by.into_iter().collect::<Vec<_>>().join(", ")),
                split: None,
                interpreter: None,
                ground_truth: crate::ground_truth::oracle::GroundTruth::default(),
            })
        })
        .collect();
    let mut skipped: Vec<Skipped> =
        summary.skipped.iter().map(|s| Skipped { source: format!("fix {} {}", short(&s.sha), s.title), reason: s.reason.clone() }).collect();
    skipped.extend(
        fixes.iter().rev().filter_map(|f| {
            f.unmapped.as_ref().map(|why| Skipped { source: format!("fix {} {}", short(&f.sha), f.title), reason: format!("unmapped: {why}") })
        }),
    );
    skipped.extend(summary.not_found.iter().map(|given| Skipped { source: format!("listed fix `{given}`"), reason: "not a commit of the repository".into() }));
    Oracle { version: 1, findings, cases, skipped }
}

/// The largest run of consecutive lines in one file: its path, first and last line.
fn largest_block(lines: &[Place]) -> (String, u32, u32) {
    let mut sorted: Vec<&Place> = lines.iter().collect();
    sorted.sort();
    let mut best: (String, u32, u32) = (String::new(), 0, 0);
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1].path == sorted[i].path && sorted[j + 1].line == sorted[j].line + 1 {
            j += 1;
        }
        if best.0.is_empty() || (j - i) as u32 > best.2 - best.1 {
            best = (sorted[i].path.clone(), sorted[i].line, sorted[j].line);
        }
        i = j + 1;
    }
    best
}

fn short(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}

fn date_only(date: &str) -> &str {
    date.get(..10).unwrap_or(date)
}

fn first_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

/// A fix's memo: `<dir>/<ab>/<blake3 of the options and the fix>.json`.
fn memo_path(dir: &Path, fingerprint: &str, sha: &str) -> PathBuf {
    let key = blake3::hash(format!("{fingerprint}\0{sha}").as_bytes()).to_hex().to_string();
    dir.join(&key[..2]).join(format!("{key}.json"))
}

fn read_memo(path: &Path) -> Option<FixResult> {
    let text = crate::subject::files::read_text(path).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_memo(path: &Path, result: &FixResult) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let Ok(text) = serde_json::to_string(result) else { return };
    if let Ok(mut temp) = tempfile::Builder::new().prefix(".tmp").tempfile_in(dir) {
        if std::io::Write::write_all(&mut temp, text.as_bytes()).is_ok() {
            let _ = temp.persist(path);
        }
    }
}

/// `f` over `items` on `jobs` threads, results in the items' order.
fn parallel_map<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> = items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(items.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                if let Some(slot) = results.get(i) {
                    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                }
            });
        }
    });
    results.into_iter().filter_map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner())).collect()
}

#[cfg(test)]
mod tests;
