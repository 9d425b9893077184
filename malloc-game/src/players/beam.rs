//! Beam search over whole games.
//!
//! Each step, every child of every game in the beam is scored with [`Game::cost_delta`]
//! alone (no clone): its running latency after the move ([`Game::latency`]: the
//! simulated latency of the mapping so far, or the cost model's under `reward: proxy`).
//! The `width` best children are cloned and played; a parent whose only kept child is the last one to use it is
//! moved, not cloned. A game that ends leaves the beam; the best finished game by the
//! simulator (`total_return`) is the result. Games of one step may sit at different
//! buffers (a line that keeps a chunk decides fewer uses later), but each is a partial
//! mapping of the same program, compared like for like.
//!
//! The slots of one mode differ only in offset, which neither latency sees: a
//! game's children are its moves at slot 0 (and action 0), and among its children with
//! the same score only the lowest-numbered one is kept, so equal moves do not fill the
//! beam.
//!
//! A clone of a game is `O(1)` (its state is persistent: see [`Game`]), and a move copies
//! only what it changes, so a step costs about what playing the kept children costs.
//! Each kept child is played, and its own children scored, apart from the others, so
//! [`BeamPlayer::with_threads`] shares a step out among threads; the lines are gathered
//! back in the beam's order, so the game found is the same on any number of threads.
//!
//! Two lines are always kept, beside the `width` best children if need be: the greedy
//! line (the game [`super::GreedyPlayer`] plays) and the xla line (the `xla` baseline's
//! mapping as a trajectory, [`super::XlaPlayer`]). Ranking partial mappings can drop
//! them in favour of lines that end worse; keeping them makes `beam:W`
//! at least as good as both `greedy` and `xla` on every program. The xla line's moves are
//! found as it goes ([`Game::move_of`] on its own game), not from a trajectory played
//! beforehand: on a 100k-op program that second game cost a twelfth of the search.

use super::{greedy, Player, XlaPlayer, PROGRESS_EVERY};
use crate::game::{Game, GameSetup};
use accel_sim::Mapping;
use std::sync::{Arc, Mutex};

/// The width of `beam`.
pub const DEFAULT_WIDTH: usize = 8;

/// Beam search of width `width` (at least 1) on one thread unless told otherwise;
/// ignores the seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BeamPlayer {
    width: usize,
    threads: usize,
}

impl BeamPlayer {
    /// A width of 0 is taken as 1.
    pub fn new(width: usize) -> BeamPlayer {
        BeamPlayer {
            width: width.max(1),
            threads: 1,
        }
    }
    /// The same search, each step shared out among `threads` threads (0 is taken as 1).
    pub fn with_threads(self, threads: usize) -> BeamPlayer {
        BeamPlayer {
            threads: threads.max(1),
            ..self
        }
    }
    /// Games kept at each step.
    pub fn width(&self) -> usize {
        self.width
    }
}

/// A child of a game in the beam, not played yet.
#[derive(Clone, Copy, Debug)]
struct Child {
    /// The running latency after the move, then the cost model's (the tie-breaker,
    /// [`greedy::Delta`]).
    score: (f64, f64),
    /// Index of the parent in the beam.
    parent: usize,
    action: usize,
    /// It continues the greedy line / the xla line.
    greedy: bool,
    xla: bool,
}

/// A game in the beam, whether it is still the greedy line / the xla line, and its
/// children (their `parent` is set when the beam ranks them).
struct Line {
    game: Game,
    greedy: bool,
    xla: bool,
    children: Vec<Child>,
}

