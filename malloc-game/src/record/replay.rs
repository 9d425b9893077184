//! Replaying a saved game: every action re-played, every reward, `S0` and the final
//! latency checked against what was saved.

use super::{GameRecord, SavedMove, MOVE_ACTION};
use crate::game::{Decision, Game, GameError, GameSetup};
use accel_sim::{HardwareError, Program};
use std::sync::Arc;

/// Why a saved game does not replay.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The game was saved against another program.
    #[error("saved game of workload `{saved}` replayed against program `{given}`")]
    WrongWorkload {
        /// The program the game names.
        saved: String,
        /// The program given.
        given: String,
    },
    /// The program has the name but not the content the game was saved against.
    #[error("saved against a different version of workload `{workload}` (program hash {saved:#018x} != {given:#018x})")]
    ProgramHash {
        /// The program's name.
        workload: String,
        /// The content hash the game names.
        saved: u64,
        /// The content hash of the program given.
        given: u64,
    },
    /// The actions run out before the game ends.
    #[error("saved game of `{workload}` ends after {actions} actions, but the game is not over")]
    Length {
        /// The program.
        workload: String,
        /// Actions saved.
        actions: usize,
    },
    /// There is not one reward per action.
    #[error("saved game of `{workload}` has {rewards} rewards for {actions} actions")]
    Rewards {
        /// The program.
        workload: String,
        /// Rewards saved.
        rewards: usize,
        /// Actions saved.
        actions: usize,
    },
    /// The saved hardware does not make a valid config.
    #[error("saved game of `{workload}`: {source}")]
    Hardware {
        /// The program.
        workload: String,
        /// What is wrong with the hardware.
        source: HardwareError,
    },
    /// The game cannot be set up with the saved options.
    #[error("saved game of `{workload}`: {source}")]
    Setup {
        /// The program.
        workload: String,
        /// Why.
        source: GameError,
    },
    /// `S0` replays to another value: the simulator or its inputs changed.
    #[error("saved game of `{workload}`: all-slow latency S0 {saved:e} s, replayed {replayed:e} s (the simulator or its inputs changed)")]
    AllSlow {
        /// The program.
        workload: String,
        /// The saved `S0`, seconds.
        saved: f64,
        /// The replayed one.
        replayed: f64,
    },
    /// A saved action or move is illegal at its turn.
    #[error("saved game of `{workload}`: turn {turn} (buffer `{buffer}`): {source}")]
    Illegal {
        /// The program.
        workload: String,
        /// The turn.
        turn: usize,
        /// The buffer whose turn it was.
        buffer: String,
        /// Why the game refused it.
        source: GameError,
    },
    /// A turn's reward replays to another value.
    #[error("saved game of `{workload}`: turn {turn} (buffer `{buffer}`, action {action} = {action_name}): saved reward {saved:e}, replayed {replayed:e}")]
    Reward {
        /// The program.
        workload: String,
        /// The turn.
        turn: usize,
        /// The buffer whose turn it was.
        buffer: String,
        /// The action.
        action: u32,
        /// Its name on the menu.
        action_name: String,
        /// The saved reward.
        saved: f64,
        /// The replayed one.
        replayed: f64,
    },
    /// The final latency replays to another value.
    #[error("saved game of `{workload}`: final latency {saved:e} s, replayed {replayed:e} s")]
    FinalLatency {
        /// The program.
        workload: String,
        /// The saved latency, seconds.
        saved: f64,
        /// The replayed one.
        replayed: f64,
    },
}

/// One replayed turn.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnInfo {
    /// The buffer whose turn it was.
    pub buffer: String,
    /// The action played.
    pub action: u32,
    /// `GameSetup::action_name`: `CMEM prefetch slot 0`.
    pub action_name: String,
    /// Its reward.
    pub reward: f64,
    /// The cost model's latency after this turn (`P(t)`), seconds.
    pub proxy_latency_s: f64,
    /// The simulated latency of the mapping after this turn (`S(t)`; after the last turn,
    /// the final latency), seconds. Under the simulated reward, turn `t`'s reward is
    /// `(S(t-1) - S(t)) / S0`: these let anyone check that the rewards telescope.
    pub latency_s: f64,
}

/// A verified replay: the finished game and its per-turn table.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The finished game.
    pub game: Game,
    /// Every turn, in order.
    pub turns: Vec<TurnInfo>,
}

/// Rewards are fractions of `S0` (order 1e-3 per turn); the replay runs the same code on the
/// same inputs, so anything beyond rounding noise means the game changed.
fn close(saved: f64, replayed: f64) -> bool {
    (saved - replayed).abs() <= 1e-12 + 1e-9 * saved.abs()
}

