//! Scoring nodes as the engine sees them: a [`Stage`] it does not interpret, declared by the
//! layer that scores (RQS v2's claims, smells, judges and embeddings live above the engine),
//! a [`ScoreTarget`] (a subject or a run), and the [`ScoringPlanner`] through which that
//! layer adds its nodes to a plan being built.

use super::{Dependency, Node, PlannedRun};
use crate::manifest::Manifest;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::BTreeMap;

/// A scoring stage: its name (as `runner plan` lists it), its place among the stages (the
/// plan lists and orders stages by it), and how messages name one of its nodes. A stage is
/// known by its name and rank (names are unique among a plan's stages).
#[derive(Clone, Copy)]
pub struct Stage {
    name: &'static str,
    rank: u8,
    describe: fn(usize, &ScoreTarget) -> String,
}

impl Stage {
    /// A stage named `name`, listed at `rank` among the stages; `describe` names one of its
    /// nodes from its member (a jury's judge number, from 0) and its target.
    pub const fn new(name: &'static str, rank: u8, describe: fn(usize, &ScoreTarget) -> String) -> Self {
        Self { name, rank, describe }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// How messages name the stage's node of `member` on `target`.
    pub fn describe(&self, member: usize, target: &ScoreTarget) -> String {
        (self.describe)(member, target)
    }
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Stage {
    fn eq(&self, other: &Self) -> bool {
        (self.rank, self.name) == (other.rank, other.name)
    }
}

impl Eq for Stage {}

impl std::hash::Hash for Stage {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl PartialOrd for Stage {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Stage {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.rank, self.name).cmp(&(other.rank, other.name))
    }
}

/// What a scoring node scores.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ScoreTarget {
    /// A subject, by id (its change, or what was computed from it).
    Subject(String),
    /// A run, `Plan::runs[run]` (its findings).
    Run(usize),
}

/// What a scoring layer adds to a plan while it is built: its nodes, each with the edges from
/// what it requires (a subject's materialize node, a run's review node, or another scoring
/// node). The nodes it returns are the ones the analyses that read scoring observe.
pub trait ScoringPlanner {
    fn add_nodes(&self, manifest: &Manifest, at: &mut PlanUnderway<'_>) -> Vec<NodeIndex>;
}

/// The plan so far, as a [`ScoringPlanner`] extends it.
pub struct PlanUnderway<'a> {
    /// Every run, in plan order.
    pub runs: &'a [PlannedRun],
    /// The review node of each run, by run index.
    pub reviews: &'a [NodeIndex],
    /// The materialize node of each subject, by subject id.
    pub materialize: &'a BTreeMap<&'a str, NodeIndex>,
    pub graph: &'a mut DiGraph<Node, Dependency>,
}

impl PlanUnderway<'_> {
    /// Adds a scoring node that requires each of `requires`.
    pub fn add(&mut self, stage: Stage, member: usize, target: ScoreTarget, requires: &[NodeIndex]) -> NodeIndex {
        let node = self.graph.add_node(Node::Score { stage, member, target });
        for &r in requires {
            self.graph.add_edge(r, node, Dependency::Requires);
        }
        node
    }
}

/// A plan without scoring nodes.
pub struct NoScoring;

impl ScoringPlanner for NoScoring {
    fn add_nodes(&self, _: &Manifest, _: &mut PlanUnderway<'_>) -> Vec<NodeIndex> {
        Vec::new()
    }
}