impl BeamPlayer {
    /// The children of `line` worth ranking (with parent 0). `Err` where the xla line's
    /// game has no move giving the `xla` mapping's chunk.
    fn children(line: &Line, xla: Option<&Mapping>) -> Result<Vec<Child>, XlaLeft> {
        let g = &line.game;
        // Action 0, a slot-0 move per mode and the xla line's move.
        let room = g.setup().options().modes.len() + 2;
        let mut deltas = Vec::with_capacity(room);
        let mut out: Vec<Child> = Vec::with_capacity(room);
        // Each move's delta once: the children's scores and the greedy choice share them.
        greedy::slot0_deltas(g, &mut deltas);
        let greedy = line.greedy.then(|| greedy::pick(&deltas));
        let xla = match xla.filter(|_| line.xla) {
            Some(mapping) => Some(g.move_of(mapping).map_err(|_| XlaLeft)?),
            None => None,
        };
        if let Some(x) = xla.filter(|x| !deltas.iter().any(|d| d.0 == *x)) {
            // The xla line's move at a slot other than 0.
            let at = deltas.partition_point(|d| d.0 < x);
            deltas.insert(at, (x, greedy::Delta::of(g, x)));
        }
        let base = (g.latency(), g.proxy_latency());
        for &(action, delta) in deltas.iter() {
            let score = (base.0 + delta.latency, base.1 + delta.model);
            let (on_greedy, on_xla) = (greedy == Some(action), xla == Some(action));
            // Equal to an earlier child: the earlier (lower-numbered) one stands for it,
            // unless this one carries a line that must be kept.
            let twin = out.iter().any(|c| c.score == score);
            if !twin || on_greedy || on_xla {
                out.push(Child {
                    score,
                    parent: 0,
                    action,
                    greedy: on_greedy,
                    xla: on_xla,
                });
            }
        }
        Ok(out)
    }
}

/// How a search's lines moved, summed over its steps: what limits sharing work between
/// lines (docs/results.md, "Where the beam's time goes"). [`BeamPlayer::play_with_stats`]
/// fills it; `cargo run --release -p malloc-game --example beam_lines` prints it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BeamStats {
    /// Steps of the search (each plays one turn of every line kept).
    pub steps: usize,
    /// Lines in the beam before each step.
    pub lines: usize,
    /// Children kept by each step: the `width` best and the forced greedy and xla lines.
    pub kept: usize,
    /// Distinct scores (running latency, then the cost model's) among each step's kept
    /// children: kept children with equal scores are lines that move alike.
    pub distinct_scores: usize,
    /// Distinct parents of each step's kept children.
    pub parents: usize,
    /// Steps whose kept children, more than one, all play the same action.
    pub same_action_steps: usize,
}

impl BeamStats {
    /// `kept` in the beam's ranking order (lowest score first), so equal scores sit
    /// side by side.
    fn record(&mut self, lines: usize, kept: &[Child]) {
        self.steps += 1;
        self.lines += lines;
        self.kept += kept.len();
        let changes = kept.windows(2).filter(|w| w[0].score != w[1].score).count();
        self.distinct_scores += changes + usize::from(!kept.is_empty());
        let mut parents: Vec<usize> = kept.iter().map(|c| c.parent).collect();
        parents.sort_unstable();
        parents.dedup();
        self.parents += parents.len();
        if kept.len() > 1 && kept.iter().all(|c| c.action == kept[0].action) {
            self.same_action_steps += 1;
        }
    }
}

/// The xla mapping turned out not to be a trajectory of the game (a bug: the tests hold
/// every xla mapping to be one): the search starts again without the xla line, as it
/// would have without a trajectory.
struct XlaLeft;

impl Player for BeamPlayer {
    fn name(&self) -> String {
        format!("beam:{}", self.width)
    }

    fn play(&self, setup: &Arc<GameSetup>, seed: u64) -> Game {
        self.play_with_progress(setup, seed, &mut |_, _| {})
    }

    fn play_with_progress(
        &self,
        setup: &Arc<GameSetup>,
        _seed: u64,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Game {
        self.search(setup, progress, &|| false, None)
            .unwrap_or_else(|| setup.start())
    }
}

impl BeamPlayer {
    /// The beam's game, or `None` if `cancelled` says so first (it is asked every step):
    /// an anytime search stops a wide beam at its deadline.
    pub fn play_until(&self, setup: &Arc<GameSetup>, cancelled: &dyn Fn() -> bool) -> Option<Game> {
        self.search(setup, &mut |_, _| {}, cancelled, None)
    }

    /// The beam's game (as [`Player::play`]) and how its lines moved.
    pub fn play_with_stats(&self, setup: &Arc<GameSetup>) -> (Game, BeamStats) {
        let mut stats = BeamStats::default();
        let game = self.search(setup, &mut |_, _| {}, &|| false, Some(&mut stats));
        (game.unwrap_or_else(|| setup.start()), stats)
    }

