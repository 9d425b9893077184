//! XLA's asynchronous-copy budget (docs/xla-msa.md, "The copy budget"): each op can
//! carry copy work up to its own elapsed time, and copies consume it in FIFO order.
//!
//! A copy runs beside ops `lo..hi` (half-open) and needs `amount` seconds of them. Copies
//! are served in issue order (by `lo`; equal issue times by the earlier deadline `hi`,
//! then by arrival). Served greedily, each copy takes all the budget of the ops it runs
//! beside until it is done, so the state after any prefix of the queue is one pointer into
//! the cumulative budget: the next copy starts at `max(cum[lo], pointer)` and ends
//! `amount` later, and it fits iff that end is `<= cum[hi]`. Adding a copy recomputes the
//! pointers of the copies queued behind it (it may push them past their deadlines) and
//! stops as soon as one is unchanged, since all later ones then are too.

use crate::watch::{self, BudgetKind, KEY_MAX, KEY_MIN};
use imbl::OrdMap;
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::Arc;

/// A queued copy's place in the queue: by issue op, then deadline, then arrival.
pub(crate) type Key = crate::watch::CopyKey;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Queued {
    amount: f64,
    /// Where this copy is done, in cumulative budget seconds.
    finish: f64,
}

/// A change to undo: a copy was queued, or a queued copy's finish moved.
#[derive(Clone, Copy, Debug)]
enum Undo {
    Queued(Key),
    Finish(Key, f64),
}

/// One FIFO budget over a program's ops.
#[derive(Clone, Debug)]
pub(crate) struct CopyBudget {
    /// `cum[t]` = the budget of ops `0..t`; never changes, so clones share it.
    cum: Arc<[f64]>,
    /// An ordered map, not a vector: copies arrive in any time order, and inserting into
    /// the middle of a vector made a whole run quadratic.
    /// Persistent, so a game state that holds a budget clones in `O(1)`.
    queue: OrdMap<Key, Queued>,
    /// Arrivals so far: the last part of every key, so equal windows keep arrival order.
    arrivals: u64,
    scratch: Vec<(Key, f64)>,
    /// While a transaction is open ([`CopyBudget::begin`]): how to undo it.
    journal: Option<Vec<Undo>>,
    /// Which of the walk's budgets this is, for a watch ([`crate::watch`]).
    kind: BudgetKind,
}

impl CopyBudget {
    /// A budget of `per_op[t]` seconds at op `t`.
    pub(crate) fn new(per_op: &[f64], kind: BudgetKind) -> CopyBudget {
        let mut cum = Vec::with_capacity(per_op.len() + 1);
        let mut acc = 0.0;
        cum.push(0.0);
        for &x in per_op {
            acc += x.max(0.0);
            cum.push(acc);
        }
        CopyBudget {
            cum: cum.into(),
            queue: OrdMap::new(),
            arrivals: 0,
            scratch: Vec::new(),
            journal: None,
            kind,
        }
    }

    /// Rounding slack on a deadline: sums of many small floats drift.
    fn slack(&self, hi: usize) -> f64 {
        self.cum[hi] * 1e-12
    }

    /// When a copy of `amount` seconds beside ops `lo..hi`, queued at `key`, would
    /// finish, with the new finishes of the copies it pushes back in `pushed`; `None` if
    /// it or one of those would miss its window. `O(log n)` plus the copies pushed.
    fn place(&self, key: Key, amount: f64, pushed: &mut Vec<(Key, f64)>) -> Option<f64> {
        pushed.clear();
        let (lo, hi, _) = key;
        if lo >= hi {
            return None;
        }
        let before = self.queue.range(..key).next_back();
        // What the answer reads: the copy before the key, and those it pushes back.
        let first = before.map_or(KEY_MIN, |(&k, _)| k);
        let pointer = before.map_or(0.0, |(_, c)| c.finish);
        let finish = self.cum[lo].max(pointer) + amount;
        if finish > self.cum[hi] + self.slack(hi) {
            watch::budget(self.kind, first, key);
            return None;
        }
        let mut p = finish;
        let mut last = KEY_MAX;
        for (&k, c) in self.queue.range((Excluded(key), Unbounded)) {
            let f = self.cum[k.0].max(p) + c.amount;
            if f == c.finish {
                last = k;
                break;
            }
            if f > self.cum[k.1] + self.slack(k.1) {
                watch::budget(self.kind, first, k);
                return None;
            }
            pushed.push((k, f));
            p = f;
        }
        watch::budget(self.kind, first, last);
        Some(finish)
    }

