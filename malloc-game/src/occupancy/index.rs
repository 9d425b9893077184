//! The time x address index behind [`super::Occupancy`] and the baselines' chunk heap.
//!
//! A best-fit query over ops `s..=e` needs the union of the address ranges of every rect
//! that overlaps the interval in time. Enumerating those rects costs their number, which
//! for a long interval (a weight resident from op 0) is most of the rects placed so far:
//! that made whole solvers quadratic. The union itself is small (rects live at one time
//! are disjoint in address and best fit packs them tightly), so the index keeps unions:
//! - a rect overlapping `s..=e` is either live at `s` or starts in `s+1..=e`;
//! - the rects live at `s` come from a stabbing query on a segment tree over time (each
//!   rect sits at the `O(log T)` nodes that tile its interval); they are disjoint in
//!   address, so there are at most capacity / smallest size of them;
//! - the rects starting in `s+1..=e` are covered by the `O(log T)` nodes of a second
//!   segment tree, over start times, whose nodes keep the merged union of the address
//!   ranges of the rects starting in their range.
//!
//! Adjacent ranges are merged in the unions: a gap walk sees no gap between them either.

use std::collections::BTreeSet;

/// A rect: bytes `[offset, top)` held over ops `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rect {
    pub start: usize,
    pub end: usize,
    pub offset: u64,
    pub top: u64,
}

/// Sorted, disjoint, non-touching address ranges `[lo, hi)`.
type Union = Vec<(u64, u64)>;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TimeIndex {
    /// Ops `0..horizon` may be held.
    horizon: usize,
    /// Leaves of both segment trees: a power of two `>= horizon`.
    leaves: usize,
    rects: Vec<Option<Rect>>,
    free_ids: Vec<usize>,
    /// Stabbing tree: node `i` lists the rects whose interval covers the node's whole time
    /// range but not its parent's.
    cover: Vec<Vec<u32>>,
    /// Start tree: node `i` holds the union of the rects starting in its time range.
    unions: Vec<Union>,
    by_start: BTreeSet<(usize, u32)>,
    live: usize,
}

impl TimeIndex {
    /// An empty index over ops `0..horizon`.
    pub fn new(horizon: usize) -> TimeIndex {
        let leaves = horizon.max(1).next_power_of_two();
        TimeIndex {
            horizon,
            leaves,
            rects: Vec::new(),
            free_ids: Vec::new(),
            cover: vec![Vec::new(); 2 * leaves],
            unions: vec![Vec::new(); 2 * leaves],
            by_start: BTreeSet::new(),
            live: 0,
        }
    }

