//! The observation's occupancy grid of one fast level over a buffer's live range: `gt`
//! time bins over ops `s..=e` by `go` offset bins over the capacity, each cell the
//! fraction of its area that chunks hold (op `t` spans time `[t, t + 1)`).
//!
//! Visiting every chunk the live range overlaps ([`by_chunks`]) costs the chunks placed
//! so far when the buffer lives long (a weight read from op 0 to the last), at every
//! turn of every search: on the scale tier's programs that was three quarters of a game
//! played with search. [`by_mass`] gives the same grid from the heap's byte-op mass by
//! start ([`ChunkHeap::mass_starting_in`]) and the few chunks live across each bin
//! boundary: a chunk starting inside a bin counts whole, less what lies past the bin's
//! end, and a chunk live across a boundary adds its part of the bin after it. Its sums
//! are exact integers (in units of `1/gt` op times a byte), so the two differ only by
//! [`by_chunks`]'s `f32` rounding and, where `go` does not divide the capacity, by less
//! than a byte per bin edge.

use xla_msa::{Chunk, ChunkHeap, MASS_LANES};

/// Writes the grid of `heap` over ops `s..=e` (`gt x go` cells, added to `out`).
pub(super) fn grid(heap: &ChunkHeap, s: usize, e: usize, gt: usize, go: usize, out: &mut [f32]) {
    if go <= MASS_LANES && MASS_LANES % go == 0 {
        by_mass(heap, s, e, gt, go, out);
    } else {
        by_chunks(heap, s, e, gt, go, out);
    }
}

/// The grid from every chunk overlapping the live range.
pub(super) fn by_chunks(
    heap: &ChunkHeap,
    s: usize,
    e: usize,
    gt: usize,
    go: usize,
    out: &mut [f32],
) {
    let cap = heap.capacity() as f64;
    let span = (e + 1 - s) as f64;
    let tbin = span / gt as f64;
    let obin = cap / go as f64;
    heap.for_each_overlapping(s, e, |c| {
        // The chunk's rectangle in grid units, clipped to the live range.
        let t0 = (c.start.max(s) - s) as f64 / tbin;
        let t1 = (c.end.min(e) + 1 - s) as f64 / tbin;
        let o0 = c.offset as f64 / obin;
        let o1 = (c.top() as f64 / obin).min(go as f64);
        for ti in (t0.floor() as usize)..(t1.ceil() as usize).min(gt) {
            let tw = (t1.min(ti as f64 + 1.0) - t0.max(ti as f64)).max(0.0);
            for oi in (o0.floor() as usize)..(o1.ceil() as usize).min(go) {
                let ow = (o1.min(oi as f64 + 1.0) - o0.max(oi as f64)).max(0.0);
                out[ti * go + oi] += (tw * ow) as f32;
            }
        }
    });
}

