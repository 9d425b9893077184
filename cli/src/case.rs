//! The flags that name a case (a program on a hardware config) and the game's rules:
//! declared once here, flattened into every subcommand that takes them.

use anyhow::Result;
use clap::Args;
use harness::Case;
use malloc_game::{GameOptions, Order, Reward};

/// Which program on which hardware.
#[derive(Args, Clone, Default, Debug)]
pub struct CaseArgs {
    /// A built-in workload name or a program file (.json, .csv lifetimes, or XLA's HLO
    /// text: .hlo, .hlo.txt).
    #[arg(long)]
    pub workload: Option<String>,
    /// A hardware preset name or a .json/.toml config file.
    #[arg(long)]
    pub hw: Option<String>,
    /// Capacity of the fastest level (`16MiB`) or of level N (`1:16MiB`). Default: the
    /// suite's capacity for a suite workload on its suite hardware, else the preset's.
    // A leading `-` is a value here (`-5MiB`), refused by the size parser with its reason.
    #[arg(long, allow_hyphen_values = true)]
    pub fast_capacity: Option<String>,
}

/// A `--threads` flag checked: 1 to 256 where given.
pub fn threads_given(flag: Option<usize>) -> Result<Option<usize>> {
    match flag {
        Some(n) if !(1..=256).contains(&n) => {
            anyhow::bail!("--threads: must be in 1..=256, got {n}")
        }
        n => Ok(n),
    }
}

/// A `--threads` flag checked ([`threads_given`]); default one per core.
pub fn threads(flag: Option<usize>) -> Result<usize> {
    Ok(threads_given(flag)?
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// The case the flags name (defaults: the harness's workload and hardware).
pub fn single_case(args: &CaseArgs) -> Result<Case> {
    Ok(Case::named(
        args.workload.as_deref(),
        args.hw.as_deref(),
        args.fast_capacity.as_deref(),
    )?)
}

/// The rules' knobs a user may change from the command line.
#[derive(Args, Clone, Debug, Default)]
pub struct GameArgs {
    /// Offset candidates per (level, mode) (the game's K).
    #[arg(long)]
    pub slots: Option<usize>,
    /// Presentation order: xla, by-start, by-size.
    #[arg(long, value_parser = clap::value_parser!(Order))]
    pub order: Option<Order>,
    /// Fast levels the player may use, fastest first (default: all of the hardware's).
    #[arg(long)]
    pub fast_levels: Option<usize>,
    /// What the rewards and the planners' rankings measure: simulated (the simulated
    /// latency of the mapping so far, turn by turn) or proxy (the paper's: the cost model,
    /// corrected on the last turn). Default: simulated.
    #[arg(long, value_parser = clap::value_parser!(Reward))]
    pub reward: Option<Reward>,
}

impl GameArgs {
    pub fn options(&self, hw: &accel_sim::Hardware) -> GameOptions {
        let d = GameOptions::default();
        GameOptions {
            fast_levels: self.fast_levels.unwrap_or(hw.levels.len() - 1),
            slots: self.slots.unwrap_or(d.slots),
            order: self.order.unwrap_or(d.order),
            reward: self.reward.unwrap_or(d.reward),
            ..d
        }
    }
}
