//! The model the search calls: MuZero's three functions, evaluated in batches.
//!
//! Like mctx, the search is separate from the model: it hands the model a batch of
//! observations (the roots) or of (hidden state, action) pairs (one expansion per tree)
//! and reads back hidden states, rewards, policy logits and values. Values and rewards
//! are scalars here: a network with categorical heads decodes its distribution before
//! returning.

/// Boxed error of a model call (a tensor backend failure, say).
pub type ModelError = Box<dyn std::error::Error + Send + Sync>;

/// A batch of model outputs, row-major.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelOutput {
    /// `[batch, hidden_len]`.
    pub hidden: Vec<f32>,
    /// `[batch]`: the predicted reward of the action that led here (0 at the roots).
    pub reward: Vec<f32>,
    /// `[batch, action_count]`, unnormalised.
    pub policy_logits: Vec<f32>,
    /// `[batch]`.
    pub value: Vec<f32>,
}

/// MuZero's representation h, dynamics g and prediction f, batched.
pub trait Model: Send + Sync {
    /// Length of the observations [`Model::initial_inference`] takes.
    fn observation_len(&self) -> usize;
    /// Width of the hidden state the dynamics carry from step to step.
    fn hidden_len(&self) -> usize;
    /// Number of discrete actions: the policy's length.
    fn action_count(&self) -> usize;
    /// `f(h(observations))` for `batch` observations of `observation_len` each.
    fn initial_inference(
        &self,
        observations: &[f32],
        batch: usize,
    ) -> Result<ModelOutput, ModelError>;
    /// `f(g(hidden, action))` for `batch` hidden states of `hidden_len` each.
    fn recurrent_inference(
        &self,
        hidden: &[f32],
        actions: &[usize],
        batch: usize,
    ) -> Result<ModelOutput, ModelError>;
}
