//! `runner corpus validate`: a seed-002 corpus's structure and ground-truth programs checked.

use crate::cli::CorpusValidateArgs;
use runner::error::{Error, Exit};

/// `runner corpus validate`: each case's ground-truth programs run and checked.
pub(crate) fn validate(args: &CorpusValidateArgs) -> Result<Exit, Error> {
    use runner::ground_truth::{program::Limits, validate};
    let defaults = validate::Options::default();
    let options = validate::Options {
        jobs: args.jobs.unwrap_or(defaults.jobs).max(1),
        limits: Limits {
            run: seconds(args.run_timeout, "--run-timeout")?,
            compile: seconds(args.compile_timeout, "--compile-timeout")?,
            wall: seconds(args.wall_timeout, "--wall-timeout")?,
            compile_wall: Limits::default().compile_wall.max(seconds(args.wall_timeout, "--wall-timeout")?),
        },
        structure_only: args.structure_only,
    };
    let validation = validate::validate(&args.dir, &options);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&validation).unwrap_or_default());
    } else {
        out!("{}", validation.render());
    }
    Ok(if validation.valid { Exit::Ok } else { Exit::Error })
}

fn seconds(value: f64, flag: &str) -> Result<std::time::Duration, Error> {
    std::time::Duration::try_from_secs_f64(value).ok().filter(|d| !d.is_zero()).ok_or_else(|| Error::InvalidFlag {
        flag: flag.to_string(),
        value: value.to_string(),
        expected: "a positive number of seconds",
    })
}
