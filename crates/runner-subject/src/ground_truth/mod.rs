//! Ground truth: private oracles beside a corpus and the tooling that builds, validates and
//! seals them. Scoring against an oracle lives with the analyses (`analysis`).
//! Nothing in this module may ever reach a reviewer.

pub mod aacr;
pub mod evalcase;
pub mod github;
pub mod holdout;
pub mod mine;
pub mod oracle;
pub mod program;
pub(crate) mod spanned;
pub mod validate;
