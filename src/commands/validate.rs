//! `runner validate`: manifests checked without running anything.

use runner::error::{Error, Exit};
use runner::{experiment, manifest};
use std::path::PathBuf;

/// `runner validate`: each manifest read and checked, every problem reported.
pub(crate) fn run(files: &[PathBuf], max_runs: u64) -> Result<Exit, Error> {
    let mut ok = true;
    for file in files {
        match manifest::load_to_validate(file) {
            Ok(m) => {
                let (axes, analyses) = (m.matrix.axes.len(), m.analyses.len());
                for warning in budget_warnings(&m) {
                    errln!("warning: {}: {warning}", file.display());
                }
                match experiment::check(m, &experiment::PrepareOptions { max_runs, ..Default::default() }) {
                    Ok(size) => outln!(
                        "{}: ok ({axes} ax{}, {analyses} analys{}; {size})",
                        file.display(),
                        if axes == 1 { "is" } else { "es" },
                        if analyses == 1 { "is" } else { "es" }
                    ),
                    Err(problems) => {
                        ok = false;
                        for p in &problems {
                            errln!("error: {}: {p}", file.display());
                        }
                    }
                }
            }
            Err(e) => {
                ok = false;
                crate::report_error(&Error::Manifest(e))?;
            }
        }
    }
    Ok(if ok { Exit::Ok } else { Exit::Error })
}

/// Strategies (the `reviewer` axis's reviewers) whose total budgets differ.
fn budget_warnings(m: &runner::manifest::Manifest) -> Vec<String> {
    let Some(axis) = m.matrix.axis(runner::manifest::REVIEWER_AXIS) else { return Vec::new() };
    let compared: Vec<(&str, &runner::reviewer::spec::ReviewerSpec)> = axis
        .values
        .iter()
        .filter_map(|v| match v {
            runner::matrix::AxisValue::Str(name) => m.reviewers.get(name).map(|spec| (name.as_str(), spec)),
            _ => None,
        })
        .collect();
    runner::reviewer::bind::budget_mismatches(&compared)
}
