//! Ground truth: private oracles beside a corpus, and everything scored against them.
//! Nothing in this module may ever reach a reviewer.

pub mod adjudication;
pub mod csv;
pub mod diff;
pub mod evalcase;
pub mod fixture;
pub mod holdout;
pub mod matching;
pub mod oracle;
pub mod program;
pub mod review_eval;
pub mod score;
pub mod spanned;
pub mod validate;

#[cfg(test)]
mod no_leak;
