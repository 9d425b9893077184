//! The time x address index behind [`super::Occupancy`] and the baselines' chunk heap.
//!
//! A best-fit query over ops `s..=e` needs the union of the address ranges of every rect
//! that overlaps the interval in time. Enumerating those rects costs their number, which
//! for a long interval (a weight resident from op 0) is most of the rects placed so far:
//! that made whole solvers quadratic. The union itself is small (rects live at one time
//! are disjoint in address and best fit packs them tightly), so the index keeps unions:
//! - a rect overlapping `s..=e` is either live at `s` or starts in `s+1..=e`;
//! - the rects live at `s` come from a stabbing query: each rect is listed at the
//!   `O(log T)` nodes of a segment tree over time that tile its interval; they are
//!   disjoint in address, so there are at most capacity / smallest size of them;
//! - the rects starting in `s+1..=e` are covered by `O(log T)` nodes of the same tree,
//!   each of which keeps the merged union of the address ranges of the rects starting in
//!   its time range.
//!
//! Nodes are shared through `Arc`s and copied only when written while shared
//! (`Arc::make_mut`): an index owned once is updated in place, and a clone costs one
//! pointer, after which each insert copies only the `O(log T)` nodes on its paths. That
//! is what lets a beam search keep many games cheaply.

use std::sync::Arc;

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
    kids: [Option<Arc<Node>>; 2],
    /// The rects whose interval covers this node's time range but not its parent's.
    cover: Vec<Entry>,
    /// The union of the rects starting in this node's time range.
    union: Union,
    /// At a leaf: the rects starting at its op, by id.
    starts: Vec<Entry>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TimeIndex {
    /// Ops `0..horizon` may be held.
    horizon: usize,
    /// The tree's time range is `0..leaves`, a power of two `>= horizon`.
    leaves: usize,
    root: Option<Arc<Node>>,
    free_ids: Vec<usize>,
    next_id: usize,
    live: usize,
}

/// The halves of a node's time range `l..=r`.
fn halves(l: usize, r: usize) -> [(usize, usize); 2] {
    let mid = l + (r - l) / 2;
    [(l, mid), (mid + 1, r)]
}

