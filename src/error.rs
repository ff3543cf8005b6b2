//! The top-level error type and the one place exit codes are decided.

use crate::exec::RunOutcome;
use std::process::ExitCode;

/// Exit codes, as documented in the README. stet's are kept: 0 ok, 1 error, 2 model server
/// unreachable; runner adds its own above them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    /// Usage, manifest, I/O or any other error.
    Error = 1,
    /// A reviewer's model server could not be reached.
    Unreachable = 2,
    /// Some runs failed (the rest completed and were reported).
    RunsFailed = 3,
    /// `--frozen` and the cache lacks results.
    Missing = 4,
    /// A quality gate (e.g. `runner diff`) failed.
    Gate = 5,
    /// `--max-cost` was reached: some runs were left unrun (run again with a larger budget).
    OverBudget = 6,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Manifest(#[from] crate::manifest::LoadError),
    #[error(transparent)]
    Target(#[from] crate::subject::TargetError),
    #[error(transparent)]
    Subjects(#[from] crate::plan::subjects::ResolveError),
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    #[error(transparent)]
    Render(#[from] crate::report::render::RenderError),
    #[error(transparent)]
    Cache(#[from] crate::cache::store::CacheError),
    #[error(transparent)]
    OutputFile(#[from] runner_core::output_file::OutputFileError),
    #[error("{0}")]
    Mine(String),
    #[error("{0}")]
    RemoteCache(#[from] crate::cache::RemoteError),
    #[error("{0}")]
    Reviewer(#[from] crate::reviewer::ReviewError),
    #[error(transparent)]
    Oracle(#[from] crate::ground_truth::oracle::OracleError),
    #[error(transparent)]
    Score(#[from] crate::analysis::corpus::score::ScoreError),
    #[error(transparent)]
    Adjudication(#[from] crate::study::adjudication::AdjudicationError),
    #[error(transparent)]
    History(#[from] crate::study::history::HistoryError),
    #[error(transparent)]
    GithubImport(#[from] crate::ground_truth::github::ImportError),
    #[error(transparent)]
    Resolution(#[from] crate::study::resolution::ResolutionError),
    /// An analysis's `adjudication` file could not be loaded.
    #[error("analysis `{analysis}`: `adjudication`: {source}")]
    AnalysisAdjudication { analysis: String, source: crate::analysis::matching::adjudication::RecordError },
    #[error(transparent)]
    EvalCase(#[from] crate::ground_truth::evalcase::EvalCaseError),
    #[error(transparent)]
    Propose(#[from] crate::study::propose::ProposeError),
    #[error(transparent)]
    Diff(#[from] crate::report::diff::DiffError),
    #[error(transparent)]
    Init(#[from] crate::init::InitError),
    #[error(transparent)]
    Results(#[from] crate::report::model::ResultsError),
    #[error(transparent)]
    Show(#[from] crate::report::show::ShowError),
    #[error(transparent)]
    Outputs(#[from] crate::report::outputs::OutputsError),
    /// The report directory cannot be written.
    #[error("the report directory `{path}` cannot be written: {why}")]
    OutputDir { path: std::path::PathBuf, why: String },
    /// Writing to runner's standard output or error failed (a full disk, a closed pipe).
    #[error("cannot write to {stream}: {source}")]
    Output { stream: &'static str, source: std::io::Error },
    /// RQS v2's scoring resources could not be set up (a judge, the embedder, an analyzer,
    /// the anchor set or the calibration).
    #[error("scoring: {0}")]
    Scoring(String),
    /// A command-line value that clap's types cannot check.
    #[error("`{flag}` must be {expected}, not `{value}`")]
    InvalidFlag { flag: String, value: String, expected: &'static str },
    /// An output file the user asked for could not be written.
    #[error("failed to write `{path}`: {source}")]
    Write { path: std::path::PathBuf, source: std::io::Error },
    #[error("failed to start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The execution ended before its render node ran (it cannot be skipped: a bug if seen).
    #[error("the execution ended before its reports were rendered")]
    NotRendered,
}

impl Error {
    /// The exit code of a command that stopped with this error.
    pub fn exit(&self) -> Exit {
        match self {
            Error::Reviewer(e) if e.is_unreachable() => Exit::Unreachable,
            _ => Exit::Error,
        }
    }
}

/// How an execution ended, as far as its exit code goes: the README's table, decided here
/// from the runs' outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Every planned run has a result.
    Complete,
    /// `--frozen`, and the cache lacks some runs.
    Missing,
    /// Interrupted: what finished is cached; running again completes the rest.
    Interrupted,
    /// A reviewer's model server could not be reached.
    Unreachable,
    /// `--max-cost` was reached and some runs were not started.
    OverBudget,
    /// Some runs failed or were skipped; the rest completed.
    RunsFailed,
}

impl Ending {
    /// The ending of an execution with these outcomes; the first that applies of missing,
    /// interrupted, unreachable, over budget, failed.
    pub fn of(outcomes: &[RunOutcome]) -> Self {
        if outcomes.iter().any(|o| matches!(o, RunOutcome::Missing)) {
            Self::Missing
        } else if outcomes.iter().any(RunOutcome::is_interrupted) {
            Self::Interrupted
        } else if outcomes.iter().any(|o| matches!(o, RunOutcome::Failed(e) if e.is_unreachable())) {
            Self::Unreachable
        } else if outcomes.iter().any(RunOutcome::is_over_budget) {
            Self::OverBudget
        } else if outcomes.iter().any(|o| o.success().is_none() && !o.is_other_shard()) {
            Self::RunsFailed
        } else {
            Self::Complete
        }
    }

    /// The ending once the scoring nodes are counted in: a frozen execution missing some is
    /// `Missing`, an interrupted one `Interrupted`, one the budget left unrun `OverBudget`, and
    /// a failed one counts as failed runs.
    pub fn with_scoring(self, scoring: &crate::exec::ScoringTally) -> Self {
        match self {
            Self::Complete | Self::RunsFailed if scoring.not_cached > 0 => Self::Missing,
            Self::Complete | Self::RunsFailed if scoring.interrupted > 0 => Self::Interrupted,
            Self::Complete | Self::RunsFailed if scoring.over_budget > 0 => Self::OverBudget,
            Self::Complete if scoring.failed > 0 => Self::RunsFailed,
            other => other,
        }
    }

    pub fn exit(self) -> Exit {
        match self {
            Self::Complete => Exit::Ok,
            Self::Missing => Exit::Missing,
            Self::Interrupted => Exit::Error,
            Self::Unreachable => Exit::Unreachable,
            Self::OverBudget => Exit::OverBudget,
            Self::RunsFailed => Exit::RunsFailed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::SkipReason;
    use crate::reviewer::ReviewError;

    #[test]
    fn endings_follow_the_exit_code_table() {
        let unreachable = ReviewError::Unreachable { message: "connection refused".into(), stderr_tail: String::new() };
        let failed = ReviewError::failed("boom");
        let ending = |outcomes: Vec<RunOutcome>| Ending::of(&outcomes).exit() as u8;
        assert_eq!(ending(vec![]), 0);
        assert_eq!(ending(vec![RunOutcome::Failed(failed.clone())]), 3);
        assert_eq!(ending(vec![RunOutcome::Skipped(SkipReason::NoSubject { subject: "s".into() })]), 3);
        assert_eq!(ending(vec![RunOutcome::Failed(failed.clone()), RunOutcome::Failed(unreachable.clone())]), 2);
        assert_eq!(ending(vec![RunOutcome::Failed(unreachable), RunOutcome::Skipped(SkipReason::Interrupted)]), 1);
        assert_eq!(ending(vec![RunOutcome::Skipped(SkipReason::Interrupted), RunOutcome::Missing]), 4);
        let over = || RunOutcome::Skipped(SkipReason::OverBudget { budget: "10 tokens".into() });
        assert_eq!(ending(vec![RunOutcome::Failed(failed.clone()), over()]), 6);
        assert_eq!(ending(vec![over(), RunOutcome::Skipped(SkipReason::Interrupted)]), 1);
    }
}
