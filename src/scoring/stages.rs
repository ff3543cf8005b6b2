//! RQS v2's scoring stages as plan nodes: each stage declared once ([`RqsStage`]), the node
//! of each ([`claims`], [`judge`], …), and where a plan puts them ([`RqsStages`], the engine's
//! `ScoringPlanner`). The engine schedules these nodes without knowing what they score.

use crate::analysis::spec::AnalysisKind;
use crate::manifest::Manifest;
use crate::plan::NodeIndex;
use crate::plan::{Node, PlanUnderway, ScoreTarget, ScoringPlanner, Stage};

/// The scoring stages, in the order `runner plan` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RqsStage {
    /// Pseudo-reference claims about a subject's change, from the claims model.
    Claims,
    /// Static-analysis smells on a subject's changed lines.
    Smells,
    /// One judge of the jury on every finding of a run: one call per finding and rubric.
    Judge,
    /// One judge on the pairs (oracle finding, reported finding) of a run that oracle
    /// matching asks the judges about: one call per pair.
    Match,
    /// Embeddings of a subject's pseudo-references or of a run's review sentences.
    Embed,
}

const CLAIMS: Stage = Stage::new("claims", 0, |_, target| format!("the claims of `{}`", subject_of(target)));
const SMELLS: Stage = Stage::new("smells", 1, |_, target| format!("the smells of `{}`", subject_of(target)));
const JUDGE: Stage = Stage::new("judge", 2, |judge, target| format!("judge {} on run {}", judge + 1, run_of(target)));
const MATCH: Stage = Stage::new("match", 3, |judge, target| format!("judge {}'s matching of run {}", judge + 1, run_of(target)));
const EMBED: Stage = Stage::new("embed", 4, |_, target| match target {
    ScoreTarget::Subject(subject) => format!("the pseudo-reference embeddings of `{subject}`"),
    ScoreTarget::Run(run) => format!("the review embeddings of run {run}"),
});

impl RqsStage {
    const ALL: [RqsStage; 5] = [Self::Claims, Self::Smells, Self::Judge, Self::Match, Self::Embed];

    /// The stage as the engine knows it.
    pub fn stage(self) -> Stage {
        match self {
            Self::Claims => CLAIMS,
            Self::Smells => SMELLS,
            Self::Judge => JUDGE,
            Self::Match => MATCH,
            Self::Embed => EMBED,
        }
    }

    /// Which of these stages an engine stage is, if any.
    pub fn of(stage: Stage) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.stage() == stage)
    }
}

/// A subject's claims node.
pub fn claims(subject: &str) -> Node {
    Node::Score { stage: CLAIMS, member: 0, target: ScoreTarget::Subject(subject.to_string()) }
}

/// A subject's smells node.
pub fn smells(subject: &str) -> Node {
    Node::Score { stage: SMELLS, member: 0, target: ScoreTarget::Subject(subject.to_string()) }
}

/// Judge number `judge` (from 0) on the findings of run `run`.
pub fn judge(run: usize, judge: usize) -> Node {
    Node::Score { stage: JUDGE, member: judge, target: ScoreTarget::Run(run) }
}

/// Judge number `judge` (from 0) matching run `run`'s findings with the oracle's.
pub fn matching(run: usize, judge: usize) -> Node {
    Node::Score { stage: MATCH, member: judge, target: ScoreTarget::Run(run) }
}

/// The embeddings of a subject's pseudo-references.
pub fn reference_embeddings(subject: &str) -> Node {
    Node::Score { stage: EMBED, member: 0, target: ScoreTarget::Subject(subject.to_string()) }
}

/// The embeddings of run `run`'s review sentences.
pub fn review_embeddings(run: usize) -> Node {
    Node::Score { stage: EMBED, member: 0, target: ScoreTarget::Run(run) }
}

fn subject_of(target: &ScoreTarget) -> String {
    match target {
        ScoreTarget::Subject(subject) => subject.clone(),
        ScoreTarget::Run(run) => format!("run {run}"),
    }
}

fn run_of(target: &ScoreTarget) -> String {
    match target {
        ScoreTarget::Run(run) => run.to_string(),
        ScoreTarget::Subject(subject) => format!("`{subject}`"),
    }
}

