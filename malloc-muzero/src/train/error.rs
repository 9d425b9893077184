//! [`TrainError`]: every failure of training, with its cause kept as a typed source.

use std::path::Path;

/// A failure of training; names the file or field involved.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("train config: {0}")]
    Config(String),
    #[error(transparent)]
    Net(#[from] muzero::NetError),
    #[error(transparent)]
    Optim(#[from] muzero::OptimError),
    #[error(transparent)]
    Step(#[from] muzero::StepError),
    #[error(transparent)]
    Replay(#[from] muzero::ReplayError),
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
        path: String,
        #[source]
        source: Box<malloc_game::record::ReplayError>,
    },
    #[error("search: {0}")]
    Search(#[source] muzero::ModelError),
    /// A run made under other rules of the game (its actions and observation differ).
    #[error("{path}: field `rules`: the run was made under rules v{found} of the game; this build plays rules v{current} (docs/mallocgame.md): start a new run")]
    Rules {
        path: String,
        found: String,
        current: u32,
    },
    /// A stored game whose actions no longer replay (reanalyse rebuilds the legal masks).
    #[error("reanalyse of game {game}, turn {turn}: {source}")]
    Reanalyse {
        game: usize,
        turn: usize,
        #[source]
        source: malloc_game::GameError,
    },
    #[error(transparent)]
    Workload(#[from] bench_workloads::WorkloadError),
    #[error(transparent)]
    Hardware(#[from] accel_sim::HardwareError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    File(#[from] accel_sim::TextFileError),
    #[error("{path}: {source}")]
    Json {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    /// The xla baseline's mapping failed the validator (a bug).
    #[error("the xla baseline produced an invalid mapping (a bug): {0}")]
    Baseline(String),
    #[error("the self-play thread panicked")]
    SelfPlayPanicked,
    #[error("the checkpoint writer thread stopped (it panicked)")]
    CheckpointWriter,
    /// `start` into a folder holding a run it would overwrite: one with a checkpoint, or
    /// one of another game (whose best mapping it would drop).
    #[error("{dir} already holds a run {what}: resume it, or start in another folder")]
    RunExists { dir: String, what: &'static str },
    /// A run folder's file whose field does not hold what a run writes there.
    #[error("{path}: field `{field}`: {msg}")]
    RunFile {
        path: String,
        field: &'static str,
        msg: String,
    },
    #[error("{dir}: no checkpoint yet (checkpoints/latest.json is missing)")]
    NoCheckpoint { dir: String },
    /// Remote self-play: a run description, work order or batch of games that does not
    /// fit the run (another build, another run) or a worker used out of turn.
    #[error("remote self-play: {0}")]
    Remote(String),
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
