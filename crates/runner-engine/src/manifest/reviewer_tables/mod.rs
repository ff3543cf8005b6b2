//! Reviewer tables read through the whole manifest: each reviewer kind's keys, defaults and
//! located problems as a user writes them, and the cache keys a plan gives them.

mod llm;
mod pipeline;
mod replay;
