//! `runner init`: a first experiment on this repository, or a corpus.

use crate::cli::InitArgs;
use runner::error::{Error, Exit};
use std::path::Path;

/// `runner init`: a first experiment on this repository, or a corpus.
pub(crate) fn run(args: &InitArgs) -> Result<Exit, Error> {
    use runner::config::diagnostics::display_path;
    let written = match &args.corpus {
        Some(dir) => runner::init::corpus(dir)?,
        None => runner::init::experiment(Path::new("."), &args.name)?,
    };
    for path in &written.files {
        outln!("wrote {}", display_path(path));
    }
    for path in &written.kept {
        outln!("kept {} (it already says that)", display_path(path));
    }
    match (&written.manifest, &args.corpus) {
        (Some(manifest), _) => {
            let manifest = display_path(manifest);
            outln!("next: `runner exec {manifest}` reviews the commits and writes RESULTS.md; then replace the example reviewer with yours");
            outln!("commit experiments/ and the results directory; the cache stays in .runner/ (out of git) unless the manifest's [cache] dir says otherwise");
        }
        (None, Some(dir)) => outln!(
            "next: `runner corpus validate {}` runs both cases' ground-truth programs; add your cases, then point an experiment's `[target] corpus` at it",
            dir.display()
        ),
        (None, None) => {}
    }
    Ok(Exit::Ok)
}
