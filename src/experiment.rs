//! One experiment end to end: manifest → targets → plan → execution → analyses → reports.

use crate::analysis::context_level::DiffScope;
use crate::analysis::{self, AnalysisInput, RunView};
use crate::cache::CacheStore;
use crate::error::Error;
use crate::exec::{self, Emitter, ExecOptions, RunOutcome};
use crate::ground_truth::{self, oracle::Oracle};
use crate::manifest::{AnalysisKind, Manifest, TargetSpec};
use crate::plan::{self, Plan};
use crate::report::{self, model::Results};
use crate::reviewer::{self, Reviewer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::watch;

/// A manifest with its reviewer, subjects and plan, ready to execute or show.
pub struct Prepared {
    pub manifest: Manifest,
    pub reviewer: Arc<dyn Reviewer>,
    pub plan: Plan,
    pub cache: CacheStore,
    /// The target's ground truth, for analyses only: never passed to a reviewer.
    pub oracle: Option<Oracle>,
    /// Adjudication records named by analyses, by resolved path.
    pub adjudications: BTreeMap<PathBuf, ground_truth::adjudication::Adjudication>,
}

/// Where things go; CLI flags override the manifest.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    pub cache_dir: Option<PathBuf>,
    pub work_dir: Option<PathBuf>,
}

pub fn prepare(manifest_path: &std::path::Path, locations: &Locations) -> Result<Prepared, Error> {
    let manifest = crate::manifest::load(manifest_path)?;
    let reviewer = reviewer::from_spec(&manifest.reviewer)?;
    let subjects = crate::target::resolve(&manifest)?;
    let plan = plan::build(&manifest, subjects, reviewer.as_ref())?;
    let cache = CacheStore::new(locations.cache_dir.clone().unwrap_or_else(|| manifest.cache_dir.clone()));
    let oracle = load_oracle(&manifest)?;
    let adjudications = load_adjudications(&manifest)?;
    Ok(Prepared { manifest, reviewer, plan, cache, oracle, adjudications })
}

/// The adjudication records the analyses name; a missing or unparsable one is an error naming
/// its path and the analysis.
pub fn load_adjudications(manifest: &Manifest) -> Result<BTreeMap<PathBuf, ground_truth::adjudication::Adjudication>, Error> {
    let mut out = BTreeMap::new();
    for spec in &manifest.analyses {
        let Some(path) = &spec.adjudication else { continue };
        if out.contains_key(path) {
            continue;
        }
        let record = ground_truth::adjudication::load(path).map_err(|e| Error::Other(format!("analysis `{}`: `adjudication`: {e}", spec.kind.as_str())))?;
        out.insert(path.clone(), record);
    }
    Ok(out)
}

/// The oracle of a corpus (`oracle.json`, when present) or of an eval set (its cases' findings).
pub fn load_oracle(manifest: &Manifest) -> Result<Option<Oracle>, Error> {
    match &manifest.target {
        TargetSpec::Corpus { dir, .. } => ground_truth::oracle::load(dir).map_err(|e| Error::Other(e.to_string())),
        TargetSpec::Evals { dir, .. } => {
            let cases = ground_truth::evalcase::load_dir(dir).map_err(|e| Error::Other(e.to_string()))?;
            Ok(Some(ground_truth::evalcase::to_oracle(&cases)))
        }
        TargetSpec::Git { .. } => Ok(None),
    }
}

/// Changed files and hunk spans of every subject, read from its materialized diff.
fn subject_scopes(plan: &Plan, work_dir: &Path) -> BTreeMap<String, DiffScope> {
    plan.subjects
        .iter()
        .filter_map(|(id, spec)| crate::target::materialize(spec, work_dir).ok().map(|s| (id.clone(), DiffScope::from_files(&s.files))))
        .collect()
}

/// What `exec` produced.
pub struct Executed {
    pub outcomes: Vec<RunOutcome>,
    pub results: Results,
    pub written: Vec<PathBuf>,
}

