//! The one solver registry, in the manner of OpenSpiel's game registerer: every solver the
//! command line, the race, the Python package and the reference know is an [`Entry`] of
//! [`SOLVERS`], holding its name, what it is, the settings it reads, and the functions that
//! build it: [`Entry::one_shot`] (`evaluate`'s one mapping per case), [`Entry::player`]
//! (a game player, for `play` and `evaluate`), [`Entry::race`] (the race's run under a
//! wall-clock budget), [`Entry::demonstration`] (its game as a demonstration of the
//! agent's self-play training, [`demonstrations`]). Every front end builds a solver from a name here and nowhere else;
//! the crates below export their solvers as types ([`xla_msa::Xla`],
//! [`malloc_game::anytime::LocalSearch`], [`malloc_muzero::GuideKind`], ...) and the
//! entries name them. Messages that list names list them in this registry's order.

use crate::evaluate::EvalError;
use crate::injection::Injection;
use crate::race::RaceError;
use crate::race_runs::{self as runs, Raced, Racing, Settings};
use crate::solver::{EgrlKnapsack, Solver, SolverContext};
use crate::Case;
use crate::RaceConfig;
use egrl::Variant;
use malloc_game::anytime::{BeamWidening, LocalSearch, RandomRestarts};
use malloc_game::players::{
    beam, BeamPlayer, GreedyPlayer, Player, RandomPlayer, XlaPlayer, MAX_BEAM_WIDTH,
};
use malloc_game::{Game, GameSetup};
use malloc_muzero::train::{Demonstration, Demonstrations};
use malloc_muzero::GuideKind;
use std::sync::Arc;
use xla_msa::{AllSlow, GreedySize, OneShotSolver, Xla, XlaOptions, DEFAULT_MAX_REPACKS};

/// A setting a solver reads besides its case (the race's budget is every solver's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// The seed of its random draws.
    Seed,
    /// Its threads.
    Threads,
    /// The game's rules (`--slots` and the other game flags).
    Rules,
    /// A `train` run folder: its network guides `muzero`, and `muzero-train` continues it.
    Checkpoint,
    /// The agent's training config (`muzero-train`'s).
    TrainConfig,
    /// What the agent's searches step through.
    SearchModel,
    /// Search simulations per move of the agent's game.
    Simulations,
    /// Rounds of branch proposals the agent makes after its game.
    ProposalRounds,
    /// EGRL's config (the EGRL solvers').
    EgrlConfig,
    /// The MIP's share of a guided search's budget (`muzero`'s and the `guided-*`
    /// solvers').
    MipShare,
    /// The exact solver's objective, time limit and gap tolerance.
    Exact,
}

impl Setting {
    /// How listings name it.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Seed => "seed",
            Setting::Threads => "threads",
            Setting::Rules => "rules",
            Setting::Checkpoint => "checkpoint",
            Setting::TrainConfig => "train-config",
            Setting::SearchModel => "search-model",
            Setting::Simulations => "simulations",
            Setting::ProposalRounds => "proposal-rounds",
            Setting::EgrlConfig => "egrl-config",
            Setting::MipShare => "mip-share",
            Setting::Exact => "exact",
        }
    }
}

/// How `evaluate` builds a solver that is not a game player: one mapping per case.
#[derive(Clone, Copy, Debug)]
pub struct OneShot {
    /// Builds it from what the user gave besides its name.
    pub build: fn(&SolverContext) -> Result<Solver, EvalError>,
    /// The settings of [`SolverContext`] it reads.
    pub reads: &'static [Setting],
}

/// What a game player reads besides its case, in `play` and `evaluate`.
pub const PLAYER_READS: &[Setting] = GAME;

