//! Cache writes off the async threads, bounded twice: a write is queued only while it holds
//! one of a few places, so a burst of fast runs queues its writes instead of holding finished
//! results without bound; and at most one core but one writes at once, so a round of answers
//! stored together leaves a core to send the next requests (a new file costs the kernel more
//! than the request does).

use std::sync::Arc;
use tokio::sync::Semaphore;

/// The most cache writes in flight at once, whatever `--jobs` is: writes are filesystem
/// work, and more of them at once do not make them faster.
pub(super) const MAX_WRITERS: usize = 16;

/// The writers of one execution.
#[derive(Clone)]
pub(super) struct Writers {
    permits: Arc<Semaphore>,
    /// The writes running at once: one per core but one (at least one).
    running: Arc<Semaphore>,
}

impl Writers {
    /// As many writers as `jobs` (at least one, at most [`MAX_WRITERS`]).
    pub(super) fn for_jobs(jobs: usize) -> Self {
        Self { permits: Arc::new(Semaphore::new(writers_for(jobs))), running: Arc::new(Semaphore::new(running_for(super::cores()))) }
    }

    /// A writer's permit, waited for. A review takes it while it still holds its `--jobs`
    /// slot, so when the writers fall behind, new reviews wait rather than pile up finished
    /// results (each holding its run key's lock file open) in an unbounded queue.
    pub(super) async fn permit(&self) -> Result<Permit, String> {
        let held = self.permits.clone().acquire_owned().await.map_err(|e| e.to_string())?;
        Ok(Permit { held, running: self.running.clone() })
    }

    /// Runs `write` on a blocking thread once a permit is free; the permit is held until it
    /// returns. `Err` when the write panicked (or the runtime is shutting down).
    pub(super) async fn run<T: Send + 'static>(&self, write: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let permit = self.permit().await?;
        Self::run_with(permit, write).await
    }

    /// Runs `write` on a blocking thread under a permit already taken, once a core is free
    /// for it.
    pub(super) async fn run_with<T: Send + 'static>(permit: Permit, write: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let Permit { held, running } = permit;
        let core = running.acquire_owned().await.map_err(|e| e.to_string())?;
        tokio::task::spawn_blocking(move || {
            let out = write();
            drop((core, held));
            out
        })
        .await
        .map_err(|e| e.to_string())
    }
}

/// One writer's place, held from before a write is queued until it is done.
pub(super) struct Permit {
    held: tokio::sync::OwnedSemaphorePermit,
    running: Arc<Semaphore>,
}

/// How many writes run at once on a machine of `cores` cores.
pub(super) fn running_for(cores: usize) -> usize {
    cores.saturating_sub(1).max(1)
}

/// The writer bound for `jobs`.
pub(super) fn writers_for(jobs: usize) -> usize {
    jobs.clamp(1, MAX_WRITERS)
}