impl TimeIndex {
    /// An empty index over ops `0..horizon`.
    pub fn new(horizon: usize) -> TimeIndex {
        TimeIndex {
            horizon,
            leaves: horizon.max(1).next_power_of_two(),
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
        self.root
            .as_ref()
            .and_then(|n| n.union.last())
            .map_or(0, |p| p.1)
    }

    /// The same index over at least `horizon` ops; rects keep their ids.
    pub fn grown(&self, horizon: usize) -> TimeIndex {
        let mut g = TimeIndex {
            free_ids: self.free_ids.clone(),
            next_id: self.next_id,
            live: self.live,
            ..TimeIndex::new(horizon.max(self.horizon))
        };
        let mut entries = Vec::with_capacity(self.live);
        self.starting_in(0, self.leaves, |id, &rect| entries.push(Entry { id, rect }));
        entries.sort_unstable_by_key(|e| e.id);
        for e in entries {
            g.link(&e);
        }
        g
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
        let root = self.root.get_or_insert_with(Default::default);
        insert_at(root, 0, self.leaves - 1, e, true);
    }

    /// Removes rect `id`, which must be `rect`; the unions on its start's path are
    /// rebuilt from their children.
    pub fn remove(&mut self, id: usize, rect: Rect) {
        if let Some(root) = self.root.as_mut() {
            remove_at(root, 0, self.leaves - 1, &Entry { id, rect }, true);
            self.free_ids.push(id);
            self.live -= 1;
        }
    }

    /// Calls `f(id, rect)` for every rect live at op `t`, from the leaf's list up to the
    /// root's.
    pub fn stab(&self, t: usize, mut f: impl FnMut(usize, &Rect)) {
        if t >= self.horizon {
            return;
        }
        let mut path: Vec<&Node> = Vec::with_capacity(64);
        let (mut l, mut r) = (0, self.leaves - 1);
        let mut node = self.root.as_deref();
        while let Some(n) = node {
            path.push(n);
            if l == r {
                break;
            }
            let k = usize::from(t > l + (r - l) / 2);
            (l, r) = halves(l, r)[k];
            node = n.kids[k].as_deref();
        }
        for n in path.iter().rev() {
            for e in &n.cover {
                f(e.id, &e.rect);
            }
        }
    }

    /// Calls `f(id, rect)` for every rect starting in ops `lo..=hi`, by start then id.
    pub fn starting_in(&self, lo: usize, hi: usize, mut f: impl FnMut(usize, &Rect)) {
        if let Some(root) = self.root.as_deref() {
            starts_in(root, 0, self.leaves - 1, lo, hi, &mut f);
        }
    }

    /// Calls `f` on the nodes whose time ranges tile `lo..=hi` (those that exist).
    fn for_each_tile(&self, lo: usize, hi: usize, mut f: impl FnMut(&Node)) {
        if let Some(root) = self.root.as_deref() {
            tiles(root, 0, self.leaves - 1, lo, hi, &mut f);
        }
    }

    /// Appends to `out` address ranges whose union is exactly the union of the rects
    /// overlapping ops `s..=e` in time (unsorted, possibly overlapping each other).
    /// `O(log T + k + u)` for `k` rects live at `s` and `u` pieces in the unions used.
    pub fn busy(&self, s: usize, e: usize, out: &mut Vec<(u64, u64)>) {
        if s > e || s >= self.horizon {
            return;
        }
        let e = e.min(self.horizon - 1);
        self.stab(s, |_, r| out.push((r.offset, r.top)));
        if e > s {
            self.for_each_tile(s + 1, e, |n| out.extend_from_slice(&n.union));
        }
    }

    /// Whether no rect overlapping ops `s..=e` in time meets bytes `[lo, hi)`.
    pub fn is_free(&self, s: usize, e: usize, lo: u64, hi: u64) -> bool {
        if s > e || s >= self.horizon {
            return true;
        }
        let e = e.min(self.horizon - 1);
        let mut free = true;
        self.stab(s, |_, r| free &= !(r.offset < hi && lo < r.top));
        if free && e > s {
            self.for_each_tile(s + 1, e, |n| free &= !meets(&n.union, lo, hi));
        }
        free
    }
}

/// Enters `e` below `node` (time range `l..=r`): in the unions on its start's path, in
/// the cover lists of the nodes tiling its interval (`may_cover`: no ancestor took it).
fn insert_at(node: &mut Arc<Node>, l: usize, r: usize, e: &Entry, may_cover: bool) {
    let n = Arc::make_mut(node);
    let Rect { start, end, .. } = e.rect;
    let has_start = l <= start && start <= r;
    if has_start {
        union_insert(&mut n.union, e.rect.offset, e.rect.top);
    }
    let covered = may_cover && start <= l && r <= end;
    if covered {
        n.cover.push(*e);
    }
    if l == r {
        if has_start {
            let i = n.starts.partition_point(|x| x.id < e.id);
            n.starts.insert(i, *e);
        }
        return;
    }
    for (k, (cl, cr)) in halves(l, r).into_iter().enumerate() {
        let holds_start = cl <= start && start <= cr;
        let to_cover = may_cover && !covered && start <= cr && cl <= end;
        if holds_start || to_cover {
            let kid = n.kids[k].get_or_insert_with(Default::default);
            insert_at(kid, cl, cr, e, may_cover && !covered);
        }
    }
}

/// Undoes [`insert_at`].
fn remove_at(node: &mut Arc<Node>, l: usize, r: usize, e: &Entry, may_cover: bool) {
    let n = Arc::make_mut(node);
    let Rect { start, end, .. } = e.rect;
    let has_start = l <= start && start <= r;
    let covered = may_cover && start <= l && r <= end;
    if covered {
        if let Some(i) = n.cover.iter().position(|x| x.id == e.id) {
            n.cover.swap_remove(i);
        }
    }
    if l == r {
        if has_start {
            n.starts.retain(|x| x.id != e.id);
            n.union.clear();
            for x in &n.starts {
                union_insert(&mut n.union, x.rect.offset, x.rect.top);
            }
        }
        return;
    }
    for (k, (cl, cr)) in halves(l, r).into_iter().enumerate() {
        let holds_start = cl <= start && start <= cr;
        let to_cover = may_cover && !covered && start <= cr && cl <= end;
        if holds_start || to_cover {
            if let Some(kid) = n.kids[k].as_mut() {
                remove_at(kid, cl, cr, e, may_cover && !covered);
            }
        }
    }
    if has_start {
        let empty = Union::new();
        let union = |k: usize| n.kids[k].as_deref().map_or(&empty, |x| &x.union);
        n.union = union_of(union(0), union(1));
    }
}

fn starts_in(n: &Node, l: usize, r: usize, lo: usize, hi: usize, f: &mut impl FnMut(usize, &Rect)) {
    if hi < l || r < lo || lo > hi {
        return;
    }
    if l == r {
        for e in &n.starts {
            f(e.id, &e.rect);
        }
        return;
    }
    for (k, (cl, cr)) in halves(l, r).into_iter().enumerate() {
        if let Some(kid) = n.kids[k].as_deref() {
            starts_in(kid, cl, cr, lo, hi, f);
        }
    }
}

fn tiles(n: &Node, l: usize, r: usize, lo: usize, hi: usize, f: &mut impl FnMut(&Node)) {
    if hi < l || r < lo || lo > hi {
        return;
    }
    if lo <= l && r <= hi {
        f(n);
        return;
    }
    for (k, (cl, cr)) in halves(l, r).into_iter().enumerate() {
        if let Some(kid) = n.kids[k].as_deref() {
            tiles(kid, cl, cr, lo, hi, f);
        }
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
    fn naive(rects: &[(usize, Rect)], s: usize, e: usize) -> Union {
        let mut u = Vec::new();
        for (_, r) in rects {
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
    fn unions_match_brute_force_through_inserts_removes_and_clones() {
        let mut x: u64 = 99;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let t = 29;
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
            let want_peak = live.iter().map(|(_, r)| r.top).max().unwrap_or(0);
            assert_eq!(idx.peak(), want_peak);
            if step % 50 == 0 {
                // A clone must not see later changes: the nodes are copied on write.
                snapshots.push((idx.clone(), live.clone()));
            }
        }
        snapshots.push((idx.grown(2 * t), live.clone()));
        snapshots.push((idx, live));
        for (index, live) in &snapshots {
            assert_eq!(index.len(), live.len());
            for (s, e) in (0..t).flat_map(|s| (s..t + 2).map(move |e| (s, e))) {
                let want = naive(live, s, e);
                let mut got = Vec::new();
                index.busy(s, e, &mut got);
                assert_eq!(normalised(got), want, "{s}..={e}");
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
        assert!(meets(&vec![(10, 20)], 19, 25));
        assert!(!meets(&vec![(10, 20)], 20, 25));
        assert!(!meets(&vec![(10, 20)], 0, 10));
    }
}
