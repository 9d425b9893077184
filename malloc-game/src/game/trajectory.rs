//! The games that follow a given mapping: exactly ([`GameSetup::trajectory_of`], which
//! under rules v3 plays any valid mapping, with moves given in full where no numbered
//! action makes its chunk), as closely as the rules allow ([`GameSetup::nearest_trajectory`]),
//! or with numbered actions only ([`GameSetup::nearest_numbered`], for learners that
//! need an action index at every turn).

use super::menu::Offer;
use super::moves::{Hold, Move, Read};
use super::setup::GameSetup;
use super::state::Game;
use super::Inexpressible;
use accel_sim::{Allocation, Arrival, BufferId, Mapping, OpId};
use std::sync::Arc;

impl GameSetup {
    /// The line of the game that rebuilds `mapping` exactly: the same allocations in the
    /// game's levels, so the same copies and the same simulated latency. Where a numbered
    /// action makes the chunk the mapping has, the line plays it; elsewhere a move given
    /// in full ([`Game::apply_move`]). Every mapping the validator accepts is a line; the
    /// error names the first turn where `mapping` breaks the rules, or the first buffer
    /// whose allocations still differ at the end (a level the game does not fill).
    pub fn trajectory_of(self: &Arc<Self>, mapping: &Mapping) -> Result<Game, Inexpressible> {
        if let Ok(g) = self.numbered_trajectory_of(mapping) {
            return Ok(g);
        }
        self.follow(mapping, true)
    }

    /// The game that follows `mapping` as closely as the rules allow: its own line
    /// ([`GameSetup::trajectory_of`]) where it is valid; else, turn by turn, the mapping's
    /// move where the rules allow it, and the nearest numbered action where not. A mapping
    /// of another game's options (fewer fast levels) or one that breaks the rules becomes
    /// a game as near it as the game allows, scored by its own true return.
    pub fn nearest_trajectory(self: &Arc<Self>, mapping: &Mapping) -> Game {
        if let Ok(g) = self.numbered_trajectory_of(mapping) {
            return g;
        }
        self.follow(mapping, false)
            .unwrap_or_else(|_| self.nearest_numbered(mapping))
    }

    /// The game of numbered actions only that follows `mapping` most closely: at each
    /// turn the action whose chunk is the mapping's, else one with the same start and
    /// arrival at another offset, else one with the same arrival and the nearest start,
    /// else action 0. For learners that need an action index at every turn.
    pub fn nearest_numbered(self: &Arc<Self>, mapping: &Mapping) -> Game {
        let mut g = self.start();
        while g.pending().is_some() {
            let action = g.target(mapping).map_or(0, |w| nearest_offer(&g.menu, &w));
            // The action came from the legal menu (or is action 0).
            let _ = g.apply_action(action);
        }
        g
    }

    /// The line of numbered actions that rebuilds `mapping` exactly (rules v2's lines).
    fn numbered_trajectory_of(self: &Arc<Self>, mapping: &Mapping) -> Result<Game, Inexpressible> {
        let mut g = self.start();
        while let Some((b, u)) = g.pending() {
            let action = g.move_of(mapping).map_err(|w| {
                g.inexpressible(
                    b,
                    u,
                    format!(
                        "no numbered action gives the chunk {:?} from op {} at offset {} in level {}",
                        w.arrival, w.start, w.offset, w.level
                    ),
                )
            })?;
            // The action came from the legal menu.
            let _ = g.apply_action(action);
        }
        self.same_end(g, mapping)
    }

    /// Plays `mapping`'s move at every turn ([`Game::move_toward`]); where the rules do
    /// not allow it, an error if `strict`, else the nearest numbered action.
    fn follow(self: &Arc<Self>, mapping: &Mapping, strict: bool) -> Result<Game, Inexpressible> {
        let mut g = self.start();
        while let Some((b, u)) = g.pending() {
            let m = g.move_toward(mapping);
            if let Some(a) = g.numbered_for(mapping, &m) {
                let _ = g.apply_action(a);
                continue;
            }
            if let Some(reason) = g.move_error(&m) {
                if strict {
                    return Err(g.inexpressible(b, u, format!("{m:?}: {reason}")));
                }
                let action = g.target(mapping).map_or(0, |w| nearest_offer(&g.menu, &w));
                let _ = g.apply_action(action);
                continue;
            }
            // Checked legal just above.
            let _ = g.apply_move(m);
        }
        if strict {
            self.same_end(g, mapping)
        } else {
            Ok(g)
        }
    }

    /// `g` (finished) if its allocations in the game's levels are `mapping`'s.
    fn same_end(&self, g: Game, mapping: &Mapping) -> Result<Game, Inexpressible> {
        match self.unlike(&g.mapping(), mapping) {
            None => Ok(g),
            Some((b, have, want)) => {
                let op = want.first().or(have.first()).map_or(0, |a| a.start);
                let reason = format!("the game ends with {have:?}, the mapping has {want:?}");
                Err(g.inexpressible(b, op, reason))
            }
        }
    }

