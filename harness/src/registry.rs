//! The one name -> solver registry: every solver name the command line, the race and the
//! Python package accept, where each one runs, and what it is. `evaluate` builds its
//! solvers by these names ([`crate::Solver::named`]) and the race runs them
//! ([`crate::race::race_case`]); a test checks that each name here is one they know.

/// A solver's name and where it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: &'static str,
    /// `evaluate` runs it once (a baseline, a game player, the agent, the exact solver).
    pub evaluate: bool,
    /// The race runs it under a wall-clock budget.
    pub race: bool,
    /// One line for listings.
    pub about: &'static str,
}

const fn entry(name: &'static str, evaluate: bool, race: bool, about: &'static str) -> Entry {
    Entry {
        name,
        evaluate,
        race,
        about,
    }
}

/// Every solver, the race's in the order a race runs them when none is named.
pub const SOLVERS: &[Entry] = &[
    entry("all-slow", true, false, "every buffer in level 0"),
    entry("xla", true, true, "XLA's memory space assignment (docs/xla-msa.md)"),
    entry(
        "xla-repack",
        true,
        true,
        "xla with XLA's re-packing of offsets when a buffer runs out of memory",
    ),
    entry(
        "greedy-size",
        true,
        true,
        "TFLite-style whole-live-range placement, largest first",
    ),
    entry(
        "beam",
        true,
        true,
        "beam search over the game (`beam:W` for width W in evaluate; widening in the race)",
    ),
    entry(
        "local-search",
        false,
        true,
        "local search over the game's moves, scored by the simulator",
    ),
    entry(
        "random",
        true,
        true,
        "random play (restarts in the race)",
    ),
    entry(
        "muzero",
        true,
        true,
        "the mallocMuZero agent: a run's (--checkpoint) or the bundled generalist; in the race it guides the local search's moves",
    ),
    entry(
        "muzero-train",
        false,
        true,
        "the agent trained by self-play for the race's budget, from scratch or continuing --checkpoint (not raced unless named)",
    ),
    entry(
        "guided-uniform",
        false,
        true,
        "the local search under the bundled network's rules, its moves uniform (the ablation's baseline; not raced unless named)",
    ),
    entry(
        "guided-untrained",
        false,
        true,
        "the local search with each re-decided turn drawn from an untrained network's policy (not raced unless named)",
    ),
    entry(
        "guided-bundled",
        false,
        true,
        "the local search with each re-decided turn drawn from the bundled generalist's policy (not raced unless named)",
    ),
    entry("egrl", false, true, "EGRL: evolution beside a SAC learner (docs/egrl.md)"),
    entry("egrl-ea", false, true, "EGRL's evolution alone"),
    entry("egrl-pg", false, true, "EGRL's learner alone"),
    entry("egrl-dp", true, true, "EGRL's knapsack mapper"),
    entry(
        "exact",
        true,
        true,
        "the MIP solver: a proven lower bound on the simulated latency, and its mapping bettered by the local search for the budget left (docs/exact.md)",
    ),
    entry("greedy", true, false, "the game's greedy player"),
    entry(
        "xla-game",
        true,
        false,
        "the xla mapping played as a line of the game",
    ),
];

/// The names `evaluate` takes, besides game players with a width (`beam:W`) and mapping
/// files.
pub fn evaluate_names() -> Vec<&'static str> {
    SOLVERS
        .iter()
        .filter(|e| e.evaluate)
        .map(|e| e.name)
        .collect()
}

/// The names a race takes, in the order it runs them when none is named.
pub fn race_names() -> Vec<&'static str> {
    SOLVERS.iter().filter(|e| e.race).map(|e| e.name).collect()
}

/// The solvers a race runs when none is named: [`race_names`] but the guided searches of
/// issue 43's ablation and the agent's self-play training, raced only when named.
pub fn race_default_names() -> Vec<&'static str> {
    race_names()
        .into_iter()
        .filter(|n| !n.starts_with(crate::race::GUIDED_PREFIX) && *n != crate::race::MUZERO_TRAIN)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry and the libraries that build the solvers agree: every baseline, game
    /// player and EGRL solver is named here, and every name here is one they build.
    #[test]
    fn every_solver_is_registered_and_every_name_builds() {
        let all: Vec<&str> = SOLVERS.iter().map(|e| e.name).collect();
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "a name twice: {all:?}");
        for n in xla_msa::SOLVER_NAMES.iter().chain(egrl::SOLVER_NAMES) {
            assert!(all.contains(n), "{n} is not registered");
        }
        for p in malloc_game::players::PLAYER_NAMES {
            let name = if *p == "xla" { "xla-game" } else { p };
            assert!(evaluate_names().contains(&name), "{name} is not registered");
        }
        let ctx = crate::SolverContext::default();
        for n in evaluate_names() {
            if n != "muzero" {
                assert!(
                    crate::Solver::named(n, &ctx).is_ok(),
                    "evaluate cannot build {n}"
                );
            }
        }
        let race: Vec<String> = race_names().iter().map(|s| s.to_string()).collect();
        assert!(crate::race::check_solvers(&race).is_ok());
        // Every guided name names a guide, and every guide that needs no folder is raced.
        for n in race
            .iter()
            .filter(|n| n.starts_with(crate::race::GUIDED_PREFIX))
        {
            assert!(crate::race::guide_of(n).is_some(), "{n}");
        }
        for g in malloc_muzero::GuideKind::NAMES {
            let n = format!("{}{g}", crate::race::GUIDED_PREFIX);
            assert!(race.contains(&n), "{n} is not registered");
            assert!(!race_default_names().contains(&n.as_str()));
        }
        assert!(crate::race::check_solvers(&["greedy".to_string()]).is_err());
    }
}