/// A game player: `play --player` plays it, and `evaluate` plays one game of it under
/// [`SolverContext::seed`] (the game's rules are its [`Setting::Rules`]).
#[derive(Clone, Copy, Debug)]
pub struct GamePlayer {
    /// The name the game and `play --player` give it (`xla` for `xla-game`).
    pub name: &'static str,
    /// Builds it for a game shared out on this many threads (only the beam shares; its
    /// game is the same on any number).
    pub build: fn(usize) -> Box<dyn Player>,
}

/// A check of a race solver's settings against a case, before any budget is spent.
pub type RaceCheck = fn(&Case, &RaceConfig) -> Result<(), RaceError>;

/// How the race runs a solver under its wall-clock budget.
#[derive(Clone, Copy, Debug)]
pub struct Racer {
    /// Runs it on a case ([`crate::race_runs`]); the race measures what it found.
    pub run: fn(&mut Racing) -> Result<Raced, RaceError>,
    /// Writes what decides its result besides the case, budget, seed and threads: a
    /// saved result is reused only under the same ([`crate::race::settings_of`]).
    pub settings: fn(&RaceConfig, &mut Settings),
    /// Checks its settings against the case before any budget is spent.
    pub check: Option<RaceCheck>,
    /// The race's settings it reads.
    pub reads: &'static [Setting],
    /// A race that names no solver runs it.
    pub by_default: bool,
}

/// A solver: its name, what it is, and how each front end builds it.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The name users give (`xla`, `beam:W`'s `beam`, ...).
    pub name: &'static str,
    /// What it runs, in one line.
    pub about: &'static str,
    /// How `evaluate` builds it, unless it is a game player; `None`: neither is.
    pub one_shot: Option<OneShot>,
    /// The game player it is.
    pub player: Option<GamePlayer>,
    /// How the race runs it; `None`: the race does not.
    pub race: Option<Racer>,
    /// Its game on a setup, when a training run may take it as a demonstration (a
    /// config's `demonstrations` names it).
    pub demonstration: Option<fn(&Arc<GameSetup>) -> Game>,
    /// The EGRL system it is, for a run of its own (`train-egrl --variant`).
    pub egrl: Option<Variant>,
}

impl Entry {
    /// `evaluate` runs it (as a one-shot solver or a game player).
    pub fn evaluated(&self) -> bool {
        self.one_shot.is_some() || self.player.is_some()
    }

    /// A race that names no solver runs it.
    pub fn raced_by_default(&self) -> bool {
        self.race.is_some_and(|r| r.by_default)
    }
}

const GAME: &[Setting] = &[Setting::Seed, Setting::Threads, Setting::Rules];
const GUIDED: &[Setting] = &[
    Setting::Seed,
    Setting::Threads,
    Setting::Rules,
    Setting::MipShare,
];
const EGRL: &[Setting] = &[Setting::Seed, Setting::Threads, Setting::EgrlConfig];

/// A baseline raced: instant, one point, nothing read but the case.
const fn instant(run: fn(&mut Racing) -> Result<Raced, RaceError>) -> Option<Racer> {
    Some(Racer {
        run,
        settings: runs::no_settings,
        check: None,
        reads: &[],
        by_default: true,
    })
}

/// An anytime game solver raced under the race's rules.
const fn anytime(run: fn(&mut Racing) -> Result<Raced, RaceError>) -> Option<Racer> {
    Some(Racer {
        run,
        settings: runs::rules_settings,
        check: None,
        reads: GAME,
        by_default: true,
    })
}

/// An EGRL search raced under the race's EGRL config.
const fn egrl_search(run: fn(&mut Racing) -> Result<Raced, RaceError>) -> Option<Racer> {
    Some(Racer {
        run,
        settings: runs::egrl_settings,
        check: Some(runs::check_egrl),
        reads: EGRL,
        by_default: true,
    })
}

/// A guided search of issue 43's ablation, raced only when named.
const fn guided(
    run: fn(&mut Racing) -> Result<Raced, RaceError>,
    settings: fn(&RaceConfig, &mut Settings),
) -> Option<Racer> {
    Some(Racer {
        run,
        settings,
        check: None,
        reads: GUIDED,
        by_default: false,
    })
}

