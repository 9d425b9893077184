//! The XLA-style heuristic as a policy over the game's actions (docs/xla-msa.md, "The xla
//! player of the game").
//!
//! The game already presents buffers in XLA's order (with the default `Order::Xla`), and its
//! modes are XLA's moves over a single allocation per buffer; this player makes XLA's
//! choice among them. For the current buffer, for each fast level, fastest first:
//! 1. no-copy: if the buffer has a defining op and XLA's no-copy rule allows it to stay in
//!    the level over its whole live range, `resident` at slot 0 (slot 0 is the best fit,
//!    as XLA's heap picks); for a weight or input, `resident` (a prefetch at op 0) only
//!    where it is the picker's preferred prefetch;
//! 2. else a prefetch at the picker's preferred start (`prefetch`), then at its latest
//!    start (`prefetch-late`; XLA tries later and earlier starts around the preferred one),
//!    then for the last use alone (`prefetch-last`: XLA's later segments prefetch again
//!    after earlier uses read default memory), each at slot 0;
//! 3. else the next level; else action 0 (default memory).
//!
//! Like XLA, the player places every buffer it can, in order, with no check that the
//! placement pays: XLA's only cost judgement is the order (most memory-bound first) and
//! the picker's timing. A buffer that no op reads stays in default memory, as in XLA,
//! which allocates for uses. Two XLA refusals the game itself does not make are
//! mirrored, each behind a field of [`XlaPlayer`]:
//! - `require_overlap`: XLA's picker has no start for a prefetch that would overlap less
//!   than `min_overlap` of its copy (counting the use's own saving); the game then falls
//!   back to its earliest start (see game.rs); the player refuses it.
//! - `copy_budget`: XLA's asynchronous-copy budget ([`PrefetchBudget`]): each op can carry
//!   prefetch work up to its own elapsed time (cost model, everything in default memory),
//!   served in FIFO order; a prefetch that does not fit is refused.
//!
//! What the game's single allocation per buffer cannot express (the standalone `xla`
//! baseline does it): several segments per buffer (no-copy, then eviction, then a
//! prefetch again), prefetch starts other than the picker's preferred and latest ones,
//! and an eviction held only as long as its copy needs. On hardware with several fast
//! levels the baseline makes one pass per level, each in that level's XLA order; the
//! player tries the levels buffer by buffer, in the game's one order.

use super::{play_legal, Player};
use crate::baselines::copy_budget::CopyBudget as FifoBudget;
use crate::game::{Game, GameSetup};
use crate::options::Mode;
use crate::picker::PickerConfig;
use accel_sim::{Allocation, Arrival, BufferId, CostModel, OpId, Program};
use std::ops::Range;
use std::sync::Arc;

/// XLA's asynchronous-copy budget ([`crate::baselines::copy_budget::CopyBudget`], the one
/// the `xla` baseline uses), charged with the prefetches of game allocations.
#[derive(Clone, Debug)]
pub struct PrefetchBudget {
    budget: FifoBudget,
}

impl PrefetchBudget {
    /// Nothing taken: each op carries up to its default-memory elapsed time.
    pub fn new(cost: &CostModel) -> PrefetchBudget {
        let per_op: Vec<f64> = (0..cost.len()).map(|t| cost.default_elapsed_s(t)).collect();
        PrefetchBudget {
            budget: FifoBudget::new(&per_op),
        }
    }

    /// The budget after the prefetches of every placement made so far in `game`, taken in
    /// turn order; one that does not fit (a game another player played) is left out.
    pub fn from_game(game: &Game) -> PrefetchBudget {
        let setup = game.setup();
        let mut budget = PrefetchBudget::new(setup.cost_model());
        for &b in &setup.order()[..game.turn()] {
            if let Some(a) = game.placement(b) {
                budget.try_take(setup.cost_model(), setup.program(), b, a);
            }
        }
        budget
    }

