//! Playing a line and writing down what each buffer's turn in a pass did ([`Run`]): a
//! hook on the game's walk between turns ([`Boundaries`]) that opens a run where a
//! buffer begins (with a watch on what its walk looks at) and closes it where it ends,
//! and takes the checkpoints a line resumes from.

use super::shape::Shape;
use crate::game::runs::Run;
use crate::game::turns::Boundaries;
use crate::game::{Decision, Game};
use accel_sim::{BufferId, OpId};
use xla_msa::{watch, ChargeMark};

/// A run under way.
struct Open {
    /// Its place among all passes' positions ([`Shape::position`]).
    at: usize,
    mark: ChargeMark,
    /// The turn it began at.
    turn: usize,
}

/// The runs of a stretch of play, and (where asked) the states between two buffers it
/// passed, every so many turns and at each pass's first buffer.
pub(super) struct Recorder<'a> {
    shape: &'a Shape,
    /// The runs closed so far, at their positions.
    pub(super) runs: Vec<(usize, Run)>,
    open: Option<Open>,
    /// The uses of the open run's turns so far (its driver adds each before playing it).
    uses: Vec<OpId>,
    /// Stop the walk before the next buffer begins.
    pub(super) stop: bool,
    /// Stop the walk once a buffer has begun ([`Recorder::once`]).
    once: bool,
    /// Checkpoints: the spacing in turns, the turn of the last, and those taken.
    every: Option<usize>,
    last: Option<usize>,
    pub(super) states: Vec<(usize, Game)>,
}

impl<'a> Recorder<'a> {
    /// A recorder; with `every`, it takes checkpoints.
    pub(super) fn new(shape: &'a Shape, every: Option<usize>) -> Recorder<'a> {
        Recorder {
            shape,
            runs: Vec::new(),
            open: None,
            uses: Vec::new(),
            stop: false,
            once: false,
            every,
            last: None,
            states: Vec::new(),
        }
    }

    /// Records one buffer's run only: the walk stops before the next begins.
    pub(super) fn once(&mut self) {
        self.once = true;
    }

    /// Plays `d` at the pending turn (action 0 if it is not legal there, which a checked
    /// decision never is); the walk goes on to the next turn, or stops where the
    /// recorder says so.
    pub(super) fn play(&mut self, game: &mut Game, d: Decision) {
        let Some((_, u)) = game.pending() else {
            return;
        };
        self.uses.push(u);
        if game.apply_decision_with(d, self).is_err() {
            let _ = game.apply_action_with(0, self);
        }
    }

    /// Goes on from a state between two buffers to the next turn (or stop).
    pub(super) fn resume(&mut self, game: &mut Game) {
        if game.between_buffers() {
            game.settle_with(self);
        }
    }
}

impl Boundaries for Recorder<'_> {
    fn begin(&mut self, game: &Game, pos: usize) -> bool {
        if self.stop {
            return false;
        }
        self.stop = self.once;
        let at = self.shape.position(game.pass(), pos);
        if let Some(every) = self.every {
            let due = self.last.is_none_or(|l| game.turn() >= l + every);
            if pos == 0 || due {
                self.states.push((at, game.clone()));
                self.last = Some(game.turn());
            }
        }
        watch::watch();
        self.open = Some(Open {
            at,
            mark: game.charge_mark(),
            turn: game.turn(),
        });
        true
    }

    fn done(&mut self, game: &Game, _pos: usize, b: BufferId) {
        let seen = watch::seen().unwrap_or_default();
        let Some(open) = self.open.take() else {
            return;
        };
        let allocations = game.finished_allocations(b);
        let level = game.pass_level();
        let placed = allocations
            .iter()
            .filter(|a| Some(a.level) == level)
            .copied()
            .collect();
        let turns = (open.turn..game.turn())
            .zip(self.uses.drain(..))
            .map(|(t, u)| (u, game.decision_at(t).unwrap_or(Decision::Action(0))))
            .collect();
        let run = Run {
            b,
            placed,
            allocations,
            charges: game.charges_since(&open.mark),
            turns,
            seen,
        };
        self.runs.push((open.at, run));
    }
}