/// A one-shot solver `evaluate` builds, reading nothing but the case.
const fn one_shot(build: fn(&SolverContext) -> Result<Solver, EvalError>) -> Option<OneShot> {
    Some(OneShot { build, reads: &[] })
}

/// A game player.
const fn game_player(
    name: &'static str,
    build: fn(usize) -> Box<dyn Player>,
) -> Option<GamePlayer> {
    Some(GamePlayer { name, build })
}

const fn entry(name: &'static str, about: &'static str) -> Entry {
    Entry {
        name,
        about,
        one_shot: None,
        player: None,
        race: None,
        demonstration: None,
        egrl: None,
    }
}

/// XLA's solver with its re-packing of offsets (`xla-repack`).
fn xla_repack() -> Xla {
    Xla::new(XlaOptions {
        max_repacks: DEFAULT_MAX_REPACKS,
        ..XlaOptions::default()
    })
}

fn baseline(solver: impl xla_msa::OneShotSolver + 'static) -> Result<Solver, EvalError> {
    Ok(Solver::Baseline(Box::new(solver)))
}

/// Every solver, the race's in the order a race runs them when none is named.
pub const SOLVERS: &[Entry] = &[
    Entry {
        one_shot: one_shot(|_| baseline(AllSlow)),
        ..entry("all-slow", "every buffer in level 0")
    },
    Entry {
        one_shot: one_shot(|_| baseline(Xla::default())),
        race: instant(|r| runs::one_point(&Xla::default(), r)),
        demonstration: Some(|s| XlaPlayer.play(s, 0)),
        ..entry("xla", "XLA's memory space assignment (docs/xla-msa.md)")
    },
    Entry {
        one_shot: one_shot(|_| baseline(xla_repack())),
        race: instant(|r| runs::one_point(&xla_repack(), r)),
        ..entry(
            "xla-repack",
            "xla with XLA's re-packing of offsets when a buffer runs out of memory",
        )
    },
    Entry {
        one_shot: one_shot(|_| baseline(GreedySize)),
        race: instant(|r| runs::one_point(&GreedySize, r)),
        // Its offsets and whole live ranges are seldom a line of the game's numbered
        // moves: its demonstration is the nearest such line, with that game's own return.
        demonstration: Some(|s| s.nearest_numbered(&GreedySize.solve(s.program(), s.hardware()))),
        ..entry(
            "greedy-size",
            "TFLite-style whole-live-range placement, largest first",
        )
    },
    Entry {
        player: game_player("beam", |threads| {
            Box::new(BeamPlayer::new(beam::DEFAULT_WIDTH).with_threads(threads))
        }),
        race: anytime(|r| runs::anytime(&BeamWidening, r)),
        demonstration: Some(|s| BeamPlayer::new(beam::DEFAULT_WIDTH).play(s, 0)),
        ..entry(
            "beam",
            "beam search over the game (`beam:W` for width W in evaluate; widening in the race)",
        )
    },
    Entry {
        race: anytime(|r| runs::anytime(&LocalSearch::default(), r)),
        ..entry(
            "local-search",
            "local search over the game's moves, scored by the simulator",
        )
    },
    Entry {
        player: game_player("random", |_| Box::new(RandomPlayer)),
        race: anytime(|r| runs::anytime(&RandomRestarts, r)),
        ..entry("random", "random play (restarts in the race)")
    },
    Entry {
        one_shot: Some(OneShot {
            build: Solver::agent,
            reads: &[
                Setting::Checkpoint,
                Setting::Simulations,
                Setting::SearchModel,
                Setting::ProposalRounds,
            ],
        }),
        race: Some(Racer {
            run: runs::agent,
            settings: runs::agent_settings,
            check: Some(runs::check_agent),
            reads: &[
                Setting::Seed,
                Setting::Threads,
                Setting::Rules,
                Setting::Checkpoint,
                Setting::MipShare,
            ],
            by_default: true,
        }),
        ..entry(
            "muzero",
            "the mallocMuZero agent, a run's (--checkpoint) or the bundled generalist: in evaluate its game with search; in the race the local search with its moves drawn by its network, starting from the MIP's line among the heuristics'",
        )
    },
    Entry {
        race: Some(Racer {
            run: runs::train,
            settings: runs::train_settings,
            check: Some(runs::check_train),
            reads: &[
                Setting::Seed,
                Setting::Threads,
                Setting::Rules,
                Setting::Checkpoint,
                Setting::TrainConfig,
                Setting::SearchModel,
            ],
            by_default: false,
        }),
        ..entry(
            crate::race::MUZERO_TRAIN,
            "the agent trained by self-play for the race's budget, from scratch or continuing --checkpoint (not raced unless named)",
        )
    },
    Entry {
        race: guided(
            |r| runs::guided_from(GuideKind::Bundled, Injection::Learned, r),
            |c, v| runs::injected_settings(Injection::Learned, c, v),
        ),
        ..entry(
            "muzero-learned",
            "muzero with the learned start: the bundled predictor's line among its starts, and its MIP in a trust region around the prediction (issue 59.2; not raced unless named)",
        )
    },
    Entry {
        race: guided(
            |r| runs::guided_from(GuideKind::Bundled, Injection::HeuristicRegion, r),
            |c, v| runs::injected_settings(Injection::HeuristicRegion, c, v),
        ),
        ..entry(
            "muzero-heuristic-region",
            "muzero with its MIP in the learned start's trust region around the fastest heuristic's fast uses instead (the learned start's control; not raced unless named)",
        )
    },
    Entry {
        race: guided(
            |r| runs::guided(GuideKind::Uniform, r),
            |c, v| runs::guided_settings("uniform", false, c, v),
        ),
        ..entry(
            "guided-uniform",
            "the local search under the bundled network's rules, its moves uniform, starting from the MIP's line (the ablation's baseline; not raced unless named)",
        )
    },
    Entry {
        race: guided(
            |r| runs::guided(GuideKind::Untrained, r),
            |c, v| runs::guided_settings("untrained", false, c, v),
        ),
        ..entry(
            "guided-untrained",
            "the local search with each re-decided turn drawn from an untrained network's policy (not raced unless named)",
        )
    },
    Entry {
        race: guided(
            |r| runs::guided(GuideKind::Bundled, r),
            |c, v| runs::guided_settings("bundled", false, c, v),
        ),
        ..entry(
            "guided-bundled",
            "the local search with each re-decided turn drawn from the bundled generalist's policy (not raced unless named)",
        )
    },
    Entry {
        race: guided(
            |r| runs::guided(GuideKind::Tuned, r),
            |c, v| runs::guided_settings("tuned", false, c, v),
        ),
        ..entry(
            "guided-tuned",
            "the local search with each re-decided turn drawn from the bundled guide's policy: the generalist fitted to the local search's move outcomes (not raced unless named)",
        )
    },
    Entry {
        race: guided(
            |r| runs::guided(GuideKind::Online(Box::new(GuideKind::Bundled)), r),
            |c, v| runs::guided_settings("bundled+online", true, c, v),
        ),
        ..entry(
            "guided-bundled+online",
            "guided-bundled with each chain's copy of the network learning from its moves' outcomes (not raced unless named)",
        )
    },
    Entry {
        race: egrl_search(|r| runs::egrl_search(Variant::Egrl, r)),
        egrl: Some(Variant::Egrl),
        ..entry("egrl", "EGRL: evolution beside a SAC learner (docs/egrl.md)")
    },
    Entry {
        race: egrl_search(|r| runs::egrl_search(Variant::Ea, r)),
        egrl: Some(Variant::Ea),
        ..entry("egrl-ea", "EGRL's evolution alone")
    },
    Entry {
        race: egrl_search(|r| runs::egrl_search(Variant::Pg, r)),
        egrl: Some(Variant::Pg),
        ..entry("egrl-pg", "EGRL's learner alone")
    },
    Entry {
        one_shot: one_shot(|_| baseline(EgrlKnapsack)),
        // No setting of EGRL's config decides its mapping, but a bad one is still refused.
        race: Some(Racer {
            run: runs::egrl_knapsack,
            settings: runs::no_settings,
            check: Some(runs::check_egrl),
            reads: &[Setting::EgrlConfig],
            by_default: true,
        }),
        ..entry("egrl-dp", "EGRL's knapsack mapper")
    },
    Entry {
        one_shot: Some(OneShot {
            build: |ctx| Ok(Solver::Exact(ctx.exact.clone(), ctx.seed)),
            reads: &[Setting::Exact, Setting::Seed, Setting::Rules],
        }),
        race: Some(Racer {
            run: runs::exact,
            settings: runs::exact_settings,
            check: None,
            reads: &[
                Setting::Seed,
                Setting::Threads,
                Setting::Rules,
                Setting::Exact,
            ],
            by_default: true,
        }),
        ..entry(
            "exact",
            "the MIP solver: a proven lower bound on the simulated latency, and its mapping bettered by the local search for the budget left (docs/exact.md)",
        )
    },
    Entry {
        player: game_player("greedy", |_| Box::new(GreedyPlayer)),
        demonstration: Some(|s| GreedyPlayer.play(s, 0)),
        ..entry("greedy", "the game's greedy player")
    },
    Entry {
        player: game_player("xla", |_| Box::new(XlaPlayer)),
        ..entry("xla-game", "the xla mapping played as a line of the game")
    },
];