    fn search(
        &self,
        setup: &Arc<GameSetup>,
        progress: &mut dyn FnMut(usize, usize),
        cancelled: &dyn Fn() -> bool,
        mut stats: Option<&mut BeamStats>,
    ) -> Option<Game> {
        let xla = XlaPlayer::mapping(setup);
        let first = self.search_with(setup, Some(&xla), progress, cancelled, stats.as_deref_mut());
        match first {
            Ok(found) => found,
            Err(XlaLeft) => {
                // The statistics are the search that finds the game.
                if let Some(s) = stats.as_deref_mut() {
                    *s = BeamStats::default();
                }
                self.search_with(setup, None, progress, cancelled, stats)
                    .unwrap_or(None)
            }
        }
    }

    fn search_with(
        &self,
        setup: &Arc<GameSetup>,
        xla: Option<&Mapping>,
        progress: &mut dyn FnMut(usize, usize),
        cancelled: &dyn Fn() -> bool,
        mut stats: Option<&mut BeamStats>,
    ) -> Result<Option<Game>, XlaLeft> {
        let mut best: Option<Game> = None;
        let xla_left = std::cell::Cell::new(false);
        let mut finish = |g: Game, on_xla: bool| {
            // The xla line must end with the xla mapping itself.
            if on_xla && xla.is_some_and(|m| setup.unlike(&g.mapping(), m).is_some()) {
                xla_left.set(true);
            }
            if best
                .as_ref()
                .is_none_or(|b| g.total_return() > b.total_return())
            {
                best = Some(g);
            }
        };
        let start = setup.start();
        let mut beam = Vec::new();
        if start.is_terminal() {
            finish(start, false);
        } else {
            let mut line = Line {
                game: start,
                greedy: true,
                xla: xla.is_some(),
                children: Vec::new(),
            };
            line.children = BeamPlayer::children(&line, xla)?;
            beam.push(line);
        }
        let pool = Pool::new(self.threads);
        let mut children = Vec::new();
        let mut step = 0usize;
        let mut reached = 0usize;
        while !beam.is_empty() {
            if cancelled() {
                return Ok(None);
            }
            let kept = self.keep(&beam, &mut children);
            if let Some(s) = stats.as_deref_mut() {
                s.record(beam.len(), &kept);
            }
            beam = expand(&pool, std::mem::take(&mut beam), &kept, xla, &mut finish)?;
            if xla_left.get() {
                return Err(XlaLeft);
            }
            step += 1;
            reached = reached.max(step);
            if step % PROGRESS_EVERY == 0 {
                progress(step, setup.max_turns().max(step));
            }
        }
        let best = best.unwrap_or_else(|| setup.start());
        // Every line of the beam plays one turn a step: the last step is the longest game.
        let end = reached.max(best.turn());
        progress(end, end);
        Ok(Some(best))
    }

