//! Simulated annealing over the game's trajectories (a large-neighbourhood search).
//!
//! A line is a finished game kept as what each buffer's turn did ([`Line`]). A move
//! re-decides a few consecutive turns at random and repairs the rest of the game from the
//! old line: each later turn plays the old line's decision for the same (pass, buffer,
//! use) where it is still legal (a numbered action, or a move given in full: a line may
//! start from any valid mapping's), else the same mode at slot 0, else the greedy move (a
//! changed decision can open turns the old line never had). The new line is accepted by
//! its simulated latency: always when faster, else with probability `exp(-d / T)` for a
//! relative slowdown `d`, the temperature `T` falling geometrically from `t_start` to
//! `t_end` over the time allowed.
//!
//! A move re-plays only the buffers whose walk could come out differently from the line's
//! ([`Line`]: the rest of the game is the line's, as a full replay would play it), so its
//! cost is what it changes, not the turns after it. Chains run one per thread from the
//! best of the starting games, and every `sync_every` moves a chain that is behind the
//! best game of all chains continues from it. The starts are the xla, greedy, greedy-size
//! and beam games (widths 1, 4, 16 and 64, as many as finish within a tenth of the
//! budget), and any the caller gives (any valid mapping's line: the MIP's, say);
//! the incumbent notes which one won.