/// The solvers `evaluate` runs when none is named, in the order of its rows (the game
/// players after the baselines; `beam` is `beam:8`).
pub const EVALUATE_DEFAULTS: [&str; 5] = ["all-slow", "xla", "greedy-size", "greedy", "beam"];

/// The heuristics a result is read against ([`crate::reference`]): each maps a program
/// of thousands of buffers in well under a second.
pub const INSTANT_HEURISTICS: &[&str] = &["xla", "xla-repack", "greedy-size", "egrl-dp", "greedy"];

/// The entry of `name`, if it is registered.
pub fn find(name: &str) -> Option<&'static Entry> {
    SOLVERS.iter().find(|e| e.name == name)
}

/// The game player `spec` names, for a game shared out on `threads`: a registered
/// player's name as the game gives it (`random`, `xla`, `greedy`, `beam`: width
/// [`beam::DEFAULT_WIDTH`]), or `beam:W` (width W); `None` if the name is unknown or W is
/// not in 1..=[`MAX_BEAM_WIDTH`].
pub fn player(spec: &str, threads: usize) -> Option<Box<dyn Player>> {
    if let Some(p) = SOLVERS
        .iter()
        .filter_map(|e| e.player)
        .find(|p| p.name == spec)
    {
        return Some((p.build)(threads));
    }
    let w: usize = spec.strip_prefix("beam:")?.parse().ok()?;
    (1..=MAX_BEAM_WIDTH)
        .contains(&w)
        .then(|| Box::new(BeamPlayer::new(w).with_threads(threads)) as Box<dyn Player>)
}