/// The grid from the heap's mass (`go` divides [`MASS_LANES`]).
fn by_mass(heap: &ChunkHeap, s: usize, e: usize, gt: usize, go: usize, out: &mut [f32]) {
    let span = (e + 1 - s) as i128;
    let g = gt as i128;
    let per = MASS_LANES / go;
    // Time in units of 1/gt op from `s`: bin k is [k * span, (k + 1) * span).
    let at = |k: usize| k as i128 * span;
    let from = |op: usize| (op as i128 - s as i128) * g;
    let mut acc = vec![0i128; gt * go];
    // The offset bins' edges, each the first byte of a lane.
    let edges: Vec<u64> = (0..=go).map(|oi| heap.lane_start(oi * per)).collect();
    let bytes_in = |c: &Chunk, oi: usize| -> i128 {
        let (lo, hi) = (edges[oi], edges[oi + 1]);
        hi.min(c.top()).saturating_sub(lo.max(c.offset)) as i128
    };
    for k in 0..=gt {
        // The chunks live across boundary k: starting before it and ending after.
        let x = at(k);
        let op = s + (x / g) as usize;
        heap.for_each_overlapping(op, op, |c| {
            let (cs, ce) = (from(c.start), from(c.end + 1));
            if !(cs < x && x < ce) {
                return;
            }
            for oi in 0..go {
                let b = bytes_in(c, oi);
                if b == 0 {
                    continue;
                }
                if k < gt {
                    acc[k * go + oi] += (ce.min(at(k + 1)) - x) * b;
                }
                if k > 0 && cs >= at(k - 1) {
                    // It started in bin k - 1, which counted it whole.
                    acc[(k - 1) * go + oi] -= (ce - x) * b;
                }
            }
        });
    }
    for k in 0..gt {
        // The chunks starting in bin k, whole: ops whose time from `s` is in the bin.
        let lo = s + div_ceil(at(k), g);
        let hi = s + div_ceil(at(k + 1), g) - 1;
        if hi < lo {
            continue;
        }
        let mass = heap.mass_starting_in(lo, hi);
        for oi in 0..go {
            let m: u128 = mass[oi * per..(oi + 1) * per]
                .iter()
                .map(|&m| m as u128)
                .sum();
            acc[k * go + oi] += m as i128 * g;
        }
    }
    let area = span as f64 * heap.capacity() as f64 / go as f64;
    for (o, a) in out.iter_mut().zip(&acc) {
        *o += (*a as f64 / area) as f32;
    }
}

fn div_ceil(a: i128, b: i128) -> usize {
    ((a + b - 1) / b) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Chunks at random places in heaps of capacities `go` divides and does not.
    #[test]
    fn by_mass_is_by_chunks_on_random_heaps() {
        let mut rng = StdRng::seed_from_u64(5);
        let mut next = |n: u64| rng.random_range(0..n.max(1));
        for (horizon, capacity) in [(40usize, 1u64 << 20), (333, 1000), (2000, 3 << 24)] {
            let mut heap = ChunkHeap::new(capacity, 1, horizon).unwrap();
            let mut committed = Vec::new();
            for i in 0..(horizon * 4) {
                if i == horizon * 2 {
                    // The heap's mass is built at its first query and kept up after.
                    let _ = heap.mass_starting_in(0, horizon - 1);
                }
                if i % 7 == 0 && !committed.is_empty() {
                    let id = committed.swap_remove(next(committed.len() as u64) as usize);
                    heap.remove(id);
                }
                // Mostly short chunks, and some live long, as weights are.
                let long = if i % 16 == 0 { 3 } else { 30 };
                let start = next(horizon as u64) as usize;
                let end = (start + next(1 + horizon as u64 / long) as usize).min(horizon - 1);
                let size = 1 + next(capacity / 16);
                let offset = next(capacity - size + 1);
                if let Ok(id) = heap.commit(Chunk {
                    start,
                    end,
                    offset,
                    size,
                }) {
                    committed.push(id);
                }
            }
            assert!(heap.len() >= 20, "{}", heap.len());
            let mut busy_cells = 0;
            for _ in 0..200 {
                let s = next(horizon as u64) as usize;
                let e = (s + next(horizon as u64) as usize).min(horizon - 1);
                for (gt, go) in [(8, 8), (3, 4), (8, 1), (17, 2)] {
                    let mut want = vec![0f32; gt * go];
                    let mut got = vec![0f32; gt * go];
                    by_chunks(&heap, s, e, gt, go, &mut want);
                    by_mass(&heap, s, e, gt, go, &mut got);
                    busy_cells += want.iter().filter(|&&a| a > 0.05).count();
                    for (i, (a, b)) in want.iter().zip(&got).enumerate() {
                        assert!(
                            (a - b).abs() < 1e-4,
                            "{s}..={e} {gt}x{go} cell {i}: {a} by chunks, {b} by mass"
                        );
                    }
                }
            }
            assert!(
                busy_cells > 1000,
                "{busy_cells} busy cells: the heaps are too empty"
            );
        }
    }
}
