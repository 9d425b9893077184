//! A turn's decision given in full (rules v3): where the pending use reads from, the
//! chunk's start and offset, and how the chunk ends. The numbered actions are a menu of
//! such moves, the few a player or a network chooses among; a move given in full can be
//! any one the rules allow, so that every valid mapping is a line of the game
//! ([`crate::GameSetup::trajectory_of`]).

use super::state::Game;
use super::turns::{Boundaries, NoHook};
use super::GameError;
use accel_sim::OpId;
use xla_msa::{Choice, Choices};

pub use xla_msa::Hold;

/// Where the pending use reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Read {
    /// Level 0 (the chunk held so far ends before the use).
    Level0,
    /// The chunk held so far, kept through the use at its offset.
    Keep,
    /// A chunk the defining op writes at `offset`, held from the definition through the
    /// use (the buffer's first segment only; at a definition's turn, the only chunk).
    Define {
        /// Where in the level the defining op writes the buffer.
        offset: u64,
    },
    /// A chunk at `offset` that a copy from level 0 fills, issued when op `start` begins.
    Prefetch {
        /// The op at whose start the copy is issued.
        start: OpId,
        /// Where in the level the copy lands.
        offset: u64,
    },
}

/// A turn's decision given in full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Move {
    /// Where the use reads from.
    pub read: Read,
    /// How the chunk the use reads from ends, if it ends before the buffer's next turn in
    /// the level (`None`: as XLA ends it). A later `keep` may say it again.
    pub hold: Option<Hold>,
    /// A chunk the defining op writes at this offset, ended (and evicted) as the hold
    /// says before the use: made for the faster write, it serves no use. Only with
    /// [`Read::Level0`] or [`Read::Prefetch`], on the buffer's first segment.
    pub written_before: Option<(u64, Hold)>,
}

impl Move {
    /// The move that reads level 0 and does nothing else.
    pub const LEVEL0: Move = Move {
        read: Read::Level0,
        hold: None,
        written_before: None,
    };
}

/// What a turn decided: a numbered action of the menu, or a move given in full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// A numbered action of the turn's menu.
    Action(usize),
    /// A move given in full.
    Move(Move),
}

impl Decision {
    /// The numbered action, if it is one.
    pub fn action(&self) -> Option<usize> {
        match self {
            Decision::Action(a) => Some(*a),
            Decision::Move(_) => None,
        }
    }
}

impl Game {
    /// The slot-0 action of `d`'s mode, where it is legal now: what a line's decision
    /// falls back to where it no longer is. A move given in full counts by its read
    /// (keep, define, or `prefetch`).
    pub fn same_mode_slot0(&self, d: &Decision) -> Option<usize> {
        let options = self.setup.options();
        let mode = match d {
            Decision::Action(a) => options.decode(*a).map(|(mi, _)| mi)?,
            Decision::Move(m) => {
                let want = match m.read {
                    Read::Level0 => return None,
                    Read::Keep => crate::options::Mode::Keep,
                    Read::Define { .. } => crate::options::Mode::Define,
                    Read::Prefetch { .. } => crate::options::Mode::Prefetch,
                };
                options.modes.iter().position(|&x| x == want)?
            }
        };
        let slot0 = options.encode(mode, 0);
        self.is_legal(slot0).then_some(slot0)
    }

    /// Why `m` cannot be made at the pending use (`None`: it can).
    pub fn move_error(&self, m: &Move) -> Option<String> {
        if self.is_terminal() {
            return Some("the game is over".into());
        }
        let setup = &self.setup;
        let Some(ch) = self.walk.choices(&setup.rules) else {
            return Some("no use is pending".into());
        };
        check_move(&ch, m).err()
    }

    /// Whether `m` can be made now.
    pub fn is_legal_move(&self, m: &Move) -> bool {
        self.move_error(m).is_none()
    }

    /// Makes move `m` at the pending use; returns its reward. A move one of the numbered
    /// actions makes (the same chunk, ended as XLA ends it) is played, and recorded, as
    /// that action.
    pub fn apply_move(&mut self, m: Move) -> Result<f64, GameError> {
        self.apply_move_with(m, &mut NoHook)
    }

    /// [`Game::apply_move`], the walk to the next turn told to `hook`.
    pub(crate) fn apply_move_with(
        &mut self,
        m: Move,
        hook: &mut dyn Boundaries,
    ) -> Result<f64, GameError> {
        if let Some(a) = self.action_of(&m) {
            return self.apply_action_with(a, hook);
        }
        if let Some(reason) = self.move_error(&m) {
            return Err(GameError::IllegalMove {
                buffer: self.pending_buffer_name(),
                reason,
            });
        }
        Ok(self.decide(Decision::Move(m), |g| g.play_move(&m), hook))
    }

    /// Plays `d`: [`Game::apply_action`] or [`Game::apply_move`].
    pub fn apply_decision(&mut self, d: Decision) -> Result<f64, GameError> {
        self.apply_decision_with(d, &mut NoHook)
    }

