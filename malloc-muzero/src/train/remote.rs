//! Self-play away from the learner, for a distributed front end (the Python package's Ray
//! training). The run's [`Trainer`] stays the learner and the owner of the run folder; it
//! describes the run ([`Trainer::describe`]), hands out its weights and [`WorkOrder`]s, and
//! absorbs each returned batch of games as one iteration ([`Trainer::absorb_batch`]). A
//! [`SelfPlayWorker`], built from the description alone (no shared file system), plays an
//! order's games with the weights it was last sent, exactly as the trainer's own self-play
//! thread would ([`Collector`]), and returns them as bytes.
//!
//! Everything crossing a process boundary is bytes with a kind and a format version: the
//! description and orders are JSON, a batch of games is a binio record whose games the
//! trainer replays on its own program before it trusts them.

use super::run_dir::RunInfo;
use super::selfplay::{Collector, PlayedGame};
use super::{TrainConfig, TrainError};
use malloc_game::record::SearchStats;
use malloc_game::{observation, Game, GameSetup};
use muzero::{device, GameHistory, MuZeroNet};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

const BATCH_MAGIC: &[u8; 8] = b"MMZGAMES";
const BATCH_VERSION: u32 = 1;
/// The version of the JSON a description and an order carry.
const WIRE_VERSION: u32 = 1;

/// A run as a worker needs it: `run.json` and the program itself.
#[derive(Serialize, Deserialize)]
struct Description {
    version: u32,
    info: RunInfo,
    /// The program file (JSON), so a worker on another machine needs no file of the run.
    program: String,
}

/// One batch of self-play for a worker: which batch (its seeds follow from it) and the
/// line branch games and proposals start from (the agent's best game or the best
/// demonstration, as its actions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkOrder {
    version: u32,
    /// Unique within a session; the batch's seeds are the trainer's for an iteration of
    /// this number.
    pub ticket: u64,
    /// The actions of the line the batch's branch games and proposals start from; `None`
    /// before there is one.
    pub line: Option<Vec<usize>>,
}

/// A played game on the wire: its actions replay it on the learner's own program.
#[derive(Serialize, Deserialize)]
struct WireGame {
    actions: Vec<usize>,
    history: GameHistory,
    search: Vec<SearchStats>,
}

#[derive(Serialize, Deserialize)]
struct Batch {
    ticket: u64,
    weights_version: u64,
    games: Vec<WireGame>,
}

/// What a batch came back with, besides its games.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchInfo {
    /// The order's ticket the batch answers.
    pub ticket: u64,
    /// The weights version the worker played with (as it was sent).
    pub weights_version: u64,
    /// Games in the batch.
    pub games: usize,
    /// Positions the learner gains (turns the worker searched).
    pub positions: usize,
}

/// A self-play worker of a run: the run's game, config and network shape, and the
/// weights it was last sent.
pub struct SelfPlayWorker {
    setup: Arc<GameSetup>,
    config: TrainConfig,
    info: RunInfo,
    pool: rayon::ThreadPool,
    weights: Option<(u64, MuZeroNet)>,
}

impl SelfPlayWorker {
    /// A worker for the run `description` ([`Trainer::describe`]) that plays each batch on
    /// `threads` threads (the run's config says how many games a batch has).
    pub fn new(description: &[u8], threads: usize) -> Result<SelfPlayWorker, TrainError> {
        let d: Description =
            serde_json::from_slice(description).map_err(|e| wire("run description", e))?;
        if d.version != WIRE_VERSION {
            return Err(TrainError::Remote(format!(
                "run description: format version {}, this build reads {WIRE_VERSION}",
                d.version
            )));
        }
        let origin = format!("the run description of {}", d.info.workload);
        let program = bench_workloads::json::parse_program(&d.program, &origin)?;
        let program = d.info.same_program(program, || origin.clone())?;
        let setup = d.info.setup_of(program, &origin)?;
        let mut config = d.info.config.clone();
        config.threads = threads.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads)
            .build()
            .map_err(|e| TrainError::Config(format!("threads: {e}")))?;
        Ok(SelfPlayWorker {
            setup,
            config,
            info: d.info,
            pool,
            weights: None,
        })
    }

    /// The version of the weights it holds (`None` before any were sent).
    pub fn weights_version(&self) -> Option<u64> {
        self.weights.as_ref().map(|(v, _)| *v)
    }

    /// Takes weights ([`Trainer::weights`]) under `version`, the sender's name for them.
    pub fn load_weights(&mut self, version: u64, bytes: &[u8]) -> Result<(), TrainError> {
        let origin = format!("weights version {version}");
        let net = MuZeroNet::from_bytes(&origin, bytes, &self.info.network, &device())?;
        self.weights = Some((version, net));
        Ok(())
    }

    /// Plays the batch `order` asks for with the weights it holds; the games as bytes
    /// for [`Trainer::absorb_batch`].
    pub fn play(&self, order: &[u8]) -> Result<Vec<u8>, TrainError> {
        let order: WorkOrder = serde_json::from_slice(order).map_err(|e| wire("work order", e))?;
        if order.version != WIRE_VERSION {
            return Err(TrainError::Remote(format!(
                "work order: format version {}, this build reads {WIRE_VERSION}",
                order.version
            )));
        }
        let Some((version, net)) = &self.weights else {
            return Err(TrainError::Remote(
                "a worker was asked to play before it was sent weights".into(),
            ));
        };
        let line = match &order.line {
            Some(actions) => Some(replay(&self.setup, actions, order.ticket)?),
            None => None,
        };
        let collector = Collector {
            setup: &self.setup,
            config: &self.config,
            pool: &self.pool,
        };
        let played = collector
            .collect(net, order.ticket, line.as_ref(), &|| false)?
            .unwrap_or_default();
        let batch = Batch {
            ticket: order.ticket,
            weights_version: *version,
            games: played
                .into_iter()
                .map(|g| WireGame {
                    actions: g.game.actions(),
                    history: g.history,
                    search: g.search,
                })
                .collect(),
        };
        let origin = format!("self-play batch {}", order.ticket);
        Ok(binio::to_bytes(
            &origin,
            BATCH_MAGIC,
            BATCH_VERSION,
            &batch,
        )?)
    }
}

