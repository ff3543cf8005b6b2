//! `runner report`: the self-contained HTML page over one or two results.json.

use super::common::{locations, results_file, write_output};
use super::output::warn;
use crate::cli::ReportArgs;
use runner::error::{Error, Exit};
use runner::experiment;
use std::path::{Path, PathBuf};

/// `runner report`: the self-contained HTML page.
pub(crate) fn run(args: &ReportArgs) -> Result<Exit, Error> {
    let places = locations(&args.locations);
    let first = results_file(&args.results);
    let warner = || -> runner::cache::layered::Warn { std::sync::Arc::new(|message| warn(&message)) };
    let mut sides = vec![experiment::report_side(&first, args.manifest.as_deref(), &places, warner())?];
    if let Some(other) = &args.against {
        sides.push(experiment::report_side(&results_file(other), None, &places, warner())?);
    }
    let page = runner::report::html::render(&sides)?;
    let out = args.output.clone().unwrap_or_else(|| first.parent().unwrap_or(Path::new(".")).join("report.html"));
    let mut inputs: Vec<PathBuf> = vec![first.clone()];
    inputs.extend(args.against.as_deref().map(results_file));
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    write_output(&out, &page, &inputs, "a report page", &runner::report::outputs::is_generated_page, args.force)?;
    runner::report::outputs::record_also(&out)?;
    for side in &sides {
        if let Err(why) = &side.findings {
            errln!("{}: {why}", side.results_path);
        }
    }
    errln!("wrote {} ({} bytes)", out.display(), page.len());
    // A page without what reviewers said, or without a single diff, is not what was asked for.
    let partial: Vec<&runner::report::html::Side> =
        sides.iter().filter(|s| s.findings.is_err() || !s.diffs.values().any(runner::report::html::SubjectDiff::is_shown)).collect();
    if !partial.is_empty() && !args.partial {
        for side in partial {
            let what = if side.findings.is_err() { "no findings and no diffs" } else { "no diffs" };
            errln!("error: {}: the page shows {what}; pass --partial to accept such a page", side.results_path);
        }
        return Ok(Exit::Error);
    }
    Ok(Exit::Ok)
}
