//! `runner score`: seed 002's scorer over captured results and an oracle.

use crate::cli::ScoreArgs;
use runner::analysis::corpus::score::ScoreError;
use runner::error::{Error, Exit};

/// `runner score`: captured results scored against an oracle.
pub(crate) fn run(args: &ScoreArgs) -> Result<Exit, Error> {
    use runner::analysis::corpus::score;
    use runner::ground_truth::oracle;
    let oracle = oracle::load_file(&args.oracle)?;
    let captured = score::load_captured(&args.results)?;
    let problems = score::check(&captured, &oracle);
    if !problems.is_empty() {
        return Err(ScoreError::Invalid { path: args.results.clone(), problems }.into());
    }
    let method = args.method.clone().or_else(|| score::recorded_method(&args.results)).unwrap_or_else(|| score::DEFAULT_METHOD.to_string());
    let scored = score::score(&captured, &oracle, &method, &args.results.display().to_string(), &args.oracle.display().to_string());
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&scored).unwrap_or_default());
    } else {
        out!("{}", scored.render());
    }
    Ok(Exit::Ok)
}
