//! What every episode of a game shares: the program and hardware, the rules' options,
//! XLA's passes the game walks ([`Rules`]), each pass's buffer order, and the all-level-0
//! starting point.

use super::state::Game;
use super::tally::Tally;
use super::GameError;
use crate::options::{GameOptions, Mode, Order, Reward};
use accel_sim::{BufferId, CostModel, ExactSim, Hardware, LiveSim, Program, Simulator};
use std::sync::Arc;
use xla_msa::{xla_order, Rules, Walk, XlaOptions};

/// Everything about a game that does not change while it is played: shared by every
/// episode and clone through an `Arc`.
#[derive(Debug)]
pub struct GameSetup {
    options: GameOptions,
    /// The XLA passes the game walks: XLA's defaults over the game's fast levels, with
    /// the program, the hardware and the cost model.
    pub(super) rules: Rules,
    /// The buffers of each pass in the order they take their turns.
    pub(super) orders: Vec<Vec<BufferId>>,
    /// Simulated latency of the all-level-0 mapping.
    pub(super) s0: f64,
    /// The simulation of the all-level-0 mapping, which every game starts from.
    live0: LiveSim,
    /// The whole-run simulator of a finished game (cloned: it keeps scratch space).
    simulator: Simulator,
    /// Memory-boundedness of each buffer in the fastest level (observation feature).
    boundedness: Vec<f64>,
    /// The most turns a game can take.
    pub(super) max_turns: usize,
}

impl GameSetup {
    /// The game of `program` on `hw` under `options`: XLA's passes over the fast levels,
    /// their buffer order, and `S0`, worked out once for every game that starts from it.
    pub fn new(
        program: Arc<Program>,
        hw: Hardware,
        options: GameOptions,
    ) -> Result<Arc<GameSetup>, GameError> {
        options
            .check(hw.levels.len() - 1)
            .map_err(GameError::Options)?;
        let xla = XlaOptions {
            max_levels: Some(options.fast_levels),
            ..XlaOptions::default()
        };
        // The same arithmetic as a whole run of the all-level-0 mapping.
        let simulator = Simulator::new(&program, &hw);
        let rules = Rules::new(Arc::clone(&program), hw, xla);
        let (cost, hw) = (rules.cost_model(), rules.hardware());
        let fastest = hw.fastest();
        let n = program.buffers().len();
        let boundedness: Vec<f64> = (0..n)
            .map(|b| cost.memory_boundedness(b, fastest))
            .collect();
        let orders: Vec<Vec<BufferId>> = rules
            .levels()
            .iter()
            .map(|&level| match options.order {
                Order::Xla => xla_order(&program, cost, level),
                Order::ByStart => {
                    let mut ids: Vec<BufferId> = (0..n).collect();
                    ids.sort_by_key(|&b| (program.live_range(b).0, b));
                    ids
                }
                Order::BySize => {
                    let mut ids: Vec<BufferId> = (0..n).collect();
                    ids.sort_by_key(|&b| (std::cmp::Reverse(program.buffer(b).size), b));
                    ids
                }
            })
            .collect();
        let max_turns = rules
            .levels()
            .iter()
            .map(|&level| {
                let cap = hw.levels[level].capacity;
                // A turn per use, or one at the definition where no use comes first.
                (0..n)
                    .filter(|&b| program.buffer(b).size <= cap)
                    .map(|b| {
                        program
                            .uses(b)
                            .len()
                            .max(usize::from(program.def(b).is_some()))
                    })
                    .sum::<usize>()
            })
            .sum();
        let live0 = simulator.live();
        let s0 = live0.latency_s();
        Ok(Arc::new(GameSetup {
            options,
            rules,
            orders,
            s0,
            live0,
            simulator,
            boundedness,
            max_turns,
        }))
    }

    /// The program being mapped.
    pub fn program(&self) -> &Program {
        self.rules.program()
    }
    /// The program, shared.
    pub fn program_arc(&self) -> &Arc<Program> {
        self.rules.program()
    }
    /// The hardware it runs on.
    pub fn hardware(&self) -> &Hardware {
        self.rules.hardware()
    }
    /// The rules' knobs.
    pub fn options(&self) -> &GameOptions {
        &self.options
    }
    /// The cost model the turns' proxy rewards are measured with.
    pub fn cost_model(&self) -> &CostModel {
        self.rules.cost_model()
    }
    /// The buffers of pass `pass` (0 = fastest level) in the order they take their turns.
    pub fn order(&self, pass: usize) -> &[BufferId] {
        self.orders.get(pass).map_or(&[], |o| o)
    }
    /// Number of passes (fast levels filled).
    pub(crate) fn passes(&self) -> usize {
        self.rules.levels().len()
    }
    /// The hardware level of pass `li` (0 = fastest).
    pub(crate) fn level(&self, li: usize) -> usize {
        self.rules.levels()[li]
    }
    /// Simulated latency with everything in level 0 (`S0`).
    pub fn all_slow_latency(&self) -> f64 {
        self.s0
    }
    /// Memory-boundedness of buffer `b` in the fastest level.
    pub(crate) fn boundedness(&self, b: BufferId) -> f64 {
        self.boundedness[b]
    }
    /// Actions on a turn's menu (the same every turn): the policy's length.
    pub fn action_count(&self) -> usize {
        self.options.action_count()
    }
    /// The rules of the XLA passes the game walks: XLA's defaults over its fast levels.
    pub fn xla_options(&self) -> &XlaOptions {
        self.rules.options()
    }
    /// The most turns a game can take: every use of every buffer that fits (or its
    /// definition, for a buffer never read), per pass.
    pub fn max_turns(&self) -> usize {
        self.max_turns
    }

