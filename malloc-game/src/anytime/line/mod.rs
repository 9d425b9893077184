//! A line of the game: a finished game kept as what each buffer's turn in each pass did
//! ([`Run`]), so that a local move can re-play only what it changes.
//!
//! A move ([`Line::branch`], the local search's neighbour) re-decides a few turns and
//! repairs the rest from the line: each later turn plays the line's decision for the same
//! (pass, buffer, use) where it is still legal, else the same mode at slot 0, else the
//! greedy move. Played turn by turn, that costs every turn after the change. But a later
//! buffer's turns can only come out differently where its walk looks at something the
//! change made different: a chunk of the heap over the ops it looks at, or a copy of the
//! budgets it reads. Each run notes what its walk looked at (`xla_msa::watch`). So in the
//! last pass a move re-plays the buffers whose looks meet the difference so far, each
//! from the line's state there with the difference swapped in, and takes every other
//! buffer's run from the line as it is ([`splice`]). The result is the line the full
//! replay gives: the same decisions, the same mapping, and the same latency to the bit,
//! which the line keeps as a whole run of its mapping kept alive ([`ExactSim`]).
//!
//! A move that starts in an earlier pass changes the op times every later pass plans with,
//! so it replays the rest of the game turn by turn.

mod lineage;
mod record;
mod shape;
mod splice;
mod state;

use self::lineage::Lineage;
use self::record::Recorder;
use self::shape::Shape;
use self::state::Checkpoints;
use crate::game::runs::Run;
use crate::game::{Decision, Game, GameSetup};
use crate::players::greedy_action;
use accel_sim::{Allocation, ExactSim};
use std::sync::{Arc, OnceLock};

/// A finished game with what each buffer's turn in each pass did, and the states between
/// buffers it resumes from: what a local move starts from. The agent's branch proposals
/// use it too. Clones share everything.
#[derive(Clone)]
pub struct Line {
    setup: Arc<GameSetup>,
    shape: Arc<Shape>,
    /// Per position ([`Shape`]): its run.
    runs: imbl::Vector<Arc<Run>>,
    /// Per position: the turn its run begins at; then the number of turns.
    first_turn: Arc<Vec<usize>>,
    /// What each turn decided.
    decisions: imbl::Vector<Decision>,
    /// Each buffer's allocations: the line's mapping.
    allocs: imbl::Vector<Arc<Vec<Allocation>>>,
    /// A whole run of the mapping, kept alive.
    sim: ExactSim,
    latency: f64,
    /// The pass whose buffers a move re-plays one by one: the last the walk plays.
    last_pass: usize,
    checkpoints: Checkpoints,
    /// The moves that made this line from the one its checkpoints were taken on.
    lineage: Arc<Lineage>,
    /// About how many turns apart the checkpoints are.
    every: usize,
    /// The finished game, played turn by turn (its rewards too) when first asked for.
    game: Arc<OnceLock<Game>>,
}

impl Line {
    /// The line of a finished game (`None` if it is not finished), by replaying its
    /// decisions, with a state to resume from every `snapshot_every` turns.
    pub fn of(finished: &Game, snapshot_every: usize) -> Option<Line> {
        Line::of_until(finished, snapshot_every, &|| false)
    }

    /// [`Line::of`], or `None` if `cancelled` says so first (asked every 256 turns): on a
    /// large program the replay takes seconds, which a deadline must be able to cut.
    pub fn of_until(
        finished: &Game,
        snapshot_every: usize,
        cancelled: &dyn Fn() -> bool,
    ) -> Option<Line> {
        let setup = Arc::clone(finished.setup());
        let shape = Arc::new(Shape::new(&setup));
        let every = snapshot_every.max(1);
        let mut rec = Recorder::new(&shape, Some(every));
        let mut game = setup.start_with(&mut rec);
        for (t, d) in finished.decisions().into_iter().enumerate() {
            if t % 256 == 0 && cancelled() {
                let _ = xla_msa::watch::seen();
                return None;
            }
            rec.play(&mut game, d);
        }
        game.final_latency()?;
        let (runs, states) = (rec.runs, rec.states);
        let base = Line::empty(&setup, &shape, every);
        Some(base.replayed(0, runs, states, game, true))
    }

    /// A line with no runs (placeholders), to be filled by [`Line::replayed`].
    fn empty(setup: &Arc<GameSetup>, shape: &Arc<Shape>, every: usize) -> Line {
        let none = Arc::new(Run {
            b: 0,
            placed: Vec::new(),
            allocations: Arc::new(Vec::new()),
            charges: Vec::new(),
            turns: Vec::new(),
            seen: Default::default(),
        });
        let n = setup.program().buffers().len();
        let allocs: imbl::Vector<Arc<Vec<Allocation>>> =
            (0..n).map(|_| Arc::clone(&none.allocations)).collect();
        Line {
            setup: Arc::clone(setup),
            shape: Arc::clone(shape),
            runs: (0..shape.len()).map(|_| Arc::clone(&none)).collect(),
            first_turn: Arc::new(vec![0; shape.len() + 1]),
            decisions: imbl::Vector::new(),
            sim: setup.exact_sim(&allocs),
            allocs,
            latency: 0.0,
            last_pass: 0,
            checkpoints: Checkpoints::default(),
            lineage: Lineage::root(),
            every,
            game: Arc::new(OnceLock::new()),
        }
    }

