//! The time x address index behind [`super::Occupancy`] and the baselines' chunk heap.
//!
//! A best-fit query over ops `s..=e` needs the union of the address ranges of every rect
//! that overlaps the interval in time. Enumerating those rects costs their number, which
//! for a long interval (a weight resident from op 0) is most of the rects placed so far:
//! that made whole solvers quadratic. The union itself is small (rects live at one time
//! are disjoint in address and best fit packs them tightly), so the index keeps unions:
//! - a rect overlapping `s..=e` is either live at `s` or starts in `s+1..=e`;
//! - the rects live at `s` come from a stabbing query: each rect is listed at the
//!   `O(log T)` nodes of a segment tree over time that tile its interval (with the union
//!   of each node's list); they are disjoint in address, so there are at most capacity /
//!   smallest size of them;
//! - the rects starting in `s+1..=e` are covered by `O(log T)` nodes of the same tree,
//!   each of which keeps the merged union of the address ranges of the rects starting in
//!   its time range.
//!
//! The tree is a flat array (node `i` has children `2i` and `2i + 1`; op `t`'s leaf is
//! `leaves + t`): a query walks indices, not pointers. Nodes spanning fewer than
//! `2^LOW` ops keep no union of starts: a query reads their few leaves' lists instead,
//! which spares an insert most of its small allocations. The array is persistent
//! (`shared_array.rs`): a clone shares it, and a change copies only the
//! path to what changed and the nodes it writes.

use super::shared_array::SharedArray;
use super::Scratch;

/// Nodes spanning fewer than `2^LOW` ops keep no union of the rects starting there.
const LOW: u32 = 4;

/// A rect: bytes `[offset, top)` held over ops `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rect {
    pub start: usize,
    pub end: usize,
    pub offset: u64,
    pub top: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    id: usize,
    rect: Rect,
}

