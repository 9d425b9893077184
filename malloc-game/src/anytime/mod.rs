//! Anytime solvers: search for better and better games until a deadline, on several
//! threads, recording each improvement with its time.
//!
//! - `random`: random players' episodes, restarted until the deadline ([`restarts`]).
//! - `beam`: beam search at widths 1, 2, 4, ... until the deadline cuts the next one.
//! - `local-search`: simulated annealing over the game's trajectories
//!   ([`local_search`]): change a few decisions, replay, accept by the simulated latency.
//!   Which decisions a move changes, and to what, is its [`MoveGuide`]'s choice
//!   ([`UniformGuide`]: the local search's own; the agent guides it by its network).
//!
//! Every game they report is a finished game, so its mapping is valid; the caller scores
//! them all with the same simulator ([`Game::final_latency`]).

mod guide;
mod line;
pub mod local_search;
mod restarts;

pub use guide::{uniform_span, MoveGuide, Span, UniformGuide, MAX_CHANGED};
pub use line::Line;
pub use local_search::{LocalSearch, LocalSearchConfig, Start};
pub use restarts::{BeamWidening, RandomRestarts};

use crate::game::{Game, GameSetup};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The best finished game found so far and the improvement curve: shared by a solver's
/// threads (each [`Incumbent::offer`]s what it finds).
#[derive(Debug)]
pub struct Incumbent {
    start: Instant,
    inner: Mutex<Found>,
    /// Moves the solver has tried (those that count them: the local search's).
    moves: AtomicU64,
}

#[derive(Default)]
struct Found {
    best: Option<Best>,
    /// (seconds since the start, best latency then) at each improvement.
    curve: Vec<(f64, f64)>,
    /// The line the search started from (a search that starts from one).
    start: Option<String>,
}

impl Incumbent {
    /// An empty incumbent whose clock starts at `start`.
    pub fn new(start: Instant) -> Incumbent {
        Incumbent {
            start,
            inner: Mutex::new(Found::default()),
            moves: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Found> {
        // A thread that panicked while holding the lock left a consistent state (every
        // update is one assignment): keep going with it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `game` if it is finished and faster than the best so far; returns whether it
    /// was kept.
    pub fn offer(&self, game: &Game) -> bool {
        match game.final_latency() {
            Some(latency) => self.keep(latency, || Best::Game(Box::new(game.clone()))),
            None => false,
        }
    }

    /// [`Incumbent::offer`] for a line: its game is played only when asked for
    /// ([`Incumbent::best`]), so a search that improves often pays for the last only.
    pub fn offer_line(&self, line: &Line) -> bool {
        self.keep(line.latency(), || Best::Line(Box::new(line.clone())))
    }

    fn keep(&self, latency: f64, best: impl FnOnce() -> Best) -> bool {
        let mut found = self.lock();
        let better = found
            .best
            .as_ref()
            .and_then(Best::latency)
            .is_none_or(|b| latency < b);
        if better {
            found.best = Some(best());
            let t = self.start.elapsed().as_secs_f64();
            found.curve.push((t, latency));
        }
        better
    }

    /// The best latency so far.
    pub fn best_latency(&self) -> Option<f64> {
        self.lock().best.as_ref().and_then(Best::latency)
    }

    /// The best game so far.
    pub fn best(&self) -> Option<Game> {
        let best = self.lock().best.clone()?;
        Some(best.game())
    }

    /// The best so far as a line (a game offered is replayed into one, with a state to
    /// resume from every `snapshot_every` turns); `None` if there is none or `cancelled`
    /// says so first.
    pub fn best_line(&self, snapshot_every: usize, cancelled: &dyn Fn() -> bool) -> Option<Line> {
        let best = self.lock().best.clone()?;
        match best {
            Best::Line(l) => Some(*l),
            Best::Game(g) => Line::of_until(&g, snapshot_every, cancelled),
        }
    }

    /// Notes which line the search started from (the local search: the fastest of its
    /// starts, by name: `xla`, `beam:64`, `mip`, ...).
    pub fn set_start(&self, name: &str) {
        self.lock().start = Some(name.to_string());
    }

    /// The line the search started from, if it said.
    pub fn start(&self) -> Option<String> {
        self.lock().start.clone()
    }

    /// Counts `n` more moves tried (a solver's threads each add theirs).
    pub fn add_moves(&self, n: u64) {
        self.moves.fetch_add(n, Ordering::Relaxed);
    }

    /// Moves tried so far, by the solvers that count them (0 for the others).
    pub fn moves(&self) -> u64 {
        self.moves.load(Ordering::Relaxed)
    }

    /// (seconds since the start, best latency) at each improvement, in time order.
    pub fn curve(&self) -> Vec<(f64, f64)> {
        self.lock().curve.clone()
    }
}

/// The best so far: a finished game, or a line whose game is played when asked for.
#[derive(Clone)]
enum Best {
    Game(Box<Game>),
    Line(Box<Line>),
}

impl Best {
    fn latency(&self) -> Option<f64> {
        match self {
            Best::Game(g) => g.final_latency(),
            Best::Line(l) => Some(l.latency()),
        }
    }
    fn game(&self) -> Game {
        match self {
            Best::Game(g) => (**g).clone(),
            Best::Line(l) => l.game().clone(),
        }
    }
}

impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Found")
            .field("best_latency", &self.best.as_ref().and_then(Best::latency))
            .field("curve", &self.curve)
            .field("start", &self.start)
            .finish()
    }
}

/// How long and on how many threads an anytime solver runs.
#[derive(Clone, Debug)]
pub struct Limit {
    /// When the solver must stop.
    pub deadline: Instant,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Stops the solver before the deadline once set (a search that gives way when a
    /// solver beside it returns); `None`: the deadline alone.
    pub stop: Option<Arc<AtomicBool>>,
}

impl Limit {
    /// `seconds` from now on `threads` threads.
    pub fn from_now(seconds: f64, threads: usize) -> Limit {
        Limit {
            deadline: Instant::now() + Duration::from_secs_f64(seconds.max(0.0)),
            threads: threads.max(1),
            stop: None,
        }
    }
    /// Whether the deadline has passed or the stop was set.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline
            || self
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

/// A solver that improves its best game until the deadline.
pub trait AnytimeSolver: Send + Sync {
    /// The solver's name in races and results.
    fn name(&self) -> String;
    /// Searches `setup` until `limit`, offering its games to `incumbent`; deterministic
    /// given `seed`, the thread count and the number of games it got to play.
    fn run(&self, setup: &Arc<GameSetup>, seed: u64, limit: &Limit, incumbent: &Incumbent);
}

/// A seed per worker thread, apart from each other.
pub(crate) fn thread_seed(seed: u64, thread: usize) -> u64 {
    // Role 0 adds nothing to the mix: the seeds these solvers have always drawn.
    crate::seed_for(seed, thread as u64 + 1, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A limit with a stop ends when the stop is set, well before its deadline, and its
    /// copies (each thread's) see it too.
    #[test]
    fn a_set_stop_ends_a_limit_before_its_deadline() {
        let stop = Arc::new(AtomicBool::new(false));
        let limit = Limit {
            stop: Some(Arc::clone(&stop)),
            ..Limit::from_now(3600.0, 2)
        };
        let copy = limit.clone();
        assert!(!limit.expired() && !copy.expired());
        stop.store(true, Ordering::Relaxed);
        assert!(limit.expired() && copy.expired());
        assert!(!Limit::from_now(3600.0, 1).expired());
        assert!(Limit::from_now(0.0, 1).expired());
    }
}
