//! Cache writes off the async threads, bounded twice: a write is queued only while it holds
//! one of a few places, so a burst of fast runs queues its writes instead of holding finished
//! results without bound; and they run on the execution's own writer threads, one per core but
//! one, at a background priority (`priority::lower_this_thread`), so a round of answers stored
//! together leaves the cores to sending the next requests and to a model server on the same
//! machine, and is written in the idle time between answers (a new file costs the kernel more
//! than the request does).

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// The most cache writes in flight at once, whatever `--jobs` is: writes are filesystem
/// work, and more of them at once do not make them faster.
pub(super) const MAX_WRITERS: usize = 16;

/// One queued write: it sends its own result.
type Job = Box<dyn FnOnce() + Send>;

/// The writers of one execution.
#[derive(Clone)]
pub(super) struct Writers {
    permits: Arc<Semaphore>,
    threads: Arc<WriterThreads>,
}

impl Writers {
    /// As many writers as `jobs` (at least one, at most [`MAX_WRITERS`]).
    pub(super) fn for_jobs(jobs: usize) -> Self {
        Self { permits: Arc::new(Semaphore::new(writers_for(jobs))), threads: Arc::new(WriterThreads::new(running_for(super::cores()))) }
    }

    /// A writer's permit, waited for. A review takes it while it still holds its `--jobs`
    /// slot, so when the writers fall behind, new reviews wait rather than pile up finished
    /// results (each holding its run key's lock file open) in an unbounded queue.
    pub(super) async fn permit(&self) -> Result<Permit, String> {
        let held = self.permits.clone().acquire_owned().await.map_err(|e| e.to_string())?;
        Ok(Permit { held, threads: self.threads.clone() })
    }

    /// Runs `write` on a writer thread once a permit is free; the permit is held until it
    /// returns. `Err` when the write panicked.
    pub(super) async fn run<T: Send + 'static>(&self, write: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let permit = self.permit().await?;
        Self::run_with(permit, write).await
    }

    /// Runs `write` on a writer thread under a permit already taken.
    pub(super) async fn run_with<T: Send + 'static>(permit: Permit, write: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let Permit { held, threads } = permit;
        let (done, answer) = tokio::sync::oneshot::channel();
        threads.submit(Box::new(move || {
            let _ = done.send(write());
            drop(held);
        }));
        answer.await.map_err(|_| "a cache write panicked".to_string())
    }
}

/// The threads that run an execution's writes, in the order they were queued; they end when
/// the last [`Writers`] is dropped. A write that panics loses its own result only (its sender
/// is dropped, which its waiter reads as the panic); the thread goes on. Where no thread can
/// be started, writes run on tokio's blocking threads instead.
struct WriterThreads {
    /// `None` when no thread started.
    queue: Option<mpsc::Sender<Job>>,
}

impl WriterThreads {
    fn new(count: usize) -> Self {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut started = 0;
        for _ in 0..count.max(1) {
            let receiver = receiver.clone();
            let thread = std::thread::Builder::new().name("runner-cache-writer".into()).spawn(move || {
                // Best effort: a thread left at its priority writes all the same.
                let _ = runner_core::priority::lower_this_thread();
                loop {
                    let job = match receiver.lock() {
                        Ok(queue) => queue.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            });
            started += usize::from(thread.is_ok());
        }
        Self { queue: (started > 0).then_some(sender) }
    }

    /// Queues `job` for the next free writer thread.
    fn submit(&self, job: Job) {
        let job = match &self.queue {
            Some(sender) => match sender.send(job) {
                Ok(()) => return,
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        tokio::task::spawn_blocking(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        });
    }
}

/// One writer's place, held from before a write is queued until it is done.
pub(super) struct Permit {
    held: tokio::sync::OwnedSemaphorePermit,
    threads: Arc<WriterThreads>,
}

/// How many writer threads a machine of `cores` cores gets.
pub(super) fn running_for(cores: usize) -> usize {
    cores.saturating_sub(1).max(1)
}

/// The writer bound for `jobs`.
pub(super) fn writers_for(jobs: usize) -> usize {
    jobs.clamp(1, MAX_WRITERS)
}