/// The demonstrations a training run may ask for (`TrainConfig::demonstrations`), in the
/// registry's order: every front end that starts or resumes a run gives these.
pub fn demonstrations() -> Demonstrations {
    let known = SOLVERS.iter().filter_map(|e| {
        e.demonstration
            .map(|play| Demonstration { name: e.name, play })
    });
    Demonstrations::new(known.collect())
}

/// The EGRL system `name` runs (`train-egrl --variant`), if it is one.
pub fn egrl_variant(name: &str) -> Option<Variant> {
    find(name).and_then(|e| e.egrl)
}

/// The names `train-egrl --variant` takes, in the registry's order.
pub fn egrl_variant_names() -> Vec<&'static str> {
    SOLVERS
        .iter()
        .filter(|e| e.egrl.is_some())
        .map(|e| e.name)
        .collect()
}

/// The names `evaluate` takes, besides game players with a width (`beam:W`) and mapping
/// files.
pub fn evaluate_names() -> Vec<&'static str> {
    SOLVERS
        .iter()
        .filter(|e| e.evaluated())
        .map(|e| e.name)
        .collect()
}

/// The game players `play --player` takes without a width (besides `beam:W`), as the
/// game names them, in the registry's order.
pub fn player_names() -> Vec<&'static str> {
    SOLVERS
        .iter()
        .filter_map(|e| e.player)
        .map(|p| p.name)
        .collect()
}

