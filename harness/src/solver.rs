//! The solvers `evaluate` runs, one mapping per case: [`Solver`], built from a name through
//! the registry ([`Solver::named`]) with what the user gave besides ([`SolverContext`]).

use crate::evaluate::{read_mapping, Case, EvalError, DEFAULT_SOLVERS};
use crate::exact_run::{run_exact, Polish};
use crate::registry;
use accel_sim::{Hardware, Mapping, Program};
use malloc_game::players::Player;
use malloc_game::{GameOptions, GameSetup};
use malloc_muzero::Agent;
use std::path::PathBuf;
use std::sync::Arc;

/// What the solvers named by the user need besides their names.
#[derive(Clone, Debug, Default)]
pub struct SolverContext {
    /// The game players' seed.
    pub seed: u64,
    /// The run folder of `muzero` (none: the bundled generalist).
    pub checkpoint: Option<PathBuf>,
    /// Search simulations per move of `muzero` (default: the run's evaluation setting).
    pub simulations: Option<usize>,
    /// Rounds of branch proposals `muzero` makes after its game (default:
    /// [`malloc_muzero::DEFAULT_PROPOSAL_ROUNDS`]; 0: the game alone).
    pub proposal_rounds: Option<usize>,
    /// What the search of `muzero` steps through (default: the game).
    pub search_model: Option<malloc_muzero::SearchModel>,
    /// The `exact` solver's time limit and gap tolerance.
    pub exact: exact::ExactConfig,
    /// Threads one solver may use where it can share its work out without changing its
    /// result (the beam's steps); 0 is taken as 1.
    pub threads: usize,
}

/// A named way to get a mapping.
pub enum Solver {
    /// A one-shot baseline (`xla`, `greedy-size`, ...).
    Baseline(Box<dyn xla_msa::OneShotSolver>),
    /// A game player, playing one episode with the given seed.
    Player(Box<dyn Player>, u64),
    /// A trained agent.
    MuZero(Box<Agent>),
    /// A mapping file, resolved against each case's program by buffer name.
    File(PathBuf),
    /// The exact solver (then the local search for its budget left:
    /// [`crate::exact_run`]), with the local search's seed: its rows carry what it proved.
    Exact(exact::ExactConfig, u64),
}

impl Solver {
    /// The solver of a `--solver` name, as its registry entry builds it
    /// ([`crate::registry::Entry`]): a baseline, a game player (`xla-game` is the xla player
    /// in the game; `beam:W` a beam of width W), `muzero` (`ctx.checkpoint`'s run, else the
    /// bundled generalist) or the exact solver.
    pub fn named(name: &str, ctx: &SolverContext) -> Result<Solver, EvalError> {
        let threads = ctx.threads.max(1);
        if let Some(entry) = registry::find(name) {
            if let Some(one_shot) = entry.one_shot {
                return (one_shot.build)(ctx);
            }
            if let Some(player) = &entry.player {
                return Ok(Solver::Player((player.build)(threads), ctx.seed));
            }
        }
        // A player with a parameter (`beam:W`) is not an entry of its own, and a player may
        // be named as the game's (`random-game`).
        registry::player(name.strip_suffix("-game").unwrap_or(name), threads)
            .map(|p| Solver::Player(p, ctx.seed))
            .ok_or_else(|| EvalError::UnknownSolver(name.to_string()))
    }

    /// The agent of `muzero`: `ctx.checkpoint`'s run, else the bundled generalist, with
    /// `ctx`'s simulations, search model and proposal rounds where given.
    pub fn agent(ctx: &SolverContext) -> Result<Solver, EvalError> {
        let agent = match &ctx.checkpoint {
            Some(dir) => Agent::load(dir, ctx.simulations)?,
            None => Agent::bundled(ctx.simulations)?,
        };
        let agent = match ctx.search_model {
            Some(model) => agent.with_search_model(model),
            None => agent,
        };
        let agent = match ctx.proposal_rounds {
            Some(rounds) => agent.with_proposal_rounds(rounds)?,
            None => agent,
        };
        Ok(Solver::MuZero(Box::new(agent)))
    }

    /// The solvers of a list of names, or [`DEFAULT_SOLVERS`] when it is empty.
    pub fn all_named(names: &[String], ctx: &SolverContext) -> Result<Vec<Solver>, EvalError> {
        if names.is_empty() {
            return DEFAULT_SOLVERS
                .iter()
                .map(|n| Solver::named(n, ctx))
                .collect();
        }
        names.iter().map(|n| Solver::named(n, ctx)).collect()
    }

    /// The name its rows carry.
    pub fn name(&self) -> String {
        match self {
            Solver::Baseline(s) => s.name().to_string(),
            // The game's xla player is named apart from the standalone xla solver.
            Solver::Player(p, _) if p.name() == "xla" => "xla-game".to_string(),
            Solver::Player(p, _) => p.name(),
            Solver::MuZero(_) => "muzero".to_string(),
            Solver::File(path) => format!("file:{}", path.display()),
            Solver::Exact(..) => "exact".to_string(),
        }
    }

    /// Its mapping of `case` (not yet validated). `options` are the game's rules for
    /// the players.
    pub fn solve(&self, case: &Case, options: &GameOptions) -> Result<Mapping, EvalError> {
        self.solve_with_progress(case, options, &mut |_, _| {})
    }

    /// [`Solver::solve`], telling `progress` (turns done, turns in all) now and then while
    /// a game player plays.
    pub fn solve_with_progress(
        &self,
        case: &Case,
        options: &GameOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Mapping, EvalError> {
        let (program, hw) = (case.program.as_ref(), &case.hw);
        Ok(match self {
            Solver::Baseline(s) => s.solve(program, hw),
            Solver::Player(p, seed) => {
                let setup = GameSetup::new(Arc::clone(&case.program), hw.clone(), options.clone())?;
                p.play_with_progress(&setup, *seed, progress).mapping()
            }
            Solver::MuZero(agent) => agent.play(program, hw)?,
            Solver::File(path) => read_mapping(path, program)?,
            Solver::Exact(config, seed) => {
                run_exact(case, config, &polish_of(options, *seed), &mut |_, _| {})?
                    .solution
                    .mapping
            }
        })
    }
}

/// The local search after `evaluate`'s exact solve: one chain, as the MIP has one thread.
pub(crate) fn polish_of(options: &GameOptions, seed: u64) -> Polish {
    Polish {
        options: options.clone(),
        seed,
        threads: 1,
    }
}

/// EGRL's knapsack mapper (`egrl-dp`) as a one-shot solver.
pub struct EgrlKnapsack;

impl xla_msa::OneShotSolver for EgrlKnapsack {
    fn name(&self) -> &str {
        "egrl-dp"
    }
    fn solve(&self, program: &Program, hw: &Hardware) -> Mapping {
        // The penalty only shapes EGRL's search; the mapper does not read it.
        match egrl::Problem::new(Arc::new(program.clone()), hw.clone(), 0.0) {
            Ok(problem) => problem.decode(&egrl::dp_assignment(&problem)).mapping,
            // One level, or nothing to place: everything stays in level 0.
            Err(_) => Mapping::all_slow(program),
        }
    }
}
