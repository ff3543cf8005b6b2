//! Which commits fix a bug, and what a fix's message says about the change it repairs: the
//! message rules (fix words, issue references, reverts, named commits and pull requests), the
//! skips (merges, bots, changes to tests, docs or configuration only, tangled changes), and the
//! classification of a path as source, test, docs or configuration.

use std::collections::BTreeSet;

/// The words that mark a fix in a commit message, matched as whole words, case-insensitively.
pub const DEFAULT_FIX_WORDS: &[&str] =
    &["fix", "fixes", "fixed", "fixing", "bug", "bugs", "bugfix", "hotfix", "regression", "crash", "crashes", "defect", "fault", "broken", "repair", "repairs"];

/// Authors taken for bots unless `--include-bots`: `[bot]` accounts and the usual bump tools.
const BOT_MARKERS: &[&str] = &["[bot]", "dependabot", "renovate", "pre-commit-ci", "github-actions", "greenkeeper", "snyk-bot"];

/// One commit as the miner's log reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedCommit {
    pub sha: String,
    pub parents: Vec<String>,
    pub author: String,
    pub email: String,
    /// Author date, ISO 8601 with offset.
    pub date: String,
    /// Author time, seconds since the epoch.
    pub time: i64,
    /// The whole message.
    pub message: String,
    /// Paths the commit touches (its first-parent diff), as `git log --numstat --no-renames` lists them.
    pub paths: Vec<String>,
}

impl LoggedCommit {
    /// The message's first line.
    pub fn subject(&self) -> &str {
        self.message.lines().next().unwrap_or_default().trim()
    }
}

/// What a path is, for deciding whether a fix touched code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    Source,
    Test,
    Docs,
    Config,
    Other,
}

/// Source-code extensions: a fix's lines are looked for in these files only.
const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "pyx", "js", "mjs", "cjs", "jsx", "ts", "tsx", "rs", "go", "java", "kt", "kts", "scala", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "cs",
    "rb", "php", "swift", "m", "mm", "sh", "bash", "lua", "pl", "pm", "r", "jl", "ex", "exs", "erl", "hs", "ml", "clj", "dart", "vue", "svelte", "groovy",
    "sql",
];
const DOC_EXTENSIONS: &[&str] = &["md", "rst", "txt", "adoc", "html", "htm", "tex", "1", "man"];
const CONFIG_EXTENSIONS: &[&str] = &["toml", "yaml", "yml", "json", "ini", "cfg", "conf", "lock", "xml", "gradle", "properties", "env", "editorconfig"];
const CONFIG_NAMES: &[&str] = &[
    "makefile",
    "dockerfile",
    "setup.cfg",
    "tox.ini",
    "pipfile",
    "manifest.in",
    ".gitignore",
    ".gitattributes",
    "codeowners",
    "license",
    "authors",
    "changelog",
    "history",
];

/// The kind of `path`: tests by their directory or name (`tests/`, `test_x.py`, `x_test.go`,
/// `x.spec.ts`, `XTest.java`), docs and configuration by extension or name, the rest by
/// extension.
pub fn path_kind(path: &str) -> PathKind {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let dirs: Vec<&str> = lower.split('/').collect();
    let dirs = &dirs[..dirs.len().saturating_sub(1)];
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let stem = name.rsplit_once('.').map(|(s, _)| s).unwrap_or(name);
    let test_dir = dirs.iter().any(|d| matches!(*d, "test" | "tests" | "testing" | "__tests__" | "spec" | "specs" | "testdata" | "fixtures" | "e2e"));
    let test_name = stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with(".test")
        || stem.ends_with(".spec")
        || stem.ends_with("_spec")
        || (path.rsplit('/').next().unwrap_or(path).ends_with("Test.java"))
        || stem == "conftest";
    if test_dir || test_name {
        return PathKind::Test;
    }
    if dirs.iter().any(|d| matches!(*d, "docs" | "doc" | "documentation")) || DOC_EXTENSIONS.contains(&ext) {
        return PathKind::Docs;
    }
    if CONFIG_NAMES.contains(&name) || CONFIG_EXTENSIONS.contains(&ext) || dirs.first().is_some_and(|d| *d == ".github") {
        return PathKind::Config;
    }
    if SOURCE_EXTENSIONS.contains(&ext) {
        PathKind::Source
    } else {
        PathKind::Other
    }
}

