//! `runner study`: the human studies' sheets exported and imported, H6's audit and H9's preference study.

use super::common::{is_json_object, locations, write_output};
use crate::cli::{StudyAuditArgs, StudyExportArgs, StudyImportArgs, StudyPreferenceArgs};
use runner::error::{Error, Exit};
use runner::experiment;
use std::path::{Path, PathBuf};

/// `runner study export`: a study's blind sheet sampled from an experiment.
pub(crate) fn export(args: &StudyExportArgs) -> Result<Exit, Error> {
    // Only the plan and the cache are read: no scoring client is built, no analyzer looked up.
    let prepared = experiment::prepare_to_read(&args.manifest, &locations(&args.locations))?;
    let source = runner::experiment::sheet_source(&prepared);
    let label = args.manifest.display().to_string();
    if args.axis.is_some() && args.study != crate::cli::StudyArg::H4 {
        let problems = vec!["`--axis` is for `--study h4` only (the tools it compares)".to_string()];
        return Err(runner::study::adjudication::AdjudicationError::Invalid { path: args.manifest.clone(), problems }.into());
    }
    let exported = if args.study == crate::cli::StudyArg::H4 {
        let overlap = prepared.manifest.analyses.iter().find(|a| a.kind == runner::analysis::spec::AnalysisKind::OVERLAP);
        let Some(axis) = args.axis.clone().or_else(|| overlap.and_then(|a| a.axis.clone())) else {
            let problems = vec!["h4 compares the values of one axis: give `--axis NAME`, or declare an `overlap` analysis with `axis`".to_string()];
            return Err(runner::study::adjudication::AdjudicationError::Invalid { path: args.manifest.clone(), problems }.into());
        };
        if !prepared.plan.axis_order.contains(&axis) {
            let problems = vec![format!("`{axis}` is not an axis of the matrix ({})", prepared.plan.axis_order.join(", "))];
            return Err(runner::study::adjudication::AdjudicationError::Invalid { path: args.manifest.clone(), problems }.into());
        }
        let rule = overlap.map(|a| a.matching).unwrap_or_default();
        runner::study::findings::export_unique(&source, &axis, &prepared.plan.axis_order, &rule, &label, &args.out, args.seed, args.sample)?
    } else {
        runner::study::findings::export(&source, args.study.into(), &label, &args.out, args.seed, args.sample)?
    };
    outln!("{} rows sampled from {} eligible findings", exported.rows, exported.eligible);
    for file in &exported.files {
        outln!("wrote {}", file.display());
    }
    outln!("fill the label columns and `rater` (see README.md); keep key.json from the rater");
    Ok(Exit::Ok)
}

/// `runner study import`: filled sheets into a study's result.
pub(crate) fn import(args: &StudyImportArgs) -> Result<Exit, Error> {
    let result = runner::study::findings::import_sheets(&args.sheets, &args.key)?;
    let written = runner::study::findings::write_result(&result, &args.out)?;
    out!("{}", result.to_markdown());
    for file in &written {
        errln!("wrote {}", file.display());
    }
    Ok(Exit::Ok)
}

/// `runner study audit`: H6's candidate patterns.
pub(crate) fn audit(args: &StudyAuditArgs) -> Result<Exit, Error> {
    use runner::study::{adjudication::AdjudicationError, audit};
    if !(0.0..=1.0).contains(&args.similarity) {
        return Err(AdjudicationError::Invalid { path: args.key.clone(), problems: vec![format!("--similarity {} is not in 0..1", args.similarity)] }.into());
    }
    let (patterns, audited) = audit::audit(&args.sheets, &args.key, args.similarity)?;
    let text = audit::to_csv(&patterns).map_err(|e| AdjudicationError::Parse { path: args.out.clone(), message: e.to_string() })?;
    let inputs: Vec<&Path> = args.sheets.iter().map(PathBuf::as_path).chain([args.key.as_path()]).collect();
    write_output(&args.out, &text, &inputs, "a pattern list", &|_: &[u8]| true, true)?;
    outln!("{audited} findings labelled false_positive or wrong_suggestion, in {} candidate patterns", patterns.len());
    outln!("wrote {}", args.out.display());
    Ok(Exit::Ok)
}

/// `runner study preference`: H9 from a session log and a survey.
pub(crate) fn preference(args: &StudyPreferenceArgs) -> Result<Exit, Error> {
    use runner::study::{adjudication::AdjudicationError, preference};
    let read = |p: &Path| runner::bounded::input(p).map_err(|source| AdjudicationError::Read { path: p.to_path_buf(), source });
    let (log, survey) = (read(&args.sessions)?, read(&args.survey)?);
    let result = preference::study(&args.sessions.display().to_string(), &log, &args.survey.display().to_string(), &survey, args.resamples, args.seed)
        .map_err(|problems| AdjudicationError::Invalid { path: args.sessions.clone(), problems })?;
    std::fs::create_dir_all(&args.out).map_err(|source| AdjudicationError::Write { path: args.out.clone(), source })?;
    let (json, md) = (args.out.join("result.json"), args.out.join("result.md"));
    let text = serde_json::to_string_pretty(&result).map_err(|e| AdjudicationError::Parse { path: json.clone(), message: e.to_string() })?;
    let inputs = [args.sessions.as_path(), args.survey.as_path()];
    write_output(&json, &(text + "\n"), &inputs, "a study result", &is_json_object, true)?;
    write_output(&md, &result.to_markdown(), &inputs, "a study result", &|_: &[u8]| true, true)?;
    out!("{}", result.to_markdown());
    errln!("wrote {}\nwrote {}", json.display(), md.display());
    Ok(Exit::Ok)
}