    pub fn horizon(&self) -> usize {
        self.horizon
    }
    pub fn len(&self) -> usize {
        self.live
    }
    /// Every rect with its id, in id (insertion) order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Rect)> {
        self.rects
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
    }
    /// The highest top of any rect (0 when empty): the end of the root's union.
    pub fn peak(&self) -> u64 {
        self.unions.get(1).and_then(|u| u.last()).map_or(0, |p| p.1)
    }

    /// The same index over at least `horizon` ops; rects keep their ids.
    pub fn grown(&self, horizon: usize) -> TimeIndex {
        let mut g = TimeIndex::new(horizon.max(self.horizon));
        g.rects = self.rects.clone();
        g.free_ids = self.free_ids.clone();
        for (id, r) in self.iter() {
            g.link(id, *r);
        }
        g.live = self.live;
        g
    }

    /// The nodes whose union is exactly the leaf range `[lo, hi]`.
    fn for_each_node(&self, lo: usize, hi: usize, mut f: impl FnMut(usize)) {
        let (mut l, mut r) = (lo + self.leaves, hi + 1 + self.leaves);
        while l < r {
            if l & 1 == 1 {
                f(l);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                f(r);
            }
            l >>= 1;
            r >>= 1;
        }
    }

    /// Adds a rect (`start <= end < horizon`, `offset < top`); returns its id, reusing
    /// the ids of removed rects, last removed first.
    pub fn insert(&mut self, rect: Rect) -> usize {
        debug_assert!(rect.start <= rect.end && rect.end < self.horizon && rect.offset < rect.top);
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.rects[id] = Some(rect);
                id
            }
            None => {
                self.rects.push(Some(rect));
                self.rects.len() - 1
            }
        };
        self.link(id, rect);
        self.live += 1;
        id
    }

    /// Enters rect `id` in both trees and the start order.
    fn link(&mut self, id: usize, rect: Rect) {
        let mut nodes = Vec::new();
        self.for_each_node(rect.start, rect.end, |n| nodes.push(n));
        for n in nodes {
            self.cover[n].push(id as u32);
        }
        let mut node = rect.start + self.leaves;
        while node >= 1 {
            union_insert(&mut self.unions[node], rect.offset, rect.top);
            node >>= 1;
        }
        self.by_start.insert((rect.start, id as u32));
    }

    /// Removes a rect; the unions on its start's path are rebuilt from their children.
    pub fn remove(&mut self, id: usize) -> Option<Rect> {
        let rect = self.rects.get_mut(id)?.take()?;
        let mut nodes = Vec::new();
        self.for_each_node(rect.start, rect.end, |n| nodes.push(n));
        for n in nodes {
            if let Some(i) = self.cover[n].iter().position(|&x| x as usize == id) {
                self.cover[n].swap_remove(i);
            }
        }
        self.by_start.remove(&(rect.start, id as u32));
        let leaf = rect.start + self.leaves;
        let mut rebuilt: Union = Vec::new();
        for &(_, other) in self.by_start.range((rect.start, 0)..=(rect.start, u32::MAX)) {
            if let Some(r) = &self.rects[other as usize] {
                union_insert(&mut rebuilt, r.offset, r.top);
            }
        }
        self.unions[leaf] = rebuilt;
        let mut node = leaf >> 1;
        while node >= 1 {
            self.unions[node] = union_of(&self.unions[2 * node], &self.unions[2 * node + 1]);
            node >>= 1;
        }
        self.free_ids.push(id);
        self.live -= 1;
        Some(rect)
    }

    /// Calls `f(id, rect)` for every rect live at op `t`, in tree order.
    pub fn stab(&self, t: usize, mut f: impl FnMut(usize, &Rect)) {
        if t >= self.horizon {
            return;
        }
        let mut node = t + self.leaves;
        while node >= 1 {
            for &id in &self.cover[node] {
                if let Some(r) = &self.rects[id as usize] {
                    f(id as usize, r);
                }
            }
            node >>= 1;
        }
    }

    /// Calls `f(id, rect)` for every rect starting in ops `lo..=hi`, by start then id.
    pub fn starting_in(&self, lo: usize, hi: usize, mut f: impl FnMut(usize, &Rect)) {
        if lo > hi {
            return;
        }
        for &(_, id) in self.by_start.range((lo, 0)..=(hi, u32::MAX)) {
            if let Some(r) = &self.rects[id as usize] {
                f(id as usize, r);
            }
        }
    }

    /// Appends to `out` address ranges whose union is exactly the union of the rects
    /// overlapping ops `s..=e` in time (unsorted, possibly overlapping each other).
    /// `O(log T + k + u)` for `k` rects live at `s` and `u` pieces in the start-tree unions.
    pub fn busy(&self, s: usize, e: usize, out: &mut Vec<(u64, u64)>) {
        if s > e || s >= self.horizon {
            return;
        }
        let e = e.min(self.horizon - 1);
        self.stab(s, |_, r| out.push((r.offset, r.top)));
        if e > s {
            self.for_each_node(s + 1, e, |n| out.extend_from_slice(&self.unions[n]));
        }
    }

    /// Whether no rect overlapping ops `s..=e` in time meets bytes `[offset, top)`.
    pub fn is_free(&self, s: usize, e: usize, offset: u64, top: u64) -> bool {
        if s > e || s >= self.horizon {
            return true;
        }
        let e = e.min(self.horizon - 1);
        let mut free = true;
        self.stab(s, |_, r| free &= !(r.offset < top && offset < r.top));
        if free && e > s {
            self.for_each_node(s + 1, e, |n| free &= !meets(&self.unions[n], offset, top));
        }
        free
    }
}