    /// Number of copies taken.
    pub fn len(&self) -> usize {
        self.budget.len()
    }
    pub fn is_empty(&self) -> bool {
        self.budget.is_empty()
    }

    /// The ops a prefetch runs beside, from its start to its first use (half-open); `None`
    /// for an allocation without one. Evictions are not charged: XLA keeps them on a
    /// budget of their own and, on its last (by default only) try, makes one that does
    /// not fit anyway, so they never limit a prefetch (the `xla` baseline's default too).
    pub fn window(program: &Program, b: BufferId, a: &Allocation) -> Option<Range<OpId>> {
        if a.arrival != Arrival::Prefetch {
            return None;
        }
        let first = program
            .uses(b)
            .iter()
            .copied()
            .find(|&u| u >= a.start)
            .unwrap_or(a.start);
        Some(a.start..first.max(a.start))
    }

    /// Whether the prefetch of `a` (for buffer `b`) fits.
    pub fn fits(&self, cost: &CostModel, program: &Program, b: BufferId, a: &Allocation) -> bool {
        match Self::window(program, b, a) {
            None => true,
            Some(w) => self.budget.fits(w.start, w.end, cost.copy_s(b, a.level)),
        }
    }

    /// Takes the prefetch of `a` if it fits; returns whether it fits (an allocation
    /// without a prefetch always does).
    pub fn try_take(
        &mut self,
        cost: &CostModel,
        program: &Program,
        b: BufferId,
        a: &Allocation,
    ) -> bool {
        match Self::window(program, b, a) {
            None => true,
            Some(w) => self.budget.try_add(w.start, w.end, cost.copy_s(b, a.level)),
        }
    }
}

/// The XLA-style player. `Default` mirrors both of XLA's refusals (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XlaPlayer {
    /// Refuse prefetches that cannot hide `min_overlap` of their copy.
    pub require_overlap: bool,
    /// Refuse copies that do not fit XLA's asynchronous-copy budget.
    pub copy_budget: bool,
}

impl Default for XlaPlayer {
    fn default() -> Self {
        XlaPlayer {
            require_overlap: true,
            copy_budget: true,
        }
    }
}

/// The order XLA tries the game's modes in, after the no-copy check.
const PREFETCHES: [Mode; 3] = [Mode::Prefetch, Mode::PrefetchLate, Mode::PrefetchLast];

impl XlaPlayer {
    /// XLA's action for the current buffer of `game`, with `budget` the copy work left
    /// (ignored unless `copy_budget`). 0 on a finished game.
    pub fn choose(&self, game: &Game, budget: &PrefetchBudget) -> usize {
        let Some(b) = game.current_buffer() else {
            return 0;
        };
        let setup = game.setup();
        let (program, hw, cost) = (setup.program(), setup.hardware(), setup.cost_model());
        let options = setup.options();
        let picker = PickerConfig::default();
        if program.uses(b).is_empty() {
            return 0;
        }
        let (start, end) = program.live_range(b);
        for li in 0..options.fast_levels {
            let level = setup.level(li);
            let resident = match program.def(b) {
                Some(_) => picker.allows_no_copy(cost, hw, level, start, end),
                // For a weight or input, `resident` is a prefetch at op 0 held to its last
                // use: exactly the preferred prefetch when the picker prefers op 0, which
                // makes `prefetch` its illegal twin. Tried first then, it stands for it.
                None => {
                    let first_use = program.uses(b)[0];
                    picker.window(cost, hw, b, level, 0, first_use).preferred == 0
                }
            };
            let modes = resident
                .then_some(Mode::Resident)
                .into_iter()
                .chain(PREFETCHES);
            for mode in modes {
                let Some(mi) = options.modes.iter().position(|&m| m == mode) else {
                    continue;
                };
                let action = options.encode(li, mi, 0);
                let Ok(Some(a)) = game.allocation_for(action) else {
                    continue;
                };
                if self.require_overlap && !hides_min_overlap(&picker, cost, program, b, &a) {
                    continue;
                }
                if self.copy_budget && !budget.fits(cost, program, b, &a) {
                    continue;
                }
                return action;
            }
        }
        0
    }
}

