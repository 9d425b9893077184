//! The menu of a turn: the legal moves at the pending use (docs/mallocgame.md, "One
//! turn"). Each of XLA's choices the walk offers ([`Choices`]) becomes the moves of the
//! game's modes, at K offset slots: slot 0 XLA's own offset, then the other free gaps.

use super::state::Game;
use crate::options::{GameOptions, Mode};
use accel_sim::{Allocation, Arrival, OpId};
use std::sync::Arc;
use xla_msa::{Candidate, Choices};

/// A legal move other than action 0 (a numbered action on offer): the chunk it opens or extends, held through the
/// pending use, and the free gap that chunk sits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Offer {
    pub(super) action: usize,
    pub(super) mode: Mode,
    pub(super) allocation: Allocation,
    pub(super) gap: u64,
}

impl Game {
    /// The legal moves of the pending use.
    pub(super) fn make_menu(&mut self) {
        let setup = Arc::clone(&self.setup);
        let mut menu = std::mem::take(&mut self.menu);
        menu.clear();
        let closed = self
            .walk
            .choices(&setup.rules)
            .and_then(|choices| menu_of(&choices, setup.options(), &mut menu));
        self.menu = menu;
        self.closed = closed;
    }
}

/// The size of the free gap from `offset` up, among `cands` (the fitting gaps of an
/// interval); `size` when no gap holds the offset.
fn gap_at(cands: &[Candidate], offset: u64, size: u64) -> u64 {
    cands
        .iter()
        .find(|c| c.offset <= offset && offset < c.offset + c.gap)
        .map_or(size, |c| c.offset + c.gap - offset)
}

/// The moves on offer at the pending use, appended to `menu`; returns the chunk held so
/// far as it would end before that use.
fn menu_of(ch: &Choices<'_>, options: &GameOptions, menu: &mut Vec<Offer>) -> Option<Allocation> {
    GAPS.with(|cell| {
        let (mut search_gaps, mut cands) = cell.take();
        let closed = menu_with(ch, options, menu, &mut search_gaps, &mut cands);
        cell.set((search_gaps, cands));
        closed
    })
}

thread_local! {
    /// The free gaps of a menu's modes, reused across the turns of a thread (allocating
    /// them every turn was a tenth of a random game's time on resnet50).
    static GAPS: std::cell::Cell<(Vec<Candidate>, Vec<Candidate>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// [`menu_of`] with buffers for the free gaps of the prefetch search and of the other
/// modes.
fn menu_with(
    ch: &Choices<'_>,
    options: &GameOptions,
    menu: &mut Vec<Offer>,
    search_gaps: &mut Vec<Candidate>,
    cands: &mut Vec<Candidate>,
) -> Option<Allocation> {
    let size = ch.size();
    // The prefetch's slots come from the walk of the gaps that found its offset.
    search_gaps.clear();
    cands.clear();
    let search = ch
        .prefetch_and_gaps(search_gaps)
        .map(|a| (a.start, a.offset));
    let late = ch.window().map(|w| w.latest).filter(|&s| {
        // The search's start is `prefetch`'s: the same start here is its twin.
        let twin = options.modes.contains(&Mode::Prefetch) && search.is_some_and(|(x, _)| x == s);
        !twin && ch.copy_fits(s)
    });
    for (mi, &mode) in options.modes.iter().enumerate() {
        // The moves of `mode` from op `start`: slot 0 at `first`, then the other gaps
        // among `cands` (the fitting gaps over the chunk's interval).
        let slots = |start: OpId,
                     first: Option<u64>,
                     cands: &[Candidate],
                     menu: &mut Vec<Offer>,
                     arrival| {
            let Some(first) = first else { return };
            let others = cands
                .iter()
                .filter(|c| c.offset != first)
                .map(|c| (c.offset, c.gap));
            let all = std::iter::once((first, gap_at(cands, first, size))).chain(others);
            for (k, (offset, gap)) in all.take(options.slots).enumerate() {
                menu.push(Offer {
                    action: options.encode(mi, k),
                    mode,
                    allocation: ch.chunk(start, offset, arrival),
                    gap,
                });
            }
        };
        match mode {
            Mode::Keep => {
                if let (Some(held), Some(kept)) = (ch.held(), ch.keep()) {
                    // The gap over the extension: over the whole hold, the chunk's own
                    // bytes would hide it.
                    ch.gaps(held.end + 1, cands);
                    menu.push(Offer {
                        action: options.encode(mi, 0),
                        mode,
                        allocation: kept,
                        gap: gap_at(cands, held.offset, size),
                    });
                }
            }
            Mode::Define => {
                if let Some(d) = ch.define_start() {
                    let first = ch.best_chunk_and_gaps(d, cands);
                    slots(d, first, cands, menu, Arrival::Defined);
                }
            }
            Mode::Prefetch => {
                if let Some((s, off)) = search {
                    slots(s, Some(off), search_gaps, menu, Arrival::Prefetch);
                }
            }
            Mode::PrefetchLate => {
                if let Some(s) = late {
                    let first = ch.best_chunk_and_gaps(s, cands);
                    slots(s, first, cands, menu, Arrival::Prefetch);
                }
            }
            Mode::PrefetchEarly => {
                let Some(s) = ch.earliest_start() else {
                    continue;
                };
                let twin = |m: Mode, x: Option<OpId>| options.modes.contains(&m) && x == Some(s);
                if !twin(Mode::Prefetch, search.map(|x| x.0)) && !twin(Mode::PrefetchLate, late) {
                    // A move XLA does not make: slot 0 is the plain best fit over the
                    // chunk (no search over later ends), from the same walk of the gaps.
                    let first = ch.gaps_and_best_fit(s, cands);
                    slots(s, first, cands, menu, Arrival::Prefetch);
                }
            }
        }
    }
    ch.closed()
}
