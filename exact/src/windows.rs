//! Windows: a large-neighbourhood search with the MIP as the repair (docs/exact.md,
//! "Windows"). Where the whole model does not finish, the incumbent mapping is repaired one
//! window of ops at a time ([`crate::window`]), each repair kept only when the simulator
//! finds it faster, so the mapping only ever gets faster and stays valid.
//!
//! The windows take turns: a sweep from the first op to the last (half-overlapping), a
//! window anywhere, and a window around an op drawn by how much time the incumbent loses
//! there (its stall and its memory time beyond its compute, from the simulator's per-op
//! timing). A window grows while its models are proven fast and shrinks when one hits its
//! time limit. Nothing here proves anything about the whole program: a window's optimum is
//! never a bound.

use crate::candidates;
use crate::solve::ExactError;
use crate::window::Repairer;
use accel_sim::{CostModel, Hardware, Mapping, OpId, Program};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Whether the exact pipeline runs windows after the whole model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Windows {
    /// Where the whole model does not finish (and always past its reach).
    #[default]
    Auto,
    /// Always, after the whole model.
    On,
    /// Never: the whole model, then the local search.
    Off,
}

impl Windows {
    /// The names [`Windows::from_str`](std::str::FromStr) accepts.
    pub const NAMES: [&'static str; 3] = ["auto", "on", "off"];

    /// The name a flag and a settings file give it.
    pub fn as_str(self) -> &'static str {
        match self {
            Windows::Auto => "auto",
            Windows::On => "on",
            Windows::Off => "off",
        }
    }
}

impl std::str::FromStr for Windows {
    type Err = String;

    fn from_str(s: &str) -> Result<Windows, String> {
        match s {
            "auto" => Ok(Windows::Auto),
            "on" => Ok(Windows::On),
            "off" => Ok(Windows::Off),
            other => Err(format!(
                "unknown windows setting `{other}` ({})",
                Windows::NAMES.join(", ")
            )),
        }
    }
}

/// How long the windows run, and their seed.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowConfig {
    /// Wall-clock seconds for every repair together.
    pub seconds: f64,
    /// Seeds the choice of windows.
    pub seed: u64,
}

/// What the windows did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowStats {
    /// Windows whose model was built and solved.
    pub repairs: usize,
    /// Repairs kept: valid and faster in simulation.
    pub accepted: usize,
    /// Repairs whose model was proven optimal within its time.
    pub proven: usize,
    /// Repairs the validator refused (a bug: never kept).
    pub invalid: usize,
    /// Repairs whose model the backend failed on (microlp can, numerically): skipped.
    #[serde(default)]
    pub failed: usize,
    /// Faster mappings offered from beside ([`improve_beside`]) the windows took up.
    #[serde(default)]
    pub adopted: usize,
    /// The window's length in ops at the end.
    pub window_ops: usize,
    /// Wall-clock seconds the windows took.
    pub seconds: f64,
}

/// The fastest mapping the windows reached from their start.
#[derive(Clone, Debug)]
pub struct WindowResult {
    /// The fastest valid mapping, the start where no repair was kept.
    pub mapping: Mapping,
    /// `mapping`'s simulated latency, seconds.
    pub simulated_s: f64,
    /// What the windows did to get there.
    pub stats: WindowStats,
}

/// Length of the first window, in ops.
const FIRST_WINDOW_OPS: usize = 48;
/// The fewest ops in a window.
const MIN_WINDOW_OPS: usize = 4;
/// A window with more free holds than this is shrunk before its model is built.
const MAX_FREE_HOLDS: usize = 4000;

/// Repairs `start` (a valid mapping of `program` on `hw`) window after window for
/// `config.seconds` under the simulator's relaxation, telling `on_better` of each mapping
/// kept (with its simulated latency) as it is found.
pub fn improve(
    program: &Program,
    hw: &Hardware,
    start: &Mapping,
    config: &WindowConfig,
    on_better: &mut dyn FnMut(&Mapping, f64),
) -> Result<WindowResult, ExactError> {
    improve_beside(program, hw, start, config, on_better, &mut |_| None)
}