    /// The line whose positions from `from` on were replayed turn by turn to the end of
    /// `game` (its runs and checkpoints given), this line's before. `exact`: the game was
    /// played from an exact state, so it is the line's game, rewards and all.
    fn replayed(
        &self,
        from: usize,
        runs: Vec<(usize, Run)>,
        states: Vec<(usize, Game)>,
        game: Game,
        exact: bool,
    ) -> Line {
        let mut new = self.clone();
        new.game = Arc::new(OnceLock::new());
        for (at, run) in runs {
            new.last_pass = new.last_pass.max(self.shape.pass_of(at));
            new.runs.set(at, Arc::new(run));
        }
        new.first_turn = Arc::new(first_turns(&new.runs));
        new.decisions = game.decisions().into_iter().collect();
        debug_assert_eq!(new.decisions.len(), new.first_turn[new.runs.len()]);
        new.allocs = game.all_allocations();
        new.sim = self.setup.exact_sim(&new.allocs);
        new.latency = game.final_latency().unwrap_or(f64::INFINITY);
        debug_assert_eq!(new.latency, new.sim.latency_s());
        new.lineage = Lineage::root();
        new.checkpoints = self
            .checkpoints
            .replaced(from, states, &new.runs, &new.lineage);
        if exact {
            let _ = new.game.set(game);
        }
        new
    }

    /// The finished game of the line, with its rewards: a line a move made is played turn
    /// by turn from its decisions the first time it is asked for.
    pub fn game(&self) -> &Game {
        self.game.get_or_init(|| {
            let mut g = self.setup.start();
            for d in self.decisions.iter() {
                if g.apply_decision(*d).is_err() {
                    let _ = g.apply_action(0);
                }
            }
            debug_assert_eq!(g.final_latency(), Some(self.latency));
            g
        })
    }

    /// The game's setup.
    pub fn setup(&self) -> &Arc<GameSetup> {
        &self.setup
    }

    /// The simulated latency of the line's mapping (a whole run's figure).
    pub fn latency(&self) -> f64 {
        self.latency
    }
    /// Turns played.
    pub fn len(&self) -> usize {
        self.decisions.len()
    }
    /// Whether no turn was played.
    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty()
    }
    /// The numbered action of turn `t` ([`Game::MOVE_GIVEN`] for a move given in full).
    pub fn action_at(&self, t: usize) -> Option<usize> {
        self.decisions
            .get(t)
            .map(|d| d.action().unwrap_or(Game::MOVE_GIVEN))
    }
    /// What turn `t` decided.
    pub fn decision_at(&self, t: usize) -> Option<Decision> {
        self.decisions.get(t).copied()
    }

    /// The position whose run holds turn `t` (`t < len`).
    fn position_of_turn(&self, t: usize) -> usize {
        self.first_turn[..self.runs.len()].partition_point(|&f| f <= t) - 1
    }

    /// The game before turn `t` (`t < len`).
    pub fn state_before(&self, t: usize) -> Game {
        let at = self.position_of_turn(t);
        let mut g = self.state_at(at);
        g.settle_with(&mut crate::game::turns::NoHook);
        for k in self.first_turn[at]..t {
            let _ = g.apply_decision(self.decisions[k]);
        }
        g.sync_simulation();
        g
    }

    /// This line's decision for `game`'s pending turn (the same pass, buffer and use).
    fn decision_for(&self, game: &Game) -> Option<Decision> {
        let (b, u) = game.pending()?;
        let at = self.shape.position_of(game.pass(), b)?;
        let run = self.runs.get(at)?;
        run.turns.iter().find(|(x, _)| *x == u).map(|&(_, d)| d)
    }

    /// This line's decision for the pending turn where it is still legal, else the same
    /// mode at slot 0, else the greedy move.
    pub fn repair(&self, game: &Game) -> Decision {
        self.repair_without_greedy(game)
            .unwrap_or_else(|| Decision::Action(greedy_action(game)))
    }

    /// [`Line::repair`] in a state of a line's making, brought up to date for the greedy
    /// move where that is needed.
    fn repair_in(&self, game: &mut Game) -> Decision {
        if let Some(d) = self.repair_without_greedy(game) {
            return d;
        }
        game.sync_simulation();
        Decision::Action(greedy_action(game))
    }

    fn repair_without_greedy(&self, game: &Game) -> Option<Decision> {
        let d = self.decision_for(game)?;
        if game.is_legal_decision(&d) {
            return Some(d);
        }
        game.same_mode_slot0(&d).map(Decision::Action)
    }

    /// The line that plays `first` from turn `t` (each where legal) and then repairs the
    /// rest from this line ([`Line::repair`]); `None` if `cancelled` says so first.
    pub fn branch(&self, t: usize, first: &[usize], cancelled: &dyn Fn() -> bool) -> Option<Line> {
        let mut redecide = |line: &Line, game: &mut Game, i: usize| {
            let a = *first.get(i)?;
            Some(if game.is_legal(a) {
                Decision::Action(a)
            } else {
                line.repair_in(game)
            })
        };
        self.moved(t, &mut redecide, cancelled)
    }
}

/// Per position, the turn its run begins at; then the number of turns.
fn first_turns(runs: &imbl::Vector<Arc<Run>>) -> Vec<usize> {
    let mut v = Vec::with_capacity(runs.len() + 1);
    let mut t = 0;
    for r in runs.iter() {
        v.push(t);
        t += r.turns.len();
    }
    v.push(t);
    v
}

#[cfg(test)]
mod tests;