    /// From now on, copies arrive with an order of at least `order` (the walk numbers a
    /// buffer's copies from its place in the pass, so that the same copies get the same
    /// keys in any game that reaches that buffer: [`CopyBudget::insert_key`]). Only the
    /// order among copies with the same window matters, and it stays the arrival order.
    pub(crate) fn order_from(&mut self, order: u64) {
        self.arrivals = self.arrivals.max(order);
    }

    /// The window a queued copy beside ops `lo..hi` has in its key (`None`: a copy of no
    /// time, which is not queued).
    pub(crate) fn window_of(&self, lo: usize, hi: usize, amount: f64) -> Option<(usize, usize)> {
        (amount > 0.0).then_some((lo, hi.min(self.cum.len() - 1)))
    }

    /// The arrivals so far (the order the next copy gets).
    pub(crate) fn arrivals(&self) -> u64 {
        self.arrivals
    }

    /// Sets the finishes of the copies after `from` (excluded) from `pointer` on, until one
    /// is already right: a queue where a copy was added or removed before them.
    fn refinish(&mut self, from: Key, mut pointer: f64) {
        let mut changed: Vec<(Key, f64)> = Vec::new();
        for (&k, c) in self.queue.range((Excluded(from), Unbounded)) {
            let f = self.cum[k.0].max(pointer) + c.amount;
            if f == c.finish {
                break;
            }
            changed.push((k, f));
            pointer = f;
        }
        for (k, f) in changed {
            if let Some(c) = self.queue.get_mut(&k) {
                c.finish = f;
            }
        }
    }

    /// Queues a copy at `key` whatever the windows say (a copy another game of the same
    /// walk queued there), the copies behind it pushed back.
    pub(crate) fn insert_key(&mut self, key: Key, amount: f64) {
        let pointer = self
            .queue
            .range(..key)
            .next_back()
            .map_or(0.0, |(_, c)| c.finish);
        let finish = self.cum[key.0].max(pointer) + amount;
        self.queue.insert(key, Queued { amount, finish });
        self.refinish(key, finish);
    }

    /// Takes the copy at `key` out of the queue, the copies behind it moved up.
    pub(crate) fn remove_key(&mut self, key: Key) {
        if self.queue.remove(&key).is_none() {
            return;
        }
        let pointer = self
            .queue
            .range(..key)
            .next_back()
            .map_or(0.0, |(_, c)| c.finish);
        self.refinish(key, pointer);
    }