    /// The first buffer whose allocations in the game's levels differ between `got` (a
    /// finished game's mapping) and `mapping`, with both lists (`got`'s first).
    pub(crate) fn unlike(
        &self,
        got: &Mapping,
        mapping: &Mapping,
    ) -> Option<(BufferId, Vec<Allocation>, Vec<Allocation>)> {
        mapping.buffers.iter().enumerate().find_map(|(b, p)| {
            let want: Vec<Allocation> = p
                .allocations
                .iter()
                .filter(|a| self.rules.levels().contains(&a.level))
                .copied()
                .collect();
            let have = got.buffers.get(b).map_or(&[][..], |x| &x.allocations);
            (want != have).then(|| (b, have.to_vec(), want))
        })
    }
}

/// The offer nearest the chunk `w`: the same chunk, else the same start and arrival at
/// another offset, else the same arrival and the nearest start (action 0 with none).
fn nearest_offer(menu: &[Offer], w: &Allocation) -> usize {
    let key = |m: &Offer| {
        let a = &m.allocation;
        let exact = (a.start, a.offset, a.arrival) == (w.start, w.offset, w.arrival);
        let same_start = (a.start, a.arrival) == (w.start, w.arrival);
        let same_arrival = a.arrival == w.arrival;
        (
            !exact,
            !same_start,
            !same_arrival,
            a.start.abs_diff(w.start),
            m.action,
        )
    };
    menu.iter().min_by_key(|m| key(m)).map_or(0, |m| m.action)
}

impl Game {
    /// The allocation `mapping` gives the pending buffer in the pass's level at the
    /// pending use (at a definition's turn, the one its defining op writes), if any.
    fn target(&self, mapping: &Mapping) -> Option<Allocation> {
        let (b, u) = self.pending()?;
        let level = self.setup.level(self.walk.pass());
        let list = &mapping.buffers.get(b)?.allocations;
        list.iter()
            .find(|a| a.level == level && a.start <= u && u <= a.end)
            .copied()
    }

    fn inexpressible(&self, b: BufferId, op: OpId, reason: String) -> Inexpressible {
        Inexpressible {
            turn: self.turn,
            buffer: self.setup.program().buffer(b).name.clone(),
            op,
            reason,
            actions: self.actions(),
        }
    }

    /// The numbered action of the pending turn whose chunk is the one `mapping` gives the
    /// buffer at that use ([`GameSetup::trajectory_of`]): action 0 where it gives none in
    /// the pass's level (or the game is over); `Err` with that chunk where no legal action
    /// gives it.
    pub(crate) fn move_of(&self, mapping: &Mapping) -> Result<usize, Allocation> {
        match self.target(mapping) {
            None => Ok(0),
            Some(w) => self
                .menu
                .iter()
                .find(|m| {
                    let a = &m.allocation;
                    (a.start, a.offset, a.arrival) == (w.start, w.offset, w.arrival)
                })
                .map(|m| m.action)
                .ok_or(w),
        }
    }

    /// The move of the pending turn that follows `mapping`: the chunk it gives the use
    /// (kept, written at the definition, or copied in), ended as it ends, and a chunk its
    /// defining op writes that ends before the use.
    pub(crate) fn move_toward(&self, mapping: &Mapping) -> Move {
        let Some((b, u)) = self.pending() else {
            return Move::LEVEL0;
        };
        let level = self.setup.level(self.walk.pass());
        let mine: Vec<Allocation> = mapping.buffers.get(b).map_or(Vec::new(), |p| {
            p.allocations
                .iter()
                .filter(|a| a.level == level)
                .copied()
                .collect()
        });
        let hold_of = |a: &Allocation| Hold {
            end: a.end,
            eviction: a.eviction,
        };
        let ch = self.walk.choices(&self.setup.rules);
        let can_define = ch.as_ref().is_some_and(|c| c.define_start().is_some());
        let at_definition = ch.as_ref().is_some_and(|c| c.at_definition());
        let written_before = mine
            .iter()
            .find(|a| a.arrival == Arrival::Defined && a.end < u)
            .filter(|_| can_define && !at_definition)
            .map(|a| (a.offset, hold_of(a)));
        let Some(w) = mine.iter().find(|a| a.start <= u && u <= a.end) else {
            return Move {
                written_before,
                ..Move::LEVEL0
            };
        };
        let open = self.walk.open_allocation();
        let read = match open {
            Some(o) if (o.start, o.offset, o.arrival) == (w.start, w.offset, w.arrival) => {
                Read::Keep
            }
            _ if w.arrival == Arrival::Defined => Read::Define { offset: w.offset },
            _ => Read::Prefetch {
                start: w.start,
                offset: w.offset,
            },
        };
        Move {
            read,
            hold: Some(hold_of(w)),
            written_before,
        }
    }

    /// The numbered action that makes `m` where XLA's rule ends its chunk as `mapping`
    /// does (a chunk that ends at its last use with no eviction), so that a line keeps
    /// the menu's actions wherever they suffice.
    fn numbered_for(&self, mapping: &Mapping, m: &Move) -> Option<usize> {
        if m.written_before.is_some() {
            return None;
        }
        let plain = Move { hold: None, ..*m };
        let action = self.action_of(&plain)?;
        let Some(w) = self.target(mapping) else {
            return Some(action);
        };
        let (b, _) = self.pending()?;
        let uses = self.setup.program().uses(b);
        let last_served = uses.iter().rev().find(|&&x| w.start <= x && x <= w.end);
        let ends_at_last_use = last_served == Some(&w.end);
        (ends_at_last_use && w.eviction.is_none()).then_some(action)
    }
}
