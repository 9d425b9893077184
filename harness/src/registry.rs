//! The one solver registry: every solver the command line, the race and the Python
//! package know, with what it is and how it is built. `evaluate` builds a solver from its
//! entry's [`Build`] ([`crate::Solver::named`]) and the race runs one from its entry's
//! [`Run`] ([`crate::race::race_case`]). The names are listed here only: the crates below
//! build their solvers by type, and where one has a dispatcher by name
//! (`xla_msa::solver`, `malloc_game::players::player_on_threads`,
//! `malloc_game::anytime::anytime_solver`, `egrl::race`), the entry's name is what it is
//! called with, and a test checks that each of them builds every name given to it.
//! Messages that list names list them in this registry's order.

/// How `evaluate` builds a solver: one mapping per case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// xla-msa's baseline of the entry's name (`xla_msa::solver`).
    Baseline,
    /// EGRL's knapsack mapper, as a baseline.
    Knapsack,
    /// The game player of this name (`malloc_game::players::player_on_threads`), one game.
    Player(&'static str),
    /// The trained agent: a run's (`--checkpoint`) or the bundled generalist.
    Agent,
    /// The MIP, then the local search for the budget left ([`crate::exact_run`]).
    Exact,
}

/// How the race runs a solver under its wall-clock budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// xla-msa's baseline of the entry's name: instant, one point.
    Baseline,
    /// The anytime game solver of the entry's name
    /// (`malloc_game::anytime::anytime_solver`), under the race's rules.
    Anytime,
    /// EGRL's search of the entry's name (`egrl::race`); it reads the race's EGRL config.
    Egrl,
    /// EGRL's knapsack mapper (`egrl::race`): instant, and no setting of the config decides
    /// its mapping.
    Knapsack,
    /// The local search with its moves drawn by the agent's network (`--checkpoint`'s run,
    /// else the bundled generalist).
    Agent,
    /// The local search with its moves drawn by the guide the entry's name names after
    /// [`crate::race::GUIDED_PREFIX`] (issue 43's ablation).
    Guided,
    /// The agent trained by self-play for the budget, from scratch or continuing
    /// `--checkpoint`'s run.
    Train,
    /// The MIP, then the local search for the budget left.
    Exact,
}

impl Run {
    /// The solver reads the race's EGRL config (`--egrl-config`).
    pub fn reads_egrl_config(self) -> bool {
        matches!(self, Run::Egrl | Run::Knapsack)
    }
}

/// A solver: its name, what it is, and how each front end builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The name users give (`xla`, `beam:W`'s `beam`, ...).
    pub name: &'static str,
    /// One line for listings.
    pub about: &'static str,
    /// How `evaluate` builds it; `None`: `evaluate` does not run it.
    pub evaluate: Option<Build>,
    /// How the race runs it; `None`: the race does not.
    pub race: Option<Run>,
    /// A race that names no solver runs it.
    pub raced_by_default: bool,
}

const fn entry(
    name: &'static str,
    evaluate: Option<Build>,
    race: Option<Run>,
    about: &'static str,
) -> Entry {
    Entry {
        name,
        about,
        evaluate,
        race,
        raced_by_default: race.is_some(),
    }
}

/// An entry the race runs only when it is named.
const fn named_only(e: Entry) -> Entry {
    Entry {
        raced_by_default: false,
        ..e
    }
}