/// Why a commit is a fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixSignal {
    /// Listed in `--fixes`.
    Listed,
    /// `This reverts commit X`: X is the change it repairs.
    Revert(String),
    /// Its message says so (a fix word or an issue it closes).
    Message,
    /// Its message names the commit or pull request that brought the bug.
    Named,
}

/// The commits a message names as the change it repairs, as written (hex prefixes, not yet
/// resolved), and the pull requests it blames (`regression from #123`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Named {
    /// `This reverts commit X.`
    pub reverted: Option<String>,
    /// Hex words of 7–40 digits after a word that blames them (introduced, regression,
    /// broke, caused, since, `Fixes:`), outside cherry-pick and revert lines.
    pub commits: Vec<String>,
    /// `#N` after a word that blames it (introduced, regression, broke, caused, since).
    pub pulls: Vec<u64>,
}

/// Words after which a `#N` or a commit names the change that brought the bug.
const BLAME_WORDS: &[&str] = &["introduced", "regression", "regressed", "broke", "broken", "breakage", "caused", "since", "fixes:", "fixup"];

/// Whether a word blames the reference after it: a blame word or its inflection
/// (`introduced`, `regressions`), and `Fixes:` only as the trailer, with its colon (`fixes #12`
/// closes an issue).
fn is_blame_word(word: &str) -> bool {
    BLAME_WORDS.iter().any(|b| match b.strip_suffix(':') {
        Some(_) => word == *b,
        None => word.starts_with(b),
    })
}

/// What `message` names as the change it repairs. A paragraph is read as one run of words,
/// so a blame word at the end of a line still names the hash git's wrapping put at the start
/// of the next (`…a bug introduced by` / `fab0f61a…`); a blank line or a list item (`* `,
/// `- `) starts a new run, and trailers, cherry-pick notes and revert lines are runs of their
/// own.
pub fn named_in(message: &str) -> Named {
    let mut named = Named::default();
    let mut run: Vec<String> = Vec::new();
    let mut runs: Vec<Vec<String>> = Vec::new();
    for line in message.lines() {
        let lower = line.trim().to_ascii_lowercase();
        let item = ["* ", "- ", "+ "].iter().any(|m| lower.starts_with(m));
        if lower.is_empty() || item {
            runs.push(std::mem::take(&mut run));
        }
        if lower.starts_with("(cherry picked from commit") || lower.starts_with("signed-off-by:") || lower.starts_with("co-authored-by:") {
            runs.push(std::mem::take(&mut run));
            continue;
        }
        if let Some(rest) = lower.strip_prefix("this reverts commit ") {
            let sha: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
            if sha.len() >= 7 {
                named.reverted = Some(sha);
            }
            runs.push(std::mem::take(&mut run));
            continue;
        }
        if lower.starts_with("fixes:") {
            // A trailer (`Fixes: 1a2b3c4 ("subject")`) is a run of its own.
            runs.push(std::mem::take(&mut run));
        }
        run.extend(
            lower.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\'' | '`')).filter(|w| !w.is_empty()).map(str::to_string),
        );
    }
    runs.push(run);
    for words in &runs {
        // The reference read last, and whether it was blamed: a blame word names the first
        // reference after it (`introduced in 1a2b3c4, fixes #159` blames the commit, not the
        // issue), and those joined to it by `and`/`or` (`broken by 1a2b3c4 and 5d6e7f8`).
        let mut last: Option<(usize, bool, bool)> = None;
        for (i, word) in words.iter().enumerate() {
            let bare = word.trim_end_matches(['.', ':']);
            let commit = (7..=40).contains(&bare.len()) && bare.bytes().all(|b| b.is_ascii_hexdigit()) && bare.bytes().any(|b| b.is_ascii_digit());
            let pull = bare.strip_prefix('#').and_then(|n| n.parse::<u64>().ok());
            if !commit && pull.is_none() {
                continue;
            }
            // The four words before it, within its sentence and after the reference before it.
            let mut start =
                words[i.saturating_sub(4)..i].iter().rposition(|w| w.ends_with(['.', '!', '?'])).map_or(i.saturating_sub(4), |p| i.saturating_sub(4) + p + 1);
            // Joined: a reference of the same kind (a commit after a commit), with nothing or
            // only `and`/`or` between them (`introduced at 1a2b3c4, #378` names an issue).
            let joined = last.filter(|(p, _, was_commit)| {
                *was_commit == commit && words[p + 1..i].iter().all(|w| matches!(w.as_str(), "and" | "or" | "&")) && !words[*p].ends_with(['.', '!', '?'])
            });
            if let Some((p, _, _)) = last {
                start = start.max(p + 1);
            }
            let blamed = match joined {
                Some((_, blamed, _)) => blamed,
                None => words[start..i].iter().any(|w| is_blame_word(w)),
            };
            if blamed && commit {
                named.commits.push(bare.to_string());
            }
            if let Some(number) = pull.filter(|_| blamed) {
                named.pulls.push(number);
            }
            last = Some((i, blamed, commit));
        }
    }
    named.commits.dedup();
    named.pulls.dedup();
    named
}

