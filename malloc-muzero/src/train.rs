//! Training: self-play and learning side by side, evaluation against the xla baseline,
//! checkpoints, interrupts and resume.
//!
//! The schedule is pipelined and deterministic. Iteration `i`: a self-play thread plays
//! `games_per_iteration` games in lockstep with the weights the learner had at the start of
//! `i`, while the learner trains on the games of iterations `< i` until it has done
//! `train_steps_per_position` steps per position generated so far. Then the new games enter
//! the replay buffer, an evaluation game (no noise) is played and scored by the simulator,
//! and every `checkpoint_every` iterations the run is saved. Every random draw comes from
//! the run seed and the iteration number, so a run, and a resumed run, repeat exactly.
//!
//! [`Trainer`] holds a run, of one program ([`Trainer::start`]) or of many at once with one
//! network ([`Trainer::start_cases`]; a run of one program is a run of one case), or
//! [`Trainer::resume`]s one; then
//! [`Trainer::run`] it to its [`Limits`] or until its stop flag is raised (the command line
//! raises it on Ctrl-C); the current iteration is finished, a checkpoint and `best/` are
//! written, and the run can be resumed from there. Progress goes to a callback, once per
//! iteration.
//!
//! A run directory holds:
//! - `run.json`: what is being trained ([`RunInfo`]), and `program.json`, a copy of the
//!   program, so the folder alone resumes the run and replays its games;
//! - `metrics.jsonl`: one [`Progress`] line per iteration; a resume cuts it back to the
//!   iterations of the checkpoint it resumes from, so no iteration is listed twice;
//! - `checkpoints/iter-NNNNNN/` (weights, optimizer, replay buffer) with
//!   `checkpoints/latest.json` pointing at the newest complete one (written last,
//!   atomically); a run folder without it (a run stopped in its first iterations) resumes
//!   by starting afresh;
//! - `best/`: the fastest mapping found (`mapping.json`, `game.game`, `found.json`, written
//!   the moment it is found; a resume reads the best back from `game.game`) and, at the end
//!   of each session, `summary.json`;
//! - `games/`: the evaluation games, with search statistics.
//!
//! A multi-program run keeps `programs/NNN.json` (each case's program) beside
//! `program.json`, `run.json`'s `cases`, and `best/NNN/` per case; it does not save its
//! evaluation games. The JSON files of a run folder are EGRL's conventions too
//! ([`binio::json`]).
//!
//! Self-play can also happen away from the learner ([`SelfPlayWorker`], for the Python
//! package's Ray training; a run of one program): [`Trainer::describe`], [`Trainer::weights`] and
//! [`Trainer::order`] give a worker what it needs, and [`Trainer::absorb_batch`] takes its
//! games back as one iteration of the same run folder.

mod best;
mod case;
mod checkpoint;
mod config;
mod counters;
mod demos;
mod error;
mod init;
mod learner;
mod remote;
mod run_dir;
mod selfplay;
mod summary;
mod trainer;

pub use config::{Limits, TrainConfig};
pub use demos::{Demonstration, Demonstrations};
pub use error::TrainError;
pub use init::{init_info, INIT_BUNDLED};
pub use remote::{BatchInfo, SelfPlayWorker, WorkOrder};
pub(crate) use run_dir::run_info_from;
pub use run_dir::CaseInfo;
pub use run_dir::{load_network, read_run_info, RunInfo};
pub use selfplay::{
    improve_by_proposals, play_games, play_greedy, reanalyse_game, xla_latency, PlayedGame,
};
pub use summary::{CaseSummary, Progress, TrainSummary};
pub use trainer::{TrainCase, Trainer, MAX_CASES};