/// Executes a prepared experiment and writes its reports.
pub async fn execute(
    prepared: &Prepared,
    manifest_label: &str,
    options: ExecOptions,
    emitter: &Emitter,
    cancel: watch::Receiver<bool>,
) -> Result<Executed, Error> {
    let outcomes = exec::execute(&prepared.plan, prepared.reviewer.clone(), Arc::new(prepared.cache.clone()), &options, emitter, cancel).await;
    let results = summarize_in(prepared, manifest_label, &outcomes, Some(&options.work_dir));
    // Reports are not overwritten by an execution that has nothing to show: a frozen run
    // with gaps, or one where no run succeeded (a model server down, say).
    // Nor by an interrupted one: its report would be less complete than the one it replaces.
    let nothing_succeeded = !outcomes.is_empty() && outcomes.iter().all(|o| o.success().is_none());
    let written = if nothing_succeeded || interrupted(&outcomes) || options.frozen && outcomes.iter().any(|o| matches!(o, RunOutcome::Missing)) {
        Vec::new()
    } else {
        report::render::write_reports(&results, &prepared.manifest.report.output, prepared.manifest.report.template.as_deref())?
    };
    Ok(Executed { outcomes, results, written })
}

/// Whether the execution was interrupted (Ctrl-C, SIGTERM) before every run had an outcome.
pub fn interrupted(outcomes: &[RunOutcome]) -> bool {
    outcomes.iter().any(|o| matches!(o, RunOutcome::Skipped(r) if r == exec::INTERRUPTED))
}

/// Runs every analysis over the successful runs and builds the results model.
pub fn summarize(prepared: &Prepared, manifest_label: &str, outcomes: &[RunOutcome]) -> Results {
    summarize_in(prepared, manifest_label, outcomes, None)
}

/// [`summarize`], reusing subjects materialized under `work_dir` (else a temporary directory).
pub fn summarize_in(prepared: &Prepared, manifest_label: &str, outcomes: &[RunOutcome], work_dir: Option<&Path>) -> Results {
    let plan = &prepared.plan;
    let scopes = if prepared.manifest.analyses.iter().any(|a| a.kind == AnalysisKind::ContextLevel) {
        match work_dir {
            Some(dir) => Some(subject_scopes(plan, dir)),
            None => tempfile::tempdir().ok().map(|dir| subject_scopes(plan, dir.path())),
        }
    } else {
        None
    };
    let mut views = Vec::new();
    let mut missing = Vec::new();
    for (run, outcome) in plan.runs.iter().zip(outcomes) {
        match outcome.success() {
            Some((record, findings)) => views.push(RunView { cell: &run.cell, repeat: run.repeat, subject: &run.subject_id, record, findings }),
            None => missing.push(run.label()),
        }
    }
    let input = AnalysisInput {
        runs: views,
        cells: &plan.cells,
        axis_order: &plan.axis_order,
        missing,
        repeat: prepared.manifest.matrix.repeat,
        oracle: prepared.oracle.as_ref(),
        scopes: scopes.as_ref(),
        adjudications: &prepared.adjudications,
    };
    let analyses = prepared.manifest.analyses.iter().map(|spec| analysis::compute(spec, &input)).collect();
    report::build_results(&prepared.manifest, manifest_label, plan, outcomes, reviewer_configs(prepared), analyses)
}

/// Distinct reviewer configurations (as hashed into keys) and the cells that use each.
fn reviewer_configs(prepared: &Prepared) -> Vec<report::model::ReviewerConfig> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for cell in &prepared.plan.cells {
        let config = serde_json::to_string(&prepared.reviewer.fingerprint(cell)).unwrap_or_default();
        match groups.iter_mut().find(|(c, _)| *c == config) {
            Some((_, cells)) => cells.push(cell.id.clone()),
            None => groups.push((config, vec![cell.id.clone()])),
        }
    }
    let single = groups.len() == 1;
    groups
        .into_iter()
        .map(|(config, cells)| report::model::ReviewerConfig { config, cells: if single { "all cells".to_string() } else { cells.join(", ") } })
        .collect()
}
