//! A reviewer's configuration: the kind dispatch (each kind reads its own table) and the
//! scheduling limits every kind shares.

use super::builtin::BuiltinSpec;
use super::command::CommandSpec;
pub use super::SubjectNeeds;
use crate::config::{did_you_mean, parse_duration, template_var_regex, TableReader};
use crate::matrix::Matrix;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// A reviewer with its scheduling limits.
#[derive(Debug, Clone)]
pub struct ReviewerSpec {
    pub kind: ReviewerKindSpec,
    /// At most this many runs of this reviewer at once (within the global `--jobs`).
    pub max_concurrency: Option<usize>,
    /// Kill a run that takes longer.
    pub timeout: Duration,
    /// The day its model's training data ends (`training-cutoff`, `YYYY-MM-DD`): recall over a
    /// mined oracle is split into bugs fixed before it, which the model may have seen fixed,
    /// and bugs fixed on or after it. Not part of any cache key.
    pub training_cutoff: Option<String>,
}

#[derive(Debug, Clone)]
pub enum ReviewerKindSpec {
    Builtin(BuiltinSpec),
    Command(Box<CommandSpec>),
    /// Boxed: an LLM reviewer's configuration is much larger than the others.
    Llm(Box<crate::reviewer::llm::LlmSpec>),
    /// Findings read from captured files.
    Replay(super::replay::ReplaySpec),
    /// Stages of calls to other named reviewers (boxed: it holds their configurations).
    Pipeline(Box<super::pipeline::PipelineSpec>),
}

impl ReviewerKindSpec {
    /// What this kind of reviewer reads of a subject: an external change without a diff can
    /// only be reviewed by a reviewer that needs nothing.
    pub fn needs(&self) -> SubjectNeeds {
        match self {
            Self::Builtin(_) | Self::Llm(_) => SubjectNeeds::Diff,
            Self::Command(_) => SubjectNeeds::Repository,
            Self::Pipeline(p) => p.needs(),
            Self::Replay(_) => SubjectNeeds::Nothing,
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::Builtin(_) => "builtin",
            Self::Command(_) => "command",
            Self::Llm(spec) => spec.protocol.as_str(),
            Self::Replay(_) => "replay",
            Self::Pipeline(_) => "pipeline",
        }
    }
}

/// Reads a reviewer table: its kind's own configuration, plus the scheduling limits every
/// kind shares (`max-concurrency`, `timeout`).
pub fn read_reviewer(t: &TableReader<'_, '_>, axes: &BTreeSet<String>, base_dir: &Path) -> Option<ReviewerSpec> {
    let problems = t.problems();
    let max_concurrency = t.integer("max-concurrency", 1, 4096).map(|n| *n.get_ref() as usize);
    let timeout = match t.string("timeout") {
        Some(s) => match parse_duration(s.get_ref()) {
            Some(d) => d,
            None => {
                problems.push(s.span(), format!("`timeout` must be a duration such as `90s`, `500ms` or `5m`, found `{}`", s.get_ref()));
                Duration::from_secs(600)
            }
        },
        None => Duration::from_secs(600),
    };
    let training_cutoff = t.string("training-cutoff").and_then(|s| {
        if is_iso_date(s.get_ref()) {
            Some(s.get_ref().clone())
        } else {
            problems.push(s.span(), format!("`training-cutoff` must be a date such as `2024-06-30` (YYYY-MM-DD), found `{}`", s.get_ref()));
            None
        }
    });
    // Without a kind the table's keys cannot be judged: one problem, not one per key.
    let allow_every_key = || t.keys().iter().for_each(|(key, _)| t.allow(key));
    let Some(kind) = t.required_string("kind") else {
        allow_every_key();
        return None;
    };
    let spec = match kind.get_ref().as_str() {
        "builtin" => super::builtin::read_spec(t, axes).map(ReviewerKindSpec::Builtin),
        "command" => super::command::read_spec(t, axes, base_dir).map(|c| ReviewerKindSpec::Command(Box::new(c))),
        "ollama" | "openai" => super::llm::read_spec(t, kind.get_ref(), axes, base_dir).map(|s| ReviewerKindSpec::Llm(Box::new(s))),
        "replay" => super::replay::read_spec(t, base_dir).map(ReviewerKindSpec::Replay),
        "pipeline" => super::pipeline::read_spec(t, axes, base_dir).map(|p| ReviewerKindSpec::Pipeline(Box::new(p))),
        other => {
            let kinds = ["builtin", "command", "ollama", "openai", "pipeline", "replay"];
            let help = match did_you_mean(other, kinds) {
                Some(best) => format!("did you mean `{best}`? (kinds: {})", kinds.join(", ")),
                None => format!("kinds: {}", kinds.join(", ")),
            };
            problems.push_with_help(kind.span(), format!("unknown reviewer kind `{other}`"), help);
            allow_every_key();
            None
        }
    };
    Some(ReviewerSpec { kind: spec?, max_concurrency, timeout, training_cutoff })
}

/// Whether `text` is a calendar date written `YYYY-MM-DD`.
fn is_iso_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else { return false };
    let number = |s: &str, len: usize| (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u32>().ok()).flatten();
    match (number(y, 4), number(m, 2), number(d, 2)) {
        (Some(_), Some(m), Some(d)) => (1..=12).contains(&m) && (1..=31).contains(&d),
        _ => false,
    }
}

/// An axis no template of a command reviewer mentions only multiplies identical runs: almost
/// always a typo or a forgotten `{{axis}}`. (Built-in reviewers take label axes freely, for
/// sweeps and benchmarks.)
/// `reviewer_axis` is the axis that picks the reviewer, when one does.
pub fn check_unused_axes(root: &TableReader<'_, '_>, reviewer: &ReviewerSpec, matrix: &Matrix, reviewer_axis: Option<&str>) {
    let texts: Vec<&str> = match &reviewer.kind {
        ReviewerKindSpec::Builtin(_) | ReviewerKindSpec::Llm(_) | ReviewerKindSpec::Replay(_) | ReviewerKindSpec::Pipeline(_) => return,
        ReviewerKindSpec::Command(c) => std::iter::once(c.program.as_str())
            .chain(c.args.iter().map(String::as_str))
            .chain(c.env.values().map(String::as_str))
            .chain(c.setup.iter().chain(&c.cleanup).flatten().map(String::as_str))
            .chain(c.endpoint.as_deref())
            .collect(),
    };
    let used: BTreeSet<String> = texts.iter().flat_map(|t| template_var_regex().captures_iter(t).map(|c| c[1].to_string())).collect();
    for axis in &matrix.axes {
        if axis.name != "ref" && reviewer_axis != Some(axis.name.as_str()) && !used.contains(&axis.name) {
            let span = root.table("matrix").and_then(|m| m.key_span(&axis.name)).unwrap_or(0..0);
            root.problems().push_with_help(
                span,
                format!("axis `{}` is not used by the {} reviewer: no template mentions `{{{{{}}}}}`", axis.name, reviewer.kind.kind_name(), axis.name),
                "use it in the reviewer's templates or remove it",
            );
        }
    }
}
