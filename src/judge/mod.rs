//! Model calls that score reviews: rubric judges, pseudo-reference claims and embeddings.

pub mod embed;
