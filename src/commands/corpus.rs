//! `runner corpus validate`: a seed-002 corpus's structure and ground-truth programs checked;
//! `runner corpus import`: a public benchmark's gold as an external target and its oracle.

use super::common::{is_json_object, write_output};
use crate::cli::{CorpusImportArgs, CorpusValidateArgs, ImportFormat};
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

/// `runner corpus import`: a benchmark's pull requests as `changes.json`, its reference
/// comments as `oracle.json`.
pub(crate) fn import(args: &CorpusImportArgs) -> Result<Exit, Error> {
    use runner::ground_truth::aacr;
    let ImportFormat::Aacr = args.format;
    let gold = aacr::load(&args.gold)?;
    let oracle = aacr::to_oracle(&gold);
    let changes = aacr::to_changes(&gold);
    let positive = args.gold.join(aacr::POSITIVE_FILE);
    let negative = args.gold.join(aacr::NEGATIVE_FILE);
    let inputs = [positive.as_path(), negative.as_path()];
    let is_json_array = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v.is_array());
    let changes_path = args.out.join("changes.json");
    let oracle_path = args.out.join(runner::ground_truth::oracle::ORACLE_FILE);
    let changes_json = serde_json::to_string_pretty(&changes).unwrap_or_default();
    let oracle_json = serde_json::to_string_pretty(&oracle).unwrap_or_default();
    write_output(&changes_path, &format!("{changes_json}\n"), &inputs, "an external target's changes", &is_json_array, args.force)?;
    write_output(&oracle_path, &format!("{oracle_json}\n"), &inputs, "an oracle", &is_json_object, args.force)?;
    let counts = gold.counts();
    errln!(
        "wrote {} and {}: {} pull requests, {} reference comments ({} on the diff's left side, at file level), {} rejected comments listed as left out{}",
        changes_path.display(),
        oracle_path.display(),
        counts.pull_requests,
        counts.references,
        counts.left_side,
        counts.rejected,
        if counts.rejected_elsewhere > 0 { format!(" (and {} on pull requests not in the benchmark)", counts.rejected_elsewhere) } else { String::new() }
    );
    Ok(Exit::Ok)
}