    /// The children the beam keeps: the `width` fastest of all its lines' children, and
    /// past them the greedy and xla lines' (`children` is scratch space).
    fn keep(&self, beam: &[Line], children: &mut Vec<Child>) -> Vec<Child> {
        children.clear();
        for (i, line) in beam.iter().enumerate() {
            children.extend(line.children.iter().map(|c| Child { parent: i, ..*c }));
        }
        // Lowest latency first; ties by parent, then action, so the result does not
        // depend on the sort.
        children.sort_by(|a, b| {
            a.score
                .0
                .total_cmp(&b.score.0)
                .then(a.score.1.total_cmp(&b.score.1))
                .then(a.parent.cmp(&b.parent))
                .then(a.action.cmp(&b.action))
        });
        let mut kept: Vec<Child> = children.iter().take(self.width).copied().collect();
        for forced in children.iter().skip(self.width) {
            if forced.greedy || forced.xla {
                kept.push(*forced);
            }
        }
        kept
    }
}

/// Plays the kept children, and finds the children of those that go on: each parent is
/// cloned for all its kept children but the last, which takes it. Finished games go to
/// `finish`, in the order of `kept`, with whether they are the xla line.
fn expand(
    pool: &Pool,
    beam: Vec<Line>,
    kept: &[Child],
    xla: Option<&Mapping>,
    finish: &mut impl FnMut(Game, bool),
) -> Result<Vec<Line>, XlaLeft> {
    let mut last_use = vec![usize::MAX; beam.len()];
    for (i, c) in kept.iter().enumerate() {
        last_use[c.parent] = i;
    }
    // Clones are O(1): made here, so that each child is one task of the same size.
    let mut parents: Vec<Option<Game>> = beam.into_iter().map(|l| Some(l.game)).collect();
    let mut games = Vec::with_capacity(kept.len());
    for (i, c) in kept.iter().enumerate() {
        let game = if last_use[c.parent] == i {
            parents[c.parent].take()
        } else {
            parents[c.parent].clone()
        };
        games.extend(game.map(|g| (c, g)));
    }
    let lines = pool.map_owned(games, |(c, mut game)| {
        // The child came from the game's own legal moves.
        super::play_legal(&mut game, c.action);
        // A turn where the menu offers only action 0 (rules v3 stops there for moves
        // given in full) is no choice for the beam: played at once, so that the lines of
        // a step have made the same number of choices, as under rules v2.
        while game.only_action_0() {
            super::play_legal(&mut game, 0);
        }
        let mut line = Line {
            game,
            greedy: c.greedy,
            xla: c.xla,
            children: Vec::new(),
        };
        if !line.game.is_terminal() {
            line.children = BeamPlayer::children(&line, xla)?;
        }
        Ok(line)
    });
    let mut next = Vec::with_capacity(kept.len());
    for line in lines {
        let line = line?;
        if line.game.is_terminal() {
            finish(line.game, line.xla);
        } else {
            next.push(line);
        }
    }
    Ok(next)
}

/// Where a step's work runs: on the calling thread, which a pool of its own (not rayon's
/// global one, which a caller may keep for something else) helps when there are threads
/// to spare. The caller takes tasks too, so a step wakes one helper per extra thread
/// instead of handing everything over and waiting.
struct Pool(Option<rayon::ThreadPool>);

impl Pool {
    /// One thread: no pool. A pool that cannot be built leaves the work on this thread.
    fn new(threads: usize) -> Pool {
        Pool(
            (threads > 1)
                .then(|| {
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(threads - 1)
                        .build()
                        .ok()
                })
                .flatten(),
        )
    }

