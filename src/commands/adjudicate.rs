//! `runner adjudicate`: blind adjudication sheets exported from an experiment and imported back.

use super::common::locations;
use crate::cli::{AdjudicateExportArgs, AdjudicateImportArgs};
use runner::error::{Error, Exit};
use runner::experiment;

/// `runner adjudicate export`: a blind sheet of an experiment's cached findings.
pub(crate) fn export(args: &AdjudicateExportArgs) -> Result<Exit, Error> {
    let prepared = experiment::prepare(&args.manifest, &locations(&args.locations))?;
    // `--fill matcher`: the rule oracle analyses use by default (its thresholds calibrated
    // against judges, docs/matching.md).
    let fill = args.fill.is_some().then(runner::analysis::spec::OracleRule::default);
    let exported = runner::study::adjudication::export(
        &runner::experiment::sheet_source(&prepared),
        &args.manifest.display().to_string(),
        &args.out,
        args.seed,
        fill.as_ref(),
    )?;
    outln!(
        "{} rows from {} findings of {} cached runs{}",
        exported.rows,
        exported.findings,
        exported.runs_submitted,
        if exported.runs_missing > 0 {
            format!(" ({} planned runs are not in the cache and will count as misses)", exported.runs_missing)
        } else {
            String::new()
        }
    );
    for file in &exported.files {
        outln!("wrote {}", file.display());
    }
    if fill.is_some() {
        outln!("runner's automatic matcher filled `disposition` and `oracle_id`: importing it gives a machine adjudication, labelled as such");
    } else {
        outln!("fill `disposition` and `oracle_id` in the sheet (see README.md); keep key.json from the adjudicator");
    }
    Ok(Exit::Ok)
}

/// `runner adjudicate import`: a filled sheet back into captured results.
pub(crate) fn import(args: &AdjudicateImportArgs) -> Result<Exit, Error> {
    use runner::study::adjudication;
    let imported = adjudication::import(&args.sheet, &args.key, args.oracle.as_deref())?;
    let written = adjudication::write_imported(&imported, &args.out)?;
    let runs: usize = imported.captured.strategies.iter().map(|s| s.runs.len()).sum();
    outln!(
        "{} rows → {} strategies × {} cases × {} trials ({} runs submitted)",
        imported.rows,
        imported.captured.strategies.len(),
        imported.captured.plan.case_ids.len(),
        imported.captured.plan.trial_ids.len(),
        runs
    );
    for file in &written {
        outln!("wrote {}", file.display());
    }
    outln!("score it: runner score {} --oracle {}", args.out.display(), imported.oracle.display());
    Ok(Exit::Ok)
}