use super::guide::{MoveGuide, Span, UniformGuide};
use super::{thread_seed, AnytimeSolver, Incumbent, Limit, Line};
use crate::game::{Decision, Game, GameSetup};
use crate::players::{BeamPlayer, GreedyPlayer, Player, XlaPlayer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::time::Instant;
use xla_msa::{GreedySize, OneShotSolver};

/// The knobs of [`LocalSearch`] (defaults tuned on the suite: docs/race.md).
#[derive(Clone, Debug, PartialEq)]
pub struct LocalSearchConfig {
    /// The starting temperature: a relative slowdown of `t_start` is accepted with
    /// probability 1/e.
    pub t_start: f64,
    /// The temperature at the deadline.
    pub t_end: f64,
    /// Mean number of consecutive turns a move re-decides (geometric, at least 1).
    pub mean_changed: f64,
    /// Moves between a chain's looks at the best game of all chains.
    pub sync_every: usize,
    /// Turns between a line's snapshots.
    pub snapshot_every: usize,
    /// A counted run: each chain makes this many moves, whatever the deadline (which then
    /// bounds only the starts), the temperature falls by moves instead of by time, and
    /// the chains meet every `sync_every` moves to share their best games, so the run
    /// repeats exactly per seed and thread count. `None`: until the deadline.
    pub moves: Option<usize>,
    /// Whether the heuristics' games (xla, greedy, the beams, greedy-size) are among the
    /// starts. A search that continues another's, which had them already, passes only its
    /// own starts and skips the seconds they take on a large program.
    pub heuristic_starts: bool,
}

impl Default for LocalSearchConfig {
    fn default() -> Self {
        LocalSearchConfig {
            t_start: 2e-3,
            t_end: 1e-5,
            mean_changed: 2.0,
            sync_every: 256,
            snapshot_every: 16,
            moves: None,
            heuristic_starts: true,
        }
    }
}

/// The `local-search` solver.
#[derive(Clone, Debug, Default)]
pub struct LocalSearch {
    /// The search's moves, starts and snapshots.
    pub config: LocalSearchConfig,
}

/// The widest beam among the starts: beam:64 takes at most 0.25 s on a suite case and is
/// the fastest of the instant heuristics on 9 of the 14.
const START_BEAM_WIDTH: usize = 64;
/// Each beam among the starts is this many times as wide as the one before, from width 1:
/// on a large program with two fast levels beam:64 does not finish within its share,
/// while beam:1 takes a fraction of a second and can be several percent faster than every
/// other heuristic's game (the scale tier's lowered ViT step on nnp-i-like: 4.4% faster
/// than xla's, the fastest of the rest). The narrower beams cost a third of beam:64's time
/// where it finishes.
const START_BEAM_GROWTH: usize = 4;
/// The share of the budget the starting beams may take.
const START_BEAM_SHARE: f64 = 0.1;

/// A game a search may start from, and its name (`mip`, `xla`, ...), which the search's
/// incumbent notes when it starts there.
#[derive(Clone, Debug)]
pub struct Start {
    /// The start's name, which the incumbent notes when the search starts there.
    pub name: String,
    /// The finished game the search starts from.
    pub game: Game,
}

impl Start {
    /// A start named `name` from the finished `game`.
    pub fn new(name: &str, game: Game) -> Start {
        Start {
            name: name.to_string(),
            game,
        }
    }
}

impl LocalSearch {
    /// The games a search starts from: `given`, then, where the config says
    /// ([`LocalSearchConfig::heuristic_starts`]), the heuristics' games; each is offered to
    /// `incumbent` as soon as it is played, so the search has a best from its first
    /// second. On a large program each heuristic's game takes seconds: once the deadline
    /// has passed, the rest are skipped. The beams, widening from 1 to
    /// [`START_BEAM_WIDTH`], stop at the first that [`START_BEAM_SHARE`] of the time left
    /// cuts short.
    pub fn starts(
        &self,
        setup: &Arc<GameSetup>,
        given: &[Start],
        limit: &Limit,
        incumbent: &Incumbent,
    ) -> Vec<Start> {
        let xla = || vec![Start::new("xla", XlaPlayer.play(setup, 0))];
        let greedy = || vec![Start::new("greedy", GreedyPlayer.play(setup, 0))];
        let beam = || {
            let left = limit.deadline.saturating_duration_since(Instant::now());
            let until = Instant::now() + left.mul_f64(START_BEAM_SHARE);
            let mut games = Vec::new();
            let mut width = 1;
            while width <= START_BEAM_WIDTH {
                let beam = BeamPlayer::new(width);
                let Some(g) = beam.play_until(setup, &|| Instant::now() >= until) else {
                    break;
                };
                games.push(Start::new(&format!("beam:{width}"), g));
                width *= START_BEAM_GROWTH;
            }
            games
        };
        let greedy_size = || {
            // Its line (rules v3: every valid mapping is one).
            let m = GreedySize.solve(setup.program(), setup.hardware());
            vec![Start::new("greedy-size", setup.nearest_trajectory(&m))]
        };
        let heuristics: [&dyn Fn() -> Vec<Start>; 4] = [&xla, &greedy, &beam, &greedy_size];
        let mut starts = given.to_vec();
        for s in &starts {
            incumbent.offer(&s.game);
        }
        if !self.config.heuristic_starts {
            return starts;
        }
        for make in heuristics {
            if !starts.is_empty() && limit.expired() {
                break;
            }
            let made = make();
            for s in &made {
                incumbent.offer(&s.game);
            }
            starts.extend(made);
        }
        starts
    }

    /// The fastest of [`LocalSearch::starts`] (the incumbent notes its name).
    fn start(
        &self,
        setup: &Arc<GameSetup>,
        given: &[Start],
        limit: &Limit,
        incumbent: &Incumbent,
    ) -> Option<Game> {
        let latency = |s: &Start| s.game.final_latency().unwrap_or(f64::INFINITY);
        let best = self
            .starts(setup, given, limit, incumbent)
            .into_iter()
            .filter(|s| s.game.final_latency().is_some())
            .min_by(|a, b| latency(a).total_cmp(&latency(b)))?;
        incumbent.set_start(&best.name);
        Some(best.game)
    }

    /// One move from `cur`, its choices made by `guide`: the new line and its first
    /// changed turn; `None` if `cancelled` says so first.
    fn neighbour(
        &self,
        cur: &Line,
        guide: &mut dyn MoveGuide,
        rng: &mut StdRng,
        cancelled: &dyn Fn() -> bool,
    ) -> Option<(Line, usize)> {
        let Span { first, changed } = guide.span(cur, self.config.mean_changed, rng);
        let sim = guide.reads_simulation();
        // The changed turns are chosen as the replay reaches them: each is legal there.
        let mut redecide = |line: &Line, game: &mut Game, i: usize| {
            if i >= changed {
                return None;
            }
            if sim {
                game.sync_simulation();
            }
            Some(Decision::Action(guide.action(line, game, i, rng)))
        };
        cur.moved(first, &mut redecide, cancelled)
            .map(|line| (line, first))
    }

    /// One chain until the deadline, or for [`LocalSearchConfig::moves`] moves.
    fn chain(&self, from: &Game, ctx: &ChainContext<'_>, k: usize, guide: &mut dyn MoveGuide) {
        let (limit, incumbent, c) = (ctx.limit, ctx.incumbent, &self.config);
        // A counted run ignores the deadline once started: its chains meet at each sync,
        // so none may leave early. Every chain starts from the same game, so either all
        // of them return here or none does.
        let counted = c.moves.is_some();
        let cancelled = || !counted && limit.expired();
        let Some(mut cur) = Line::of_until(from, c.snapshot_every, &cancelled) else {
            return;
        };
        if cur.is_empty() {
            return;
        }
        let mut rng = StdRng::seed_from_u64(thread_seed(ctx.seed, k));
        let total = limit
            .deadline
            .saturating_duration_since(ctx.t0)
            .as_secs_f64()
            .max(1e-9);
        let mut best = counted.then(|| cur.clone());
        let mut moves = 0usize;
        let mut tried = 0u64;
        while !cancelled() && c.moves.is_none_or(|m| moves < m) {
            moves += 1;
            if moves % c.sync_every.max(1) == 0 {
                let better = match &best {
                    Some(mine) => ctx.sync(k, mine),
                    None => incumbent.best_line(c.snapshot_every, &cancelled),
                };
                if let Some(b) = better.filter(|b| b.latency() < cur.latency()) {
                    cur = b;
                    guide.line_changed(0);
                }
            }
            let Some((next, first)) = self.neighbour(&cur, guide, &mut rng, &cancelled) else {
                break;
            };
            tried += 1;
            let frac = match c.moves {
                Some(m) => moves as f64 / m.max(1) as f64,
                None => (ctx.t0.elapsed().as_secs_f64() / total).min(1.0),
            };
            let temp = c.t_start * (c.t_end / c.t_start).powf(frac);
            let d = (next.latency() - cur.latency()) / cur.latency();
            let accepted = d <= 0.0 || rng.random_bool((-d / temp).exp().clamp(0.0, 1.0));
            guide.judged(d, accepted);
            if accepted {
                match &mut best {
                    Some(mine) if next.latency() < mine.latency() => *mine = next.clone(),
                    Some(_) => {}
                    None => {
                        incumbent.offer_line(&next);
                    }
                }
                cur = next;
                guide.line_changed(first);
            }
        }
        if let Some(mine) = &best {
            ctx.finish(k, mine);
        }
        incumbent.add_moves(tried);
    }
}

/// What a run's chains share: the run's settings, and in a counted run
/// ([`LocalSearchConfig::moves`]) each chain's best line, exchanged at barriers so that
/// the run repeats exactly per seed and thread count.
struct ChainContext<'a> {
    seed: u64,
    limit: &'a Limit,
    incumbent: &'a Incumbent,
    t0: Instant,
    /// Each chain's best line at the last sync (counted runs).
    bests: Mutex<Vec<Option<Line>>>,
    barrier: Barrier,
}