/// Sorted, disjoint, non-touching address ranges `[lo, hi)`. Adjacent ranges are merged:
/// a gap walk sees no gap between them either.
type Union = Vec<(u64, u64)>;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Node {
    /// The rects whose interval covers this node's time range but not its parent's.
    cover: Vec<Entry>,
    /// The union of `cover`: what a query needs of it, in fewer pieces, sorted.
    cover_union: Union,
    /// The union of the rects starting in this node's time range (empty below the
    /// nodes that keep one: see [`LOW`]).
    union: Union,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TimeIndex {
    /// Ops `0..horizon` may be held.
    horizon: usize,
    /// The tree's time range is `0..leaves`, a power of two `>= horizon`.
    leaves: usize,
    /// Nodes `1..2 * leaves`, persistent: an index clones in `O(1)` (a game state holds
    /// one per level, and a beam search clones states), and a change copies only the
    /// pieces it touches (`shared_array.rs`). Node 0 is unused.
    nodes: SharedArray<Node>,
    /// Per op: the rects starting there, by id.
    starts: SharedArray<Vec<Entry>>,
    free_ids: Vec<usize>,
    next_id: usize,
    live: usize,
}

impl TimeIndex {
    /// An empty index over ops `0..horizon`.
    pub fn new(horizon: usize) -> TimeIndex {
        let leaves = horizon.max(1).next_power_of_two();
        TimeIndex {
            horizon,
            leaves,
            nodes: SharedArray::new(2 * leaves),
            starts: SharedArray::new(leaves),
            ..TimeIndex::default()
        }
    }

    pub fn horizon(&self) -> usize {
        self.horizon
    }
    pub fn len(&self) -> usize {
        self.live
    }
    /// The highest top of any rect (0 when empty): the end of the root's union.
    pub fn peak(&self) -> u64 {
        if self.keeps_union(1) {
            return self.nodes[1].union.last().map_or(0, |p| p.1);
        }
        let tops = self
            .starts
            .iter()
            .flat_map(|l| l.iter())
            .map(|e| e.rect.top);
        tops.max().unwrap_or(0)
    }

    /// Whether node `n` keeps the union of the rects starting in its range.
    fn keeps_union(&self, n: usize) -> bool {
        n < 2 * (self.leaves >> LOW)
    }

    /// The ops node `n` spans.
    fn span(&self, n: usize) -> std::ops::Range<usize> {
        let depth = n.ilog2();
        let size = self.leaves >> depth;
        let first = (n - (1 << depth)) * size;
        first..first + size
    }

    /// The union of the rects starting in node `n`'s span, from the leaves' lists.
    fn union_from_starts(&self, n: usize) -> Union {
        let mut u = Union::new();
        for e in self.span(n).flat_map(|t| &self.starts[t]) {
            union_insert(&mut u, e.rect.offset, e.rect.top);
        }
        u
    }

    /// Adds a rect (`start <= end < horizon`, `offset < top`); returns its id, reusing
    /// the ids of removed rects, last removed first.
    pub fn insert(&mut self, rect: Rect) -> usize {
        debug_assert!(rect.start <= rect.end && rect.end < self.horizon && rect.offset < rect.top);
        let id = self.free_ids.pop().unwrap_or_else(|| {
            self.next_id += 1;
            self.next_id - 1
        });
        self.link(&Entry { id, rect });
        self.live += 1;
        id
    }

    fn link(&mut self, e: &Entry) {
        let Rect {
            start,
            end,
            offset,
            top,
        } = e.rect;
        let nodes = &mut self.nodes;
        for_each_tile(self.leaves, start, end, |n| {
            let node = nodes.get_mut(n);
            node.cover.push(*e);
            union_insert(&mut node.cover_union, offset, top);
        });
        let list = self.starts.get_mut(start);
        let at = list.partition_point(|x| x.id < e.id);
        list.insert(at, *e);
        let mut n = start + self.leaves;
        while n >= 1 && !self.keeps_union(n) {
            n >>= 1;
        }
        // A node's span holds its children's, so its union holds theirs: once a union
        // already covers the rect, every union above does too, and is left unwritten (a
        // write copies the path to the node if another index shares it).
        while n >= 1 && !covers(&self.nodes[n].union, offset, top) {
            union_insert(&mut self.nodes.get_mut(n).union, offset, top);
            n >>= 1;
        }
    }

    /// Removes rects `(id, rect)` (each id's own rect); the unions they were part of are
    /// rebuilt once each, however many of the rects they held.
    pub fn remove_many(&mut self, items: &[(usize, Rect)]) {
        if items.len() == 1 {
            return self.remove(items[0].0, items[0].1);
        }
        let mut covers: Vec<usize> = Vec::new();
        let mut unions: Vec<usize> = Vec::new();
        for &(id, rect) in items {
            let nodes = &mut self.nodes;
            for_each_tile(self.leaves, rect.start, rect.end, |n| {
                let node = nodes.get_mut(n);
                if let Some(i) = node.cover.iter().position(|x| x.id == id) {
                    node.cover.swap_remove(i);
                }
                covers.push(n);
            });
            self.starts.get_mut(rect.start).retain(|x| x.id != id);
            let mut n = rect.start + self.leaves;
            while n >= 1 && !self.keeps_union(n) {
                n >>= 1;
            }
            if n >= 1 {
                unions.push(n);
            }
            self.free_ids.push(id);
            self.live -= 1;
        }
        covers.sort_unstable();
        covers.dedup();
        for n in covers {
            let node = self.nodes.get_mut(n);
            node.cover_union.clear();
            for x in &node.cover {
                union_insert(&mut node.cover_union, x.rect.offset, x.rect.top);
            }
        }
        // The lowest nodes that keep a union read their leaves; the others their
        // children. Children come after their parents in heap order: deepest first.
        unions.sort_unstable();
        unions.dedup();
        for &n in &unions {
            let union = self.union_from_starts(n);
            self.nodes.get_mut(n).union = union;
        }
        let mut level: Vec<usize> = unions;
        while level.first().is_some_and(|&n| n > 1) {
            level = level.iter().map(|&n| n >> 1).collect();
            level.dedup();
            for &n in &level {
                let union = union_of(&self.nodes[2 * n].union, &self.nodes[2 * n + 1].union);
                self.nodes.get_mut(n).union = union;
            }
        }
    }

    /// Removes rect `id`, which must be `rect`; the unions it was part of are rebuilt.
    pub fn remove(&mut self, id: usize, rect: Rect) {
        let nodes = &mut self.nodes;
        for_each_tile(self.leaves, rect.start, rect.end, |n| {
            let node = nodes.get_mut(n);
            if let Some(i) = node.cover.iter().position(|x| x.id == id) {
                node.cover.swap_remove(i);
            }
            node.cover_union.clear();
            for x in &node.cover {
                union_insert(&mut node.cover_union, x.rect.offset, x.rect.top);
            }
        });
        self.starts.get_mut(rect.start).retain(|x| x.id != id);
        let mut n = rect.start + self.leaves;
        while n >= 1 && !self.keeps_union(n) {
            n >>= 1;
        }
        if n >= 1 {
            let union = self.union_from_starts(n);
            self.nodes.get_mut(n).union = union;
        }
        while n > 1 {
            n >>= 1;
            let union = union_of(&self.nodes[2 * n].union, &self.nodes[2 * n + 1].union);
            self.nodes.get_mut(n).union = union;
        }
        self.free_ids.push(id);
        self.live -= 1;
    }

    /// Calls `f(id, rect)` for every rect live at op `t`, from the leaf's list up to the
    /// root's.
    pub fn stab(&self, t: usize, mut f: impl FnMut(usize, &Rect)) {
        if t >= self.horizon {
            return;
        }
        let mut n = t + self.leaves;
        while n >= 1 {
            for e in &self.nodes[n].cover {
                f(e.id, &e.rect);
            }
            n >>= 1;
        }
    }

    /// Calls `f(id, rect)` for every rect starting in ops `lo..=hi`, by start then id.
    /// Skips the subtrees where nothing starts: `O(log T)` per op with a start.
    pub fn starting_in(&self, lo: usize, hi: usize, mut f: impl FnMut(usize, &Rect)) {
        let hi = hi.min(self.leaves.saturating_sub(1));
        if lo <= hi && self.leaves > 0 {
            self.starts_below(1, 0, self.leaves - 1, lo, hi, &mut f);
        }
    }

    fn starts_below(
        &self,
        n: usize,
        l: usize,
        r: usize,
        lo: usize,
        hi: usize,
        f: &mut impl FnMut(usize, &Rect),
    ) {
        if hi < l || r < lo || (self.keeps_union(n) && self.nodes[n].union.is_empty()) {
            return;
        }
        if l == r {
            for e in &self.starts[l] {
                f(e.id, &e.rect);
            }
            return;
        }
        let mid = l + (r - l) / 2;
        self.starts_below(2 * n, l, mid, lo, hi, f);
        self.starts_below(2 * n + 1, mid + 1, r, lo, hi, f);
    }

    /// Calls `f` on address ranges (sorted, disjoint lists) whose union is the union of
    /// the rects overlapping ops `s..=e` in time: the rects live at `s`, then the unions
    /// tiling `s+1..=e`; stops early when `f` returns false.
    fn walk(&self, s: usize, e: usize, mut f: impl FnMut(&[(u64, u64)]) -> bool) {
        if s > e || s >= self.horizon {
            return;
        }
        let e = e.min(self.horizon - 1);
        let mut n = s + self.leaves;
        while n >= 1 {
            let u = &self.nodes[n].cover_union;
            if !u.is_empty() && !f(u) {
                return;
            }
            n >>= 1;
        }
        if e > s {
            let mut go = true;
            for_each_tile(self.leaves, s + 1, e, |n| {
                if !go {
                    return;
                }
                if self.keeps_union(n) {
                    let u = &self.nodes[n].union;
                    if !u.is_empty() {
                        go = f(u);
                    }
                    return;
                }
                self.starts.for_each_in(self.span(n), |list| {
                    for x in list {
                        if go {
                            go = f(&[(x.rect.offset, x.rect.top)]);
                        }
                    }
                });
            });
        }
    }

    /// Hands `out` address ranges whose union is exactly the union of the rects
    /// overlapping ops `s..=e` in time (possibly overlapping each other).
    /// `O(log T + p)` for the `p` pieces of the unions used.
    pub fn busy(&self, s: usize, e: usize, out: &mut Scratch) {
        self.walk(s, e, |pieces| {
            out.add(pieces);
            true
        });
    }

    /// Whether no rect overlapping ops `s..=e` in time meets bytes `[lo, hi)`.
    pub fn is_free(&self, s: usize, e: usize, lo: u64, hi: u64) -> bool {
        let mut free = true;
        self.walk(s, e, |pieces| {
            free = !meets(pieces, lo, hi);
            free
        });
        free
    }
}

/// The nodes whose time ranges tile ops `lo..=hi`, in a tree of `leaves` leaves.
fn for_each_tile(leaves: usize, lo: usize, hi: usize, mut f: impl FnMut(usize)) {
    let (mut l, mut r) = (lo + leaves, hi + 1 + leaves);
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

/// Whether a piece of `u` meets `[lo, hi)` (shares at least one byte).
fn meets(u: &[(u64, u64)], lo: u64, hi: u64) -> bool {
    let i = u.partition_point(|p| p.1 <= lo);
    u.get(i).is_some_and(|p| p.0 < hi)
}

/// Whether one piece of `u` holds all of `[lo, hi)`.
fn covers(u: &[(u64, u64)], lo: u64, hi: u64) -> bool {
    let i = u.partition_point(|p| p.1 < hi);
    u.get(i).is_some_and(|p| p.0 <= lo)
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
fn union_of(a: &[(u64, u64)], b: &[(u64, u64)]) -> Union {
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
    fn naive(rects: &[(usize, Rect)], s: usize, e: usize) -> Union {
        let mut u = Vec::new();
        for (_, r) in rects {
            if r.start <= e && s <= r.end {
                union_insert(&mut u, r.offset, r.top);
            }
        }
        u
    }

    #[test]
    fn unions_match_brute_force_through_inserts_removes_and_clones() {
        let mut x: u64 = 99;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        for t in [29, 300] {
            let mut idx = TimeIndex::new(t);
            let mut live: Vec<(usize, Rect)> = Vec::new();
            let mut snapshots = Vec::new();
            for step in 0..300 {
                let s = next(t as u64) as usize;
                let e = (s + next(12) as usize).min(t - 1);
                let o = next(200);
                let r = Rect {
                    start: s,
                    end: e,
                    offset: o,
                    top: o + 1 + next(30),
                };
                live.push((idx.insert(r), r));
                if next(3) == 0 {
                    let (id, r) = live.swap_remove(next(live.len() as u64) as usize);
                    idx.remove(id, r);
                }
                if next(7) == 0 && live.len() > 4 {
                    // Several at once, as a line swaps a few buffers' chunks.
                    let k = 1 + next(4) as usize;
                    let gone: Vec<(usize, Rect)> = (0..k)
                        .map(|_| live.swap_remove(next(live.len() as u64) as usize))
                        .collect();
                    idx.remove_many(&gone);
                }
                let want_peak = live.iter().map(|(_, r)| r.top).max().unwrap_or(0);
                assert_eq!(idx.peak(), want_peak);
                if step % 50 == 0 {
                    // A clone must not see later changes: the nodes are copied on write.
                    snapshots.push((idx.clone(), live.clone()));
                }
            }
            snapshots.push((idx, live));
            for (index, live) in &snapshots {
                assert_eq!(index.len(), live.len());
                let step = if t > 100 { 11 } else { 1 };
                let pairs = (0..t)
                    .step_by(step)
                    .flat_map(|s| (s..t + 2).step_by(step).map(move |e| (s, e)));
                for (s, e) in pairs {
                    let want = naive(live, s, e);
                    let mut got = Scratch::default();
                    index.busy(s, e, &mut got);
                    let mut u = Vec::new();
                    for &(lo, hi) in got.sorted() {
                        union_insert(&mut u, lo, hi);
                    }
                    assert_eq!(u, want, "{s}..={e}");
                    for lo in (0..240).step_by(7) {
                        let hi = lo + 1 + (lo % 13);
                        let free = !want.iter().any(|p| p.0 < hi && lo < p.1);
                        assert_eq!(index.is_free(s, e, lo, hi), free, "{s}..={e} [{lo},{hi})");
                    }
                }
                let mut starts = Vec::new();
                index.starting_in(3, 17, |id, r| starts.push((r.start, id)));
                let mut want: Vec<_> = live
                    .iter()
                    .filter(|(_, r)| (3..=17).contains(&r.start))
                    .map(|(id, r)| (r.start, *id))
                    .collect();
                want.sort_unstable();
                assert_eq!(starts, want);
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
        let (a, b) = (vec![(0, 5), (9, 10)], vec![(5, 6), (20, 30)]);
        assert_eq!(union_of(&a, &b), vec![(0, 6), (9, 10), (20, 30)]);
        assert!(meets(&[(10, 20)], 19, 25));
        assert!(!meets(&[(10, 20)], 20, 25));
        assert!(!meets(&[(10, 20)], 0, 10));
    }
}