    /// A new episode, at its first turn (or finished, if the game has no choice to make).
    pub fn start(self: &Arc<Self>) -> Game {
        self.start_with(&mut super::turns::NoHook)
    }

    /// [`GameSetup::start`], the walk to the first turn told to `hook` (which may stop it
    /// between two buffers).
    pub(crate) fn start_with(self: &Arc<Self>, hook: &mut dyn super::turns::Boundaries) -> Game {
        let mut g = Game {
            setup: Arc::clone(self),
            turn: 0,
            allocs: {
                let none = Arc::new(Vec::new());
                (0..self.program().buffers().len())
                    .map(|_| Arc::clone(&none))
                    .collect()
            },
            walk: Walk::new(&self.rules),
            pos: 0,
            shown: Vec::new(),
            menu: Vec::new(),
            closed: None,
            tally: Tally::new(self.cost_model(), self.program().buffers().len()),
            sim: self.live0.clone(),
            rewards: imbl::Vector::new(),
            decisions: imbl::Vector::new(),
            final_latency: None,
            lag: imbl::OrdMap::new(),
            defer: false,
        };
        g.start_pass(false);
        let before = g.latency();
        g.settle_with(hook);
        // Nothing before the first choice can change the mapping: no chunk is open.
        debug_assert_eq!(before, g.latency());
        g
    }

    /// A whole run of the mapping `allocs` (each buffer's allocations) kept alive as it
    /// changes ([`ExactSim`]).
    pub(crate) fn exact_sim(
        &self,
        allocs: &imbl::Vector<Arc<Vec<accel_sim::Allocation>>>,
    ) -> ExactSim {
        self.simulator
            .exact_of(allocs.iter().enumerate().map(|(b, a)| (b, a.as_slice())))
    }

    /// The simulated latency `S` of a finished game's mapping, by a whole run (the figure
    /// every other tool gives the mapping), and what the last turn's reward adds to the
    /// change in the game's running latency: under [`Reward::Proxy`], the correction from
    /// the cost model's `P(end)` to `S`; under [`Reward::Simulated`], the rounding between
    /// the incremental `S(end)` and the whole run.
    pub(super) fn finish(&self, game: &Game) -> (f64, f64) {
        let s = self.simulator.clone().run(&game.mapping(), false).latency_s;
        let extra = match self.options.reward {
            Reward::Simulated => (game.sim.latency_s() - s) / self.s0,
            Reward::Proxy => {
                let p0 = self.cost_model().all_slow_latency();
                (game.tally.latency() - s) / self.s0 - (p0 - self.s0) / self.s0
            }
        };
        (s, extra)
    }

    /// A short human name of a move given in full: `prefetch from op 12 at offset 4096,
    /// held to op 40`.
    pub fn move_name(&self, m: &super::moves::Move) -> String {
        use super::moves::Read;
        let mut name = match m.read {
            Read::Level0 => "level 0".to_string(),
            Read::Keep => "keep".to_string(),
            Read::Define { offset } => format!("define at offset {offset}"),
            Read::Prefetch { start, offset } => {
                format!("prefetch from op {start} at offset {offset}")
            }
        };
        if let Some(h) = m.hold {
            name.push_str(&format!(", held to op {}", h.end));
            if let Some(e) = h.eviction {
                name.push_str(&format!(", evicted after op {e}"));
            }
        }
        if let Some((offset, h)) = m.written_before {
            name.push_str(&format!(
                ", after a chunk the definition writes at offset {offset}, held to op {}",
                h.end
            ));
        }
        name
    }

    /// A short human name of an action: `prefetch slot 0`, `keep`; `level 0` for action 0.
    pub fn action_name(&self, action: usize) -> String {
        match self.options.decode(action) {
            None if action == 0 => "level 0".into(),
            None => format!("invalid action {action}"),
            Some((mi, k)) => match self.options.modes[mi] {
                Mode::Keep => "keep".into(),
                m => format!("{} slot {k}", m.as_str()),
            },
        }
    }
}