    /// `f(item)` for every item, taking it, in order.
    fn map_owned<T: Send, R: Send>(&self, items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
        let Some(pool) = &self.0 else {
            return items.into_iter().map(f).collect();
        };
        let n = items.len();
        let queue = Mutex::new(items.into_iter().enumerate());
        let done: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
        // A poisoned lock means a task panicked; its panic reaches the caller anyway.
        let work = || loop {
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((i, item)) = next else { break };
            let r = f(item);
            done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
        };
        pool.in_place_scope(|s| {
            for _ in 0..pool.current_num_threads().min(n.saturating_sub(1)) {
                s.spawn(|_| work());
            }
            work();
        });
        done.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .flatten()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::GameOptions;
    use crate::players::GreedyPlayer;
    use accel_sim::{Buffer, BufferKind, Hardware, Op, Program};

    /// Two weights that both want the fast level over the same ops but only one fits at a
    /// time, read by memory-bound ops.
    fn contention() -> Arc<Program> {
        let buf = |n: &str, s: u64, k| Buffer {
            name: n.into(),
            size: s,
            kind: k,
        };
        let op = |n: &str, r: Vec<usize>, w: Vec<usize>| Op {
            name: n.into(),
            kind: "t".into(),
            flops: 1e6,
            reads: r,
            writes: w,
        };
        Arc::new(
            Program::new(
                "contention",
                "",
                vec![
                    buf("x", 1 << 20, BufferKind::Input),
                    buf("w0", 3 << 20, BufferKind::Weight),
                    buf("w1", 2 << 20, BufferKind::Weight),
                    buf("a", 1 << 20, BufferKind::Activation),
                    buf("b", 1 << 20, BufferKind::Activation),
                    buf("y", 1 << 20, BufferKind::Output),
                ],
                vec![
                    op("op0", vec![0, 1], vec![3]),
                    op("op1", vec![3, 2], vec![4]),
                    op("op2", vec![4, 1, 2], vec![5]),
                ],
            )
            .unwrap(),
        )
    }

    fn setup() -> Arc<GameSetup> {
        let hw = Hardware::tpu_v4i_like().with_capacity(1, 4 << 20).unwrap();
        GameSetup::new(contention(), hw, GameOptions::default()).unwrap()
    }

    #[test]
    fn width_one_keeps_greedy_and_xla() {
        let s = setup();
        let b = BeamPlayer::new(1).play(&s, 0).total_return();
        let g = GreedyPlayer.play(&s, 0).total_return();
        let x = XlaPlayer.play(&s, 0).total_return();
        assert!(b >= g && b >= x, "beam:1 {b}, greedy {g}, xla {x}");
        assert_eq!(BeamPlayer::new(0).width(), 1);
    }

    #[test]
    fn the_xla_line_follows_the_xla_mapping_and_is_dropped_where_the_game_cannot() {
        let s = setup();
        let search = |xla: Option<&Mapping>| {
            BeamPlayer::new(1).search_with(&s, xla, &mut |_, _| {}, &|| false, None)
        };
        let good = XlaPlayer::mapping(&s);
        let Ok(Some(g)) = search(Some(&good)) else {
            panic!("the xla mapping is a trajectory of the game");
        };
        assert!(g.total_return() >= XlaPlayer.play(&s, 0).total_return());
        // A chunk of `a` at an offset no move offers: the line cannot follow it.
        let mut bad = good.clone();
        bad.buffers[3].allocations = vec![accel_sim::Allocation {
            level: 1,
            offset: 12_345,
            start: 0,
            end: 1,
            arrival: accel_sim::Arrival::Defined,
            eviction: None,
        }];
        assert!(search(Some(&bad)).is_err());
        assert!(matches!(search(None), Ok(Some(_))));
    }

    #[test]
    fn wider_beams_never_lose_to_greedy_and_find_the_exhaustive_best() {
        let s = setup();
        let greedy = GreedyPlayer.play(&s, 0).total_return();
        // Exhaustive search over the tiny game: the best simulated return there is.
        let mut stack = vec![s.start()];
        let mut best = f64::NEG_INFINITY;
        let mut leaves = 0;
        while let Some(g) = stack.pop() {
            if g.is_terminal() {
                best = best.max(g.total_return());
                leaves += 1;
                continue;
            }
            for a in g.legal_actions() {
                let mut c = g.clone();
                c.apply_action(a).unwrap();
                stack.push(c);
            }
        }
        for w in [2, 4, 8] {
            let r = BeamPlayer::new(w).play(&s, 0).total_return();
            assert!(r >= greedy, "beam:{w} {r} < greedy {greedy}");
            assert!(r <= best + 1e-12);
        }
        // Wide enough to hold every game at every turn: the beam search is exhaustive
        // over slot 0 of every mode (and the forced lines).
        let r = BeamPlayer::new(leaves).play(&s, 0).total_return();
        assert!(r <= best + 1e-12 && r >= greedy, "{r} vs {best}");
    }

    #[test]
    fn the_statistics_count_every_step_of_the_same_search() {
        let s = setup();
        for w in [1, 2, 8] {
            let beam = BeamPlayer::new(w);
            let (g, stats) = beam.play_with_stats(&s);
            assert_eq!(g.actions(), beam.play(&s, 0).actions());
            // Every line plays one turn a step, so the game found has at most `steps` turns.
            assert!(stats.steps >= g.turn() && stats.steps > 0, "{stats:?}");
            assert!(stats.lines >= stats.steps, "{stats:?}");
            // At least one child is kept a step, at most the width and the two forced lines.
            assert!(stats.kept >= stats.steps && stats.kept <= stats.steps * (w + 2));
            assert!(stats.distinct_scores >= stats.steps && stats.distinct_scores <= stats.kept);
            assert!(stats.parents >= stats.steps && stats.parents <= stats.kept);
            assert!(stats.same_action_steps <= stats.steps);
        }
    }

    #[test]
    fn beam_games_match_replays_of_their_actions() {
        let s = setup();
        for w in [1, 2, 8] {
            let g = BeamPlayer::new(w).play(&s, 0);
            let mut replay = s.start();
            for a in g.actions() {
                replay.apply_action(a).unwrap();
            }
            assert_eq!(replay.rewards(), g.rewards());
            assert_eq!(replay.mapping(), g.mapping());
            assert_eq!(replay.proxy_latency(), g.proxy_latency());
            assert_eq!(replay.final_latency(), g.final_latency());
        }
    }
}
