//! What a run reports: each iteration's line ([`Progress`], also a line of `metrics.jsonl`)
//! and its end ([`TrainSummary`], also `best/summary.json`).

use super::learner::{Counters, Learned};
use serde::{Deserialize, Serialize};

/// What a run reports at its end (also `best/summary.json`). In a multi-program run the
/// case fields (`xla_latency_s` to `eval_latency_s`) are its first case's, as in
/// `run.json`, and `cases` has every case's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrainSummary {
    /// Iterations completed, counting those of earlier sessions.
    pub iterations: u64,
    pub train_steps: u64,
    pub positions: u64,
    pub elapsed_s: f64,
    pub xla_latency_s: f64,
    pub all_slow_latency_s: f64,
    /// The fastest mapping found in training (self-play or evaluation games), in any
    /// session of the run; `None` when no game has finished yet (a session interrupted
    /// in its first iteration).
    pub best_latency_s: Option<f64>,
    pub best_return: Option<f64>,
    /// The last evaluation game (no noise).
    pub eval_latency_s: Option<f64>,
    /// The session ended because its stop flag was raised, not at its limits.
    #[serde(default)]
    pub interrupted: bool,
    /// A multi-program run's cases; empty for a run of one program.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<CaseSummary>,
}

/// One case's results in a multi-program run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseSummary {
    pub name: String,
    pub xla_latency_s: f64,
    /// The fastest mapping the agent found for this case (none before one finished).
    pub best_latency_s: Option<f64>,
    /// The case's last evaluation game in this session.
    pub eval_latency_s: Option<f64>,
}

/// One iteration's report: what the progress callback gets, and one line of
/// `metrics.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub iteration: u64,
    /// Seconds of training in all sessions of the run so far.
    pub elapsed_s: f64,
    pub positions: u64,
    pub train_steps: u64,
    pub steps_this_iteration: u64,
    pub reanalysed_games: usize,
    /// Mean losses of this iteration's steps (0 when it made none).
    pub loss: f32,
    pub loss_value: f32,
    pub loss_reward: f32,
    pub loss_policy: f32,
    pub lr: Option<f64>,
    pub grad_norm: Option<f32>,
    pub selfplay_mean_return: f64,
    pub eval_latency_s: Option<f64>,
    pub best_latency_s: f64,
    pub best_return: f64,
    pub xla_latency_s: f64,
    pub speedup_vs_xla: f64,
    /// The case this iteration played, in a multi-program run (its evaluation game,
    /// latencies and speedup are that case's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
}

impl Progress {
    /// The iteration's counters, losses and self-play returns; no game results yet.
    pub(super) fn of_learning(
        iteration: u64,
        counters: &Counters,
        elapsed_s: f64,
        learned: &Learned,
        returns: &[f64],
    ) -> Progress {
        let n = learned.steps.max(1) as f32;
        let s = &learned.loss_sum;
        Progress {
            iteration,
            elapsed_s,
            positions: counters.positions,
            train_steps: counters.train_steps,
            steps_this_iteration: learned.steps,
            reanalysed_games: learned.reanalysed,
            loss: s.total / n,
            loss_value: s.value / n,
            loss_reward: s.reward / n,
            loss_policy: s.policy / n,
            lr: learned.last.map(|l| l.lr),
            grad_norm: learned.last.map(|l| l.grad_norm),
            selfplay_mean_return: returns.iter().sum::<f64>() / returns.len().max(1) as f64,
            eval_latency_s: None,
            best_latency_s: f64::INFINITY,
            best_return: f64::NEG_INFINITY,
            xla_latency_s: f64::NAN,
            speedup_vs_xla: f64::NAN,
            case: None,
        }
    }
}
