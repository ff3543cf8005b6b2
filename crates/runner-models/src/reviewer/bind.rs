//! A pipeline's stages bound to the reviewers they name: each stage's reviewer must be declared
//! and be a model (`openai`, `ollama`) or a `command`; its backend is filled from that
//! reviewer's table, and the judges' family rule is checked. It sits above the reviewer kinds
//! and their dispatch (`spec.rs`), since a pipeline reads other kinds' tables.

use super::llm::{PromptTemplate, UnitKind};
use super::pipeline::spec::{Backend, PipelineSpec, Role, DEFAULT_SYNTHESIZE_PROMPT, DEFAULT_VERIFY_PROMPT};
use super::spec::{ReviewerKindSpec, ReviewerSpec};
use crate::config::{did_you_mean, Problems};

/// Resolves each stage's reviewer among the manifest's named reviewers (`declared`), checks
/// the family rule, and fixes each model call's prompts. Problems are pushed
/// located at the stage's keys; `false` when there were any.
pub fn resolve(spec: &mut PipelineSpec, pipeline: &str, declared: &[(&str, &ReviewerSpec)], problems: &Problems) -> bool {
    let mut ok = true;
    let names: Vec<&str> = declared.iter().map(|(n, _)| *n).collect();
    for stage in &mut spec.stages {
        let Some((_, found)) = declared.iter().find(|(n, _)| *n == stage.reviewer) else {
            let help = match did_you_mean(&stage.reviewer, names.iter().copied()) {
                Some(best) => format!("did you mean `{best}`? declared: {}", names.join(", ")),
                None => format!("declared: {}", names.join(", ")),
            };
            problems.push_with_help(
                stage.reviewer_span.clone(),
                format!("stage `{}` names reviewer `{}`, which is not declared as [reviewers.{}]", stage.name, stage.reviewer, stage.reviewer),
                help,
            );
            ok = false;
            continue;
        };
        let stage_budget = stage.budget(spec.total_budget);
        match &found.kind {
            ReviewerKindSpec::Llm(llm) => {
                if llm.unit != UnitKind::Change {
                    problems.push_with_help(
                        stage.reviewer_span.clone(),
                        format!(
                            "stage `{}`'s reviewer `{}` reviews per {}: a pipeline stage makes one request per call",
                            stage.name,
                            stage.reviewer,
                            llm.unit.as_str()
                        ),
                        format!("set `unit = \"change\"` in [reviewers.{}]", stage.reviewer),
                    );
                    ok = false;
                }
                let mut llm = llm.as_ref().clone();
                match (&stage.prompt, stage.role) {
                    (Some(p), _) => llm.prompt = p.clone(),
                    (None, Role::Verify) => llm.prompt = PromptTemplate { name: "default verify".into(), text: DEFAULT_VERIFY_PROMPT.into() },
                    (None, Role::Synthesize) => llm.prompt = PromptTemplate { name: "default synthesize".into(), text: DEFAULT_SYNTHESIZE_PROMPT.into() },
                    (None, Role::Review) => {}
                }
                if let Some(p) = &stage.system_prompt {
                    llm.system_prompt = p.clone();
                }
                // Each call's `max_tokens` is set when it is made: what its stage's share
                // leaves after what was spent and the call's estimated prompt.
                if stage_budget == Some(0) {
                    problems.push(stage.reviewer_span.clone(), format!("stage `{}`'s share of `total-budget` leaves its calls no token", stage.name));
                    ok = false;
                }
                stage.backend = Some(Backend::Llm(Box::new(llm)));
            }
            ReviewerKindSpec::Command(c) => {
                if stage.role != Role::Review || stage.prompt.is_some() || stage.system_prompt.is_some() {
                    problems.push_with_help(
                        stage.reviewer_span.clone(),
                        format!("stage `{}`'s reviewer `{}` is a command: it can only review, with its own prompts", stage.name, stage.reviewer),
                        "verify and synthesize stages, and stage prompts, need an `openai` or `ollama` reviewer",
                    );
                    ok = false;
                }
                stage.backend = Some(Backend::Command(c.clone()));
            }
            other => {
                problems.push_with_help(
                    stage.reviewer_span.clone(),
                    format!("stage `{}` names reviewer `{}` of kind `{}`", stage.name, stage.reviewer, other.kind_name()),
                    "a stage calls an `openai`, `ollama` or `command` reviewer",
                );
                ok = false;
            }
        }
    }
    // The judges' family rule: a verifier does not check claims of its own family.
    for (i, stage) in spec.stages.iter().enumerate() {
        if stage.role != Role::Verify || !stage.cross_family {
            continue;
        }
        let Some(family) = &stage.family else {
            problems.push_with_help(
                stage.reviewer_span.clone(),
                format!("verify stage `{}` of pipeline `{pipeline}` has no `family`", stage.name),
                "name its model family (family = \"qwen\"): a verifier must be of another family than the reviewers whose claims it checks, or set cross-family = false",
            );
            ok = false;
            continue;
        };
        for earlier in spec.stages[..i].iter().filter(|e| e.role == Role::Review) {
            match &earlier.family {
                None => {
                    problems.push_with_help(
                        earlier.reviewer_span.clone(),
                        format!("review stage `{}` has no `family`, so verify stage `{}` cannot be checked to be of another family", earlier.name, stage.name),
                        "name its model family, e.g. family = \"smollm2\"",
                    );
                    ok = false;
                }
                Some(f) if f == family => {
                    problems.push_with_help(
                        stage.family_span.clone(),
                        format!("verify stage `{}` is of the `{family}` family, as review stage `{}` whose claims it checks", stage.name, earlier.name),
                        "a verifier must be of another model family (the judges' family rule); use a model of another family, or set cross-family = false",
                    );
                    ok = false;
                }
                Some(_) => {}
            }
        }
    }
    ok
}

/// Strategies compared on the `reviewer` axis should spend the same total budget: one line
/// per pipeline among `compared` whose total differs from the first's (or that has none).
pub fn budget_mismatches(compared: &[(&str, &ReviewerSpec)]) -> Vec<String> {
    let totals: Vec<(&str, Option<u64>)> = compared
        .iter()
        .map(|(name, spec)| {
            let total = match &spec.kind {
                ReviewerKindSpec::Pipeline(p) => p.total_budget,
                _ => None,
            };
            (*name, total)
        })
        .collect();
    let shown = |t: Option<u64>| t.map_or_else(|| "no total budget".to_string(), |t| format!("a total budget of {t} tokens"));
    let Some((first, first_total)) = totals.first().copied() else { return Vec::new() };
    totals
        .iter()
        .skip(1)
        .filter(|(_, total)| *total != first_total)
        .map(|(name, total)| {
            format!("strategies compared on the `reviewer` axis spend different totals: `{first}` has {}, `{name}` has {}", shown(first_total), shown(*total))
        })
        .collect()
}
