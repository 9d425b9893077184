//! The knobs of the `xla` baseline ([`XlaOptions`]), XLA's defaults where XLA has them.

use crate::heap::TopGap;
use crate::picker::PickerConfig;

/// What to do with an eviction that the copy budget cannot carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EvictionOverBudget {
    /// Make it anyway, charging nothing. XLA does this on its last retry ("violates
    /// resource in last retry, setting resource = 0"), and with the default single try
    /// (`max_retries = 1`) every try is the last.
    #[default]
    Free,
    /// Refuse it: the buffer's pending chunks are undone and it stays in level 0.
    Refuse,
}

/// The knobs of the `xla` baseline. The defaults are XLA's where XLA has them.
#[derive(Clone, Debug, PartialEq)]
pub struct XlaOptions {
    /// The prefetch interval picker's overlap ratios. A prefetch must overlap at least
    /// `min_overlap` x its copy time (plus the use's own saving): that fixes the latest
    /// start; the search begins at the start closest to `preferred_overlap` x the copy
    /// time; neither a prefetch's overlap nor a no-copy segment may exceed `max_overlap`
    /// x the time to copy the whole level (`max_copy`).
    pub picker: PickerConfig,
    /// Enforce the asynchronous-copy budget (each op carries copy work up to its elapsed
    /// time, FIFO).
    pub copy_budget: bool,
    /// Prefetches and evictions draw on separate budgets, as XLA keeps
    /// `prefetch_async_copy_resource_` and `eviction_async_copy_resource_`.
    pub separate_eviction_budget: bool,
    /// What to do with an eviction the copy budget cannot carry.
    pub eviction_over_budget: EvictionOverBudget,
    /// How the gap above the highest overlapping chunk counts in best fit
    /// (docs/xla-msa.md, "Best-fit placement"). The default sizes it to the capacity; XLA's
    /// growing heap sizes it to the current peak address ([`TopGap::Peak`]).
    pub top_gap: TopGap,
    /// Run again for each slower fast level over the uses left in level 0.
    pub cascade: bool,
    /// At most this many fast levels, fastest first (`None`: every one the cascade
    /// reaches): the xla mapping a game over fewer levels can hold.
    pub max_levels: Option<usize>,
    /// Which op times a cascade pass after the first plans with.
    pub cascade_timing: CascadeTiming,
    /// XLA's `max_repacks`: when a buffer finds no chunk for a use (out of memory), the
    /// level's allocations so far are re-packed (new offsets, same live ranges; decreasing
    /// size best fit, XLA's `MemorySpaceAssignmentBestFitRepacker`) and the buffer tried
    /// again, at most this many times per level. 0 (the `xla` solver) never re-packs;
    /// `xla-repack` uses [`DEFAULT_MAX_REPACKS`].
    pub max_repacks: usize,
}

/// The re-packs `xla-repack` allows per level.
pub const DEFAULT_MAX_REPACKS: usize = 1_000_000;

/// The op times (elapsed) that a later cascade pass feeds its picker and copy budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CascadeTiming {
    /// The times under the mapping the earlier passes made: ops that now read the faster
    /// level are shorter and hide less copy time. The copies already made are replayed
    /// into budgets rebuilt from these times.
    #[default]
    Current,
    /// Every pass uses the all-level-0 times, as XLA's single pass does.
    Default,
}

impl Default for XlaOptions {
    fn default() -> Self {
        XlaOptions {
            picker: PickerConfig::default(),
            copy_budget: true,
            separate_eviction_budget: true,
            eviction_over_budget: EvictionOverBudget::Free,
            top_gap: TopGap::Capacity,
            cascade: true,
            max_levels: None,
            cascade_timing: CascadeTiming::Current,
            max_repacks: 0,
        }
    }
}