/// Plans the scoring nodes of a manifest's jury, claims model, analyzers and embedder, when an
/// analysis reads them: claims and smells require their subject, a judge requires its run and
/// the run's subject (the findings are shown with their diff context), a reference embedding
/// requires the subject's claims and smells, a review embedding its run. When an
/// oracle-matching analysis takes the judges' word as evidence, each judge's match node
/// requires its run alone (the two texts are all a judge sees).
pub struct RqsStages;

impl ScoringPlanner for RqsStages {
    fn add_nodes(&self, manifest: &Manifest, at: &mut PlanUnderway<'_>) -> Vec<NodeIndex> {
        let scoring = &manifest.scoring;
        let judges = scoring.judges.len();
        let mut out = Vec::new();
        if manifest.analyses.iter().any(|a| a.asks_judges_to_match()) {
            for (i, &review) in at.reviews.iter().enumerate() {
                for j in 0..judges {
                    out.push(at.add(MATCH, j, ScoreTarget::Run(i), &[review]));
                }
            }
        }
        if !manifest.analyses.iter().any(|a| a.kind == AnalysisKind::RQS) {
            return out;
        }
        let materialize: Vec<(String, NodeIndex)> = at.materialize.iter().map(|(s, &m)| (s.to_string(), m)).collect();
        for (subject, m) in materialize {
            let mut references = Vec::new();
            for (wanted, stage) in [(scoring.claims.is_some(), CLAIMS), (!scoring.analyzers.is_empty(), SMELLS)] {
                if wanted {
                    references.push(at.add(stage, 0, ScoreTarget::Subject(subject.clone()), &[m]));
                }
            }
            out.extend(&references);
            if scoring.embedder.is_some() && !references.is_empty() {
                out.push(at.add(EMBED, 0, ScoreTarget::Subject(subject), &references));
            }
        }
        for i in 0..at.runs.len() {
            let review = at.reviews[i];
            let subject = at.materialize.get(at.runs[i].subject_id.as_str()).copied();
            let judged: Vec<NodeIndex> = std::iter::once(review).chain(subject).collect();
            for j in 0..judges {
                out.push(at.add(JUDGE, j, ScoreTarget::Run(i), &judged));
            }
            if scoring.embedder.is_some() {
                out.push(at.add(EMBED, 0, ScoreTarget::Run(i), &[review]));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::NodeKind;

    fn described(node: &Node) -> String {
        match node {
            Node::Score { stage, member, target } => stage.describe(*member, target),
            other => panic!("{other:?} is not a scoring node"),
        }
    }

    #[test]
    fn each_stage_names_its_nodes_and_is_found_again() {
        assert_eq!(described(&claims("case-01")), "the claims of `case-01`");
        assert_eq!(described(&smells("case-01")), "the smells of `case-01`");
        assert_eq!(described(&judge(3, 1)), "judge 2 on run 3");
        assert_eq!(described(&matching(3, 0)), "judge 1's matching of run 3");
        assert_eq!(described(&reference_embeddings("case-01")), "the pseudo-reference embeddings of `case-01`");
        assert_eq!(described(&review_embeddings(4)), "the review embeddings of run 4");
        for stage in RqsStage::ALL {
            assert_eq!(RqsStage::of(stage.stage()), Some(stage));
        }
        let other = Stage::new("other", 9, |_, _| String::new());
        assert_eq!(RqsStage::of(other), None, "a stage is known by its name and rank");
        assert_eq!(RqsStage::of(Stage::new("judge", 9, |_, _| String::new())), None);
    }

    #[test]
    fn the_plan_lists_the_stages_between_review_and_analyze_in_their_order() {
        let mut kinds: Vec<NodeKind> = [review_embeddings(0), matching(0, 0), judge(0, 0), smells("s"), claims("s")].iter().map(Node::kind).collect();
        kinds.extend([NodeKind::Render, NodeKind::Review, NodeKind::Analyze, NodeKind::AnalyzePart, NodeKind::Materialize]);
        kinds.sort();
        let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, ["materialize", "review", "claims", "smells", "judge", "match", "embed", "analyze-part", "analyze", "render"]);
        assert_eq!(serde_json::to_string(&NodeKind::Score(JUDGE)).ok().as_deref(), Some("\"judge\""));
    }
}
