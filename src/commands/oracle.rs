//! `runner oracle`: an oracle imported from GitHub's review comments, and patches proposed from adjudications.

use super::common::{is_json_object, write_output};
use crate::cli::{ImportGithubArgs, OracleProposeArgs};
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
