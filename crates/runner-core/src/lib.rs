//! `runner-core`, the bottom layer: findings in stet's schema, the experiment matrix,
//! configuration reading and diagnostics, text rules, terminal-safe text, paired statistics,
//! agreement between raters (Cohen's and Fleiss' κ, majority, Spearman),
//! bounded reads, guarded writes of user-named output files, the per-process scratch
//! directory, background threads' priority, and the child-process sandbox. It depends on no
//! other runner crate.

pub mod agreement;
pub mod bounded;
pub mod config;
pub mod finding;
pub mod matrix;
pub mod output_file;
pub mod priority;
pub mod sandbox;
pub mod scratch;
pub mod stats;
pub mod terminal;
pub mod text;
