//! The games that follow a given mapping: exactly ([`GameSetup::trajectory_of`], which
//! names where a mapping leaves the game's rules) or as closely as the rules allow
//! ([`GameSetup::nearest_trajectory`]).

use super::menu::Move;
use super::setup::GameSetup;
use super::state::Game;
use super::Inexpressible;
use accel_sim::{Allocation, BufferId, Mapping};
use std::sync::Arc;

impl GameSetup {
    /// The game's actions that rebuild `mapping`, as a finished game: at each turn the
    /// move whose chunk is the one `mapping` gives the buffer at that use (action 0 where
    /// it gives none in the pass's level). The error names the first use where no legal
    /// move matches, or the first buffer whose finished allocations differ (an eviction
    /// held longer or shorter than the game's rule, a level the game does not fill).
    pub fn trajectory_of(self: &Arc<Self>, mapping: &Mapping) -> Result<Game, Inexpressible> {
        let mut g = self.start();
        while let Some((b, u)) = g.pending() {
            let action = g.move_of(mapping).map_err(|w| Inexpressible {
                turn: g.turn,
                buffer: self.program().buffer(b).name.clone(),
                op: u,
                reason: format!(
                    "no legal move gives the chunk {:?} from op {} at offset {} in level {}",
                    w.arrival, w.start, w.offset, w.level
                ),
                actions: g.actions(),
            })?;
            // The action came from the legal menu.
            let _ = g.apply_action(action);
        }
        if let Some((b, have, want)) = self.unlike(&g.mapping(), mapping) {
            return Err(Inexpressible {
                turn: g.turn,
                buffer: self.program().buffer(b).name.clone(),
                op: want.first().or(have.first()).map_or(0, |a| a.start),
                reason: format!("the game ends with {have:?}, the mapping has {want:?}"),
                actions: g.actions(),
            });
        }
        Ok(g)
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

impl Game {
    /// The move of the pending turn whose chunk is the one `mapping` gives the buffer at
    /// that use ([`GameSetup::trajectory_of`]): action 0 where it gives none in the pass's
    /// level (or the game is over); `Err` with that chunk where no legal move gives it.
    pub(crate) fn move_of(&self, mapping: &Mapping) -> Result<usize, Allocation> {
        let Some((b, u)) = self.pending() else {
            return Ok(0);
        };
        let level = self.setup.level(self.walk.pass());
        let want = mapping.buffers.get(b).and_then(|p| {
            p.allocations
                .iter()
                .find(|a| a.level == level && a.start <= u && u <= a.end)
        });
        match want {
            None => Ok(0),
            Some(w) => self
                .menu
                .iter()
                .find(|m| {
                    let a = &m.allocation;
                    (a.start, a.offset, a.arrival) == (w.start, w.offset, w.arrival)
                })
                .map(|m| m.action)
                .ok_or(*w),
        }
    }
}

impl GameSetup {
    /// The game that follows `mapping` as closely as the rules allow: at each turn the move
    /// whose chunk is the mapping's (as [`GameSetup::trajectory_of`]), else one with the
    /// same start and arrival at another offset, else one with the same arrival and the
    /// nearest start, else action 0. A mapping the game cannot express (another
    /// solver's offsets, whole live ranges the no-copy rule forbids) becomes a game as
    /// near it as the game allows, scored by its own true return.
    pub fn nearest_trajectory(self: &Arc<Self>, mapping: &Mapping) -> Game {
        let mut g = self.start();
        while let Some((b, u)) = g.pending() {
            let level = self.level(g.walk.pass());
            let want = mapping.buffers.get(b).and_then(|p| {
                p.allocations
                    .iter()
                    .find(|a| a.level == level && a.start <= u && u <= a.end)
            });
            let action = want.map_or(0, |w| {
                let key = |m: &Move| {
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
                g.menu.iter().min_by_key(|m| key(m)).map_or(0, |m| m.action)
            });
            // The action came from the legal menu (or is action 0).
            let _ = g.apply_action(action);
        }
        g
    }
}
