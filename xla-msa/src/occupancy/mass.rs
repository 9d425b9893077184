//! The byte-op mass of a heap's chunks, by when they start and where they lie: for each
//! block of [`BLOCK`] ops and each of [`LANES`] equal address lanes, the sum over the
//! chunks starting in the block of (ops held) x (bytes in the lane).
//!
//! An occupancy grid over a long interval (the game's observation of a weight live from
//! op 0) would otherwise visit every chunk the interval overlaps, which on a program of
//! thousands of ops is most of the heap, at every turn of every search. With the mass it
//! sums the blocks the interval's starts cover and visits only the chunks live at its
//! bin boundaries. Sums are kept modulo 2^64: the true sum over any ops is below it
//! (chunks live at one op are disjoint, so a lane holds at most its bytes at each op).

use super::index::{Rect, TimeIndex};
use super::parray::PArray;

/// Address lanes: lane `j` holds bytes `[lane_start(j), lane_start(j + 1))`.
pub const LANES: usize = 8;

/// Ops per block: a query reads the starts of at most `2 * (BLOCK - 1)` ops one by one.
const BLOCK: usize = 16;

/// One block's mass, by lane.
pub type LaneMass = [u64; LANES];

#[derive(Clone, Debug)]
pub(crate) struct Mass {
    capacity: u64,
    blocks: PArray<LaneMass>,
}

impl Mass {
    /// The mass of `rects`, over ops `0..horizon` of a level of `capacity` bytes.
    pub(crate) fn of(capacity: u64, horizon: usize, rects: impl IntoIterator<Item = Rect>) -> Mass {
        let mut blocks = vec![[0u64; LANES]; horizon.div_ceil(BLOCK).max(1)];
        for r in rects {
            let block = &mut blocks[r.start / BLOCK];
            for_each_lane(capacity, &r, |j, m| block[j] = block[j].wrapping_add(m));
        }
        Mass {
            capacity,
            blocks: PArray::from_fn(blocks.len(), |i| blocks[i]),
        }
    }

    /// Adds a rect's mass (`add`), or takes it away.
    pub(crate) fn change(&mut self, r: &Rect, add: bool) {
        let block = self.blocks.get_mut(r.start / BLOCK);
        for_each_lane(self.capacity, r, |j, m| {
            block[j] = if add {
                block[j].wrapping_add(m)
            } else {
                block[j].wrapping_sub(m)
            };
        });
    }

    /// Adds to `out` the mass of the rects starting in ops `lo..=hi` (`hi` below the
    /// index's horizon), whose starts `index` lists.
    pub(crate) fn starting_in(&self, index: &TimeIndex, lo: usize, hi: usize, out: &mut LaneMass) {
        if lo > hi {
            return;
        }
        let cap = self.capacity;
        let mut one_by_one = |a: usize, b: usize| {
            if a <= b {
                index.starting_in(a, b, |_, r| {
                    for_each_lane(cap, r, |j, m| out[j] = out[j].wrapping_add(m));
                });
            }
        };
        // Whole blocks `first..last`; the ops either side one by one.
        let (first, last) = (lo.div_ceil(BLOCK), (hi + 1) / BLOCK);
        if first >= last {
            one_by_one(lo, hi);
            return;
        }
        if lo < first * BLOCK {
            one_by_one(lo, first * BLOCK - 1);
        }
        one_by_one(last * BLOCK, hi);
        self.blocks.for_each_in(first..last, |m| {
            for (o, x) in out.iter_mut().zip(m) {
                *o = o.wrapping_add(*x);
            }
        });
    }
}

/// The first byte of lane `j` of a level of `capacity` bytes (`capacity` at `j = LANES`).
pub fn lane_start(capacity: u64, j: usize) -> u64 {
    (j as u128 * capacity as u128 / LANES as u128) as u64
}

/// Calls `f(lane, mass)` for each lane the rect's bytes meet: its ops held times its
/// bytes in the lane.
fn for_each_lane(capacity: u64, r: &Rect, mut f: impl FnMut(usize, u64)) {
    let ops = (r.end + 1 - r.start) as u64;
    let top = r.top.min(capacity);
    let mut j = (r.offset as u128 * LANES as u128 / capacity.max(1) as u128) as usize;
    while j < LANES {
        let (lo, hi) = (lane_start(capacity, j), lane_start(capacity, j + 1));
        if lo >= top {
            break;
        }
        let bytes = hi.min(top).saturating_sub(lo.max(r.offset));
        if bytes > 0 {
            f(j, ops.wrapping_mul(bytes));
        }
        j += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn naive(rects: &[Rect], capacity: u64, lo: usize, hi: usize) -> LaneMass {
        let mut out = [0u64; LANES];
        for r in rects.iter().filter(|r| (lo..=hi).contains(&r.start)) {
            for (j, o) in out.iter_mut().enumerate() {
                let (a, b) = (lane_start(capacity, j), lane_start(capacity, j + 1));
                let bytes = b.min(r.top).saturating_sub(a.max(r.offset));
                *o += (r.end + 1 - r.start) as u64 * bytes;
            }
        }
        out
    }

    #[test]
    fn mass_matches_brute_force_through_inserts_removes_and_clones() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut next = |n: u64| rng.random_range(0..n.max(1));
        // A capacity the lanes do not divide, and one they do.
        for (t, capacity) in [(50usize, 203u64), (300, 256)] {
            let mut index = TimeIndex::new(t);
            let mut mass = Mass::of(capacity, t, std::iter::empty());
            let mut live: Vec<(usize, Rect)> = Vec::new();
            let mut snapshots = Vec::new();
            for step in 0..400 {
                let s = next(t as u64) as usize;
                let e = (s + next(40) as usize).min(t - 1);
                let o = next(capacity - 1);
                let r = Rect {
                    start: s,
                    end: e,
                    offset: o,
                    top: (o + 1 + next(60)).min(capacity),
                };
                live.push((index.insert(r), r));
                mass.change(&r, true);
                if next(3) == 0 {
                    let (id, r) = live.swap_remove(next(live.len() as u64) as usize);
                    index.remove(id, r);
                    mass.change(&r, false);
                }
                if step % 80 == 0 {
                    snapshots.push((index.clone(), mass.clone(), live.clone()));
                    // Built at once from the rects, as a heap does on its first query.
                    let rects: Vec<Rect> = live.iter().map(|(_, r)| *r).collect();
                    let built = Mass::of(capacity, t, rects);
                    snapshots.push((index.clone(), built, live.clone()));
                }
            }
            snapshots.push((index, mass, live));
            for (index, mass, live) in &snapshots {
                let rects: Vec<Rect> = live.iter().map(|(_, r)| *r).collect();
                for lo in (0..t).step_by(3) {
                    for hi in (lo..t).step_by(7) {
                        let mut got = [0u64; LANES];
                        mass.starting_in(index, lo, hi, &mut got);
                        assert_eq!(got, naive(&rects, capacity, lo, hi), "{lo}..={hi}");
                    }
                }
            }
        }
    }

    #[test]
    fn lanes_tile_the_capacity() {
        for capacity in [1u64, 7, 8, 203, 1 << 40] {
            assert_eq!(lane_start(capacity, 0), 0);
            assert_eq!(lane_start(capacity, LANES), capacity);
            for j in 0..LANES {
                assert!(lane_start(capacity, j) <= lane_start(capacity, j + 1));
            }
        }
    }
}
