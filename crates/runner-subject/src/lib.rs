//! `runner-subject`: what is reviewed. Subjects (git refs, commits, corpus cases) and their
//! materialization, RAG-lite context, and ground truth (private oracles, corpora, the
//! child-process sandbox that builds them). Depends on `runner-core` only.

use runner_core::{bounded, finding, sandbox};

pub mod ground_truth;
pub mod rag;
pub mod subject;
