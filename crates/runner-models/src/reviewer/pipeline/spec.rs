//! The table of a `pipeline` reviewer: its stages and total budget, read key by key with
//! located errors ([`read_spec`]), then resolved against the manifest's other named
//! reviewers ([`crate::reviewer::bind::resolve`]): each stage's reviewer must exist and be a model (`openai`,
//! `ollama`) or `command` reviewer, a verifier must be of another family than the reviewers
//! whose claims it checks, and a total budget is split among the stages by their shares.

use crate::config::{did_you_mean, TableReader};
use crate::finding::{Category, Severity};
use crate::reviewer::command::CommandSpec;
use crate::reviewer::llm::spec::read_prompt;
use crate::reviewer::llm::{LlmSpec, PromptTemplate};
use crate::reviewer::SubjectNeeds;
use std::collections::BTreeSet;
use std::ops::Range;
use std::path::Path;

/// The default prompts of verify and synthesize stages (a review stage's default is its
/// reviewer's own prompt).
pub const DEFAULT_VERIFY_PROMPT: &str = include_str!("../../../../../templates/prompts/verify.hbs");
pub const DEFAULT_SYNTHESIZE_PROMPT: &str = include_str!("../../../../../templates/prompts/synthesize.hbs");

/// What a stage does with the findings before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Reviews the change (and sees earlier stages' findings, if any).
    Review,
    /// Checks the earlier review stages' claims it selects; answers the ones it confirms.
    Verify,
    /// Merges everything before it into one review.
    Synthesize,
}

impl Role {
    pub(crate) const ALL: [Role; 3] = [Role::Review, Role::Verify, Role::Synthesize];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Review => "review",
            Self::Verify => "verify",
            Self::Synthesize => "synthesize",
        }
    }
}

/// What a stage calls, once resolved.
#[derive(Debug, Clone)]
pub enum Backend {
    Llm(Box<LlmSpec>),
    Command(Box<CommandSpec>),
}

/// One stage as declared.
#[derive(Debug, Clone)]
pub struct StageSpec {
    pub name: String,
    /// The named reviewer it calls.
    pub reviewer: String,
    pub role: Role,
    /// Fresh instances: independent calls (a model's seed moves on by one per instance).
    pub instances: u32,
    /// Its share of the pipeline's total budget.
    pub share: Option<f64>,
    /// Before a run's calls of this stage's reviewer have reported usage: the UTF-8 bytes of
    /// prompt per token assumed to estimate a call's prompt tokens (a lower bound is
    /// conservative); `prompt-chars-per-token`, 2.0 by default.
    pub chars_per_token: f64,
    /// The model family (`smollm2`, `gemma`, `qwen`, …), as judges declare it.
    pub family: Option<String>,
    /// Replaces the model reviewer's prompt (a review stage keeps its reviewer's by default).
    pub prompt: Option<PromptTemplate>,
    pub system_prompt: Option<PromptTemplate>,
    /// Verify: the claims it checks, by severity and category (empty: any).
    pub severities: Vec<Severity>,
    pub categories: Vec<Category>,
    /// Verify: refuse a reviewer of the family of the claims' reviewers (on by default).
    pub cross_family: bool,
    /// Filled by [`crate::reviewer::bind::resolve`].
    pub backend: Option<Backend>,
    /// Where its `reviewer` and `family` keys are, for [`crate::reviewer::bind::resolve`]'s errors.
    pub reviewer_span: Range<usize>,
    pub family_span: Range<usize>,
}

impl StageSpec {
    /// The tokens of this stage's budget, when the pipeline has one.
    pub fn budget(&self, total: Option<u64>) -> Option<u64> {
        Some((total? as f64 * self.share?).floor() as u64)
    }
}

/// The bytes of prompt per token a stage assumes before any usage is reported.
pub const DEFAULT_CHARS_PER_TOKEN: f64 = 2.0;

/// A resolved `pipeline` reviewer.
#[derive(Debug, Clone)]
pub struct PipelineSpec {
    pub stages: Vec<StageSpec>,
    /// Tokens (prompt and completion, as the provider reports them) one run may spend, split
    /// among the stages by their shares.
    pub total_budget: Option<u64>,
    budget_span: Range<usize>,
}