/// Every solver, the race's in the order a race runs them when none is named.
pub const SOLVERS: &[Entry] = &[
    entry(
        "all-slow",
        Some(Build::Baseline),
        None,
        "every buffer in level 0",
    ),
    entry(
        "xla",
        Some(Build::Baseline),
        Some(Run::Baseline),
        "XLA's memory space assignment (docs/xla-msa.md)",
    ),
    entry(
        "xla-repack",
        Some(Build::Baseline),
        Some(Run::Baseline),
        "xla with XLA's re-packing of offsets when a buffer runs out of memory",
    ),
    entry(
        "greedy-size",
        Some(Build::Baseline),
        Some(Run::Baseline),
        "TFLite-style whole-live-range placement, largest first",
    ),
    entry(
        "beam",
        Some(Build::Player("beam")),
        Some(Run::Anytime),
        "beam search over the game (`beam:W` for width W in evaluate; widening in the race)",
    ),
    entry(
        "local-search",
        None,
        Some(Run::Anytime),
        "local search over the game's moves, scored by the simulator",
    ),
    entry(
        "random",
        Some(Build::Player("random")),
        Some(Run::Anytime),
        "random play (restarts in the race)",
    ),
    entry(
        "muzero",
        Some(Build::Agent),
        Some(Run::Agent),
        "the mallocMuZero agent: a run's (--checkpoint) or the bundled generalist; in the race it guides the local search's moves",
    ),
    named_only(entry(
        "muzero-train",
        None,
        Some(Run::Train),
        "the agent trained by self-play for the race's budget, from scratch or continuing --checkpoint (not raced unless named)",
    )),
    named_only(entry(
        "guided-uniform",
        None,
        Some(Run::Guided),
        "the local search under the bundled network's rules, its moves uniform (the ablation's baseline; not raced unless named)",
    )),
    named_only(entry(
        "guided-untrained",
        None,
        Some(Run::Guided),
        "the local search with each re-decided turn drawn from an untrained network's policy (not raced unless named)",
    )),
    named_only(entry(
        "guided-bundled",
        None,
        Some(Run::Guided),
        "the local search with each re-decided turn drawn from the bundled generalist's policy (not raced unless named)",
    )),
    named_only(entry(
        "guided-tuned",
        None,
        Some(Run::Guided),
        "the local search with each re-decided turn drawn from the bundled guide's policy: the generalist fitted to the local search's move outcomes (not raced unless named)",
    )),
    named_only(entry(
        "guided-bundled+online",
        None,
        Some(Run::Guided),
        "guided-bundled with each chain's copy of the network learning from its moves' outcomes (not raced unless named)",
    )),
    entry(
        "egrl",
        None,
        Some(Run::Egrl),
        "EGRL: evolution beside a SAC learner (docs/egrl.md)",
    ),
    entry("egrl-ea", None, Some(Run::Egrl), "EGRL's evolution alone"),
    entry("egrl-pg", None, Some(Run::Egrl), "EGRL's learner alone"),
    entry(
        "egrl-dp",
        Some(Build::Knapsack),
        Some(Run::Knapsack),
        "EGRL's knapsack mapper",
    ),
    entry(
        "exact",
        Some(Build::Exact),
        Some(Run::Exact),
        "the MIP solver: a proven lower bound on the simulated latency, and its mapping bettered by the local search for the budget left (docs/exact.md)",
    ),
    entry(
        "greedy",
        Some(Build::Player("greedy")),
        None,
        "the game's greedy player",
    ),
    entry(
        "xla-game",
        Some(Build::Player("xla")),
        None,
        "the xla mapping played as a line of the game",
    ),
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

/// How `evaluate` builds `name`, if it runs it.
pub fn build_of(name: &str) -> Option<Build> {
    find(name)?.evaluate
}

/// How the race runs `name`, if it does.
pub fn run_of(name: &str) -> Option<Run> {
    find(name)?.race
}

/// The names `evaluate` takes, besides game players with a width (`beam:W`) and mapping
/// files.
pub fn evaluate_names() -> Vec<&'static str> {
    SOLVERS
        .iter()
        .filter(|e| e.evaluate.is_some())
        .map(|e| e.name)
        .collect()
}

/// The game players `play --player` takes without a width (besides `beam:W`): those
/// `evaluate` plays as [`Build::Player`], in the registry's order.
pub fn player_names() -> Vec<&'static str> {
    let mut names = Vec::new();
    for e in SOLVERS {
        if let Some(Build::Player(p)) = e.evaluate {
            if !names.contains(&p) {
                names.push(p);
            }
        }
    }
    names
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
        .filter(|e| e.raced_by_default)
        .map(|e| e.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Every entry builds: each name is registered once, `evaluate` builds each of its
    /// solvers, and each crate's dispatcher knows every name the race gives it.
    #[test]
    fn every_entry_builds() {
        let all: Vec<&str> = SOLVERS.iter().map(|e| e.name).collect();
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "a name twice: {all:?}");
        let ctx = crate::SolverContext::default();
        let case = crate::Case::named(Some("alexnet"), None, None).unwrap();
        for e in SOLVERS {
            // The agent loads a network: `evaluate`'s own tests build it.
            if e.evaluate.is_some_and(|b| b != Build::Agent) {
                let built = crate::Solver::named(e.name, &ctx);
                assert!(built.is_ok(), "evaluate cannot build {}", e.name);
            }
            let known = match e.race {
                Some(Run::Baseline) => xla_msa::solver(e.name).is_some(),
                Some(Run::Anytime) => malloc_game::anytime::anytime_solver(e.name).is_some(),
                Some(Run::Egrl) => egrl::Variant::named(e.name).is_some(),
                Some(Run::Knapsack) => {
                    let problem =
                        egrl::Problem::new(Arc::clone(&case.program), case.hw.clone(), 0.0);
                    let deadline = std::time::Instant::now();
                    egrl::race(
                        e.name,
                        Arc::new(problem.unwrap()),
                        Default::default(),
                        deadline,
                        &mut |_, _| {},
                    )
                    .is_some_and(|r| r.is_ok())
                }
                Some(Run::Guided) => crate::race::guide_of(e.name).is_some(),
                Some(Run::Agent | Run::Train | Run::Exact) | None => true,
            };
            assert!(known, "the race cannot run {}", e.name);
        }
        // The selections are of entries `evaluate` builds.
        for name in EVALUATE_DEFAULTS.iter().chain(INSTANT_HEURISTICS) {
            assert!(build_of(name).is_some(), "{name} is no evaluate entry");
        }
        for p in player_names() {
            let player = malloc_game::players::player(p);
            assert!(player.is_some(), "no game player {p}");
        }
        let race: Vec<String> = race_names().iter().map(|s| s.to_string()).collect();
        assert!(crate::race::check_solvers(&race).is_ok());
        // Every guide that needs no folder is raced, when named.
        for g in malloc_muzero::GuideKind::NAMES {
            let n = format!("{}{g}", crate::race::GUIDED_PREFIX);
            assert!(race.contains(&n), "{n} is not registered");
            assert!(!race_default_names().contains(&n.as_str()));
        }
        assert!(!race_default_names().contains(&crate::race::MUZERO_TRAIN));
        assert!(crate::race::check_solvers(&["greedy".to_string()]).is_err());
    }
}
