//! A batch of training targets: what the replay buffer samples and the learner consumes.
//!
//! Position `t` of a game is the state before its `t`-th action; `rewards[t]` is the
//! reward of that action. A sample at position `t` unrolls `K` steps: step `k` in `0..=K`
//! describes position `t + k`.

/// `B` samples, each unrolled `K` steps. All arrays are row-major.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainingBatch {
    /// `B`.
    pub batch: usize,
    /// `K`.
    pub unroll: usize,
    /// `A`.
    pub action_count: usize,
    /// `[B, observation_len]`: the observation at position `t`.
    pub observations: Vec<f32>,
    /// `[B, K]`: the action taken at position `t + k` (past the end of the game: a
    /// uniformly random action, as MuZero does; its targets are masked).
    pub actions: Vec<usize>,
    /// `[B, K + 1]`: the n-step value target of position `t + k` (0 at and past the end).
    pub target_values: Vec<f32>,
    /// `[B, K + 1]`: the reward of the action that led to position `t + k` (`k >= 1`;
    /// entry `k = 0` is 0 and unused).
    pub target_rewards: Vec<f32>,
    /// `[B, K + 1, A]`: the search policy at position `t + k` (zeros where masked).
    pub target_policies: Vec<f32>,
    /// `[B, K + 1]`: 1 where position `t + k` exists (`t + k <= length`), else 0; masks
    /// the value and reward losses.
    pub mask: Vec<f32>,
    /// `[B, K + 1]`: 1 where a search policy exists (`t + k < length`), else 0.
    pub policy_mask: Vec<f32>,
    /// `[B]`: importance-sampling weights of prioritized replay, max-normalised to 1.
    pub weights: Vec<f32>,
    /// `[B]`: (game index in the buffer, position) of each sample, for priority updates.
    pub indices: Vec<(usize, usize)>,
}

impl TrainingBatch {
    /// Appends the samples of `other` (same `K` and `A`; an empty `self` takes them). Its
    /// `indices` keep pointing into `other`'s buffer: a learner mixing two buffers splits
    /// the priority updates at the old `batch`.
    pub fn append(&mut self, other: &TrainingBatch) {
        if self.batch == 0 {
            *self = other.clone();
            return;
        }
        debug_assert_eq!(
            (self.unroll, self.action_count),
            (other.unroll, other.action_count)
        );
        self.batch += other.batch;
        self.observations.extend_from_slice(&other.observations);
        self.actions.extend_from_slice(&other.actions);
        self.target_values.extend_from_slice(&other.target_values);
        self.target_rewards.extend_from_slice(&other.target_rewards);
        self.target_policies
            .extend_from_slice(&other.target_policies);
        self.mask.extend_from_slice(&other.mask);
        self.policy_mask.extend_from_slice(&other.policy_mask);
        self.weights.extend_from_slice(&other.weights);
        self.indices.extend_from_slice(&other.indices);
    }

    /// The batch cut into `parts` contiguous runs of samples (sizes differing by at most
    /// one; fewer parts when there are fewer samples), in order.
    pub fn split(&self, parts: usize) -> Vec<TrainingBatch> {
        let parts = parts.clamp(1, self.batch.max(1));
        let (k1, a) = (self.unroll + 1, self.action_count);
        let obs_len = self.observations.len() / self.batch.max(1);
        let mut out = Vec::with_capacity(parts);
        let mut start = 0;
        for p in 0..parts {
            let n = self.batch / parts + usize::from(p < self.batch % parts);
            let rows = |width: usize| start * width..(start + n) * width;
            out.push(TrainingBatch {
                batch: n,
                unroll: self.unroll,
                action_count: a,
                observations: self.observations[rows(obs_len)].to_vec(),
                actions: self.actions[rows(self.unroll)].to_vec(),
                target_values: self.target_values[rows(k1)].to_vec(),
                target_rewards: self.target_rewards[rows(k1)].to_vec(),
                target_policies: self.target_policies[rows(k1 * a)].to_vec(),
                mask: self.mask[rows(k1)].to_vec(),
                policy_mask: self.policy_mask[rows(k1)].to_vec(),
                weights: self.weights[rows(1)].to_vec(),
                indices: self.indices[rows(1)].to_vec(),
            });
            start += n;
        }
        out
    }
}