pub(super) fn describe(info: &RunInfo, setup: &GameSetup) -> Result<Vec<u8>, TrainError> {
    let d = Description {
        version: WIRE_VERSION,
        info: info.clone(),
        program: bench_workloads::json::to_json(setup.program(), None),
    };
    serde_json::to_vec(&d).map_err(|e| wire("run description", e))
}

pub(super) fn order(ticket: u64, line: Option<&Game>) -> Result<Vec<u8>, TrainError> {
    let order = WorkOrder {
        version: WIRE_VERSION,
        ticket,
        line: line.map(Game::actions),
    };
    serde_json::to_vec(&order).map_err(|e| wire("work order", e))
}

/// The games of a batch, each replayed on `setup` and checked against its history, so a
/// batch from another build or another run is refused, never learned from.
pub(super) fn decode_batch(
    setup: &Arc<GameSetup>,
    bytes: &[u8],
) -> Result<(BatchInfo, Vec<PlayedGame>), TrainError> {
    let batch: Batch = binio::from_bytes("self-play batch", bytes, BATCH_MAGIC, BATCH_VERSION)?;
    let (obs_len, a) = (
        observation::observation_len(setup.options()),
        setup.action_count(),
    );
    let mut played = Vec::with_capacity(batch.games.len());
    let mut positions = 0;
    for (k, w) in batch.games.into_iter().enumerate() {
        let bad = |msg: String| {
            TrainError::Remote(format!("self-play batch {}, game {k}: {msg}", batch.ticket))
        };
        let game = replay(setup, &w.actions, batch.ticket)?;
        if !game.is_terminal() {
            return Err(bad("the game did not end".into()));
        }
        let h = &w.history;
        let searched = h.actions.len();
        let shapes_fit = h.observation_len == obs_len
            && h.action_count == a
            && h.observations.len() == searched * obs_len
            && h.rewards.len() == searched
            && h.root_values.len() == searched
            && h.policies.len() == searched * a
            && w.search.len() == w.actions.len();
        if !shapes_fit || searched > w.actions.len() {
            return Err(bad("its history does not fit the run's game".into()));
        }
        if h.actions[..] != w.actions[w.actions.len() - searched..] {
            return Err(bad(
                "its history's moves are not the game's last moves".into()
            ));
        }
        let rewards = game.rewards();
        let replayed = rewards[rewards.len() - searched..]
            .iter()
            .map(|&r| r as f32);
        if !replayed.eq(h.rewards.iter().copied()) {
            return Err(bad("its rewards are not the ones the game gives".into()));
        }
        positions += searched;
        played.push(PlayedGame {
            game,
            history: w.history,
            search: w.search,
        });
    }
    let info = BatchInfo {
        ticket: batch.ticket,
        weights_version: batch.weights_version,
        games: played.len(),
        positions,
    };
    Ok((info, played))
}

/// The game `actions` play from the start of `setup`.
fn replay(setup: &Arc<GameSetup>, actions: &[usize], ticket: u64) -> Result<Game, TrainError> {
    let mut game = setup.start();
    for (turn, &action) in actions.iter().enumerate() {
        game.apply_action(action).map_err(|e| {
            TrainError::Remote(format!(
                "batch {ticket}: move {action} at turn {turn} does not replay on the run's game: {e}"
            ))
        })?;
    }
    Ok(game)
}

fn wire(what: &str, e: serde_json::Error) -> TrainError {
    TrainError::Remote(format!("{what}: {e}"))
}