/// Whether `message` says it fixes something: a fix word (`fix`, `bug`, `regression`, … as
/// configured) as a whole word in its subject line, or `closes`, `fixes` or `resolves` before
/// an issue reference anywhere but in trailers and cherry-pick notes. The body's other words
/// are not read: a squashed pull request's body lists its commits (`* fix lint`), which would
/// make nearly every squash a fix.
pub fn says_fix(message: &str, words: &BTreeSet<String>) -> bool {
    let tokens = |line: &str| -> Vec<String> {
        line.to_ascii_lowercase().split(|c: char| !(c.is_alphanumeric() || c == '#' || c == '-')).filter(|w| !w.is_empty()).map(str::to_string).collect()
    };
    let subject = tokens(message.lines().next().unwrap_or_default());
    if subject.iter().any(|t| words.contains(t)) {
        return true;
    }
    message.lines().any(|line| {
        let lower = line.trim().to_ascii_lowercase();
        if lower.starts_with("(cherry picked from commit") || lower.starts_with("signed-off-by:") || lower.starts_with("co-authored-by:") {
            return false;
        }
        let tokens = tokens(&lower);
        tokens.iter().enumerate().any(|(i, t)| {
            matches!(t.as_str(), "close" | "closes" | "closed" | "fix" | "fixes" | "fixed" | "resolve" | "resolves" | "resolved")
                && tokens.get(i + 1).is_some_and(|n| n.starts_with('#') || n.starts_with("gh-"))
        })
    })
}

/// Whether the author is a bot.
pub fn is_bot(commit: &LoggedCommit) -> bool {
    let who = format!("{} {}", commit.author, commit.email).to_ascii_lowercase();
    BOT_MARKERS.iter().any(|m| who.contains(m))
}

/// Why a fix commit is not mined, if it is not.
pub fn skip_reason(commit: &LoggedCommit, include_bots: bool, max_files: usize) -> Option<String> {
    if commit.parents.len() > 1 {
        return Some("a merge commit: what it brought in is mined from the commits it merged".to_string());
    }
    if commit.parents.is_empty() {
        return Some("the repository's first commit: nothing before it to blame".to_string());
    }
    if !include_bots && is_bot(commit) {
        return Some(format!("written by a bot (`{}`)", commit.author));
    }
    let sources = commit.paths.iter().filter(|p| path_kind(p) == PathKind::Source).count();
    if sources == 0 {
        return Some("touches only tests, docs or configuration".to_string());
    }
    if sources > max_files {
        return Some(format!("touches {sources} source files, over the limit of {max_files} (a tangled change; `--max-files`)"));
    }
    None
}