/// Whether a piece of `u` meets `[lo, hi)` (shares at least one byte).
fn meets(u: &Union, lo: u64, hi: u64) -> bool {
    let i = u.partition_point(|p| p.1 <= lo);
    u.get(i).is_some_and(|p| p.0 < hi)
}

/// Adds `[lo, hi)` to `u`, merging it with the pieces it meets or touches.
fn union_insert(u: &mut Union, lo: u64, hi: u64) {
    if lo >= hi {
        return;
    }
    let i = u.partition_point(|p| p.1 < lo);
    let j = i + u[i..].partition_point(|p| p.0 <= hi);
    if i == j {
        u.insert(i, (lo, hi));
        return;
    }
    u[i] = (lo.min(u[i].0), hi.max(u[j - 1].1));
    u.drain(i + 1..j);
}

/// The union of two unions.
fn union_of(a: &Union, b: &Union) -> Union {
    let mut out: Union = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let next = if j == b.len() || (i < a.len() && a[i].0 <= b[j].0) {
            i += 1;
            a[i - 1]
        } else {
            j += 1;
            b[j - 1]
        };
        match out.last_mut() {
            Some(last) if next.0 <= last.1 => last.1 = last.1.max(next.1),
            _ => out.push(next),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A brute-force union of the rects overlapping `s..=e`.
    fn naive(rects: &[Option<Rect>], s: usize, e: usize) -> Union {
        let mut u = Vec::new();
        for r in rects.iter().flatten() {
            if r.start <= e && s <= r.end {
                union_insert(&mut u, r.offset, r.top);
            }
        }
        u
    }

    fn normalised(mut pieces: Vec<(u64, u64)>) -> Union {
        pieces.sort_unstable();
        let mut u = Vec::new();
        for (lo, hi) in pieces {
            union_insert(&mut u, lo, hi);
        }
        u
    }

    #[test]
    fn unions_match_brute_force_through_inserts_and_removes() {
        let mut x: u64 = 99;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let t = 29;
        let mut idx = TimeIndex::new(t);
        let mut ids = Vec::new();
        for _ in 0..300 {
            let s = next(t as u64) as usize;
            let e = (s + next(12) as usize).min(t - 1);
            let o = next(200);
            let r = Rect {
                start: s,
                end: e,
                offset: o,
                top: o + 1 + next(30),
            };
            ids.push(idx.insert(r));
            if next(3) == 0 {
                let k = next(ids.len() as u64) as usize;
                idx.remove(ids.swap_remove(k));
            }
            let want_peak = idx.iter().map(|(_, r)| r.top).max().unwrap_or(0);
            assert_eq!(idx.peak(), want_peak);
        }
        let grown = idx.grown(2 * t);
        for (s, e) in (0..t).flat_map(|s| (s..t + 2).map(move |e| (s, e))) {
            let want = naive(&idx.rects, s, e);
            for index in [&idx, &grown] {
                let mut got = Vec::new();
                index.busy(s, e, &mut got);
                assert_eq!(normalised(got), want, "{s}..={e}");
            }
            for lo in (0..240).step_by(7) {
                let hi = lo + 1 + (lo % 13);
                let free = !want.iter().any(|p| p.0 < hi && lo < p.1);
                assert_eq!(idx.is_free(s, e, lo, hi), free, "{s}..={e} [{lo},{hi})");
            }
        }
    }

    #[test]
    fn union_helpers_merge_touching_pieces() {
        let mut u = Vec::new();
        union_insert(&mut u, 10, 20);
        union_insert(&mut u, 30, 40);
        union_insert(&mut u, 20, 25);
        assert_eq!(u, vec![(10, 25), (30, 40)]);
        union_insert(&mut u, 0, 100);
        assert_eq!(u, vec![(0, 100)]);
        assert_eq!(union_of(&vec![(0, 5), (9, 10)], &vec![(5, 6), (20, 30)]), vec![(0, 6), (9, 10), (20, 30)]);
        assert!(meets(&vec![(10, 20)], 19, 25));
        assert!(!meets(&vec![(10, 20)], 20, 25));
        assert!(!meets(&vec![(10, 20)], 0, 10));
    }
}
