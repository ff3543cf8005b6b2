//! `runner a2`: A2 actionability from stet's `history.jsonl`.

use super::common::write_output;
use crate::cli::A2Args;
use runner::error::{Error, Exit};

/// `runner a2`: A2 from stet's history, printed or written as A2.md and a2.json.
pub(crate) fn run(args: &A2Args) -> Result<Exit, Error> {
    use runner::study::history;
    let side = args.models.as_deref().map(history::SideFile::load).transpose()?;
    let report = history::load(&args.history, side.as_ref())?;
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    if let Some(dir) = &args.out {
        for (name, text) in [("A2.md", report.render()), ("a2.json", format!("{json}\n"))] {
            let first_line = text.lines().next().unwrap_or_default().to_string();
            let same_kind = move |old: &[u8]| old.split(|b| *b == b'\n').next() == Some(first_line.as_bytes());
            write_output(&dir.join(name), &text, &[args.history.as_path()], "an A2 report", &same_kind, args.force)?;
        }
        errln!("wrote {} and {}", dir.join("A2.md").display(), dir.join("a2.json").display());
    } else if args.json {
        outln!("{json}");
    } else {
        out!("{}", report.render());
    }
    for s in &report.skipped {
        errln!("warning: `{}` line {} skipped: {}", args.history.display(), s.line, s.why);
    }
    if report.is_empty() {
        errln!("error: no record could be read from `{}`: is it stet's `.review/history.jsonl`?", args.history.display());
        return Ok(Exit::Error);
    }
    Ok(Exit::Ok)
}
