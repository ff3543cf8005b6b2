//! Reading `pipeline` reviewer tables from a whole manifest: stages, shares and budgets.

use crate::reviewer::bind::budget_mismatches;
use crate::reviewer::pipeline::spec::{self, Backend};

const BASE: &str = "version = 1\n[experiment]\nname = \"s\"\n[target]\nrepo = \".\"\n[matrix]\nref = [\"HEAD\"]\nreviewer = [\"p\"]\n\
[reviewers.smol]\nkind = \"openai\"\nmodel = \"m\"\nunit = \"change\"\n[reviewers.perhunk]\nkind = \"openai\"\nmodel = \"m\"\n\
[reviewers.tool]\nkind = \"command\"\nprogram = \"true\"\n[reviewers.p]\nkind = \"pipeline\"\n";

fn parse(pipeline: &str) -> Result<crate::manifest::Manifest, String> {
    let text = format!("{BASE}{pipeline}[report]\noutput = \"out\"\n");
    crate::manifest::parse(std::path::Path::new("m.toml"), &text).map_err(|e| format!("{:?}", e.diagnostics))
}

fn stage(name: &str, reviewer: &str, role: &str, extra: &str) -> String {
    format!("[[reviewers.p.stages]]\nname = \"{name}\"\nreviewer = \"{reviewer}\"\nrole = \"{role}\"\n{extra}")
}

#[test]
fn every_problem_of_a_pipeline_is_reported_at_once() {
    let text = format!(
        "total-budget = 100\n{}{}{}{}",
        stage("a", "smol", "reveiw", "share = 0.5\ncheck-severity = [\"error\"]\n"),
        stage("b", "perhunk", "review", "share = 0.2\n"),
        stage("c", "nobody", "review", "share = 0.2\n"),
        stage("d", "tool", "synthesize", "share = 0.2\n"),
    );
    let all = parse(&text).expect_err("invalid");
    for expected in [
        "unknown stage role `reveiw`",
        "did you mean `review`?",
        "`check-severity` applies to verify stages only",
        "reviews per hunk: a pipeline stage makes one request per call",
        "names reviewer `nobody`, which is not declared",
        "is a command: it can only review",
        "the stages' shares add up to",
    ] {
        assert!(all.contains(expected), "{expected}: {all}");
    }
}

#[test]
fn budgets_split_among_the_stages_by_share() {
    let text = format!(
        "total-budget = 1000\n{}{}{}",
        stage("r", "smol", "review", "instances = 2\nshare = 0.6\nfamily = \"smollm2\"\n"),
        stage("v", "smol", "verify", "share = 0.1\nfamily = \"qwen\"\ncheck-category = [\"security\"]\n"),
        stage("s", "smol", "synthesize", "share = 0.3\n"),
    );
    let m = parse(&text).expect("valid");
    let crate::reviewer::spec::ReviewerKindSpec::Pipeline(p) = &m.reviewers.get("p").expect("p").kind else { panic!("a pipeline") };
    let tokens: Vec<Option<u32>> = p
        .stages
        .iter()
        .map(|s| match &s.backend {
            Some(Backend::Llm(l)) => Some(l.max_tokens),
            _ => None,
        })
        .collect();
    // `max_tokens` is fixed per call, from what is left when it is made.
    assert_eq!(tokens, [Some(1024), Some(1024), Some(1024)]);
    assert_eq!(p.stages[0].chars_per_token, spec::DEFAULT_CHARS_PER_TOKEN);
    assert_eq!(p.allocation(), [("r".to_string(), 600), ("v".to_string(), 100), ("s".to_string(), 300)]);
    assert_eq!(p.calls_per_run(), "r 2 × review, v ≤ 1 × verify, s 1 × synthesize");
    assert!(matches!(&p.stages[2].backend, Some(Backend::Llm(l)) if l.prompt.text == spec::DEFAULT_SYNTHESIZE_PROMPT));
    // A share without a budget, and a verifier with no family, are refused.
    let all = parse(&format!("{}{}", stage("r", "smol", "review", "share = 1.0\n"), stage("v", "smol", "verify", ""))).expect_err("invalid");
    assert!(all.contains("has a `share` but the pipeline has no `total-budget`"), "{all}");
    assert!(all.contains("verify stage `v` of pipeline `p` has no `family`"), "{all}");
}

#[test]
fn totals_compared_on_the_reviewer_axis_must_match() {
    let m = parse(&format!("total-budget = 10\n{}", stage("r", "smol", "review", "share = 1.0\n"))).expect("valid");
    let (p, smol) = (m.reviewers.get("p").expect("p"), m.reviewers.get("smol").expect("smol"));
    assert!(budget_mismatches(&[("p", p), ("q", p)]).is_empty());
    assert_eq!(
        budget_mismatches(&[("p", p), ("smol", smol)]),
        ["strategies compared on the `reviewer` axis spend different totals: `p` has a total budget of 10 tokens, `smol` has no total budget"]
    );
}
