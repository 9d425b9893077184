//! The guided search with a slower solver beside it (the MIP, say), whose games join the
//! starts when it returns.
//!
//! Run one after the other, the solver beside would leave the search's incumbent empty
//! until it returns (the worst primal integral of a race), and on two or more threads all
//! but one would idle while it runs (the MIP is one thread). So the search starts at
//! once on the threads the solver leaves, from the heuristics' games and the network's
//! own; when the solver returns (or its time is up), every thread continues from the
//! fastest of its games and the search's best so far. On one thread the heuristics' games are played and offered
//! before the solver runs, so the incumbent has a best from the first second.

use crate::guide::{Chains, GuideStats, GuidedSearch};
use crate::AgentError;
use malloc_game::anytime::{Incumbent, Limit, LocalSearch, LocalSearchConfig, Start};
use malloc_game::GameSetup;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A solver run beside a [`GuidedSearch`] on one of its threads.
pub struct Beside<'a> {
    /// When it should be done: the search's threads but one search until then or until
    /// it returns, whichever comes first. It is waited for in any case.
    pub until: Instant,
    /// Runs it and returns its games, as starts for the search.
    pub run: Box<dyn FnOnce() -> Vec<Start> + Send + 'a>,
    /// Games known before it runs (the line it starts from, say): the search starts from
    /// them at once, beside the heuristics' games.
    pub known: Vec<Start>,
}

impl GuidedSearch {
    /// [`GuidedSearch::run`] with `beside` running on one of `limit`'s threads until it
    /// returns (see the module's doc), the others searching meanwhile, then every thread
    /// searching from the fastest of `beside`'s games, the heuristics' and the best found
    /// meanwhile, until `limit`. The second part's chains draw from another seed than the
    /// first's; a guide that learns online ([`GuidedSearch::online`]) starts each part
    /// from its network afresh, what its copies learned in the first part dropped.
    /// Returns what the guides did in both parts.
    pub fn run_beside(
        &self,
        setup: &Arc<GameSetup>,
        beside: Beside<'_>,
        seed: u64,
        limit: &Limit,
        incumbent: &Incumbent,
    ) -> Result<GuideStats, AgentError> {
        let search = self.continuing();
        let Beside {
            until: beside_until,
            run: beside_run,
            known,
        } = beside;
        // The starts are played in full by the deadline alone; the search meanwhile gives
        // way as soon as the solver beside returns.
        let until = Limit {
            deadline: beside_until.min(limit.deadline),
            threads: limit.threads.saturating_sub(1).max(1),
            stop: None,
        };
        let returned = Arc::new(AtomicBool::new(false));
        let meanwhile = Limit {
            stop: Some(Arc::clone(&returned)),
            ..until.clone()
        };
        let ((first, mut starts), theirs) = std::thread::scope(|s| {
            let starts = |limit: &Limit| {
                let mut starts = self.search.starts(setup, &known, limit, incumbent);
                starts.extend(
                    self.own_game(setup, limit)
                        .map(|g| Start::new("network", g)),
                );
                starts
            };
            if limit.threads < 2 {
                // One thread: the starts first, so the incumbent has a best meanwhile.
                let mine = starts(&until);
                return ((Ok(GuideStats::default()), mine), beside_run());
            }
            let other = s.spawn(|| {
                let theirs = beside_run();
                returned.store(true, Ordering::Relaxed);
                theirs
            });
            let mine = starts(&until);
            let run = Chains {
                search: &search,
                seed,
                limit: &meanwhile,
                incumbent,
            };
            let first = self.chains(setup, &mine, &run);
            // A solver beside that panicked gives no start; the search goes on.
            ((first, mine), other.join().unwrap_or_default())
        });
        let first = first?;
        if incumbent.moves() > 0 {
            if let Some(best) = incumbent.best() {
                let from = incumbent.start().unwrap_or_else(|| "search".into());
                starts.push(Start::new(&format!("{from}+search"), best));
            }
        }
        // Theirs first: of equally fast starts the first is taken.
        let starts: Vec<Start> = theirs.into_iter().chain(starts).collect();
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

    /// The local search of [`GuidedSearch::run_beside`]'s chains: the same, but starting
    /// from the games it is given only (the heuristics' are played before).
    fn continuing(&self) -> LocalSearch {
        LocalSearch {
            config: LocalSearchConfig {
                heuristic_starts: false,
                ..self.search.config.clone()
            },
        }
    }
}