impl PipelineSpec {
    /// A pipeline of resolved `stages`, for tests that build one without a manifest.
    #[cfg(test)]
    pub(crate) fn of_stages(stages: Vec<StageSpec>, total_budget: Option<u64>) -> Self {
        Self { stages, total_budget, budget_span: 0..0 }
    }

    pub fn needs(&self) -> SubjectNeeds {
        if self.stages.iter().any(|s| matches!(s.backend, Some(Backend::Command(_)))) {
            SubjectNeeds::Repository
        } else {
            SubjectNeeds::Diff
        }
    }

    /// The calls one run makes, by stage: `reviewers 2 × review, verifier ≤ 1 × verify`
    /// (a verifier makes none when no claim is selected; any stage stops once its budget is
    /// spent).
    pub fn calls_per_run(&self) -> String {
        let stages: Vec<String> =
            self.stages.iter().map(|s| format!("{} {}{} × {}", s.name, if s.role == Role::Verify { "≤ " } else { "" }, s.instances, s.role.as_str())).collect();
        stages.join(", ")
    }

    /// Each stage's token allowance, as `name=tokens`, when the pipeline has a budget.
    pub fn allocation(&self) -> Vec<(String, u64)> {
        self.stages.iter().filter_map(|s| Some((s.name.clone(), s.budget(self.total_budget)?))).collect()
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

fn valid_family(family: &str) -> bool {
    !family.is_empty() && family.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
}

/// Reads a `pipeline` reviewer's table: `total-budget` and its `[[…stages]]`.
pub fn read_spec(t: &TableReader<'_, '_>, _axes: &BTreeSet<String>, base_dir: &Path) -> Option<PipelineSpec> {
    let problems = t.problems();
    let total_budget = t.integer("total-budget", 1, 100_000_000).map(|v| *v.get_ref() as u64);
    let budget_span = t.key_span("total-budget").unwrap_or_else(|| t.span());
    let tables = t.tables("stages");
    if tables.is_empty() {
        if t.has("stages") {
            return None;
        }
        problems.push_with_help(
            t.span(),
            format!("a pipeline needs stages in {}", t.name()),
            "add [[reviewers.NAME.stages]] tables, each with `name`, `reviewer` and `role`",
        );
        return None;
    }
    let mut stages = Vec::new();
    let mut names = BTreeSet::new();
    for (i, st) in tables.into_iter().enumerate() {
        let name = st.required_string("name");
        if let Some(n) = &name {
            if !valid_name(n.get_ref()) {
                problems.push(n.span(), format!("stage name `{}` must use only letters, digits, `-`, `_` and `.`", n.get_ref()));
            } else if !names.insert(n.get_ref().clone()) {
                problems.push(n.span(), format!("two stages are named `{}`", n.get_ref()));
            }
        }
        let reviewer = st.required_string("reviewer");
        let role = st.required_string("role").and_then(|r| match Role::ALL.into_iter().find(|x| x.as_str() == r.get_ref()) {
            Some(role) => Some(role),
            None => {
                let roles = Role::ALL.map(Role::as_str);
                let help = match did_you_mean(r.get_ref(), roles) {
                    Some(best) => format!("did you mean `{best}`? (roles: {})", roles.join(", ")),
                    None => format!("roles: {}", roles.join(", ")),
                };
                problems.push_with_help(r.span(), format!("unknown stage role `{}`", r.get_ref()), help);
                None
            }
        });
        let instances = st.integer("instances", 1, 64).map_or(1, |v| *v.get_ref() as u32);
        let share = st.float("share", 0.0, 1.0).map(|v| *v.get_ref());
        let chars_per_token = st.float("prompt-chars-per-token", 0.5, 16.0).map_or(DEFAULT_CHARS_PER_TOKEN, |v| *v.get_ref());
        if share == Some(0.0) {
            problems.push(st.key_span("share").unwrap_or_else(|| st.span()), "a stage's `share` must be above 0");
        }
        let family = st.string("family");
        if let Some(f) = &family {
            if !valid_family(f.get_ref()) {
                problems.push_with_help(
                    f.span(),
                    format!("`family` `{}` must be lowercase letters, digits, `.`, `-` or `_`", f.get_ref()),
                    "the model family, e.g. \"smollm2\", \"gemma\", \"qwen\"",
                );
            }
        }
        let mut prompt = None;
        let mut system_prompt = None;
        for (key, slot) in [("prompt", &mut prompt), ("system-prompt", &mut system_prompt)] {
            if let Some(Some(template)) = read_prompt(&st, key, base_dir) {
                *slot = Some(template);
            }
        }
        let mut severities = Vec::new();
        for s in st.strings("check-severity").unwrap_or_default() {
            match Severity::ALL.into_iter().find(|x| x.as_str() == s.get_ref()) {
                Some(v) => severities.push(v),
                None => {
                    problems.push_with_help(s.span(), format!("unknown severity `{}`", s.get_ref()), "severities: error, warning, info, nitpick");
                }
            }
        }
        let mut categories = Vec::new();
        for c in st.strings("check-category").unwrap_or_default() {
            match Category::ALL.into_iter().find(|x| x.as_str() == c.get_ref()) {
                Some(v) => categories.push(v),
                None => {
                    let all: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
                    problems.push_with_help(c.span(), format!("unknown category `{}`", c.get_ref()), format!("categories: {}", all.join(", ")));
                }
            }
        }
        let cross_family = st.boolean("cross-family");
        if role != Some(Role::Verify) {
            for key in ["check-severity", "check-category", "cross-family"] {
                if let Some(span) = st.key_span(key) {
                    problems.push(span, format!("`{key}` applies to verify stages only"));
                }
            }
        }
        if i == 0 && role.is_some_and(|r| r != Role::Review) {
            problems.push_with_help(
                st.key_span("role").unwrap_or_else(|| st.span()),
                "the first stage must review: later stages receive its findings",
                "start with a stage of role = \"review\"",
            );
        }
        if total_budget.is_some() && share.is_none() {
            problems.push_with_help(
                st.span(),
                format!("stage #{} has no `share` of the pipeline's `total-budget`", i + 1),
                "give every stage a `share`; the shares add up to 1",
            );
        }
        let reviewer_span = st.key_span("reviewer").unwrap_or_else(|| st.span());
        let family_span = family.as_ref().map_or_else(|| st.span(), |f| f.span());
        st.finish();
        let (Some(name), Some(reviewer), Some(role)) = (name, reviewer, role) else { continue };
        stages.push(StageSpec {
            name: name.into_inner(),
            reviewer: reviewer.into_inner(),
            role,
            instances,
            share,
            chars_per_token,
            family: family.map(|f| f.into_inner()),
            prompt,
            system_prompt,
            severities,
            categories,
            cross_family: cross_family.unwrap_or(role == Role::Verify),
            backend: None,
            reviewer_span,
            family_span,
        });
    }
    if total_budget.is_some() {
        let sum: f64 = stages.iter().filter_map(|s| s.share).sum();
        if stages.iter().all(|s| s.share.is_some()) && (sum - 1.0).abs() > 1e-6 {
            problems.push_with_help(
                budget_span.clone(),
                format!("the stages' shares add up to {sum}, not 1"),
                "the shares split `total-budget` among the stages",
            );
        }
    } else if let Some(s) = stages.iter().find(|s| s.share.is_some()) {
        problems.push_with_help(
            t.span(),
            format!("stage `{}` has a `share` but the pipeline has no `total-budget`", s.name),
            "add `total-budget = TOKENS` to the pipeline",
        );
    }
    for (i, s) in stages.iter().enumerate() {
        if s.role == Role::Verify && !stages[..i].iter().any(|e| e.role == Role::Review) {
            problems.push(s.reviewer_span.clone(), format!("verify stage `{}` has no review stage before it whose claims it could check", s.name));
        }
    }
    // Returned even with problems (they fail the manifest anyway), so that `resolve` reports
    // its own problems beside them, all at once.
    Some(PipelineSpec { stages, total_budget, budget_span })
}

impl PipelineSpec {
    /// Where `total-budget` is (or the table), for warnings.
    pub fn budget_span(&self) -> Range<usize> {
        self.budget_span.clone()
    }
}
