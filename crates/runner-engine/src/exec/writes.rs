//! Cache writes off the async threads, bounded: each runs on a blocking thread only while it
//! holds one of a few permits, so a burst of fast runs queues its writes instead of starting a
//! blocking thread per run.

use std::sync::Arc;
use tokio::sync::Semaphore;

/// The most cache writes in flight at once, whatever `--jobs` is: writes are filesystem
/// work, and more of them at once do not make them faster.
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

    /// A writer's permit, waited for. A review takes it while it still holds its `--jobs`
    /// slot, so when the writers fall behind, new reviews wait rather than pile up finished
    /// results (each holding its run key's lock file open) in an unbounded queue.
    pub(super) async fn permit(&self) -> Result<Permit, String> {
        self.permits.clone().acquire_owned().await.map(Permit).map_err(|e| e.to_string())
    }

    /// Runs `write` on a blocking thread once a permit is free; the permit is held until it
    /// returns. `Err` when the write panicked (or the runtime is shutting down).
    pub(super) async fn run<T: Send + 'static>(&self, write: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let permit = self.permit().await?;
        Self::run_with(permit, write).await
    }

    /// Runs `write` on a blocking thread under a permit already taken.
    pub(super) async fn run_with<T: Send + 'static>(permit: Permit, write: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let Permit(held) = permit;
        tokio::task::spawn_blocking(move || {
            let out = write();
            drop(held);
            out
        })
        .await
        .map_err(|e| e.to_string())
    }
}

/// One writer's place, held from before a write is queued until it is done.
pub(super) struct Permit(tokio::sync::OwnedSemaphorePermit);

/// The writer bound for `jobs`.
pub(super) fn writers_for(jobs: usize) -> usize {
    jobs.clamp(1, MAX_WRITERS)
}