/// Whether a removed line is blank or a comment only, in the language of `path`: such a line
/// is not where a bug was.
pub fn is_comment_or_blank(path: &str, line: &str) -> bool {
    let text = line.trim();
    if text.is_empty() {
        return true;
    }
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let hash = matches!(ext.as_str(), "py" | "pyx" | "rb" | "sh" | "bash" | "pl" | "pm" | "r" | "jl" | "ex" | "exs" | "toml" | "yaml" | "yml");
    let slash = !hash && !matches!(ext.as_str(), "sql" | "lua" | "hs");
    (hash && text.starts_with('#'))
        || (slash && (text.starts_with("//") || text.starts_with("/*") || text.starts_with("* ") || text == "*" || text.starts_with("*/")))
        || (matches!(ext.as_str(), "sql" | "lua" | "hs") && text.starts_with("--"))
        || (matches!(ext.as_str(), "py" | "pyx") && (text == "\"\"\"" || text == "'''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> BTreeSet<String> {
        DEFAULT_FIX_WORDS.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn fix_messages_are_told_by_whole_words_and_issue_closing() {
        let w = words();
        for yes in [
            "Fix crash on empty body",
            "Handle None (fixes #123)",
            "bugfix: header parsing",
            "Closes #9: timeouts",
            "Avoid a regression in redirects",
            "Handle None\n\nFixes #12.",
        ] {
            assert!(says_fix(yes, &w), "{yes}");
        }
        for no in [
            "Add prefix support",
            "Debug logging for sessions",
            "Bump urllib3",
            "Document suffixes",
            "Prefixed names\n\n(cherry picked from commit 1234567 fix)",
        ] {
            assert!(!says_fix(no, &w), "{no}");
        }
    }

    #[test]
    fn a_message_names_the_commit_and_pull_request_it_repairs() {
        let named = named_in("Fix redirect loop\n\nIntroduced in 1a2b3c4d, a regression from #4512.\nRefs #77.\n(cherry picked from commit 9999999aaaa)");
        assert_eq!(named.commits, ["1a2b3c4d"]);
        assert_eq!(named.pulls, [4512], "only the pull request the message blames");
        let revert = named_in("Revert \"Use a pool\"\n\nThis reverts commit 0123456789abcdef0123456789abcdef01234567.\n");
        assert_eq!(revert.reverted.as_deref(), Some("0123456789abcdef0123456789abcdef01234567"));
        assert!(revert.commits.is_empty());
        assert!(named_in("Fix the deadbeef-free path in accessed code").commits.is_empty(), "words of hex letters only are not commits");
        assert!(named_in("Update docs\n\nSee 1a2b3c4d for the layout.").commits.is_empty(), "a commit named without blame");
        assert_eq!(named_in("net: fix a leak\n\nFixes: 0123abcd4567 (\"net: add pool\")").commits, ["0123abcd4567"]);
        // git wraps long lines: the blame word ends one line, the hash starts the next.
        assert_eq!(named_in("Fix the parser\n\nThis fixes a bug introduced by\nfab0f61a in the tokenizer.").commits, ["fab0f61a"]);
        // A new paragraph, a list item or a new sentence is not read with the words before it.
        assert!(named_in("Fix it\n\nA regression.\n\n1a2b3c4d is the layout.").commits.is_empty());
        assert!(named_in("Squash\n\n* fix a crash introduced\n* 1a2b3c4d tidy").commits.is_empty());
        assert!(named_in("Fix it\n\nIt broke. See 1a2b3c4d.").commits.is_empty());
        // A blame word names the first reference after it, and those joined to it.
        let named = named_in("Fix requests\n\nBroken requests introduced in 5d759bb, fixes #159");
        assert_eq!((named.commits.as_slice(), named.pulls.as_slice()), (["5d759bb".to_string()].as_slice(), [].as_slice()));
        assert_eq!(named_in("Fix it\n\nA regression from 1a2b3c4d and 5e6f7a8b.").commits, ["1a2b3c4d", "5e6f7a8b"]);
        let named = named_in("Fix it\n\nresolve problem introduced at 7f18001a9f836ce5efeedaaca5ed477c605133a9, #378");
        assert_eq!((named.commits.len(), named.pulls.as_slice()), (1, [].as_slice()), "a commit, then the issue");
    }

    #[test]
    fn paths_are_told_apart_by_place_and_extension() {
        assert_eq!(path_kind("requests/models.py"), PathKind::Source);
        assert_eq!(path_kind("tests/test_requests.py"), PathKind::Test);
        assert_eq!(path_kind("src/app.spec.ts"), PathKind::Test);
        assert_eq!(path_kind("pkg/x_test.go"), PathKind::Test);
        assert_eq!(path_kind("src/main/java/FooTest.java"), PathKind::Test);
        assert_eq!(path_kind("docs/api.rst"), PathKind::Docs);
        assert_eq!(path_kind("README.md"), PathKind::Docs);
        assert_eq!(path_kind("setup.cfg"), PathKind::Config);
        assert_eq!(path_kind(".github/workflows/ci.yml"), PathKind::Config);
        assert_eq!(path_kind("logo.png"), PathKind::Other);
    }

    #[test]
    fn comment_and_blank_lines_are_told_per_language() {
        assert!(is_comment_or_blank("a.py", "    # a note"));
        assert!(!is_comment_or_blank("a.py", "x = 1  # a note"));
        assert!(is_comment_or_blank("a.rs", "   // a note"));
        assert!(is_comment_or_blank("a.c", " * part of a block"));
        assert!(!is_comment_or_blank("a.c", "*p = 1;"));
        assert!(!is_comment_or_blank("a.rs", "#[derive(Debug)]"), "an attribute is code");
        assert!(is_comment_or_blank("a.sql", "-- note"));
        assert!(is_comment_or_blank("a.js", "   "));
    }
}
