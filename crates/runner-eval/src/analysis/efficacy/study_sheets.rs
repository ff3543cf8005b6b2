//! The `study` kind's place in the registry. A study is read from its filled sheets by the
//! study layer (`study::report`), which sits above the analyses; the experiment hands a study
//! there, so this result is what a caller that does not gets.

use crate::analysis::definition::{Definition, OptionsContext};
use crate::analysis::spec::{AnalysisKind, AnalysisOptions, StudyOptions, STUDIES};
use crate::config::{did_you_mean, resolve_path, TableReader};
use std::path::Path;
use crate::analysis::model::{AnalysisInput, AnalysisResult};
use crate::analysis::spec::AnalysisSpec;

/// `study`: seed 000's human studies from filled sheets (`study`, `sheets`, `key`).
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::STUDY, compute).with_options(&["study", "sheets", "key"], read_options);

pub fn compute(spec: &AnalysisSpec, _input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut r = AnalysisResult::new(spec, "H", "Human study", "A human study read from its filled sheets.");
    r.notes.push("The study's sheets are read by the experiment, not by this function.".into());
    r
}

/// A `study` analysis's `study`, `sheets` and `key`.
fn read_options(t: &TableReader<'_, '_>, context: &OptionsContext<'_>) -> AnalysisOptions {
    read_study(t, context.base_dir).map_or(AnalysisOptions::None, AnalysisOptions::Study)
}

fn read_study(t: &TableReader<'_, '_>, base_dir: &Path) -> Option<StudyOptions> {
    let problems = t.problems();
    // Every key is read before any is found missing, so none is reported as unknown.
    let study = t.required_string("study");
    let preference = study.as_ref().is_some_and(|s| s.get_ref() == "h9");
    // H9's two files are a session log and a survey: there is no blind sheet, so no key.
    let (key, sheets) = (if preference { t.string("key") } else { t.required_string("key") }, t.strings("sheets"));
    if let (true, Some(list)) = (preference, &sheets) {
        if list.len() != 2 {
            problems.push_with_help(
                t.span(),
                "study `h9` reads two files",
                "`sheets = [\"…/sessions.csv\", \"…/survey.csv\"]`: the session log, then the preference survey",
            );
        }
    }
    if let Some(study) = &study {
        if !STUDIES.contains(&study.get_ref().as_str()) {
            let help = match did_you_mean(study.get_ref(), STUDIES.iter().copied()) {
                Some(best) => format!("did you mean `{best}`? (studies: {})", STUDIES.join(", ")),
                None => format!("studies: {}", STUDIES.join(", ")),
            };
            problems.push_with_help(study.span(), format!("unknown study `{}`", study.get_ref()), help);
        }
    }
    match &sheets {
        None => problems.push_with_help(
            t.span(),
            "analysis `study` needs `sheets`, the filled sheets",
            "`sheets = [\"…/sheet.csv\"]` (one per rater for h1 and h5)",
        ),
        Some(list) if list.is_empty() => problems.push(t.span(), "analysis `study` lists no `sheets`"),
        Some(_) => {}
    }
    // Files that are not there are said now, not only in the report.
    for file in sheets.iter().flatten().chain(key.iter()) {
        let path = resolve_path(base_dir, file.get_ref());
        if !path.is_file() {
            problems.push(file.span(), format!("study file `{}` does not exist", path.display()));
        }
    }
    Some(StudyOptions {
        study: study?.into_inner(),
        sheets: sheets?.iter().map(|s| resolve_path(base_dir, s.get_ref())).collect(),
        key: match key {
            Some(key) => resolve_path(base_dir, key.get_ref()),
            None if preference => std::path::PathBuf::new(),
            None => return None,
        },
        base_dir: base_dir.to_path_buf(),
    })
}
