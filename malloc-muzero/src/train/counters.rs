//! What a run has done: the counters a checkpoint carries ([`Counters`]) and what the
//! learner did in one iteration ([`Learned`]).

use super::run_dir::Latest;
use super::Limits;
use muzero::{LossParts, StepStats};
use std::time::Instant;

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counters {
    /// Iterations completed: the next iteration's number.
    pub iterations: u64,
    pub train_steps: u64,
    pub positions: u64,
    /// Seconds of training in earlier sessions.
    pub elapsed_before: f64,
}

/// What the learner did in one iteration.
#[derive(Default)]
pub(super) struct Learned {
    pub steps: u64,
    pub loss_sum: LossParts,
    pub last: Option<StepStats>,
    pub reanalysed: usize,
}

impl Counters {
    /// The counters at the end of checkpoint `latest`.
    pub(super) fn after(latest: &Latest) -> Counters {
        Counters {
            iterations: latest.iteration + 1,
            train_steps: latest.train_steps,
            positions: latest.positions,
            elapsed_before: latest.elapsed_s,
        }
    }

    /// Seconds of training in every session, this one begun at `session`.
    pub(super) fn elapsed_s(&self, session: Instant) -> f64 {
        self.elapsed_before + session.elapsed().as_secs_f64()
    }

    /// Whether `limits` are reached: the minutes of the session begun at `session`, the
    /// deadline, the training steps.
    pub(super) fn reached(&self, limits: &Limits, session: Instant) -> bool {
        let minutes = session.elapsed().as_secs_f64() / 60.0;
        limits.deadline.is_some_and(|d| Instant::now() >= d)
            || limits.minutes.is_some_and(|m| minutes >= m)
            || limits.steps.is_some_and(|s| self.train_steps >= s)
    }

    /// The checkpoint record of the iterations completed (none before the first).
    pub(super) fn latest(&self, elapsed_s: f64, eval_latency_s: Option<f64>) -> Option<Latest> {
        let last = self.iterations.checked_sub(1)?;
        Some(Latest {
            iteration: last,
            dir: format!("iter-{last:06}"),
            train_steps: self.train_steps,
            positions: self.positions,
            elapsed_s,
            eval_latency_s,
        })
    }
}
