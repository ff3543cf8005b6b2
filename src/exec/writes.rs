//! Cache writes off the async threads, bounded: each runs on a blocking thread only while it
//! holds one of a few permits, so a burst of fast runs queues its writes instead of starting a
//! blocking thread (and an fsync) per run.

use std::sync::Arc;
use tokio::sync::Semaphore;

/// The most cache writes in flight at once, whatever `--jobs` is: writes are fsyncs, and more
/// of them at once do not make them faster.
pub(super) const MAX_WRITERS: usize = 16;

/// The writers of one execution.
#[derive(Clone)]
pub(super) struct Writers {
    permits: Arc<Semaphore>,
}

impl Writers {
    /// As many writers as `jobs` (at least one, at most [`MAX_WRITERS`]).
    pub(super) fn for_jobs(jobs: usize) -> Self {
        Self { permits: Arc::new(Semaphore::new(writers_for(jobs))) }
    }

    /// Runs `write` on a blocking thread once a permit is free; the permit is held until it
    /// returns. `Err` when the write panicked (or the runtime is shutting down).
    pub(super) async fn run<T: Send + 'static>(&self, write: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let permit = self.permits.clone().acquire_owned().await.map_err(|e| e.to_string())?;
        tokio::task::spawn_blocking(move || {
            let out = write();
            drop(permit);
            out
        })
        .await
        .map_err(|e| e.to_string())
    }
}

/// The writer bound for `jobs`.
pub(super) fn writers_for(jobs: usize) -> usize {
    jobs.clamp(1, MAX_WRITERS)
}