/// The names a race takes, in the order it runs them when none is named.
pub fn race_names() -> Vec<&'static str> {
    SOLVERS
        .iter()
        .filter(|e| e.race.is_some())
        .map(|e| e.name)
        .collect()
}

/// The solvers a race runs when none is named: [`race_names`] but the guided searches of
/// issue 43's ablation and the agent's self-play training, raced only when named.
pub fn race_default_names() -> Vec<&'static str> {
    SOLVERS
        .iter()
        .filter(|e| e.raced_by_default())
        .map(|e| e.name)
        .collect()
}

/// The race solvers of `names` that read `setting`.
pub fn race_readers(names: &[String], setting: Setting) -> Vec<&str> {
    names
        .iter()
        .filter(|n| {
            find(n)
                .and_then(|e| e.race)
                .is_some_and(|r| r.reads.contains(&setting))
        })
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry builds: each name is registered once, `evaluate` builds each of its
    /// solvers under the name its rows carry, and each selection names registered entries.
    #[test]
    fn every_entry_builds() {
        let all: Vec<&str> = SOLVERS.iter().map(|e| e.name).collect();
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "a name twice: {all:?}");
        let ctx = SolverContext::default();
        for e in SOLVERS {
            assert!(!e.about.is_empty(), "{} says nothing of itself", e.name);
            assert!(
                e.evaluated() || e.race.is_some(),
                "{} is built by no front end",
                e.name
            );
            // The agent loads a network: `evaluate`'s own tests build it.
            if e.evaluated() && e.name != "muzero" {
                let built = Solver::named(e.name, &ctx).unwrap();
                let carried = built.name();
                let beam = format!("beam:{}", beam::DEFAULT_WIDTH);
                assert!(
                    carried == e.name || (e.name == "beam" && carried == beam),
                    "{} builds {carried}",
                    e.name
                );
            }
        }
        for name in EVALUATE_DEFAULTS.iter().chain(INSTANT_HEURISTICS) {
            assert!(find(name).is_some_and(|e| e.evaluated()), "{name}");
        }
        let race: Vec<String> = race_names().iter().map(|s| s.to_string()).collect();
        assert!(crate::race::check_solvers(&race).is_ok());
        // Every guide that needs no folder is raced, when named.
        for g in GuideKind::NAMES {
            let n = format!("{}{g}", crate::race::GUIDED_PREFIX);
            assert!(race.contains(&n), "{n} is not registered");
            assert!(!race_default_names().contains(&n.as_str()));
        }
        assert!(!race_default_names().contains(&crate::race::MUZERO_TRAIN));
        assert!(crate::race::check_solvers(&["greedy".to_string()]).is_err());
    }

    /// The demonstrations a run may ask for are those it always could, and each plays a
    /// finished game.
    #[test]
    fn demonstrations_play_finished_games() {
        let known = demonstrations();
        assert_eq!(known.names(), ["xla", "greedy-size", "beam", "greedy"]);
        let defaults = &malloc_muzero::train::TrainConfig::default().demonstrations;
        assert!(known.check(defaults).is_ok());
        // A run folder made before the registry held them names them the same way.
        let saved = malloc_muzero::generalist::info()
            .unwrap()
            .config
            .demonstrations;
        assert!(known.check(&saved).is_ok(), "{saved:?}");
        let err = known.check(&["xla".into(), "beam:4".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "train config: demonstrations: unknown `beam:4` (known: xla, greedy-size, beam, greedy)"
        );
        let case = Case::named(Some("diamond"), Some("tpu-v4i-like"), Some("4MiB")).unwrap();
        let setup = GameSetup::new(case.program, case.hw, Default::default()).unwrap();
        for e in SOLVERS {
            if let Some(play) = e.demonstration {
                let game = play(&setup);
                let latency = game.final_latency();
                assert!(latency.is_some_and(f64::is_finite), "{}", e.name);
            }
        }
        // The crates below the registry test with a copy of these builders: it plays
        // the same games.
        let copy = malloc_muzero::fixtures::demonstrations();
        assert_eq!(copy.names(), known.names());
        for name in known.names() {
            let ours = (known.get(name).unwrap().play)(&setup);
            let theirs = (copy.get(name).unwrap().play)(&setup);
            assert_eq!(ours.actions(), theirs.actions(), "{name}");
            assert_eq!(ours.final_latency(), theirs.final_latency(), "{name}");
        }
    }

    /// `train-egrl --variant` takes the EGRL searches' names, each the variant's own.
    #[test]
    fn egrl_variants_are_named_as_the_race_names_them() {
        assert_eq!(egrl_variant_names(), ["egrl", "egrl-ea", "egrl-pg"]);
        for name in egrl_variant_names() {
            assert_eq!(egrl_variant(name).map(Variant::name), Some(name));
        }
        for other in ["egrl-dp", "xla", "", "EGRL"] {
            assert_eq!(egrl_variant(other), None, "{other}");
        }
    }

    #[test]
    fn players_parse_and_round_trip_through_their_names() {
        for spec in ["random", "xla", "greedy", "beam:1", "beam:8", "beam:32"] {
            assert_eq!(player(spec, 1).unwrap().name(), spec);
        }
        assert_eq!(player("beam", 2).unwrap().name(), "beam:8");
        let widest = format!("beam:{MAX_BEAM_WIDTH}");
        assert!(player(&widest, 1).is_some());
        let wider = format!("beam:{}", MAX_BEAM_WIDTH + 1);
        for bad in [
            "",
            "beam:0",
            "beam:",
            "beam:x",
            "beam:-1",
            "beam8",
            "greedy-size",
            &wider,
        ] {
            assert!(player(bad, 1).is_none(), "{bad}");
        }
        assert_eq!(player_names(), ["beam", "random", "greedy", "xla"]);
    }

    /// The settings each race solver reads are the ones its saved settings record.
    #[test]
    fn a_race_solver_reads_what_its_settings_record() {
        let config = RaceConfig {
            seconds: 1.0,
            threads: 1,
            seed: 0,
            options: Default::default(),
            train: Default::default(),
            checkpoint: None,
            agent_dir: None,
            egrl: Default::default(),
            exact_objective: exact::Objective::Simulated,
            mip_share: None,
        };
        for e in SOLVERS {
            let Some(r) = e.race else { continue };
            let mut settings = Settings::new();
            (r.settings)(&config, &mut settings);
            let recorded = |k: &str| settings.contains_key(k);
            assert_eq!(
                recorded("egrl"),
                r.reads.contains(&Setting::EgrlConfig) && e.name != "egrl-dp",
                "{}",
                e.name
            );
            assert_eq!(
                recorded("train"),
                r.reads.contains(&Setting::TrainConfig),
                "{}",
                e.name
            );
            assert_eq!(
                recorded("mip_share"),
                r.reads.contains(&Setting::MipShare) || e.name == "exact",
                "{}",
                e.name
            );
            assert_eq!(
                recorded("options"),
                r.reads.contains(&Setting::Rules),
                "{}",
                e.name
            );
        }
    }
}
