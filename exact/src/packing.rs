//! Offsets for a set of taken holds: first fit in a few orders, or stacked in the order a
//! solution of the model put them (docs/exact.md, "Offsets lazily").

use crate::candidates::Candidate;
use accel_sim::Hardware;

/// Shuffled orders first fit also tries, after the three sorted ones.
const SHUFFLES: u64 = 32;

/// Offsets (bytes) of the holds `taken`, in its order, that keep every level within its
/// capacity with no two holds meeting in time x address; `None` when no order tried fits.
pub fn first_fit(candidates: &[Candidate], taken: &[usize], hw: &Hardware) -> Option<Vec<u64>> {
    first_fit_around(candidates, &[], taken, hw)
}

/// [`first_fit`] beside holds already in place, `(candidate, offset)`, that stay where they
/// are: a window's new holds among the rest of a mapping.
pub fn first_fit_around(
    candidates: &[Candidate],
    fixed: &[(usize, u64)],
    taken: &[usize],
    hw: &Hardware,
) -> Option<Vec<u64>> {
    orders(candidates, taken).find_map(|order| place(candidates, fixed, taken, &order, hw, false))
}

/// The orders first fit tries: by start, by size, by length, then by start with each
/// hold's start jittered (seeded, so a solve is reproducible).
fn orders<'a>(
    candidates: &'a [Candidate],
    taken: &'a [usize],
) -> impl Iterator<Item = Vec<usize>> + 'a {
    type Key = fn(&Candidate) -> (u64, u64, u64);
    let keys: [Key; 3] = [
        |c| (c.hold.start as u64, u64::MAX - c.size, c.hold.end as u64),
        |c| (u64::MAX - c.size, c.hold.start as u64, 0),
        |c| {
            (
                u64::MAX - (c.hold.end - c.hold.start) as u64,
                u64::MAX - c.size,
                c.hold.start as u64,
            )
        },
    ];
    let sorted = keys.into_iter().map(move |key| {
        let mut order: Vec<usize> = (0..taken.len()).collect();
        order.sort_by_key(|&i| (key(&candidates[taken[i]]), taken[i]));
        order
    });
    let jittered = (0..SHUFFLES).map(move |round| {
        let mut order: Vec<usize> = (0..taken.len()).collect();
        let key = |i: usize| {
            let c = &candidates[taken[i]];
            let jitter = mix(round, taken[i] as u64) % 8;
            (c.hold.start as u64 + jitter, u64::MAX - c.size, taken[i])
        };
        order.sort_by_key(|&i| key(i));
        order
    });
    sorted.chain(jittered)
}

