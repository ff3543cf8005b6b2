//! `runner resolution`: seed 001's resolution rate over stet's history.

use crate::cli::ResolutionArgs;
use runner::error::{Error, Exit};

/// `runner resolution`: the resolution rate over stet's history.
pub(crate) fn run(args: &ResolutionArgs) -> Result<Exit, Error> {
    use runner::study::{history, resolution};
    let side = args.models.as_deref().map(history::SideFile::load).transpose()?;
    let options = resolution::Options { window: args.window, tolerance: args.tolerance };
    let report = resolution::load(&args.history, side.as_ref(), &args.repo, &args.head, options)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        out!("{}", report.render());
    }
    for s in &report.skipped_lines {
        errln!("warning: `{}` line {} skipped: {}", args.history.display(), s.line, s.why);
    }
    if report.is_empty() {
        errln!("error: no record could be read from `{}`: is it stet's `.review/history.jsonl`?", args.history.display());
        return Ok(Exit::Error);
    }
    Ok(Exit::Ok)
}