    /// The keys where this queue and the queue with the copies `added` (which this one
    /// holds) replaced by `removed` (which it does not) disagree, sorted: a copy in one
    /// only, or a copy both hold that finishes at another time. Empty if they agree
    /// everywhere. `added` is sorted by key.
    pub(crate) fn differing(&self, removed: &[(Key, f64)], added: &[(Key, f64)]) -> Vec<Key> {
        let mut out: Vec<Key> = removed.iter().chain(added).map(|c| c.0).collect();
        let Some(&first) = out.iter().min() else {
            return out;
        };
        let last = out.iter().copied().max().unwrap_or(first);
        let mut gone: Vec<(Key, f64)> = removed.to_vec();
        gone.sort_by_key(|a| a.0);
        let mut gone = gone.into_iter().peekable();
        // Both queues agree before `first`: the same copy comes before it in both.
        let mut other = self
            .queue
            .range(..first)
            .next_back()
            .map_or(0.0, |(_, c)| c.finish);
        for (&k, c) in self.queue.range(first..) {
            while let Some(&(g, amount)) = gone.peek().filter(|g| g.0 < k) {
                other = self.cum[g.0].max(other) + amount;
                gone.next();
            }
            if added.binary_search_by(|a| a.0.cmp(&k)).is_ok() {
                continue;
            }
            let f = self.cum[k.0].max(other) + c.amount;
            other = f;
            if f != c.finish {
                out.push(k);
            } else if k > last && gone.peek().is_none() {
                break;
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The key a copy beside ops `lo..hi` arriving now gets: behind every queued copy
    /// with the same window.
    fn next_key(&self, lo: usize, hi: usize) -> Key {
        (lo, hi, self.arrivals)
    }

    /// Whether a copy of `amount` seconds beside ops `lo..hi` would fit, changing nothing.
    pub(crate) fn fits(&self, lo: usize, hi: usize, amount: f64) -> bool {
        let hi = hi.min(self.cum.len() - 1);
        amount <= 0.0
            || self
                .place(self.next_key(lo, hi), amount, &mut Vec::new())
                .is_some()
    }

    /// Adds a copy of `amount` seconds beside ops `lo..hi` if it and every copy queued
    /// behind it still finish within their windows; otherwise changes nothing and returns
    /// false. A copy of zero seconds always fits and is not queued.
    pub(crate) fn try_add(&mut self, lo: usize, hi: usize, amount: f64) -> bool {
        if amount <= 0.0 {
            return true;
        }
        let hi = hi.min(self.cum.len() - 1);
        let key = self.next_key(lo, hi);
        let mut pushed = std::mem::take(&mut self.scratch);
        let placed = self.place(key, amount, &mut pushed);
        if let Some(finish) = placed {
            for &(k, f) in &pushed {
                if let Some(c) = self.queue.get_mut(&k) {
                    if let Some(j) = self.journal.as_mut() {
                        j.push(Undo::Finish(k, c.finish));
                    }
                    c.finish = f;
                }
            }
            self.enqueue(key, amount, finish);
        }
        self.scratch = pushed;
        placed.is_some()
    }

    fn enqueue(&mut self, key: Key, amount: f64, finish: f64) {
        self.queue.insert(key, Queued { amount, finish });
        self.arrivals += 1;
        if let Some(j) = self.journal.as_mut() {
            j.push(Undo::Queued(key));
        }
    }

    /// Queues a copy behind all others (callers add in FIFO order: by issue op, then
    /// deadline), charging it only what its window still has: for replaying copies
    /// accepted under another budget, which may not all fit this one.
    pub(crate) fn push_clipped(&mut self, lo: usize, hi: usize, amount: f64) {
        let hi = hi.min(self.cum.len() - 1);
        if lo >= hi || amount <= 0.0 {
            return;
        }
        let key = self.next_key(lo, hi);
        debug_assert!(self.queue.get_max().is_none_or(|(k, _)| *k < key));
        let pointer = self.queue.get_max().map_or(0.0, |(_, c)| c.finish);
        let begin = self.cum[lo].max(pointer);
        let amount = amount.min(self.cum[hi] - begin);
        if amount <= 0.0 {
            return;
        }
        self.enqueue(key, amount, begin + amount);
    }

    /// Starts recording changes, so that [`CopyBudget::rollback`] can undo them (a
    /// transaction already open is committed first).
    pub(crate) fn begin(&mut self) {
        self.journal = Some(Vec::new());
    }

    /// Keeps the changes since [`CopyBudget::begin`] and stops recording.
    pub(crate) fn commit(&mut self) {
        self.journal = None;
    }

    /// Undoes every change since [`CopyBudget::begin`] and stops recording; `O(log n)` per
    /// change, where restoring a snapshot costs the whole queue.
    pub(crate) fn rollback(&mut self) {
        for undo in self.journal.take().unwrap_or_default().into_iter().rev() {
            match undo {
                Undo::Queued(k) => {
                    self.queue.remove(&k);
                    self.arrivals -= 1;
                }
                Undo::Finish(k, f) => {
                    if let Some(c) = self.queue.get_mut(&k) {
                        c.finish = f;
                    }
                }
            }
        }
    }

    #[cfg(test)]
    /// The queue, for a later [`CopyBudget::restore`].
    pub(crate) fn snapshot(&self) -> Vec<(usize, usize, f64, f64)> {
        self.queue
            .iter()
            .map(|(k, c)| (k.0, k.1, c.amount, c.finish))
            .collect()
    }

    #[cfg(test)]
    pub(crate) fn restore(&mut self, snap: &[(usize, usize, f64, f64)]) {
        self.queue.clear();
        self.arrivals = 0;
        self.journal = None;
        for &(lo, hi, amount, finish) in snap {
            let key = self.next_key(lo, hi);
            self.enqueue(key, amount, finish);
        }
    }

    #[cfg(test)]
    /// Number of queued copies.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_fill_their_window_in_fifo_order() {
        // Four ops of 1 s each.
        let mut b = CopyBudget::new(&[1.0, 1.0, 1.0, 1.0], BudgetKind::Prefetch);
        // 1.5 s beside ops 0..2: done at 1.5.
        assert!(b.try_add(0, 2, 1.5));
        // Another from op 1 must wait for the first: 1.5 + 1.0 = 2.5 <= 3 (ops 1..3).
        assert!(b.try_add(1, 3, 1.0));
        // A third beside ops 1..3 would end at 3.5 > 3.
        assert!(!b.try_add(1, 3, 1.0));
        assert_eq!(b.len(), 2);
        // Beside ops 3..4 after the others: 3 + 0.5.
        assert!(b.try_add(3, 4, 0.5));
        // An empty window holds nothing; a free copy needs none.
        assert!(!b.try_add(2, 2, 0.1));
        assert!(b.try_add(2, 2, 0.0));
    }

    #[test]
    fn an_earlier_copy_may_not_push_a_queued_one_past_its_deadline() {
        let mut b = CopyBudget::new(&[1.0, 1.0, 1.0], BudgetKind::Prefetch);
        // Queued: 1 s beside op 1 exactly (ops 1..2).
        assert!(b.try_add(1, 2, 1.0));
        // A copy issued at op 0 goes first; 1.5 s would push the queued one to 2.5 > 2.
        let snap = b.snapshot();
        assert!(!b.try_add(0, 3, 1.5));
        assert_eq!(b.snapshot(), snap, "a refused copy changes nothing");
        // 1 s fits before it: done at 1, the queued one at 2.
        assert!(b.try_add(0, 3, 1.0));
        assert!(
            !b.try_add(0, 3, 0.5),
            "0.5 s more would push the copy at op 1 past its deadline"
        );
        b.restore(&snap);
        assert_eq!(b.len(), 1);
        assert!(b.try_add(2, 3, 1.0));
    }

    /// A queue of `copies` (key, amount) as if each was queued in key order.
    fn queue_of(per_op: &[f64], copies: &[((usize, usize, u64), f64)]) -> Vec<(Key, f64, f64)> {
        let b = CopyBudget::new(per_op, BudgetKind::Prefetch);
        let mut sorted = copies.to_vec();
        sorted.sort_by_key(|a| a.0);
        let mut p = 0.0f64;
        sorted
            .into_iter()
            .map(|(k, amount)| {
                let f = b.cum[k.0].max(p) + amount;
                p = f;
                (k, amount, f)
            })
            .collect()
    }

    fn entries(b: &CopyBudget) -> Vec<(Key, f64, f64)> {
        b.queue
            .iter()
            .map(|(k, c)| (*k, c.amount, c.finish))
            .collect()
    }

    /// Random copies over `n` ops (keys unique), some sharing a window.
    fn random_copies(rng: &mut impl rand::Rng, n: usize, count: usize) -> Vec<(Key, f64)> {
        (0..count as u64)
            .map(|i| {
                let lo = rng.random_range(0..n - 1);
                let hi = rng.random_range(lo + 1..=n);
                ((lo, hi, i), rng.random_range(0.1..2.0))
            })
            .collect()
    }

    #[test]
    fn copies_put_in_and_taken_out_leave_the_queue_they_would_have_made() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..200 {
            let n = rng.random_range(2..12);
            let per_op: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.5)).collect();
            let count = rng.random_range(1..10);
            let copies = random_copies(&mut rng, n, count);
            let mut b = CopyBudget::new(&per_op, BudgetKind::Prefetch);
            for &(k, amount) in &copies {
                b.insert_key(k, amount);
            }
            assert_eq!(entries(&b), queue_of(&per_op, &copies));
            let out = rng.random_range(0..copies.len());
            b.remove_key(copies[out].0);
            let mut left = copies.clone();
            left.remove(out);
            assert_eq!(entries(&b), queue_of(&per_op, &left));
        }
    }

    #[test]
    fn the_differing_keys_cover_every_disagreement() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for _ in 0..300 {
            let n = rng.random_range(2..16);
            let per_op: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.5)).collect();
            let count = rng.random_range(2..14);
            let all = random_copies(&mut rng, n, count);
            // Each copy is common, only in the old queue, or only in the new one.
            let (mut common, mut removed, mut added) = (Vec::new(), Vec::new(), Vec::new());
            for c in all {
                match rng.random_range(0..5) {
                    0 => removed.push(c),
                    1 => added.push(c),
                    _ => common.push(c),
                }
            }
            let with = |extra: &[(Key, f64)]| {
                let mut v = common.clone();
                v.extend_from_slice(extra);
                v
            };
            let old = queue_of(&per_op, &with(&removed));
            let mut new = CopyBudget::new(&per_op, BudgetKind::Prefetch);
            for &(k, amount) in &with(&added) {
                new.insert_key(k, amount);
            }
            added.sort_by_key(|a| a.0);
            let differ = new.differing(&removed, &added);
            let new_entries = entries(&new);
            let mut disagree: Vec<Key> = Vec::new();
            for e in &old {
                if !new_entries.contains(e) {
                    disagree.push(e.0);
                }
            }
            for e in &new_entries {
                if !old.contains(e) {
                    disagree.push(e.0);
                }
            }
            assert!(differ.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
            for k in &disagree {
                assert!(differ.contains(k), "{k:?} not among {differ:?}");
            }
            // Only those, and the copies moved in or out (which may agree by chance).
            for k in &differ {
                let moved = removed.iter().chain(&added).any(|c| c.0 == *k);
                assert!(moved || disagree.contains(k), "{k:?} agrees in both");
            }
        }
    }

    #[test]
    fn copies_are_served_in_issue_order() {
        // Four ops of 1 s each.
        let mut b = CopyBudget::new(&[1.0; 4], BudgetKind::Prefetch);
        // 1.5 s beside ops 1..3: done at 2.5 of the 3 s there.
        assert!(b.try_add(1, 3, 1.5));
        // Issued earlier, 1.5 s beside ops 0..2 is served first (done at 1.5) and pushes
        // the first copy to 3.0: both still fit.
        assert!(b.fits(0, 2, 1.5));
        assert!(b.try_add(0, 2, 1.5));
        // Any more work before op 3 would push the copy beside 1..3 past its deadline.
        assert!(!b.fits(0, 1, 0.1));
        assert!(!b.try_add(0, 1, 0.1));
        assert!(!b.try_add(2, 3, 0.1));
        // After it, op 3 is free.
        assert!(b.try_add(3, 4, 1.0));
        assert_eq!(b.len(), 3);
        // An empty window carries nothing.
        assert!(!b.try_add(2, 2, 1e-9));
    }
}
