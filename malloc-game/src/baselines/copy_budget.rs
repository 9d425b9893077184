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

#[derive(Clone, Copy, Debug, PartialEq)]
struct Queued {
    lo: usize,
    hi: usize,
    amount: f64,
    /// Where this copy is done, in cumulative budget seconds.
    finish: f64,
}

/// One FIFO budget over a program's ops.
#[derive(Clone, Debug)]
pub struct CopyBudget {
    /// `cum[t]` = the budget of ops `0..t`.
    cum: Vec<f64>,
    queue: Vec<Queued>,
    scratch: Vec<f64>,
}

impl CopyBudget {
    /// A budget of `per_op[t]` seconds at op `t`.
    pub fn new(per_op: &[f64]) -> CopyBudget {
        let mut cum = Vec::with_capacity(per_op.len() + 1);
        let mut acc = 0.0;
        cum.push(0.0);
        for &x in per_op {
            acc += x.max(0.0);
            cum.push(acc);
        }
        CopyBudget {
            cum,
            queue: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Rounding slack on a deadline: sums of many small floats drift.
    fn slack(&self, hi: usize) -> f64 {
        self.cum[hi] * 1e-12
    }

    /// Where a copy of `amount` seconds beside ops `lo..hi` would be queued and when it
    /// would finish, with the new finishes of the copies it pushes back in `pushed`; `None`
    /// if it or one of those would miss its window.
    fn place(
        &self,
        lo: usize,
        hi: usize,
        amount: f64,
        pushed: &mut Vec<f64>,
    ) -> Option<(usize, f64)> {
        pushed.clear();
        if lo >= hi {
            return None;
        }
        let pos = self.queue.partition_point(|c| (c.lo, c.hi) <= (lo, hi));
        let pointer = if pos == 0 {
            0.0
        } else {
            self.queue[pos - 1].finish
        };
        let finish = self.cum[lo].max(pointer) + amount;
        if finish > self.cum[hi] + self.slack(hi) {
            return None;
        }
        let mut p = finish;
        for c in &self.queue[pos..] {
            let f = self.cum[c.lo].max(p) + c.amount;
            if f == c.finish {
                break;
            }
            if f > self.cum[c.hi] + self.slack(c.hi) {
                return None;
            }
            pushed.push(f);
            p = f;
        }
        Some((pos, finish))
    }

    /// Whether a copy of `amount` seconds beside ops `lo..hi` would fit, changing nothing.
    pub fn fits(&self, lo: usize, hi: usize, amount: f64) -> bool {
        amount <= 0.0
            || self
                .place(lo, hi.min(self.cum.len() - 1), amount, &mut Vec::new())
                .is_some()
    }

    /// Adds a copy of `amount` seconds beside ops `lo..hi` if it and every copy queued
    /// behind it still finish within their windows; otherwise changes nothing and returns
    /// false. A copy of zero seconds always fits and is not queued.
    pub fn try_add(&mut self, lo: usize, hi: usize, amount: f64) -> bool {
        if amount <= 0.0 {
            return true;
        }
        let hi = hi.min(self.cum.len() - 1);
        let mut pushed = std::mem::take(&mut self.scratch);
        let placed = self.place(lo, hi, amount, &mut pushed);
        self.scratch = pushed;
        let Some((pos, finish)) = placed else {
            return false;
        };
        for (k, &f) in self.scratch.iter().enumerate() {
            self.queue[pos + k].finish = f;
        }
        self.queue.insert(
            pos,
            Queued {
                lo,
                hi,
                amount,
                finish,
            },
        );
        true
    }

    /// Queues a copy behind all others (callers add in FIFO order), charging it only what
    /// its window still has: for replaying copies accepted under another budget, which
    /// may not all fit this one.
    pub fn push_clipped(&mut self, lo: usize, hi: usize, amount: f64) {
        let hi = hi.min(self.cum.len() - 1);
        if lo >= hi || amount <= 0.0 {
            return;
        }
        let pointer = self.queue.last().map_or(0.0, |c| c.finish);
        let begin = self.cum[lo].max(pointer);
        let amount = amount.min(self.cum[hi] - begin);
        if amount <= 0.0 {
            return;
        }
        self.queue.push(Queued {
            lo,
            hi,
            amount,
            finish: begin + amount,
        });
    }

    /// The queue, for a later [`CopyBudget::restore`].
    pub fn snapshot(&self) -> Vec<(usize, usize, f64, f64)> {
        self.queue
            .iter()
            .map(|c| (c.lo, c.hi, c.amount, c.finish))
            .collect()
    }

    pub fn restore(&mut self, snap: &[(usize, usize, f64, f64)]) {
        self.queue.clear();
        self.queue
            .extend(snap.iter().map(|&(lo, hi, amount, finish)| Queued {
                lo,
                hi,
                amount,
                finish,
            }));
    }

    /// Number of queued copies.
    pub fn len(&self) -> usize {
        self.queue.len()
    }
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_fill_their_window_in_fifo_order() {
        // Four ops of 1 s each.
        let mut b = CopyBudget::new(&[1.0, 1.0, 1.0, 1.0]);
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
        let mut b = CopyBudget::new(&[1.0, 1.0, 1.0]);
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

    #[test]
    fn copies_are_served_in_issue_order() {
        // Four ops of 1 s each.
        let mut b = CopyBudget::new(&[1.0; 4]);
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