impl ChainContext<'_> {
    fn bests(&self) -> MutexGuard<'_, Vec<Option<Line>>> {
        self.bests.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes chain `k`'s best line, waits for every chain to, and returns the best of
    /// all (the lowest latency, the lowest chain on a tie); the incumbent is offered them
    /// in chain order (by chain 0), so its best repeats too.
    fn sync(&self, k: usize, mine: &Line) -> Option<Line> {
        self.bests()[k] = Some(mine.clone());
        self.barrier.wait();
        let best = {
            let bests = self.bests();
            if k == 0 {
                for l in bests.iter().flatten() {
                    self.incumbent.offer_line(l);
                }
            }
            bests
                .iter()
                .flatten()
                .fold(None::<&Line>, |b, l| match b {
                    Some(b) if b.latency() <= l.latency() => Some(b),
                    _ => Some(l),
                })
                .cloned()
        };
        // No chain overwrites its slot before every chain has read them all.
        self.barrier.wait();
        best
    }

    /// Chain `k`'s last sync: its best line offered, in chain order.
    fn finish(&self, k: usize, mine: &Line) {
        let _ = self.sync(k, mine);
    }
}

impl AnytimeSolver for LocalSearch {
    fn name(&self) -> String {
        "local-search".into()
    }

    fn run(&self, setup: &Arc<GameSetup>, seed: u64, limit: &Limit, incumbent: &Incumbent) {
        self.run_from(setup, &[], seed, limit, incumbent);
    }
}