/// [`improve`] beside another solver: before each repair `offered` is asked for a mapping
/// faster than the windows' latency (its argument); one that simulates faster and passes
/// the validator becomes the mapping the windows repair from then on. So the MIP repairs
/// the best mapping found anywhere, not only its own (a local search's, say), and what
/// it returns is no slower than anything it was offered. An offered mapping is not a
/// repair: `on_better` is not told of it.
pub fn improve_beside(
    program: &Program,
    hw: &Hardware,
    start: &Mapping,
    config: &WindowConfig,
    on_better: &mut dyn FnMut(&Mapping, f64),
    offered: &mut dyn FnMut(f64) -> Option<Mapping>,
) -> Result<WindowResult, ExactError> {
    let t0 = Instant::now();
    start
        .validate(program, hw)
        .map_err(|e| ExactError::Invalid(format!("the windows' starting mapping: {e}")))?;
    let cost = CostModel::relaxation(program, hw);
    let cands = candidates::enumerate(program, hw, &cost);
    let mut repairer = Repairer::new(program, hw, &cost, &cands);
    let mut best = start.clone();
    let mut latency = repairer.sim.run(&best, false).latency_s;
    let mut stats = WindowStats::default();
    let ops = program.len();
    let mut chooser = Chooser::new(config.seed, ops);
    chooser.weigh(&mut repairer, &best);
    let per_repair = (config.seconds / 16.0).clamp(0.25, 5.0);
    loop {
        let left = config.seconds - t0.elapsed().as_secs_f64();
        if left < 0.05 || ops == 0 {
            break;
        }
        if let Some((mapping, l)) = adopt(program, hw, &mut repairer, offered(latency), latency) {
            best = mapping;
            latency = l;
            stats.adopted += 1;
            chooser.weigh(&mut repairer, &best);
        }
        let mut window = chooser.next();
        while chooser.len > MIN_WINDOW_OPS
            && repairer.free_count(window.0, window.1) > MAX_FREE_HOLDS
        {
            chooser.shrink();
            window = chooser.next();
        }
        let limit = per_repair.min(left);
        let began = Instant::now();
        let outcome = repairer.repair(&best, latency, window, limit);
        stats.repairs += 1;
        stats.proven += usize::from(outcome.proven);
        stats.invalid += usize::from(outcome.invalid);
        stats.failed += usize::from(outcome.failed);
        if outcome.proven && began.elapsed().as_secs_f64() < limit / 4.0 {
            chooser.grow();
        } else if !outcome.proven {
            chooser.shrink();
        }
        if let Some((mapping, l)) = outcome.better {
            best = mapping;
            latency = l;
            stats.accepted += 1;
            on_better(&best, latency);
            chooser.weigh(&mut repairer, &best);
        }
    }
    stats.window_ops = chooser.len;
    stats.seconds = t0.elapsed().as_secs_f64();
    Ok(WindowResult {
        mapping: best,
        simulated_s: latency,
        stats,
    })
}

/// `offer` with its simulated latency where it is valid and simulates faster than
/// `latency`; an invalid one is dropped (the windows' mapping must stay valid).
fn adopt(
    program: &Program,
    hw: &Hardware,
    repairer: &mut Repairer,
    offer: Option<Mapping>,
    latency: f64,
) -> Option<(Mapping, f64)> {
    let mapping = offer?;
    mapping.validate(program, hw).ok()?;
    let l = repairer.sim.run(&mapping, false).latency_s;
    (l < latency).then_some((mapping, l))
}

/// Where the next window goes and how long it is.
struct Chooser {
    state: u64,
    ops: usize,
    len: usize,
    turn: usize,
    sweep_at: OpId,
    /// Per op, the time the incumbent loses there; summed from the first op.
    loss_cum: Vec<f64>,
}

impl Chooser {
    fn new(seed: u64, ops: usize) -> Chooser {
        Chooser {
            state: seed ^ 0x5851_F42D_4C95_7F2D,
            ops,
            len: FIRST_WINDOW_OPS.min(ops.max(1)),
            turn: 0,
            sweep_at: 0,
            loss_cum: Vec::new(),
        }
    }

    fn grow(&mut self) {
        self.len = (self.len + self.len / 2)
            .max(self.len + 1)
            .min(self.ops.max(1));
    }

    fn shrink(&mut self) {
        self.len = (self.len * 3 / 5).max(MIN_WINDOW_OPS).min(self.ops.max(1));
    }

    /// Reads the incumbent's per-op timing: stall, and memory time beyond compute.
    fn weigh(&mut self, repairer: &mut Repairer, mapping: &Mapping) {
        let report = repairer.sim.run(mapping, true);
        self.loss_cum.clear();
        self.loss_cum.push(0.0);
        let mut sum = 0.0;
        for op in &report.ops {
            sum += op.stall_s + (op.memory_s - op.compute_s).max(0.0);
            self.loss_cum.push(sum);
        }
    }

    fn random(&mut self) -> u64 {
        // splitmix64
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next window, ops `first..=last`: a sweep's, a random one, or one around a
    /// slow op, in turn.
    fn next(&mut self) -> (OpId, OpId) {
        self.turn += 1;
        let first = match self.turn % 3 {
            0 => {
                if self.sweep_at >= self.ops {
                    self.sweep_at = 0;
                }
                let at = self.sweep_at;
                self.sweep_at += (self.len / 2).max(1);
                at
            }
            1 => (self.random() % self.ops as u64) as usize,
            _ => {
                let centre = self.slow_op();
                centre.saturating_sub(self.len / 2)
            }
        };
        let first = first.min(self.ops.saturating_sub(self.len));
        (first, (first + self.len - 1).min(self.ops - 1))
    }

    /// An op drawn with probability proportional to the time lost there (any op when
    /// none is lost).
    fn slow_op(&mut self) -> OpId {
        let total = self.loss_cum.last().copied().unwrap_or(0.0);
        let r = self.random();
        if total <= 0.0 {
            return (r % self.ops as u64) as usize;
        }
        let x = (r >> 11) as f64 / (1u64 << 53) as f64 * total;
        let i = self.loss_cum.partition_point(|&c| c <= x);
        i.saturating_sub(1).min(self.ops - 1)
    }
}
