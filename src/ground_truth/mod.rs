//! Ground truth: private oracles beside a corpus, and everything scored against them.
//! Nothing in this module may ever reach a reviewer.

pub mod diff;
pub mod evalcase;
pub mod fixture;
pub mod matching;
pub mod oracle;
pub mod review_eval;
