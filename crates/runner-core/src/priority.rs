//! Background threads' priority: a thread that does work nothing waits on at once (cache
//! writes queued behind the requests) lowers its own scheduling priority, so that on a machine
//! whose cores are all busy — a model server beside runner, the requests' own thread — it
//! yields them and takes the idle time between answers instead.

/// The nice value background threads take: well below the default's share of a busy core
/// (about a tenth of it), never starved of an idle one.
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority to [`BACKGROUND_NICE`] (only ever lowers it: a thread
/// already nicer keeps its value). Linux schedules threads one by one, so only the calling
/// thread changes; elsewhere a process has one priority, and nothing is changed. A thread
/// cannot raise its priority again without privileges: call this on a thread of its own.
pub fn lower_this_thread() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let tid = this_thread_id()?;
        let current = this_thread_nice().ok_or_else(std::io::Error::last_os_error)?;
        // SAFETY: setpriority sets a number of the thread named.
        if current < BACKGROUND_NICE && unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, BACKGROUND_NICE) } == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The calling thread's nice value (Linux; `None` elsewhere or when it cannot be read).
pub fn this_thread_nice() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        let tid = this_thread_id().ok()?;
        // SAFETY: getpriority reads a number of the thread named. It may legitimately return
        // -1, so errno is cleared before and checked after.
        let nice = unsafe {
            *libc::__errno_location() = 0;
            libc::getpriority(libc::PRIO_PROCESS, tid)
        };
        if nice == -1 && std::io::Error::last_os_error().raw_os_error() != Some(0) {
            return None;
        }
        Some(nice)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// The calling thread's id, as `getpriority` and `setpriority` name a thread.
#[cfg(target_os = "linux")]
fn this_thread_id() -> std::io::Result<libc::id_t> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    libc::id_t::try_from(tid).map_err(|_| std::io::Error::other("negative thread id"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn only_the_calling_thread_is_lowered() {
        let before = this_thread_nice().expect("nice readable");
        let lowered = std::thread::spawn(|| {
            lower_this_thread().expect("lowering is always allowed");
            let once = this_thread_nice();
            // Lowering again keeps the value, and a thread already nicer is left alone.
            lower_this_thread().expect("again");
            (once, this_thread_nice())
        })
        .join()
        .expect("thread");
        assert_eq!(lowered, (Some(before.max(BACKGROUND_NICE)), Some(before.max(BACKGROUND_NICE))));
        assert_eq!(this_thread_nice(), Some(before), "the spawning thread keeps its priority");
    }
}
