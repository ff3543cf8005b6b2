//! The analyze and render executors. Analyses and their parts run in the walk itself, the
//! ready ones side by side on as many threads as there are cores, each thread taking the next
//! as soon as it is free (they only read what the walk produced); a part runs as soon as its
//! own runs are done, while other runs are still under way; the render node runs once every
//! analysis is done.

use super::super::cores;
use super::super::parts::{EngineParts, Nodes};
use super::super::walk::{Conclusions, State, Walk};
use crate::plan::Node;
use petgraph::graph::NodeIndex;
use petgraph::Direction;

/// One analysis, or one part of one, to compute.
enum Work<'p> {
    Analysis(usize),
    Part { index: usize, part: &'p str, runs: Vec<usize> },
}

/// What a [`Work`] computed.
enum Concluded<A, P> {
    Analysis(A),
    Part(P),
}

/// Runs the analysis or part `node` and every other analysis or part ready with it.
pub(in crate::exec) fn analyze_ready<'a, C: Conclusions>(
    parts: &EngineParts<'a, C>,
    nodes: &Nodes,
    node: NodeIndex,
    walk: &mut Walk<'a, C::Analysis, C::Report>,
) {
    let graph = &parts.plan.graph;
    let concludes = |n: &NodeIndex| matches!(graph[*n], Node::Analyze { .. } | Node::AnalyzePart { .. });
    let mut batch = vec![node];
    walk.ready.retain(|n| {
        let take = concludes(n);
        if take {
            batch.push(*n);
        }
        !take
    });
    let work: Vec<Work<'_>> = batch
        .iter()
        .filter_map(|&n| match &graph[n] {
            Node::Analyze { index } => Some(Work::Analysis(*index)),
            Node::AnalyzePart { index, part } => {
                let mut runs: Vec<usize> = graph
                    .neighbors_directed(n, Direction::Incoming)
                    .filter_map(|r| match graph[r] {
                        Node::Review { run } => Some(run),
                        _ => None,
                    })
                    .collect();
                runs.sort_unstable();
                Some(Work::Part { index: *index, part, runs })
            }
            _ => None,
        })
        .collect();
    let conclusions = parts.conclusions;
    let results: Vec<Concluded<C::Analysis, C::Part>> = {
        let view = &walk.view(&nodes.review, &nodes.materialize, &nodes.scoring, &nodes.analyze);
        side_by_side(&work, cores(), |work| match work {
            Work::Analysis(index) => Concluded::Analysis(conclusions.analyze(*index, view)),
            Work::Part { index, part, runs } => Concluded::Part(conclusions.analyze_part(*index, part, runs, view)),
        })
    };
    for (node, result) in batch.into_iter().zip(results) {
        let state = match result {
            Concluded::Analysis(analysis) => State::Analysis(Box::new(analysis)),
            Concluded::Part(part) => State::Part(Box::new(part)),
        };
        walk.finish(node, state);
    }
}

/// `work` on each item, on at most `threads` threads at once (each holds its own working
/// memory), each thread taking the next item not yet taken as soon as it is free: a long item
/// holds one thread while the others go through the rest. The results are in the items' order;
/// a panic in `work` is raised again here. With one thread (or one item) the work is done on
/// this thread, no thread started.
pub(in crate::exec) fn side_by_side<I: Sync, T: Send>(items: &[I], threads: usize, work: impl Fn(&I) -> T + Sync) -> Vec<T> {
    if threads.min(items.len()) <= 1 {
        return items.iter().map(work).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: Vec<Vec<(usize, T)>> = std::thread::scope(|scope| {
        let worker = || {
            let mut mine = Vec::new();
            loop {
                let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(at) else { return mine };
                mine.push((at, work(item)));
            }
        };
        let handles: Vec<_> = (0..threads.min(items.len())).map(|_| scope.spawn(worker)).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    let mut results: Vec<(usize, T)> = done.into_iter().flatten().collect();
    results.sort_unstable_by_key(|&(at, _)| at);
    results.into_iter().map(|(_, result)| result).collect()
}

/// Renders the reports from every analysis done, in manifest order; a failure is kept in
/// `render_error` for the execution's result.
pub(in crate::exec) fn render<'a, C: Conclusions>(
    parts: &EngineParts<'a, C>,
    nodes: &Nodes,
    node: NodeIndex,
    walk: &mut Walk<'a, C::Analysis, C::Report>,
    render_error: &mut Option<C::Error>,
) {
    let analyses: Vec<&C::Analysis> = nodes
        .analyze
        .iter()
        .filter_map(|n| match &walk.states[n.index()] {
            State::Analysis(a) => Some(a.as_ref()),
            _ => None,
        })
        .collect();
    let state = match parts.conclusions.render(&walk.view(&nodes.review, &nodes.materialize, &nodes.scoring, &nodes.analyze), &analyses) {
        Ok(report) => State::Report(Box::new(report)),
        Err(e) => {
            let state = State::Failed(e.to_string());
            *render_error = Some(e);
            state
        }
    };
    walk.finish(node, state);
}

#[cfg(test)]
mod tests {
    use super::side_by_side;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    #[test]
    fn side_by_side_keeps_the_items_order_and_its_thread_bound() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let threads = Mutex::new(std::collections::HashSet::new());
        let items: Vec<usize> = (0..40).collect();
        let out = side_by_side(&items, 3, |&i| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            threads.lock().expect("lock").insert(std::thread::current().id());
            // The first item is long: the other threads take the rest meanwhile.
            std::thread::sleep(std::time::Duration::from_millis(if i == 0 { 30 } else { 1 }));
            running.fetch_sub(1, Ordering::SeqCst);
            i * 10
        });
        assert_eq!(out, items.iter().map(|i| i * 10).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 3, "at most 3 at once");
        assert!(threads.lock().expect("lock").len() <= 3);
        assert!(side_by_side(&Vec::<usize>::new(), 4, |&i| i).is_empty());
    }

    #[test]
    fn a_panic_in_one_item_is_raised_again() {
        let raised = std::panic::catch_unwind(|| side_by_side(&[1, 2, 3], 2, |&i| if i == 2 { panic!("item two") } else { i }));
        assert!(raised.is_err());
    }
}
