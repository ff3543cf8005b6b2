//! The content-addressed cache: run records keyed by [`key::CacheKey`], objects by blake3.
//!
//! Layout under the cache directory:
//! - `objects/ab/cdef…` — immutable blobs named by the blake3 of their bytes;
//! - `runs/ab/<key>` — the hash of the run's record object (successes only);
//! - `failures/ab/<key>.json` — the last failure for a key, never served as a result;
//! - `slots/ab/<hash>` — the last key seen for an experiment's (cell, repeat, subject) slot,
//!   to explain which input changed when that slot misses.
//!
//! Writes are atomic (temp file, fsync, rename); reads verify hashes, and a corrupt entry is
//! reported and treated as a miss.

pub mod key;
pub mod store;

pub use key::{CacheKey, KeyInputs};
pub use store::{CacheStore, Lookup, RunRecord};