    /// [`Game::apply_decision`], the walk to the next turn told to `hook`.
    pub(crate) fn apply_decision_with(
        &mut self,
        d: Decision,
        hook: &mut dyn Boundaries,
    ) -> Result<f64, GameError> {
        match d {
            Decision::Action(a) => self.apply_action_with(a, hook),
            Decision::Move(m) => self.apply_move_with(m, hook),
        }
    }

    /// Whether `d` can be made now.
    pub fn is_legal_decision(&self, d: &Decision) -> bool {
        match d {
            Decision::Action(a) => self.is_legal(*a),
            Decision::Move(m) => self.is_legal_move(m),
        }
    }

    /// The numbered action that makes exactly `m`, if one does: a move with no hold of
    /// its own and nothing written before, whose chunk is an offer's.
    pub(crate) fn action_of(&self, m: &Move) -> Option<usize> {
        if m.hold.is_some() || m.written_before.is_some() || self.is_terminal() {
            return None;
        }
        let (start, offset, keep) = match m.read {
            Read::Level0 => return Some(0),
            Read::Keep => (None, None, true),
            Read::Define { offset } => (None, Some(offset), false),
            Read::Prefetch { start, offset } => (Some(start), Some(offset), false),
        };
        self.menu
            .iter()
            .find(|o| {
                let a = &o.allocation;
                let kind = match m.read {
                    Read::Keep => o.mode == crate::options::Mode::Keep,
                    Read::Define { .. } => a.arrival == accel_sim::Arrival::Defined && !is_keep(o),
                    _ => a.arrival == accel_sim::Arrival::Prefetch && !is_keep(o),
                };
                kind && (keep || (start.is_none_or(|s| s == a.start) && offset == Some(a.offset)))
            })
            .map(|o| o.action)
    }

    /// The walk's part of a move given in full.
    fn play_move(&mut self, m: &Move) {
        let setup = std::sync::Arc::clone(&self.setup);
        if let Some((offset, hold)) = m.written_before {
            let done = self.walk.write_before(&setup.rules, offset, hold);
            debug_assert!(done, "a checked move's chunk before the use failed");
        }
        let choice = match m.read {
            Read::Level0 => Choice::Level0,
            Read::Keep => Choice::Keep,
            Read::Define { offset } => Choice::Define { offset },
            Read::Prefetch { start, offset } => Choice::Prefetch {
                start,
                offset,
                // A move given in full may make a copy the budget cannot carry, as
                // `prefetch-early` may.
                within_budget: false,
            },
        };
        self.play_choice(choice, m.hold);
    }

    fn pending_buffer_name(&self) -> String {
        let b = self.current_buffer().unwrap_or(0);
        self.setup.program().buffer(b).name.clone()
    }
}

fn is_keep(o: &super::menu::Offer) -> bool {
    o.mode == crate::options::Mode::Keep
}

/// Whether the rules allow `m` at the pending use of `ch`.
fn check_move(ch: &Choices<'_>, m: &Move) -> Result<(), String> {
    let u = ch.use_op();
    let mut lo = ch.prefetch_from();
    if let Some((offset, hold)) = m.written_before {
        if !matches!(m.read, Read::Level0 | Read::Prefetch { .. }) {
            return Err(
                "a chunk written before the use goes only with level 0 or a prefetch".into(),
            );
        }
        if !ch.can_write_before(offset, hold) {
            return Err(format!(
                "no chunk the defining op writes at offset {offset}, held to op {}, fits before the use at op {u}",
                hold.end
            ));
        }
        // Level 0 holds the buffer once that chunk's eviction is done.
        lo = Some(hold.end + 1);
    }
    let hold_ok = |start: OpId| match m.hold {
        Some(h) if h.end < u => Err(format!(
            "the hold ends at op {}, before the use at op {u}",
            h.end
        )),
        Some(Hold {
            eviction: Some(e), ..
        }) if e < start => Err(format!(
            "the eviction after op {e} comes before the chunk starts at op {start}"
        )),
        _ => Ok(()),
    };
    match m.read {
        Read::Level0 => Ok(()),
        Read::Keep => {
            let kept = ch
                .keep()
                .ok_or("no chunk is held, or its offset is not free through the use")?;
            hold_ok(kept.start)
        }
        Read::Define { offset } => {
            let d = ch.define_start().ok_or("only the buffer's first segment, with no chunk held, may be written by its defining op")?;
            if !ch.fits(d, offset) {
                return Err(format!("offset {offset} is not free from the definition at op {d} through the use at op {u}"));
            }
            hold_ok(d)
        }
        Read::Prefetch { start, offset } => {
            if m.hold.is_some_and(|h| h.eviction.is_some()) {
                return Err("a prefetched chunk has no eviction".into());
            }
            let lo =
                lo.ok_or("no copy can serve this use (level 0 does not hold the buffer in time)")?;
            if start < lo || start > u {
                return Err(format!(
                    "a copy for the use at op {u} may start at ops {lo}..={u}, not {start}"
                ));
            }
            if !ch.fits(start, offset) {
                return Err(format!(
                    "offset {offset} is not free over ops {start}..={u}"
                ));
            }
            hold_ok(start)
        }
    }
}
