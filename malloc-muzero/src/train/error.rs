//! [`TrainError`]: every failure of training, with its cause kept as a typed source.

use std::path::Path;

/// A failure of training; names the file or field involved.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A config value is out of range (its field named).
    #[error("train config: {0}")]
    Config(String),
    /// The network could not be built, loaded or saved.
    #[error(transparent)]
    Net(#[from] muzero::NetError),
    /// The optimizer refused a step or its state.
    #[error(transparent)]
    Optim(#[from] muzero::OptimError),
    /// A training step failed.
    #[error(transparent)]
    Step(#[from] muzero::StepError),
    /// A game could not enter the replay buffer, or the buffer could not be sampled or
    /// saved.
    #[error(transparent)]
    Replay(#[from] muzero::ReplayError),
    /// A checkpoint or saved game file could not be read or written.
    #[error(transparent)]
    Bin(#[from] binio::BinError),
    /// The run folder is another process's ([`binio::FolderLock`]).
    #[error(transparent)]
    Lock(#[from] binio::LockError),
    /// The folder holds another kind of run ([`binio::FolderKind`]).
    #[error(transparent)]
    Kind(#[from] binio::KindError),
    /// A move the game refused during self-play or evaluation.
    #[error(transparent)]
    Game(#[from] malloc_game::GameError),
    /// A saved game that could not be made, written or read.
    #[error(transparent)]
    Record(#[from] malloc_game::record::RecordError),
    /// The saved best game of a run that no longer replays on the run's program (boxed:
    /// the largest cause, and a rare one).
    #[error("{path}: {source}")]
    BestReplay {
        /// The saved best game.
        path: String,
        /// Why it does not replay.
        #[source]
        source: Box<malloc_game::record::ReplayError>,
    },
    /// The search failed on the network's outputs.
    #[error("search: {0}")]
    Search(#[source] muzero::ModelError),
    /// A run made under other rules of the game (its actions and observation differ).
    #[error("{path}: field `rules`: the run was made under rules v{found} of the game; this build plays rules v{current} (docs/mallocgame.md): start a new run")]
    Rules {
        /// The run's `run.json`.
        path: String,
        /// The rules version it names.
        found: String,
        /// The rules version this build plays.
        current: u32,
    },
    /// A stored game whose actions no longer replay (reanalyse rebuilds the legal masks).
    #[error("reanalyse of game {game}, turn {turn}: {source}")]
    Reanalyse {
        /// The game's index in the replay buffer.
        game: usize,
        /// The turn that does not replay.
        turn: usize,
        /// Why the game refused it.
        #[source]
        source: malloc_game::GameError,
    },
    /// A workload of the run could not be loaded.
    #[error(transparent)]
    Workload(#[from] bench_workloads::WorkloadError),
    /// The run's hardware could not be loaded.
    #[error(transparent)]
    Hardware(#[from] accel_sim::HardwareError),
    /// A file of the run folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A program or config file could not be read.
    #[error(transparent)]
    File(#[from] accel_sim::TextFileError),
    /// A JSON file of the run folder does not parse as what it should hold.
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: String,
        /// The parser's message.
        #[source]
        source: serde_json::Error,
    },
    /// The xla baseline's mapping failed the validator (a bug).
    #[error("the xla baseline produced an invalid mapping (a bug): {0}")]
    Baseline(String),
    /// A self-play thread panicked: the iteration's games are lost.
    #[error("the self-play thread panicked")]
    SelfPlayPanicked,
    /// The thread that writes checkpoints beside training stopped.
    #[error("the checkpoint writer thread stopped (it panicked)")]
    CheckpointWriter,
    /// `start` into a folder holding a run it would overwrite: one with a checkpoint, or
    /// one of another game (whose best mapping it would drop).
    #[error("{dir} already holds a run {what}: resume it, or start in another folder")]
    RunExists {
        /// The folder.
        dir: String,
        /// What it holds (`with a checkpoint`, `of another game`, ...).
        what: &'static str,
    },
    /// A run folder's file whose field does not hold what a run writes there.
    #[error("{path}: field `{field}`: {msg}")]
    RunFile {
        /// The file.
        path: String,
        /// The field.
        field: &'static str,
        /// What it holds instead.
        msg: String,
    },
    /// A resume or an evaluation asked for a run's checkpoint before the run made one.
    #[error("{dir}: no checkpoint yet (checkpoints/latest.json is missing)")]
    NoCheckpoint {
        /// The run folder.
        dir: String,
    },
    /// Remote self-play: a run description, work order or batch of games that does not
    /// fit the run (another build, another run) or a worker used out of turn.
    #[error("remote self-play: {0}")]
    Remote(String),
    /// A resume that cannot go on as asked (the program changed, no complete checkpoint is
    /// left, the best game is damaged): the message says what to do.
    #[error("resume: {0}")]
    Resume(String),
}

/// Maps an I/O error to one that names the file.
pub(super) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> TrainError + '_ {
    move |source| TrainError::Io {
        path: path.display().to_string(),
        source,
    }
}
