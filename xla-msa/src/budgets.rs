//! The asynchronous-copy budgets a walk draws on: one for prefetches and, as XLA keeps
//! them apart, one for evictions, with the log of every copy so a later pass can rebuild
//! them on its own op times.

use crate::copy_budget::CopyBudget;
use crate::options::XlaOptions;
use crate::pass::Txn;
use crate::timing::Timing;
use crate::watch::{BudgetKind, CopyKey};
use accel_sim::OpId;

/// A copy a budget queued: which budget, its key in the queue and its seconds. A game that
/// reaches the same buffer with the same moves queues the same copies at the same keys.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Charge {
    /// The budget that queued it.
    pub kind: BudgetKind,
    /// Its place in that budget's queue.
    pub key: CopyKey,
    /// The copy's seconds.
    pub amount: f64,
}

/// Where the budgets stood, to list the copies queued since ([`Budgets::charges_since`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChargeMark {
    logged: usize,
    arrivals: [u64; 2],
}

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
            prefetch: CopyBudget::new(&timing.elapsed, BudgetKind::Prefetch),
            eviction: opts
                .separate_eviction_budget
                .then(|| CopyBudget::new(&timing.elapsed, BudgetKind::Eviction)),
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

    fn budget(&self, kind: BudgetKind) -> &CopyBudget {
        match (kind, &self.eviction) {
            (BudgetKind::Eviction, Some(e)) => e,
            _ => &self.prefetch,
        }
    }

    fn budget_mut(&mut self, kind: BudgetKind) -> &mut CopyBudget {
        match (kind, &mut self.eviction) {
            (BudgetKind::Eviction, Some(e)) => e,
            _ => &mut self.prefetch,
        }
    }

    /// The budget a copy draws on.
    fn kind_of(&self, eviction: bool) -> BudgetKind {
        if eviction && self.eviction.is_some() {
            BudgetKind::Eviction
        } else {
            BudgetKind::Prefetch
        }
    }

    /// Copies queued from now on arrive with orders of at least `order` ([`CopyBudget::order_from`]).
    pub(crate) fn order_from(&mut self, order: u64) {
        self.each(|b| b.order_from(order));
    }

    pub(crate) fn mark(&self) -> ChargeMark {
        ChargeMark {
            logged: self.log.len(),
            arrivals: [
                self.prefetch.arrivals(),
                self.eviction.as_ref().map_or(0, |e| e.arrivals()),
            ],
        }
    }

    /// The copies queued since `mark`, in the order they were queued.
    pub(crate) fn charges_since(&self, mark: &ChargeMark) -> Vec<Charge> {
        let mut nth = [0u64; 2];
        let mut out = Vec::new();
        // A focus narrowed to the copies since the mark: skipping an iterator of a
        // persistent vector steps through every copy before it.
        let since = self.log.focus().narrow(mark.logged.min(self.log.len())..);
        for &(eviction, lo, hi, amount) in since {
            let kind = self.kind_of(eviction);
            let i = usize::from(kind == BudgetKind::Eviction);
            let budget = self.budget(kind);
            if let Some((lo, hi)) = budget.window_of(lo, hi, amount) {
                let key = (lo, hi, mark.arrivals[i] + nth[i]);
                nth[i] += 1;
                out.push(Charge { kind, key, amount });
            }
        }
        out
    }

    /// Queues `charges` whatever the windows say (copies another game of the same walk
    /// queued there), and logs them for a later pass, as if charged in this order.
    pub(crate) fn insert(&mut self, charges: &[Charge]) {
        for c in charges {
            self.budget_mut(c.kind).insert_key(c.key, c.amount);
            let eviction = c.kind == BudgetKind::Eviction;
            self.log.push_back((eviction, c.key.0, c.key.1, c.amount));
        }
    }

    /// Takes `charges` out of their queues (not out of the log: a later pass's budgets
    /// would replay them, so only the last pass's copies may be taken out).
    pub(crate) fn remove(&mut self, charges: &[Charge]) {
        for c in charges {
            self.budget_mut(c.kind).remove_key(c.key);
        }
    }

    /// Per budget, the keys where these queues disagree with the queues that hold
    /// `removed` instead of `added` ([`CopyBudget::differing`]), sorted; a budget where
    /// they agree is left out.
    pub(crate) fn differing(
        &self,
        removed: &[Charge],
        added: &[Charge],
    ) -> Vec<(BudgetKind, Vec<CopyKey>)> {
        let mut out = Vec::new();
        for kind in [BudgetKind::Prefetch, BudgetKind::Eviction] {
            if kind == BudgetKind::Eviction && self.eviction.is_none() {
                continue;
            }
            let of = |list: &[Charge]| -> Vec<(CopyKey, f64)> {
                let mut v: Vec<(CopyKey, f64)> = list
                    .iter()
                    .filter(|c| c.kind == kind)
                    .map(|c| (c.key, c.amount))
                    .collect();
                v.sort_by_key(|a| a.0);
                v
            };
            let keys = self.budget(kind).differing(&of(removed), &of(added));
            if !keys.is_empty() {
                out.push((kind, keys));
            }
        }
        out
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
