//! The asynchronous-copy budgets a walk draws on: one for prefetches and, as XLA keeps
//! them apart, one for evictions, with the log of every copy so a later pass can rebuild
//! them on its own op times.

use crate::copy_budget::CopyBudget;
use crate::options::XlaOptions;
use crate::pass::Txn;
use crate::timing::Timing;
use accel_sim::OpId;

/// A copy the budgets carry: (eviction?, first op, end op (exclusive), seconds).
type LoggedCopy = (bool, OpId, OpId, f64);

#[derive(Clone, Debug)]
pub(crate) struct Budgets {
    pub(crate) prefetch: CopyBudget,
    /// `None`: evictions share the prefetch budget.
    eviction: Option<CopyBudget>,
    enabled: bool,
    /// Every copy charged so far, for rebuilding the budgets on new op times.
    /// Persistent, as the budgets' queues are: a game state clones in `O(1)`.
    pub(crate) log: imbl::Vector<LoggedCopy>,
}

impl Budgets {
    pub(crate) fn new(opts: &XlaOptions, timing: &Timing) -> Budgets {
        Budgets {
            prefetch: CopyBudget::new(&timing.elapsed),
            eviction: opts
                .separate_eviction_budget
                .then(|| CopyBudget::new(&timing.elapsed)),
            enabled: opts.copy_budget,
            log: imbl::Vector::new(),
        }
    }

    /// Budgets over `timing` already carrying the logged copies, in FIFO order, each
    /// charged what its window still has.
    pub(crate) fn replayed(self, opts: &XlaOptions, timing: &Timing) -> Budgets {
        let mut fresh = Budgets::new(opts, timing);
        let mut log: Vec<LoggedCopy> = self.log.into_iter().collect();
        log.sort_by_key(|c| (c.1, c.2));
        for &(eviction, lo, hi, amount) in &log {
            match (&mut fresh.eviction, eviction) {
                (Some(e), true) => e.push_clipped(lo, hi, amount),
                _ => fresh.prefetch.push_clipped(lo, hi, amount),
            }
        }
        fresh.log = log.into_iter().collect();
        fresh
    }

    pub(crate) fn each(&mut self, mut f: impl FnMut(&mut CopyBudget)) {
        f(&mut self.prefetch);
        if let Some(e) = self.eviction.as_mut() {
            f(e);
        }
    }

    /// Whether a prefetch of `amount` seconds beside ops `lo..hi` fits, changing nothing.
    pub(crate) fn prefetch_fits(&self, lo: OpId, hi: OpId, amount: f64) -> bool {
        !self.enabled || self.prefetch.fits(lo, hi, amount)
    }

    /// Whether evictions draw on the prefetches' budget: then an eviction made before a
    /// prefetch leaves the prefetch less room.
    pub(crate) fn shared(&self) -> bool {
        self.enabled && self.eviction.is_none()
    }

    /// Charges a copy of `amount` seconds beside ops `lo..hi` to its budget if it fits
    /// there (always, with the budgets off); under `txn` the budgets journal the change.
    pub(crate) fn try_copy(
        &mut self,
        txn: &mut Txn,
        eviction: bool,
        lo: OpId,
        hi: OpId,
        amount: f64,
    ) -> bool {
        if !self.enabled {
            return true;
        }
        if txn.record && txn.budget.is_none() {
            self.each(CopyBudget::begin);
            txn.budget = Some(self.log.len());
        }
        let budget = match (&mut self.eviction, eviction) {
            (Some(e), true) => e,
            _ => &mut self.prefetch,
        };
        let ok = budget.try_add(lo, hi, amount);
        if ok {
            self.log.push_back((eviction, lo, hi, amount));
        }
        ok
    }
}
