//! The order XLA places buffers in, and the levels its passes fill.

use crate::options::XlaOptions;
use accel_sim::{BufferId, CostModel, Program};

/// XLA's buffer order for placing into `level`: ascending
/// `(-memory_boundedness, -size, start - end, latest_use, start, id)`, i.e. most
/// memory-bound first, then larger, then longer-lived. `latest_use` of a buffer with no use
/// is its live-range end.
pub fn xla_order(program: &Program, cost: &CostModel, level: usize) -> Vec<BufferId> {
    let key = |b: BufferId| {
        let (s, e) = program.live_range(b);
        let latest = program.uses(b).last().copied().unwrap_or(e);
        (
            cost.memory_boundedness(b, level),
            std::cmp::Reverse(program.buffer(b).size),
            std::cmp::Reverse(e - s),
            latest,
            s,
            b,
        )
    };
    // Keys computed once (not per comparison); the id makes the order total, so any sort
    // gives the same one.
    let mut keyed: Vec<_> = (0..program.buffers().len()).map(key).collect();
    keyed.sort_unstable_by(|x, y| {
        y.0.total_cmp(&x.0)
            .then_with(|| (x.1, x.2, x.3, x.4, x.5).cmp(&(y.1, y.2, y.3, y.4, y.5)))
    });
    keyed.into_iter().map(|k| k.5).collect()
}

/// The hardware levels the passes fill, in order: the fastest first, then (with the
/// cascade) each slower fast level, at most `max_levels` of them.
pub(crate) fn pass_levels(options: &XlaOptions, fastest: usize) -> Vec<usize> {
    let count = if options.cascade { fastest } else { 1 };
    let count = options.max_levels.map_or(count, |m| count.min(m));
    (1..=fastest).rev().take(count).collect()
}