/// A fixed 64-bit mix of two numbers (splitmix64's finaliser).
fn mix(a: u64, b: u64) -> u64 {
    let mut x = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_add(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

/// The holds of `taken` that first fit places when holds that do not fit are left out
/// (each order of [`first_fit`] tried; `score` says which kept set is best, lower is
/// better), with their offsets: a valid mapping near one no offsets fit.
pub fn repair(
    candidates: &[Candidate],
    taken: &[usize],
    hw: &Hardware,
    score: impl FnMut(&[usize], &[u64]) -> f64,
) -> (Vec<usize>, Vec<u64>) {
    repair_around(candidates, &[], taken, hw, score)
}

/// [`repair`] beside holds already in place that stay where they are (as
/// [`first_fit_around`]).
pub fn repair_around(
    candidates: &[Candidate],
    fixed: &[(usize, u64)],
    taken: &[usize],
    hw: &Hardware,
    mut score: impl FnMut(&[usize], &[u64]) -> f64,
) -> (Vec<usize>, Vec<u64>) {
    let mut best: Option<(f64, Vec<usize>, Vec<u64>)> = None;
    for order in orders(candidates, taken) {
        let (kept, offsets) = place_what_fits(candidates, fixed, taken, &order, hw);
        let s = score(&kept, &offsets);
        if best.as_ref().is_none_or(|b| s < b.0) {
            best = Some((s, kept, offsets));
        }
    }
    best.map_or((Vec::new(), Vec::new()), |(_, k, o)| (k, o))
}

/// Offsets of `taken` stacked in order of `model_offsets` (each hold right above the
/// highest one below it that it meets in time): within capacity whenever the model kept
/// every pair of them apart, since each then sits no higher than the model put it.
pub fn stacked(
    candidates: &[Candidate],
    taken: &[usize],
    model_offsets: &[f64],
    hw: &Hardware,
) -> Option<Vec<u64>> {
    let mut order: Vec<usize> = (0..taken.len()).collect();
    order.sort_by(|&a, &b| {
        model_offsets[taken[a]]
            .total_cmp(&model_offsets[taken[b]])
            .then(taken[a].cmp(&taken[b]))
    });
    place(candidates, &[], taken, &order, hw, true)
}

/// First fit of `taken[order[..]]`, skipping what does not fit.
fn place_what_fits(
    candidates: &[Candidate],
    fixed: &[(usize, u64)],
    taken: &[usize],
    order: &[usize],
    hw: &Hardware,
) -> (Vec<usize>, Vec<u64>) {
    let mut placed = Placed::with(candidates, fixed, taken);
    let mut kept = Vec::with_capacity(taken.len());
    for &i in order {
        if let Some(o) = fit(candidates, taken[i], &placed, hw, false) {
            placed.insert(candidates, taken[i], o);
            kept.push((taken[i], o));
        }
    }
    kept.into_iter().unzip()
}

/// Places `taken[order[..]]` one by one: at the lowest gap that fits (`stack` false) or
/// above everything it meets (`stack` true).
fn place(
    candidates: &[Candidate],
    fixed: &[(usize, u64)],
    taken: &[usize],
    order: &[usize],
    hw: &Hardware,
    stack: bool,
) -> Option<Vec<u64>> {
    let mut offsets = vec![0u64; taken.len()];
    let mut placed = Placed::with(candidates, fixed, taken);
    for &i in order {
        let o = fit(candidates, taken[i], &placed, hw, stack)?;
        offsets[i] = o;
        placed.insert(candidates, taken[i], o);
    }
    Some(offsets)
}

/// The offset of candidate `c` beside the `placed` (candidate, offset) holds: the lowest
/// gap it fits in, or right above every placed hold it meets (`stack`); `None` past the
/// level's capacity.
fn fit(
    candidates: &[Candidate],
    c: usize,
    placed: &Placed,
    hw: &Hardware,
    stack: bool,
) -> Option<u64> {
    let c = &candidates[c];
    let level = &hw.levels[c.hold.level];
    // (offset, stacked size) of the placed holds it meets, lowest first.
    let mut below = placed.meeting(candidates, c);
    below.sort_unstable();
    let mut at = 0u64;
    for &(o, s) in &below {
        if !stack && at.checked_add(c.size)? <= o {
            break;
        }
        at = at.max(o.checked_add(s)?);
    }
    (at.checked_add(c.size)? <= level.capacity).then_some(at)
}

/// The holds placed so far, found by time: each is listed in every block of
/// [`BLOCK`] ops its interval touches, so the holds a new one meets are read from its own
/// blocks, not from every hold placed (first fit was quadratic: minutes on 300k ops).
struct Placed {
    blocks: Vec<Vec<(usize, u64)>>,
}

/// Ops per block of [`Placed`].
const BLOCK: usize = 64;

impl Placed {
    /// Room for `taken`, with the `fixed` holds already placed.
    fn with(candidates: &[Candidate], fixed: &[(usize, u64)], taken: &[usize]) -> Placed {
        let last = taken
            .iter()
            .chain(fixed.iter().map(|(c, _)| c))
            .map(|&c| candidates[c].hold.end)
            .max()
            .unwrap_or(0);
        let mut placed = Placed {
            blocks: vec![Vec::new(); last / BLOCK + 1],
        };
        for &(c, o) in fixed {
            placed.insert(candidates, c, o);
        }
        placed
    }

    fn insert(&mut self, candidates: &[Candidate], c: usize, offset: u64) {
        let h = &candidates[c].hold;
        for block in &mut self.blocks[h.start / BLOCK..=h.end / BLOCK] {
            block.push((c, offset));
        }
    }

    /// (offset, stacked size) of each placed hold that meets `c`, once each: a pair is
    /// read in the block where the later of the two starts falls.
    fn meeting(&self, candidates: &[Candidate], c: &Candidate) -> Vec<(u64, u64)> {
        let (first, last) = (c.hold.start / BLOCK, c.hold.end / BLOCK);
        let mut out = Vec::new();
        if first >= self.blocks.len() {
            return out;
        }
        for (b, block) in self.blocks[first..=last.min(self.blocks.len() - 1)]
            .iter()
            .enumerate()
        {
            for &(p, o) in block {
                let p = &candidates[p];
                if p.meets(c) && p.hold.start.max(c.hold.start) / BLOCK == first + b {
                    out.push((o, p.stacked_size));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn hold(start: usize, end: usize, size: u64) -> Candidate {
        Candidate::fixture(start, end, size, size.div_ceil(512) * 512)
    }

    /// The index finds exactly the placed holds a hold meets, each once.
    #[test]
    fn placed_holds_are_found_by_time_as_a_scan_finds_them() {
        let mut x = 7u64;
        let mut next = |n: u64| {
            x = mix(x, 11);
            x % n
        };
        let cs: Vec<Candidate> = (0..400)
            .map(|_| {
                let start = next(1000) as usize;
                let len = if next(10) == 0 { next(600) } else { next(40) } as usize;
                hold(start, start + len, 1 + next(1000))
            })
            .collect();
        let all: Vec<usize> = (0..cs.len()).collect();
        let mut placed = Placed::with(&cs, &[], &all);
        for (i, c) in cs.iter().enumerate() {
            let mut found = placed.meeting(&cs, c);
            let mut want: Vec<(u64, u64)> = (0..i)
                .filter(|&p| cs[p].meets(c))
                .map(|p| (p as u64, cs[p].stacked_size))
                .collect();
            found.sort_unstable();
            want.sort_unstable();
            assert_eq!(found, want, "hold {i}");
            // The offset slot carries the hold's index here, to compare sets.
            placed.insert(&cs, i, i as u64);
        }
    }

    #[test]
    fn first_fit_reuses_freed_space_and_respects_alignment() {
        let hw = accel_sim::Hardware::preset("tpu-v4i-like")
            .unwrap()
            .with_capacity(1, 1024)
            .unwrap();
        assert_eq!(hw.levels[1].alignment, 512);
        let cs = [hold(0, 2, 400), hold(0, 5, 400), hold(3, 5, 400)];
        let offsets = first_fit(&cs, &[0, 1, 2], &hw).unwrap();
        // The third reuses the first's place once it is free.
        assert_eq!(offsets[0] % 512, 0);
        assert_eq!(offsets[2], offsets[0]);
        assert_ne!(offsets[0], offsets[1]);
        // Three at once do not fit in 1024 bytes with 512-byte strides.
        let cs = [hold(0, 2, 400), hold(0, 5, 400), hold(1, 5, 40)];
        assert!(first_fit(&cs, &[0, 1, 2], &hw).is_none());
        // Stacked in the model's order: above what they meet.
        let cs = [hold(0, 2, 400), hold(0, 5, 400)];
        assert_eq!(
            stacked(&cs, &[0, 1], &[0.5, 0.0], &hw).unwrap(),
            vec![512, 0]
        );
    }
}