/// Whether XLA's picker would allow this start: the prefetch must overlap at least
/// `min_overlap` of its copy, counting the use's own saving (`red`), as in
/// [`PickerConfig::window`]. The overlap only grows as the start moves earlier, so this
/// holds at the game's start iff it holds at the picker's latest start, i.e. iff XLA's
/// window is not empty. Allocations without a prefetch pass.
fn hides_min_overlap(
    picker: &PickerConfig,
    cost: &CostModel,
    program: &Program,
    b: BufferId,
    a: &Allocation,
) -> bool {
    if a.arrival != Arrival::Prefetch {
        return true;
    }
    let Some(u) = program.uses(b).iter().copied().find(|&u| u >= a.start) else {
        return false;
    };
    let red = cost.use_saving_s(b, a.level, u);
    picker.min_overlap * cost.copy_s(b, a.level) <= cost.span_s(a.start, u) + red
}

impl Player for XlaPlayer {
    fn name(&self) -> String {
        match (self.require_overlap, self.copy_budget) {
            (true, true) => "xla".into(),
            (o, c) => format!("xla[require_overlap={o},copy_budget={c}]"),
        }
    }

    fn play(&self, setup: &Arc<GameSetup>, _seed: u64) -> Game {
        let mut game = setup.start();
        let mut budget = PrefetchBudget::new(setup.cost_model());
        while let Some(b) = game.current_buffer() {
            let action = self.choose(&game, &budget);
            if let Ok(Some(a)) = game.allocation_for(action) {
                // `choose` checked that it fits when the budget is on; when it is off,
                // the budget is not read.
                budget.try_take(setup.cost_model(), setup.program(), b, &a);
            }
            play_legal(&mut game, action);
        }
        game
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::GameOptions;
    use accel_sim::{Buffer, BufferKind, Hardware, Op};

    /// `n` compute-bound ops of ~1 ms each in a chain of small activations; a weight `w`
    /// of `w_size` bytes read by the last op only.
    fn late_weight(n: usize, w_size: u64) -> Arc<Program> {
        let mut buffers = vec![Buffer {
            name: "w".into(),
            size: w_size,
            kind: BufferKind::Weight,
        }];
        let mut ops = Vec::new();
        for t in 0..n {
            buffers.push(Buffer {
                name: format!("a{t}"),
                size: 1024,
                kind: if t + 1 == n {
                    BufferKind::Output
                } else {
                    BufferKind::Activation
                },
            });
            let mut reads = if t > 0 { vec![t] } else { vec![] };
            if t + 1 == n {
                reads.push(0);
            }
            ops.push(Op {
                name: format!("op{t}"),
                kind: "t".into(),
                flops: 1e11,
                reads,
                writes: vec![t + 1],
            });
        }
        Arc::new(Program::new("late-weight", "", buffers, ops).unwrap())
    }

    fn setup(p: Arc<Program>, capacity: u64) -> Arc<GameSetup> {
        let hw = Hardware::tpu_v4i_like().with_capacity(1, capacity).unwrap();
        GameSetup::new(p, hw, GameOptions::default()).unwrap()
    }

    fn mode_of(setup: &GameSetup, action: usize) -> Option<Mode> {
        let (_, mi, _) = setup.options().decode(action)?;
        Some(setup.options().modes[mi])
    }

    #[test]
    fn weights_are_prefetched_and_activations_kept() {
        let s = setup(late_weight(10, 4 << 20), 64 << 20);
        let g = XlaPlayer::default().play(&s, 0);
        assert!(g.is_terminal());
        let w = s.order().iter().position(|&b| b == 0).unwrap();
        assert_eq!(mode_of(&s, g.actions()[w]), Some(Mode::Prefetch));
        // Every activation has a defining op and a one-op live range: no-copy applies.
        // The output (buffer 10) is never read: XLA allocates for uses, so it stays in
        // default memory.
        for (turn, &b) in s.order().iter().enumerate() {
            let want = match b {
                0 => continue,
                10 => None,
                _ => Some(Mode::Resident),
            };
            assert_eq!(mode_of(&s, g.actions()[turn]), want, "buffer {b}");
        }
        g.mapping().validate(s.program(), s.hardware()).unwrap();
    }

    #[test]
    fn copy_budget_refuses_a_copy_its_window_cannot_carry() {
        // The ops take ~0.72 ms each; a 16 GiB weight copies in ~28 ms at the default
        // bandwidth, far more than the 9 ops before its use can carry, so XLA does not
        // prefetch it. The overlap rule allows it: the use's own saving (~19 ms) plus a
        // few ops cover 0.8 x the copy.
        let s = setup(late_weight(10, 16 << 30), 32 << 30);
        let w = s.order().iter().position(|&b| b == 0).unwrap();
        let with = |require_overlap, copy_budget| {
            let p = XlaPlayer {
                require_overlap,
                copy_budget,
            };
            p.play(&s, 0).actions()[w]
        };
        assert_eq!(with(true, true), 0);
        assert_eq!(with(false, true), 0);
        assert_ne!(with(true, false), 0);
        assert_ne!(with(false, false), 0);
    }

    #[test]
    fn overlap_rule_refuses_a_prefetch_it_cannot_hide() {
        // One 1 GiB weight read by a compute-bound op (~1.3 ms of compute to hide a
        // ~1.75 ms copy, and no saving at the use): nothing before op 1 can hide
        // 0.8 x the copy, so only the lax player prefetches it.
        let buffers = vec![
            Buffer {
                name: "w".into(),
                size: 1 << 30,
                kind: BufferKind::Weight,
            },
            Buffer {
                name: "a".into(),
                size: 1024,
                kind: BufferKind::Activation,
            },
            Buffer {
                name: "y".into(),
                size: 1024,
                kind: BufferKind::Output,
            },
        ];
        let op = |n: &str, flops, reads: Vec<usize>, writes| Op {
            name: n.into(),
            kind: "t".into(),
            flops,
            reads,
            writes,
        };
        let ops = vec![
            op("op0", 1e8, vec![], vec![1]),
            op("op1", 1e15, vec![0, 1], vec![2]),
        ];
        let p = Arc::new(Program::new("hidden", "", buffers, ops).unwrap());
        let s = setup(p, 2 << 30);
        let w = s.order().iter().position(|&b| b == 0).unwrap();
        let with = |require_overlap| {
            let p = XlaPlayer {
                require_overlap,
                copy_budget: false,
            };
            p.play(&s, 0).actions()[w]
        };
        assert_eq!(with(true), 0);
        // The picker prefers op 0, so `resident` (a prefetch at op 0) stands for `prefetch`.
        assert_eq!(with(false), s.options().encode(0, 0, 0));
    }

    #[test]
    fn budget_rebuilt_from_the_game_holds_the_players_prefetches() {
        let s = setup(late_weight(10, 4 << 20), 64 << 20);
        let g = XlaPlayer::default().play(&s, 0);
        let prefetches = (0..s.program().buffers().len())
            .filter(|&b| {
                g.placement(b)
                    .is_some_and(|a| a.arrival == Arrival::Prefetch)
            })
            .count();
        assert_eq!(prefetches, 1);
        let budget = PrefetchBudget::from_game(&g);
        assert_eq!(budget.len(), prefetches);
        let a = g.placement(0).unwrap();
        assert_eq!(PrefetchBudget::window(s.program(), 0, a), Some(a.start..9));
    }

    #[test]
    fn names_show_non_default_rules() {
        assert_eq!(XlaPlayer::default().name(), "xla");
        let p = XlaPlayer {
            require_overlap: true,
            copy_budget: false,
        };
        assert_eq!(p.name(), "xla[require_overlap=true,copy_budget=false]");
    }
}
