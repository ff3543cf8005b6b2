//! `runner oracle`: an oracle imported from GitHub's review comments, one mined from the
//! commits that fixed bugs, and patches proposed from adjudications.

use super::common::{is_json_object, write_output};
use crate::cli::{ImportGithubArgs, MineArgs, OracleProposeArgs};
use runner::error::{Error, Exit};
use std::path::Path;

/// `runner oracle import-github`: GitHub's review threads as an oracle.
pub(crate) fn import_github(args: &ImportGithubArgs) -> Result<Exit, Error> {
    use runner::ground_truth::github;
    let pulls: Vec<github::Pull> = github::read_export(&args.pulls)?;
    let comments: Vec<github::Comment> = github::read_export(&args.comments)?;
    let imported = github::import(&pulls, &comments, &args.repo, args.include_bots)?;
    let json = serde_json::to_string_pretty(&imported.oracle).unwrap_or_default();
    let inputs = [args.pulls.as_path(), args.comments.as_path()];
    write_output(&args.out, &format!("{json}\n"), &inputs, "an oracle", &is_json_object, args.force)?;
    for s in &imported.oracle.skipped {
        errln!("skipped {}: {}", s.source, s.reason);
    }
    errln!(
        "wrote {}: {} findings ({} resolved; {} replies merged into their threads) in {} cases from {} pull requests and {} review comments; {} left out",
        args.out.display(),
        imported.threads,
        imported.resolved,
        imported.replies,
        imported.oracle.cases.len(),
        pulls.len(),
        comments.len(),
        imported.oracle.skipped.len()
    );
    Ok(Exit::Ok)
}

/// `runner oracle propose`: adjudicated extras as an oracle patch.
pub(crate) fn propose(args: &OracleProposeArgs) -> Result<Exit, Error> {
    let patch = runner::study::propose::build(&args.adjudication, args.oracle.as_deref())?;
    let json = serde_json::to_string_pretty(&patch).unwrap_or_default();
    let inputs: Vec<&Path> = std::iter::once(args.adjudication.as_path()).chain(args.oracle.as_deref()).collect();
    write_output(&args.out, &format!("{json}\n"), &inputs, "an oracle patch", &is_json_object, args.force)?;
    for a in &patch.additions {
        let place = match (&a.finding.file, a.finding.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            (Some(f), None) => f.clone(),
            _ => "(no location)".into(),
        };
        eprintln!("{} ({}) {place}: {}", a.finding.id, a.case, a.finding.description);
    }
    eprintln!(
        "wrote {}: {} proposed findings for oracle {} → {}; verify each in the code before adding it",
        args.out.display(),
        patch.additions.len(),
        patch.applies_to,
        patch.makes
    );
    Ok(Exit::Ok)
}

/// `runner oracle mine`: the bugs a repository shipped, from the commits that fixed them.
pub(crate) fn mine(args: &MineArgs) -> Result<Exit, Error> {
    use runner::ground_truth::mine::{self, MineOptions};
    let listed = match &args.fixes {
        Some(path) => {
            let text = runner::bounded::input(path).map_err(|e| Error::Mine(format!("cannot read `{}`: {e}", path.display())))?;
            String::from_utf8_lossy(&text).lines().map(|l| l.split('#').next().unwrap_or_default().trim().to_string()).filter(|l| !l.is_empty()).collect()
        }
        None => Vec::new(),
    };
    let mut options = MineOptions {
        range: args.range.clone(),
        listed,
        max_files: args.max_files,
        include_bots: args.include_bots,
        jobs: args.jobs.max(1),
        candidates: args.candidates.into(),
        ..MineOptions::default()
    };
    if !args.fix_words.is_empty() {
        options.fix_words = args.fix_words.iter().map(|w| w.trim().to_ascii_lowercase()).filter(|w| !w.is_empty()).collect();
    }
    options.memo_dir = Some(args.memo_dir.clone().unwrap_or_else(|| default_memo_dir(&args.repo)));
    let mined = mine::mine(&args.repo, &options).map_err(|e| Error::Mine(e.to_string()))?;
    if let Some(out) = &args.out {
        let json = serde_json::to_string_pretty(&mined.oracle).unwrap_or_default();
        let inputs: Vec<&Path> = args.fixes.iter().map(|p| p.as_path()).collect();
        write_output(out, &format!("{json}\n"), &inputs, "an oracle", &is_json_object, args.force)?;
    }
    let s = &mined.summary;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&serde_json::json!({ "summary": s, "fixes": mined.fixes })).unwrap_or_default());
    }
    for skip in &s.skipped {
        errln!("skipped fix {} {}: {}", &skip.sha[..skip.sha.len().min(10)], printable(&skip.title), skip.reason);
    }
    for fix in mined.fixes.iter().filter(|f| f.unmapped.is_some()) {
        errln!("unmapped fix {} {}: {}", &fix.sha[..fix.sha.len().min(10)], printable(&fix.title), fix.unmapped.as_deref().unwrap_or_default());
    }
    let per_fix: Vec<String> = s.candidates_per_fix.iter().map(|(n, fixes)| format!("{fixes} with {n}")).collect();
    let how: Vec<String> = s.by_how.iter().map(|(how, n)| format!("{n} {how}")).collect();
    errln!(
        "{} commits in `{}`: {} fixes, {} skipped, {} mined ({} from an earlier run): {} mapped ({}), {} unmapped; {} inducing commits ({})",
        s.commits,
        s.range,
        s.fixes,
        s.skipped.len(),
        s.examined,
        s.from_memo,
        s.mapped,
        if per_fix.is_empty() { "none".to_string() } else { format!("inducing commits per fix: {}", per_fix.join(", ")) },
        s.unmapped,
        s.inducing_commits,
        if how.is_empty() { "none".to_string() } else { how.join(", ") }
    );
    for given in &s.not_found {
        errln!("warning: listed fix `{given}` is not a commit of the repository");
    }
    if let Some(out) = &args.out {
        errln!("wrote {}: {} findings in {} cases", out.display(), mined.oracle.findings.len(), mined.oracle.cases.len());
        if !mined.oracle.cases.is_empty() {
            errln!("review them with [target] commits = [the cases' SHAs] and oracle = \"{}\" (see `runner oracle mine --help`)", out.display());
        }
    }
    Ok(Exit::Ok)
}

/// `.runner/mine` in the repository's work tree, or in the current directory for a bare one.
fn default_memo_dir(repo: &Path) -> std::path::PathBuf {
    let top = runner::subject::git::git(repo, &["rev-parse", "--show-toplevel"])
        .ok()
        .map(|t| std::path::PathBuf::from(t.trim()))
        .filter(|t| !t.as_os_str().is_empty());
    top.unwrap_or_else(|| std::path::PathBuf::from(".")).join(".runner").join("mine")
}

/// A commit title as one line of plain text: control characters (terminal escapes) dropped.
fn printable(title: &str) -> String {
    title.chars().filter(|c| !c.is_control() && !matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')).collect()
}