impl GameRecord {
    /// Replays the game against `program` and checks every reward, `S0` and the final
    /// latency; the first difference is the error.
    pub fn replay(&self, program: Arc<Program>) -> Result<Replay, ReplayError> {
        let workload = || self.workload.clone();
        let setup = self.setup_for(program)?;
        let mut game = setup.start();
        let mut turns = Vec::with_capacity(self.actions.len());
        let mut given = self.moves.iter();
        for (turn, (&action, &saved)) in self.actions.iter().zip(&self.rewards).enumerate() {
            let buffer = match game.current_buffer() {
                Some(b) => setup.program().buffer(b).name.clone(),
                // The game ended before the saved actions did.
                None => {
                    return Err(ReplayError::Illegal {
                        workload: workload(),
                        turn,
                        buffer: String::new(),
                        source: GameError::Terminal,
                    })
                }
            };
            let illegal = |source| ReplayError::Illegal {
                workload: workload(),
                turn,
                buffer: buffer.clone(),
                source,
            };
            let (decision, action_name) = if action == MOVE_ACTION {
                // `check` paired every such action with a move, in turn order.
                let m = given.next().and_then(SavedMove::to_move).ok_or_else(|| {
                    illegal(GameError::IllegalMove {
                        buffer: buffer.clone(),
                        reason: "an op number of the saved move does not fit this machine".into(),
                    })
                })?;
                (Decision::Move(m), setup.move_name(&m))
            } else {
                let a = action as usize;
                (Decision::Action(a), setup.action_name(a))
            };
            let replayed = game.apply_decision(decision).map_err(illegal)?;
            if !close(saved, replayed) {
                return Err(ReplayError::Reward {
                    workload: workload(),
                    turn,
                    buffer,
                    action,
                    action_name,
                    saved,
                    replayed,
                });
            }
            turns.push(TurnInfo {
                buffer,
                action,
                action_name,
                reward: replayed,
                proxy_latency_s: game.proxy_latency(),
                latency_s: game.final_latency().unwrap_or(game.simulated_latency()),
            });
        }
        if !game.is_terminal() {
            return Err(ReplayError::Length {
                workload: workload(),
                actions: self.actions.len(),
            });
        }
        let replayed = game.final_latency().unwrap_or(f64::NAN);
        if !close(self.final_latency_s, replayed) {
            return Err(ReplayError::FinalLatency {
                workload: workload(),
                saved: self.final_latency_s,
                replayed,
            });
        }
        Ok(Replay { game, turns })
    }

    /// The game's setup on `program`, checked against the record: the same program (name and
    /// hash), a reward per action, hardware and options that make a game, the same `S0`.
    fn setup_for(&self, program: Arc<Program>) -> Result<Arc<GameSetup>, ReplayError> {
        let workload = || self.workload.clone();
        if program.name() != self.workload {
            return Err(ReplayError::WrongWorkload {
                saved: workload(),
                given: program.name().to_string(),
            });
        }
        let hash = program.content_hash();
        if hash != self.program_hash {
            return Err(ReplayError::ProgramHash {
                workload: workload(),
                saved: self.program_hash,
                given: hash,
            });
        }
        if self.rewards.len() != self.actions.len() {
            return Err(ReplayError::Rewards {
                workload: workload(),
                rewards: self.rewards.len(),
                actions: self.actions.len(),
            });
        }
        let hw = self
            .hardware
            .clone()
            .into_hardware("saved hardware: ")
            .map_err(|source| ReplayError::Hardware {
                workload: workload(),
                source,
            })?;
        let setup = GameSetup::new(program, hw, self.options.clone()).map_err(|source| {
            ReplayError::Setup {
                workload: workload(),
                source,
            }
        })?;
        if !close(self.all_slow_latency_s, setup.all_slow_latency()) {
            return Err(ReplayError::AllSlow {
                workload: workload(),
                saved: self.all_slow_latency_s,
                replayed: setup.all_slow_latency(),
            });
        }
        Ok(setup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::{played, program};

    #[test]
    fn replay_reports_the_first_difference() {
        let g = played(program(1e6));
        let r = GameRecord::from_game(&g, "test", 0, None).unwrap();
        let ok = r.replay(program(1e6)).unwrap();
        assert_eq!(ok.turns.len(), g.length());
        assert_eq!(ok.game.final_latency(), g.final_latency());
        let e = r.replay(program(2e6)).unwrap_err();
        assert!(matches!(e, ReplayError::ProgramHash { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("different version of workload `tiny`"),
            "{e}"
        );
        let mut bad = r.clone();
        bad.final_latency_s *= 1.0 + 1e-6;
        assert!(matches!(
            bad.replay(program(1e6)),
            Err(ReplayError::FinalLatency { .. })
        ));
        let mut bad = r.clone();
        bad.all_slow_latency_s *= 1.01;
        assert!(matches!(
            bad.replay(program(1e6)),
            Err(ReplayError::AllSlow { .. })
        ));
        let mut bad = r;
        bad.actions.pop();
        bad.rewards.pop();
        let e = bad.replay(program(1e6)).unwrap_err();
        assert!(e.to_string().contains("but the game is not over"), "{e}");
    }

    #[test]
    fn tolerance_is_relative_with_a_floor() {
        // At a reward of 0.1 the relative part (1e-10) dominates the 1e-12 floor.
        assert!(close(0.1, 0.1 * (1.0 + 5e-10)));
        assert!(!close(0.1, 0.1 * (1.0 + 2e-9)));
        assert!(!close(-0.1, 0.1));
        assert!(close(0.0, 5e-13));
        assert!(!close(0.0, 2e-12));
    }
}
