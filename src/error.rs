//! The top-level error type and the one place exit codes are decided.

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
    Target(#[from] crate::target::TargetError),
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    #[error(transparent)]
    Render(#[from] crate::report::render::RenderError),
    #[error(transparent)]
    Cache(#[from] crate::cache::store::CacheError),
    #[error("{0}")]
    Reviewer(#[from] crate::reviewer::ReviewError),
    #[error(transparent)]
    Oracle(#[from] crate::ground_truth::oracle::OracleError),
    #[error(transparent)]
    Score(#[from] crate::ground_truth::score::ScoreError),
    #[error(transparent)]
    Adjudication(#[from] crate::ground_truth::adjudication::AdjudicationError),
    #[error("{0}")]
    Other(String),
}

impl Error {
    pub fn exit(&self) -> Exit {
        match self {
            Error::Reviewer(e) if e.is_unreachable() => Exit::Unreachable,
            _ => Exit::Error,
        }
    }
}