impl LocalSearch {
    /// [`AnytimeSolver::run`] with `given` finished games among the starts (another
    /// solver's mapping as its line, [`GameSetup::trajectory_of`]): the chains start from
    /// the fastest of them and the heuristics' games.
    pub fn run_from(
        &self,
        setup: &Arc<GameSetup>,
        given: &[Start],
        seed: u64,
        limit: &Limit,
        incumbent: &Incumbent,
    ) {
        let uniform = |_: usize| -> Box<dyn MoveGuide> { Box::new(UniformGuide) };
        self.run_guided(setup, given, seed, limit, incumbent, &uniform);
    }

    /// [`LocalSearch::run_from`] with each chain's moves chosen by its own guide,
    /// `guides(k)` for chain `k` (made on the chain's thread). With [`UniformGuide`]s it is
    /// the local search itself, draw for draw.
    pub fn run_guided<'g>(
        &self,
        setup: &Arc<GameSetup>,
        given: &[Start],
        seed: u64,
        limit: &Limit,
        incumbent: &Incumbent,
        guides: &(dyn Fn(usize) -> Box<dyn MoveGuide + 'g> + Sync),
    ) {
        let t0 = Instant::now();
        let Some(start) = self.start(setup, given, limit, incumbent) else {
            return;
        };
        let ctx = ChainContext {
            seed,
            limit,
            incumbent,
            t0,
            bests: Mutex::new(vec![None; limit.threads]),
            barrier: Barrier::new(limit.threads),
        };
        std::thread::scope(|s| {
            for k in 0..limit.threads {
                let (start, ctx) = (&start, &ctx);
                s.spawn(move || {
                    let mut guide = guides(k);
                    self.chain(start, ctx, k, guide.as_mut());
                });
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GameOptions;
    use std::time::Duration;

    fn setup(workload: &str) -> Arc<GameSetup> {
        let case = bench_workloads::suite::cases()
            .into_iter()
            .find(|c| c.workload == workload)
            .unwrap();
        let program = Arc::new(bench_workloads::load(workload).unwrap());
        GameSetup::new(program, case.hardware(), GameOptions::default()).unwrap()
    }

    /// The local search's move as it was written before the guides (commit d5c33b2), kept
    /// here as the reference the uniform guide must reproduce draw for draw: it replays
    /// every turn after the change.
    fn reference_neighbour(ls: &LocalSearch, cur: &Line, rng: &mut StdRng) -> Line {
        let t = rng.random_range(0..cur.len());
        let mut changed = 1;
        let p_more = 1.0 - 1.0 / ls.config.mean_changed.max(1.0);
        while changed < 64 && rng.random_bool(p_more) {
            changed += 1;
        }
        let mut game = cur.state_before(t);
        for i in 0..changed {
            if game.is_terminal() {
                break;
            }
            let old = (i == 0).then(|| cur.action_at(t).unwrap_or(0));
            let choices: Vec<usize> = game
                .legal_actions()
                .into_iter()
                .filter(|&a| Some(a) != old)
                .collect();
            let a = match choices.len() {
                0 => old.unwrap_or(0),
                n => choices[rng.random_range(0..n)],
            };
            game.apply_action(a).unwrap();
        }
        while !game.is_terminal() {
            let d = cur.repair(&game);
            if game.apply_decision(d).is_err() {
                game.apply_action(0).unwrap();
            }
        }
        Line::of(&game, ls.config.snapshot_every).unwrap()
    }

    /// The reference chain of one thread for `moves` moves: the chain as it was, its
    /// temperature falling by moves (as a counted run's does) instead of by time. Returns
    /// the best game and how many moves were accepted.
    fn reference_chain(ls: &LocalSearch, from: &Game, seed: u64, moves: usize) -> (Game, usize) {
        let c = &ls.config;
        let mut cur = Line::of(from, c.snapshot_every).unwrap();
        let mut best = from.clone();
        let mut rng = StdRng::seed_from_u64(thread_seed(seed, 0));
        let mut accepted = 0;
        for m in 1..=moves {
            if m % c.sync_every == 0 && best.final_latency().unwrap() < cur.latency() {
                cur = Line::of(&best, c.snapshot_every).unwrap();
            }
            let next = reference_neighbour(ls, &cur, &mut rng);
            let temp = c.t_start * (c.t_end / c.t_start).powf(m as f64 / moves as f64);
            let d = (next.latency() - cur.latency()) / cur.latency();
            if d <= 0.0 || rng.random_bool((-d / temp).exp().clamp(0.0, 1.0)) {
                if next.latency() < best.final_latency().unwrap() {
                    best = next.game().clone();
                }
                cur = next;
                accepted += 1;
            }
        }
        (best, accepted)
    }

    fn counted(moves: usize, sync_every: usize) -> LocalSearch {
        LocalSearch {
            config: LocalSearchConfig {
                moves: Some(moves),
                sync_every,
                ..LocalSearchConfig::default()
            },
        }
    }

    fn far() -> Limit {
        Limit {
            deadline: Instant::now() + Duration::from_secs(3600),
            threads: 1,
            stop: None,
        }
    }

    #[test]
    fn the_uniform_guide_plays_the_local_searchs_moves() {
        let s = setup("alexnet");
        let moves = 300;
        let ls = counted(moves, 64);
        for seed in [0, 7] {
            let start = ls.start(&s, &[], &far(), &Incumbent::new(Instant::now()));
            let start = start.unwrap();
            let (want, accepted) = reference_chain(&ls, &start, seed, moves);
            assert!(accepted > 10, "the chain must move: {accepted} accepted");
            let incumbent = Incumbent::new(Instant::now());
            ls.run_from(&s, &[], seed, &far(), &incumbent);
            let got = incumbent.best().unwrap();
            assert_eq!(got.actions(), want.actions(), "seed {seed}");
            assert_eq!(got.final_latency(), want.final_latency());
            assert_eq!(incumbent.moves(), moves as u64);
        }
    }

    /// Given the time, every width of the starting beams is played and offered, each
    /// game the one the beam of its width plays; with the budget spent, only xla's game
    /// (the first, so that there is a start) is played, and no beam.
    #[test]
    fn the_starting_beams_widen_while_their_share_lasts() {
        let s = setup("alexnet");
        let ls = LocalSearch::default();
        let incumbent = Incumbent::new(Instant::now());
        let starts = ls.starts(&s, &[], &far(), &incumbent);
        let beams: Vec<&Start> = starts
            .iter()
            .filter(|st| st.name.starts_with("beam:"))
            .collect();
        let names: Vec<&str> = beams.iter().map(|st| st.name.as_str()).collect();
        assert_eq!(names, ["beam:1", "beam:4", "beam:16", "beam:64"]);
        for st in beams {
            let width: usize = st.name["beam:".len()..].parse().unwrap();
            let want = BeamPlayer::new(width).play(&s, 0);
            assert_eq!(st.game.actions(), want.actions(), "{}", st.name);
        }
        let fastest = starts
            .iter()
            .filter_map(|st| st.game.final_latency())
            .fold(f64::INFINITY, f64::min);
        let offered = incumbent.best().unwrap().final_latency().unwrap();
        assert_eq!(offered, fastest, "every start is offered");
        let spent = Limit {
            deadline: Instant::now(),
            ..far()
        };
        let starts = ls.starts(&s, &[], &spent, &Incumbent::new(Instant::now()));
        let names: Vec<&str> = starts.iter().map(|st| st.name.as_str()).collect();
        assert_eq!(names, ["xla"], "no time: no beam");
    }

    #[test]
    fn a_counted_run_on_two_threads_repeats_per_seed() {
        let s = setup("alexnet");
        let ls = counted(120, 32);
        let run = |seed| {
            let incumbent = Incumbent::new(Instant::now());
            let limit = Limit {
                threads: 2,
                stop: None,
                ..far()
            };
            ls.run_from(&s, &[], seed, &limit, &incumbent);
            assert_eq!(incumbent.moves(), 240);
            let best = incumbent.best().unwrap();
            let latencies: Vec<f64> = incumbent.curve().iter().map(|p| p.1).collect();
            (best.actions(), latencies)
        };
        assert_eq!(run(3), run(3));
    }
}
