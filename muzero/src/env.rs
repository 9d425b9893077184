//! The environment the agent plays: any single-player game with a fixed-size observation
//! and a fixed discrete action set. The core (search, replay, training) sees only this
//! trait, so it is tested on toy games too; `malloc_muzero::MallocEnv` adapts the
//! mallocGame.

/// An error from an environment (an illegal action, say), as text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct EnvError(pub String);

/// A single-player game with a fixed-size observation and discrete actions.
pub trait Environment: Clone + Send + Sync {
    /// Length of the observation vector; the same for every state.
    fn observation_len(&self) -> usize;
    /// Number of discrete actions; the same for every state.
    fn action_count(&self) -> usize;
    /// Writes the current observation into `out` (length `observation_len`).
    fn observe(&self, out: &mut [f32]);
    /// Writes which actions are legal now into `mask` (length `action_count`). Before the
    /// end at least one is legal.
    fn legal_mask(&self, mask: &mut [bool]);
    /// Plays `action`; returns its reward.
    fn apply(&mut self, action: usize) -> Result<f32, EnvError>;
    /// Whether the game is over: no action is legal and the return is final.
    fn is_terminal(&self) -> bool;
}
