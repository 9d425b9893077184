//! The guided search with a slower solver beside it (the MIP, say), whose games join the
//! starts when it returns.
//!
//! Run one after the other, the solver beside would leave the search's incumbent empty
//! until it returns (the worst primal integral of a race), and on two or more threads all
//! but one would idle while it runs (the MIP is one thread). So the search starts at
//! once on the threads the solver leaves, from the heuristics' games and the network's
//! own; when the solver returns, every thread continues from the fastest of its games and
//! the search's best so far. On one thread the heuristics' games are played and offered
//! before the solver runs, so the incumbent has a best from the first second.

use crate::guide::{Chains, GuideStats, GuidedSearch};
use crate::AgentError;
use malloc_game::anytime::{Incumbent, Limit, LocalSearch, LocalSearchConfig, Start};
use malloc_game::GameSetup;
use std::sync::Arc;
use std::time::Instant;

/// A solver run beside a [`GuidedSearch`] on one of its threads.
pub struct Beside<'a> {
    /// When it should be done: the search's threads but one search until then. It is
    /// waited for in any case.
    pub until: Instant,
    /// Runs it and returns its games, as starts for the search.
    pub run: Box<dyn FnOnce() -> Vec<Start> + Send + 'a>,
}

impl GuidedSearch {
    /// [`GuidedSearch::run`] with `beside` running on one of `limit`'s threads until it
    /// returns (see the module's doc), then every thread searching from the fastest of
    /// `beside`'s games and the best found meanwhile, until `limit`. The second part's
    /// chains draw from another seed than the first's. Returns what the guides did in
    /// both parts.
    pub fn run_beside(
        &self,
        setup: &Arc<GameSetup>,
        beside: Beside<'_>,
        seed: u64,
        limit: &Limit,
        incumbent: &Incumbent,
    ) -> Result<GuideStats, AgentError> {
        let meanwhile = Limit {
            deadline: beside.until.min(limit.deadline),
            threads: limit.threads.saturating_sub(1).max(1),
        };
        let (first, mut starts) = if limit.threads >= 2 {
            std::thread::scope(|s| {
                let other = s.spawn(beside.run);
                let first = self.run(setup, &[], seed, &meanwhile, incumbent);
                // A solver beside that panicked gives no start; the search goes on.
                (first, other.join().unwrap_or_default())
            })
        } else {
            let heuristics = self.search.starts(setup, &[], &meanwhile, incumbent);
            let mut starts = (beside.run)();
            starts.extend(heuristics);
            (Ok(GuideStats::default()), starts)
        };
        let first = first?;
        if limit.threads >= 2 {
            if let Some(best) = incumbent.best() {
                let from = incumbent.start().unwrap_or_else(|| "search".into());
                starts.push(Start::new(&format!("{from}+search"), best));
            }
        } else {
            starts.extend(self.own_game(setup, limit).map(|g| Start::new("network", g)));
        }
        let search = self.continuing();
        let run = Chains {
            search: &search,
            seed: malloc_game::seed_for(seed, 1, 0),
            limit,
            incumbent,
        };
        let second = self.chains(setup, &starts, &run)?;
        Ok(GuideStats {
            network_calls: first.network_calls + second.network_calls,
            learning_steps: first.learning_steps + second.learning_steps,
        })
    }

    /// The local search of the part after the solver beside: the same, but starting from
    /// the games it is given only (the heuristics' were among the first part's).
    fn continuing(&self) -> LocalSearch {
        LocalSearch {
            config: LocalSearchConfig {
                heuristic_starts: false,
                ..self.search.config.clone()
            },
        }
    }
}
