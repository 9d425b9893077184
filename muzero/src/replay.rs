//! Game histories, the prioritized replay buffer, and MuZero's n-step targets.
//!
//! The buffer keeps whole games, first in first out, up to a capacity counted in
//! positions. Sampling is over positions, proportional to `priority^alpha` (alpha 0 is
//! uniform), through a sum tree: O(log N) per sample. Games are named by a monotonic id,
//! so the `(game id, position)` pairs a batch hands to the learner stay meaningful after
//! older games are evicted; a pair whose game is gone is simply ignored.
//!
//! Targets follow [`crate::batch`]: the n-step value target of position `t` is
//! `sum_{i < n, t+i < len} d^i r_{t+i} + d^n v_{t+n}`, bootstrapping from the stored
//! search value only when `t + n < len` (at the end the game is over and its value is 0).

use crate::batch::TrainingBatch;
use rand::rngs::StdRng;
use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::VecDeque;

/// Bad configuration, a malformed game, a bad priority or a bad snapshot.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error("replay config: {field} = {value}: {reason}")]
    Config {
        field: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error("{context}: {field} has {found} entries, expected {expected}")]
    Shape {
        context: &'static str,
        field: &'static str,
        found: usize,
        expected: usize,
    },
    #[error("{context}: {field}[{index}] = {value}: {reason}")]
    Value {
        context: &'static str,
        field: &'static str,
        index: usize,
        value: String,
        reason: &'static str,
    },
    #[error(
        "game history: {field} = {found}, but this buffer holds games with {field} = {expected}"
    )]
    Mismatch {
        field: &'static str,
        found: usize,
        expected: usize,
    },
    #[error("game history: empty game (no positions to learn from)")]
    EmptyGame,
    #[error("cannot sample from an empty replay buffer")]
    Empty,
    #[error("cannot sample a batch of size 0")]
    ZeroBatch,
    #[error("update_priorities: {indices} indices but {priorities} priorities")]
    PriorityCount { indices: usize, priorities: usize },
    #[error("replay snapshot: {0}")]
    Snapshot(String),
}

/// One played game as the learner needs it. Position `t` is the state before action `t`;
/// the terminal observation is not stored (no target needs it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameHistory {
    pub observation_len: usize,
    pub action_count: usize,
    /// `[len, observation_len]`.
    pub observations: Vec<f32>,
    /// `[len]`.
    pub actions: Vec<usize>,
    /// `[len]`: the reward of action `t`.
    pub rewards: Vec<f32>,
    /// `[len]`: the search (root) value at position `t`.
    pub root_values: Vec<f32>,
    /// `[len, action_count]`: the search policy at position `t`.
    pub policies: Vec<f32>,
}

const GAME: &str = "game history";
const REANALYSE: &str = "reanalyse";
const PRIORITIES: &str = "update_priorities";

impl GameHistory {
    pub fn new(observation_len: usize, action_count: usize) -> Self {
        GameHistory {
            observation_len,
            action_count,
            observations: Vec::new(),
            actions: Vec::new(),
            rewards: Vec::new(),
            root_values: Vec::new(),
            policies: Vec::new(),
        }
    }

    /// Number of positions (actions played).
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Records one turn: the observation before `action`, the action, its reward, and the
    /// search's root value and policy. Checks shapes so a bad turn is refused whole.
    pub fn push_step(
        &mut self,
        observation: &[f32],
        action: usize,
        reward: f32,
        root_value: f32,
        policy: &[f32],
    ) -> Result<(), ReplayError> {
        check_len(GAME, "observation", observation.len(), self.observation_len)?;
        check_len(GAME, "policy", policy.len(), self.action_count)?;
        if action >= self.action_count {
            return Err(bad_action(self.len(), action, self.action_count));
        }
        self.observations.extend_from_slice(observation);
        self.actions.push(action);
        self.rewards.push(reward);
        self.root_values.push(root_value);
        self.policies.extend_from_slice(policy);
        Ok(())
    }

    /// The observation at position `t` (panics past the end, like slice indexing).
    pub fn observation(&self, t: usize) -> &[f32] {
        &self.observations[t * self.observation_len..(t + 1) * self.observation_len]
    }

    /// The search policy at position `t` (panics past the end, like slice indexing).
    pub fn policy(&self, t: usize) -> &[f32] {
        &self.policies[t * self.action_count..(t + 1) * self.action_count]
    }

    /// Checks that the arrays agree in length and hold finite values, actions in range and
    /// non-negative policies.
    pub fn check(&self) -> Result<(), ReplayError> {
        let len = self.len();
        check_len(GAME, "rewards", self.rewards.len(), len)?;
        check_len(GAME, "root_values", self.root_values.len(), len)?;
        check_len(
            GAME,
            "observations",
            self.observations.len(),
            len * self.observation_len,
        )?;
        check_len(
            GAME,
            "policies",
            self.policies.len(),
            len * self.action_count,
        )?;
        if let Some(i) = self.actions.iter().position(|&a| a >= self.action_count) {
            return Err(bad_action(i, self.actions[i], self.action_count));
        }
        check_finite(GAME, "observations", &self.observations)?;
        check_finite(GAME, "rewards", &self.rewards)?;
        check_finite(GAME, "root_values", &self.root_values)?;
        check_policies(GAME, &self.policies)
    }

    /// The n-step value target of position `t` (0 at and past the end).
    pub fn value_target(&self, t: usize, td_steps: usize, discount: f32) -> f32 {
        let len = self.len();
        if t >= len {
            return 0.0;
        }
        let d = discount as f64;
        // Saturating: a huge n (Monte Carlo returns) must not wrap around.
        let bootstrap = t.saturating_add(td_steps);
        let mut sum = 0.0f64;
        let mut scale = 1.0f64;
        for &r in &self.rewards[t..bootstrap.min(len)] {
            sum += scale * r as f64;
            scale *= d;
        }
        // `scale` is d^n here exactly when the loop ran n times, i.e. when t + n <= len.
        if bootstrap < len {
            sum += scale * self.root_values[bootstrap] as f64;
        }
        sum as f32
    }

    /// [`Self::value_target`] for every position.
    pub fn value_targets(&self, td_steps: usize, discount: f32) -> Vec<f32> {
        let len = self.len();
        if td_steps >= len {
            // Monte Carlo returns: no position bootstraps, so one backward pass suffices
            // (this is the common case for a finite game with long n).
            let d = discount as f64;
            let mut out = vec![0.0f32; len];
            let mut g = 0.0f64;
            for t in (0..len).rev() {
                g = self.rewards[t] as f64 + d * g;
                out[t] = g as f32;
            }
            return out;
        }
        (0..len)
            .map(|t| self.value_target(t, td_steps, discount))
            .collect()
    }
}

fn check_len(
    context: &'static str,
    field: &'static str,
    found: usize,
    expected: usize,
) -> Result<(), ReplayError> {
    if found == expected {
        Ok(())
    } else {
        Err(ReplayError::Shape {
            context,
            field,
            found,
            expected,
        })
    }
}

fn check_finite(
    context: &'static str,
    field: &'static str,
    values: &[f32],
) -> Result<(), ReplayError> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(ReplayError::Value {
            context,
            field,
            index,
            value: values[index].to_string(),
            reason: "must be finite",
        }),
    }
}

fn check_policies(context: &'static str, policies: &[f32]) -> Result<(), ReplayError> {
    match policies.iter().position(|p| !(p.is_finite() && *p >= 0.0)) {
        None => Ok(()),
        Some(index) => Err(ReplayError::Value {
            context,
            field: "policies",
            index,
            value: policies[index].to_string(),
            reason: "must be finite and >= 0",
        }),
    }
}

fn bad_action(index: usize, action: usize, action_count: usize) -> ReplayError {
    ReplayError::Value {
        context: GAME,
        field: "actions",
        index,
        value: action.to_string(),
        reason: if action_count == 0 {
            "no action exists (action_count = 0)"
        } else {
            "must be < action_count"
        },
    }
}

/// Replay settings. The defaults follow MuZero (K = 5, discount 1 for a finite game) and
/// the usual prioritized-replay exponents (alpha 0.6, beta 0.4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayConfig {
    /// Positions kept; the oldest games go first. A single game longer than this is kept
    /// alone.
    pub capacity_positions: usize,
    /// `K`: steps unrolled per sample.
    pub unroll: usize,
    /// `n` of the n-step value target (at least the game length: Monte Carlo returns).
    pub td_steps: usize,
    /// In `[0, 1]`.
    pub discount: f32,
    /// Priority exponent: sampling probability `∝ priority^alpha`; 0 samples uniformly.
    pub alpha: f32,
    /// Importance-sampling exponent in `[0, 1]` (1 fully corrects the prioritized bias).
    pub beta: f32,
    /// Added to every priority so no position becomes unsampleable.
    pub priority_epsilon: f32,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            capacity_positions: 100_000,
            unroll: 5,
            td_steps: 10,
            discount: 1.0,
            alpha: 0.6,
            beta: 0.4,
            priority_epsilon: 1e-3,
        }
    }
}

impl ReplayConfig {
    /// Refuses impossible values, naming the field.
    pub fn check(&self) -> Result<(), ReplayError> {
        let bad = |field, value: String, reason| {
            Err(ReplayError::Config {
                field,
                value,
                reason,
            })
        };
        // Upper bounds too: the sum tree is allocated for the whole capacity up front, and
        // a careless `1e15` must be an error, not an allocation that aborts the process.
        if !(1..=MAX_CAPACITY_POSITIONS).contains(&self.capacity_positions) {
            return bad(
                "capacity_positions",
                self.capacity_positions.to_string(),
                "must be in 1..=2^28",
            );
        }
        if !(1..=1024).contains(&self.unroll) {
            return bad("unroll", self.unroll.to_string(), "must be in 1..=1024 (K)");
        }
        if self.td_steps == 0 {
            return bad("td_steps", "0".into(), "must be at least 1 (n)");
        }
        if !(self.discount.is_finite() && (0.0..=1.0).contains(&self.discount)) {
            return bad("discount", self.discount.to_string(), "must be in [0, 1]");
        }
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return bad("alpha", self.alpha.to_string(), "must be finite and >= 0");
        }
        if !(self.beta.is_finite() && (0.0..=1.0).contains(&self.beta)) {
            return bad("beta", self.beta.to_string(), "must be in [0, 1]");
        }
        if !(self.priority_epsilon.is_finite() && self.priority_epsilon > 0.0) {
            return bad(
                "priority_epsilon",
                self.priority_epsilon.to_string(),
                "must be finite and > 0",
            );
        }
        Ok(())
    }
}

/// The most positions a replay buffer may be configured to hold.
pub const MAX_CAPACITY_POSITIONS: usize = 1 << 28;

/// A binary sum tree over `size` leaves (a power of two): each inner node holds the sum of
/// its children, so the root is the total and a prefix-sum search is one descent.
#[derive(Clone, Debug)]
struct SumTree {
    size: usize,
    /// Root at 1, leaves at `size..2 * size`; f64 so 100k+ leaves sum without visible
    /// rounding.
    nodes: Vec<f64>,
}

impl SumTree {
    fn new(min_leaves: usize) -> Self {
        let size = min_leaves.max(1).next_power_of_two();
        SumTree {
            size,
            nodes: vec![0.0; 2 * size],
        }
    }

    fn total(&self) -> f64 {
        self.nodes[1]
    }

    fn get(&self, leaf: usize) -> f64 {
        self.nodes[self.size + leaf]
    }

    /// Parents are recomputed from their children rather than adjusted by a delta, so no
    /// rounding error accumulates over millions of updates.
    fn set(&mut self, leaf: usize, value: f64) {
        let mut i = self.size + leaf;
        self.nodes[i] = value;
        while i > 1 {
            i /= 2;
            self.nodes[i] = self.nodes[2 * i] + self.nodes[2 * i + 1];
        }
    }

    /// The leaf whose cumulative range holds `u` (in `[0, total)`). Never returns a
    /// zero leaf while the total is positive: a descent avoids an empty child even when
    /// rounding pushes `u` past a sum.
    fn find(&self, mut u: f64) -> usize {
        let mut i = 1;
        while i < self.size {
            let left = self.nodes[2 * i];
            let right = self.nodes[2 * i + 1];
            if (u < left && left > 0.0) || right <= 0.0 {
                i *= 2;
            } else {
                u -= left;
                i = 2 * i + 1;
            }
        }
        i - self.size
    }
}

/// A stored game with what the buffer derives from it.
#[derive(Clone, Debug)]
struct Entry {
    history: GameHistory,
    /// Raw priorities (epsilon included), one per position.
    priorities: Vec<f32>,
    /// Cached n-step value targets, one per position.
    targets: Vec<f32>,
    /// Global index of position 0: positions of successive games are numbered
    /// contiguously, and a position's leaf is its global index modulo the tree size.
    start: u64,
}

/// Prioritized replay over the positions of whole games.
#[derive(Clone)]
pub struct ReplayBuffer {
    config: ReplayConfig,
    observation_len: usize,
    action_count: usize,
    games: VecDeque<Entry>,
    /// Id of `games[0]`; ids are consecutive, so game `id` is `games[id - first_id]`.
    first_id: usize,
    positions: usize,
    next_start: u64,
    tree: SumTree,
}

impl std::fmt::Debug for ReplayBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayBuffer")
            .field("config", &self.config)
            .field("observation_len", &self.observation_len)
            .field("action_count", &self.action_count)
            .field("games", &self.games.len())
            .field("first_id", &self.first_id)
            .field("positions", &self.positions)
            .finish()
    }
}

impl ReplayBuffer {
    /// An empty buffer for games with these observation and action sizes.
    pub fn new(
        config: ReplayConfig,
        observation_len: usize,
        action_count: usize,
    ) -> Result<Self, ReplayError> {
        config.check()?;
        if action_count == 0 {
            return Err(ReplayError::Config {
                field: "action_count",
                value: "0".into(),
                reason: "must be at least 1",
            });
        }
        Ok(ReplayBuffer {
            tree: SumTree::new(config.capacity_positions),
            config,
            observation_len,
            action_count,
            games: VecDeque::new(),
            first_id: 0,
            positions: 0,
            next_start: 0,
        })
    }

    pub fn config(&self) -> &ReplayConfig {
        &self.config
    }

    pub fn observation_len(&self) -> usize {
        self.observation_len
    }

    pub fn action_count(&self) -> usize {
        self.action_count
    }

    /// Positions stored.
    pub fn positions(&self) -> usize {
        self.positions
    }

    /// Games stored.
    pub fn games(&self) -> usize {
        self.games.len()
    }

    /// Ids of the stored games, oldest first.
    pub fn game_ids(&self) -> std::ops::Range<usize> {
        self.first_id..self.first_id + self.games.len()
    }

    /// Sets the importance-sampling exponent (for annealing beta towards 1).
    pub fn set_beta(&mut self, beta: f32) -> Result<(), ReplayError> {
        let config = ReplayConfig {
            beta,
            ..self.config.clone()
        };
        config.check()?;
        self.config = config;
        Ok(())
    }

    fn entry(&self, id: usize) -> Option<&Entry> {
        self.games.get(id.checked_sub(self.first_id)?)
    }

    fn entry_mut(&mut self, id: usize) -> Option<&mut Entry> {
        self.games.get_mut(id.checked_sub(self.first_id)?)
    }

    /// The stored game `id`, or `None` once evicted.
    pub fn game(&self, id: usize) -> Option<&GameHistory> {
        self.entry(id).map(|e| &e.history)
    }

    /// The stored games with their ids, oldest first (what a reanalyse worker walks).
    pub fn iter_games(&self) -> impl Iterator<Item = (usize, &GameHistory)> + '_ {
        self.games
            .iter()
            .enumerate()
            .map(move |(i, e)| (self.first_id + i, &e.history))
    }

    /// The n-step value target of position `t` of game `id` (0 at and past the end), or
    /// `None` once the game is evicted.
    pub fn value_target(&self, id: usize, t: usize) -> Option<f32> {
        self.entry(id)
            .map(|e| e.targets.get(t).copied().unwrap_or(0.0))
    }

    /// The raw priority (epsilon included) of position `t` of game `id`.
    pub fn priority(&self, id: usize, t: usize) -> Option<f32> {
        self.entry(id)?.priorities.get(t).copied()
    }

    fn leaf(&self, global: u64) -> usize {
        (global % self.tree.size as u64) as usize
    }

    fn leaf_value(&self, priority: f32) -> f64 {
        (priority as f64).powf(self.config.alpha as f64)
    }

    /// Stores a finished game and returns its id. Its positions start with priority
    /// `|root value - n-step target| + epsilon`. The oldest games are evicted first so
    /// the buffer stays within capacity.
    pub fn push(&mut self, game: GameHistory) -> Result<usize, ReplayError> {
        if game.observation_len != self.observation_len {
            return Err(ReplayError::Mismatch {
                field: "observation_len",
                found: game.observation_len,
                expected: self.observation_len,
            });
        }
        if game.action_count != self.action_count {
            return Err(ReplayError::Mismatch {
                field: "action_count",
                found: game.action_count,
                expected: self.action_count,
            });
        }
        game.check()?;
        if game.is_empty() {
            return Err(ReplayError::EmptyGame);
        }
        let targets = game.value_targets(self.config.td_steps, self.config.discount);
        let priorities = initial_priorities(&game, &targets, self.config.priority_epsilon);
        Ok(self.insert(game, priorities, targets))
    }

    /// Inserts a checked game. Evicting before inserting keeps the live positions, which
    /// are numbered contiguously, within one lap of the tree's ring of leaves.
    fn insert(&mut self, history: GameHistory, priorities: Vec<f32>, targets: Vec<f32>) -> usize {
        let len = history.len();
        while !self.games.is_empty() && self.positions + len > self.config.capacity_positions {
            self.evict_oldest();
        }
        if self.games.is_empty() {
            // The ring holds `max(capacity, len)` leaves: more only while a game longer
            // than the capacity lives (it is then alone), back to the capacity once it is
            // gone. Keeping the size a function of the content lets a snapshot restore
            // the exact layout, hence the exact sampling sequence.
            let size = ring_size(self.config.capacity_positions, len);
            if size != self.tree.size {
                self.tree = SumTree::new(size);
            }
        }
        let start = self.next_start;
        for (t, &p) in priorities.iter().enumerate() {
            let leaf = self.leaf(start + t as u64);
            self.tree.set(leaf, self.leaf_value(p));
        }
        self.next_start += len as u64;
        self.positions += len;
        self.games.push_back(Entry {
            history,
            priorities,
            targets,
            start,
        });
        self.first_id + self.games.len() - 1
    }

    fn evict_oldest(&mut self) {
        if let Some(e) = self.games.pop_front() {
            for t in 0..e.history.len() {
                let leaf = self.leaf(e.start + t as u64);
                self.tree.set(leaf, 0.0);
            }
            self.positions -= e.history.len();
            self.first_id += 1;
        }
    }

    /// Sets the priorities of sampled positions (the learner's `|predicted value -
    /// target|`; epsilon is added here). Pairs whose game was evicted, or whose position
    /// does not exist, are skipped: the learner may answer after eviction. Returns how
    /// many were applied. Refuses, changing nothing, a count mismatch or a priority that
    /// is negative or not finite.
    pub fn update_priorities(
        &mut self,
        indices: &[(usize, usize)],
        priorities: &[f32],
    ) -> Result<usize, ReplayError> {
        if indices.len() != priorities.len() {
            return Err(ReplayError::PriorityCount {
                indices: indices.len(),
                priorities: priorities.len(),
            });
        }
        if let Some(i) = priorities
            .iter()
            .position(|p| !(p.is_finite() && *p >= 0.0))
        {
            return Err(ReplayError::Value {
                context: PRIORITIES,
                field: "priorities",
                index: i,
                value: priorities[i].to_string(),
                reason: "must be finite and >= 0",
            });
        }
        let eps = self.config.priority_epsilon;
        let mut applied = 0;
        for (&(id, t), &p) in indices.iter().zip(priorities) {
            let Some(entry) = self.entry_mut(id) else {
                continue;
            };
            if t >= entry.priorities.len() {
                continue;
            }
            let p = p + eps;
            entry.priorities[t] = p;
            let global = entry.start + t as u64;
            let value = self.leaf_value(p);
            let leaf = self.leaf(global);
            self.tree.set(leaf, value);
            applied += 1;
        }
        Ok(applied)
    }

    /// Replaces the root values and search policies of game `id` with fresher ones (a
    /// newer network's search) and recomputes its value targets. Priorities are left
    /// alone: they measure the learner's error, which the learner updates when it next
    /// trains on these positions. Returns `Ok(false)` when the game was evicted meanwhile.
    pub fn reanalyse(
        &mut self,
        id: usize,
        root_values: &[f32],
        policies: &[f32],
    ) -> Result<bool, ReplayError> {
        let (td_steps, discount, a) = (
            self.config.td_steps,
            self.config.discount,
            self.action_count,
        );
        let Some(entry) = self.entry_mut(id) else {
            return Ok(false);
        };
        let len = entry.history.len();
        check_len(REANALYSE, "root_values", root_values.len(), len)?;
        check_len(REANALYSE, "policies", policies.len(), len * a)?;
        check_finite(REANALYSE, "root_values", root_values)?;
        check_policies(REANALYSE, policies)?;
        entry.history.root_values.copy_from_slice(root_values);
        entry.history.policies.copy_from_slice(policies);
        entry.targets = entry.history.value_targets(td_steps, discount);
        Ok(true)
    }

    /// The game index and position of the live global position stored at `leaf`.
    fn locate(&self, leaf: usize) -> (usize, usize) {
        let size = self.tree.size as u64;
        let first = self.games[0].start;
        let offset = (leaf as u64 + size - first % size) % size;
        let global = first + offset;
        let g = self.games.partition_point(|e| e.start <= global) - 1;
        (g, (global - self.games[g].start) as usize)
    }

    /// Samples `batch` positions proportionally to `priority^alpha` and builds their
    /// K-step targets (see [`TrainingBatch`]).
    pub fn sample(&self, batch: usize, rng: &mut StdRng) -> Result<TrainingBatch, ReplayError> {
        let mut out = TrainingBatch::default();
        self.sample_into(batch, rng, &mut out)?;
        Ok(out)
    }

    /// [`Self::sample`] into an existing batch, reusing its allocations.
    ///
    /// Sampling is stratified: draw `j` falls in the `j`-th of `batch` equal slices of the
    /// total priority mass. Each draw still lands on position `i` with probability `P(i)`
    /// on average, but a batch holds fewer duplicates than with independent draws.
    pub fn sample_into(
        &self,
        batch: usize,
        rng: &mut StdRng,
        out: &mut TrainingBatch,
    ) -> Result<(), ReplayError> {
        if batch == 0 {
            return Err(ReplayError::ZeroBatch);
        }
        if self.positions == 0 {
            return Err(ReplayError::Empty);
        }
        let (k, a, o) = (self.config.unroll, self.action_count, self.observation_len);
        out.batch = batch;
        out.unroll = k;
        out.action_count = a;
        reset(&mut out.observations, batch * o, 0.0);
        reset(&mut out.actions, batch * k, 0);
        reset(&mut out.target_values, batch * (k + 1), 0.0);
        reset(&mut out.target_rewards, batch * (k + 1), 0.0);
        reset(&mut out.target_policies, batch * (k + 1) * a, 0.0);
        reset(&mut out.mask, batch * (k + 1), 0.0);
        reset(&mut out.policy_mask, batch * (k + 1), 0.0);
        reset(&mut out.weights, batch, 0.0);
        out.indices.clear();

        let total = self.tree.total();
        let slice = total / batch as f64;
        let n = self.positions as f64;
        let beta = self.config.beta as f64;
        let mut max_w = 0.0f64;
        let mut weights = Vec::with_capacity(batch);
        for j in 0..batch {
            let u = ((j as f64 + rng.random::<f64>()) * slice).min(total);
            let leaf = self.tree.find(u);
            let (g, t) = self.locate(leaf);
            let entry = &self.games[g];
            let h = &entry.history;
            let len = h.len();
            out.indices.push((self.first_id + g, t));
            let w = (n * self.tree.get(leaf) / total).powf(-beta);
            max_w = max_w.max(w);
            weights.push(w);

            out.observations[j * o..(j + 1) * o].copy_from_slice(h.observation(t));
            let row = j * (k + 1);
            for step in 0..=k {
                let pos = t + step;
                if pos < len {
                    out.target_values[row + step] = entry.targets[pos];
                    out.policy_mask[row + step] = 1.0;
                    let p = (row + step) * a;
                    out.target_policies[p..p + a].copy_from_slice(h.policy(pos));
                }
                if pos <= len {
                    out.mask[row + step] = 1.0;
                    if step >= 1 {
                        out.target_rewards[row + step] = h.rewards[pos - 1];
                    }
                }
                if step < k {
                    out.actions[j * k + step] = if pos < len {
                        h.actions[pos]
                    } else {
                        rng.random_range(0..a)
                    };
                }
            }
        }
        for (dst, w) in out.weights.iter_mut().zip(weights) {
            *dst = (w / max_w) as f32;
        }
        Ok(())
    }

    fn from_snapshot(s: Snapshot) -> Result<Self, ReplayError> {
        let mut buffer = ReplayBuffer::new(s.config, s.observation_len, s.action_count)?;
        buffer.first_id = s.first_game_id;
        let live: usize = s.games.iter().map(|g| g.history.len()).sum();
        if live > buffer.config.capacity_positions && s.games.len() > 1 {
            return Err(ReplayError::Snapshot(format!(
                "{} games hold {live} positions, over capacity_positions = {}",
                s.games.len(),
                buffer.config.capacity_positions
            )));
        }
        if s.first_game_id.checked_add(s.games.len()).is_none()
            || s.first_position.checked_add(live as u64).is_none()
        {
            return Err(ReplayError::Snapshot(format!(
                "first_game_id {} or first_position {} overflows",
                s.first_game_id, s.first_position
            )));
        }
        let size = ring_size(buffer.config.capacity_positions, live);
        if size != buffer.tree.size {
            buffer.tree = SumTree::new(size);
        }
        buffer.next_start = s.first_position;
        for (i, g) in s.games.into_iter().enumerate() {
            let snap = |e: ReplayError| ReplayError::Snapshot(format!("game {i}: {e}"));
            if g.history.observation_len != buffer.observation_len
                || g.history.action_count != buffer.action_count
            {
                return Err(ReplayError::Snapshot(format!(
                    "game {i}: observation_len {} and action_count {}, expected {} and {}",
                    g.history.observation_len,
                    g.history.action_count,
                    buffer.observation_len,
                    buffer.action_count
                )));
            }
            g.history.check().map_err(snap)?;
            if g.history.is_empty() {
                return Err(snap(ReplayError::EmptyGame));
            }
            check_len(
                "priorities",
                "priorities",
                g.priorities.len(),
                g.history.len(),
            )
            .map_err(snap)?;
            if let Some(t) = g
                .priorities
                .iter()
                .position(|p| !(p.is_finite() && *p > 0.0))
            {
                return Err(ReplayError::Snapshot(format!(
                    "game {i}: priorities[{t}] = {}: must be finite and > 0",
                    g.priorities[t]
                )));
            }
            let targets = g
                .history
                .value_targets(buffer.config.td_steps, buffer.config.discount);
            // Insert without eviction: the snapshot is restored as it was.
            let len = g.history.len();
            let start = buffer.next_start;
            for (t, &p) in g.priorities.iter().enumerate() {
                let leaf = buffer.leaf(start + t as u64);
                buffer.tree.set(leaf, buffer.leaf_value(p));
            }
            buffer.next_start += len as u64;
            buffer.positions += len;
            buffer.games.push_back(Entry {
                history: g.history,
                priorities: g.priorities,
                targets,
                start,
            });
        }
        Ok(buffer)
    }
}

/// Leaves of the sum tree's ring for this capacity and content.
fn ring_size(capacity: usize, live: usize) -> usize {
    capacity.max(live).max(1).next_power_of_two()
}

fn initial_priorities(game: &GameHistory, targets: &[f32], eps: f32) -> Vec<f32> {
    game.root_values
        .iter()
        .zip(targets)
        .map(|(v, z)| (v - z).abs() + eps)
        .collect()
}

fn reset<T: Copy>(v: &mut Vec<T>, len: usize, value: T) {
    v.clear();
    v.resize(len, value);
}

/// The serialized form: everything else (targets, the sum tree) is derived on load.
#[derive(Serialize, Deserialize)]
struct Snapshot {
    config: ReplayConfig,
    observation_len: usize,
    action_count: usize,
    first_game_id: usize,
    /// Global index of the oldest stored position: with the capacity it fixes where each
    /// position sits in the sum tree, so a restored buffer samples exactly as the original.
    first_position: u64,
    games: Vec<StoredGame>,
}

#[derive(Serialize, Deserialize)]
struct StoredGame {
    history: GameHistory,
    priorities: Vec<f32>,
}

/// Borrowing twin of [`Snapshot`] (same fields, same order), so checkpointing does not
/// copy the buffer.
#[derive(Serialize)]
struct SnapshotRef<'a> {
    config: &'a ReplayConfig,
    observation_len: usize,
    action_count: usize,
    first_game_id: usize,
    first_position: u64,
    games: GamesRef<'a>,
}

#[derive(Serialize)]
struct StoredGameRef<'a> {
    history: &'a GameHistory,
    priorities: &'a [f32],
}

struct GamesRef<'a>(&'a VecDeque<Entry>);

impl Serialize for GamesRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|e| StoredGameRef {
            history: &e.history,
            priorities: &e.priorities,
        }))
    }
}

/// Serializes the configuration, the games and their priorities.
impl Serialize for ReplayBuffer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SnapshotRef {
            config: &self.config,
            observation_len: self.observation_len,
            action_count: self.action_count,
            first_game_id: self.first_id,
            first_position: self.games.front().map_or(self.next_start, |e| e.start),
            games: GamesRef(&self.games),
        }
        .serialize(s)
    }
}

/// Validates everything (config, shapes, values, priorities) and rebuilds the derived
/// state, so a corrupt snapshot is an error rather than a buffer that panics later.
impl<'de> Deserialize<'de> for ReplayBuffer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Snapshot::deserialize(d)?;
        ReplayBuffer::from_snapshot(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn sum_tree_sums_and_finds() {
        let mut t = SumTree::new(5);
        assert_eq!(t.size, 8);
        for (i, v) in [1.0, 0.0, 2.0, 3.0, 0.0].iter().enumerate() {
            t.set(i, *v);
        }
        assert_eq!(t.total(), 6.0);
        assert_eq!(t.find(0.0), 0);
        assert_eq!(t.find(0.999), 0);
        assert_eq!(t.find(1.0), 2);
        assert_eq!(t.find(2.999), 2);
        assert_eq!(t.find(3.0), 3);
        assert_eq!(t.find(5.999), 3);
        // Rounding past the total still lands on a non-empty leaf.
        assert_eq!(t.find(6.0), 3);
        assert_eq!(t.find(1e9), 3);
        t.set(3, 0.0);
        assert_eq!(t.total(), 3.0);
        assert_eq!(t.find(2.5), 2);
    }

    fn game(len: usize, tag: f32) -> GameHistory {
        let mut g = GameHistory::new(2, 3);
        for t in 0..len {
            g.push_step(&[tag, t as f32], t % 3, 1.0, 0.5, &[0.2, 0.3, 0.5])
                .unwrap();
        }
        g
    }

    #[test]
    fn ring_wraps_and_locate_finds_the_owner() {
        // Capacity 10 -> 16 leaves; after many games of length 3 the global indices
        // wrap around the ring several times.
        let config = ReplayConfig {
            capacity_positions: 10,
            ..ReplayConfig::default()
        };
        let mut b = ReplayBuffer::new(config, 2, 3).unwrap();
        for id in 0..20 {
            assert_eq!(b.push(game(3, id as f32)).unwrap(), id);
            assert!(b.positions() <= 10);
            for (gid, h) in b.iter_games() {
                for t in 0..h.len() {
                    let leaf = b.leaf(b.entry(gid).unwrap().start + t as u64);
                    let (g, pos) = b.locate(leaf);
                    assert_eq!((b.first_id + g, pos), (gid, t));
                    assert!(b.tree.get(leaf) > 0.0);
                }
            }
        }
        // Only the live positions carry mass.
        let live: f64 = b
            .games
            .iter()
            .flat_map(|e| e.priorities.iter())
            .map(|&p| b.leaf_value(p))
            .sum();
        assert!((b.tree.total() - live).abs() < 1e-9);
        assert_eq!(b.games(), 3);
        assert_eq!(b.game_ids(), 17..20);
    }

    #[test]
    fn game_longer_than_capacity_is_kept_alone() {
        let config = ReplayConfig {
            capacity_positions: 4,
            ..ReplayConfig::default()
        };
        let mut b = ReplayBuffer::new(config, 2, 3).unwrap();
        b.push(game(3, 0.0)).unwrap();
        b.push(game(9, 1.0)).unwrap();
        assert_eq!((b.games(), b.positions()), (1, 9));
        assert_eq!(b.tree.size, 16);
        let batch = b.sample(64, &mut StdRng::seed_from_u64(1)).unwrap();
        assert!(batch.indices.iter().all(|&(g, t)| g == 1 && t < 9));
        b.push(game(2, 2.0)).unwrap();
        assert_eq!((b.games(), b.positions()), (1, 2));
        assert_eq!(b.tree.size, 4, "the ring shrinks back to the capacity");
        let batch = b.sample(16, &mut StdRng::seed_from_u64(1)).unwrap();
        assert!(batch.indices.iter().all(|&(g, t)| g == 2 && t < 2));
    }

    #[test]
    fn corrupt_snapshots_are_refused() {
        let base = || Snapshot {
            config: ReplayConfig::default(),
            observation_len: 2,
            action_count: 3,
            first_game_id: 7,
            first_position: 30,
            games: vec![StoredGame {
                history: game(3, 0.0),
                priorities: vec![1.0; 3],
            }],
        };
        let b = ReplayBuffer::from_snapshot(base()).unwrap();
        assert_eq!(b.game_ids(), 7..8);

        let mut s = base();
        s.games[0].priorities.pop();
        let e = ReplayBuffer::from_snapshot(s).unwrap_err().to_string();
        assert!(e.contains("priorities has 2 entries, expected 3"), "{e}");

        let mut s = base();
        s.games[0].priorities[1] = f32::NAN;
        let e = ReplayBuffer::from_snapshot(s).unwrap_err().to_string();
        assert!(e.contains("priorities[1] = NaN"), "{e}");

        let mut s = base();
        s.games[0].history.actions[2] = 3;
        let e = ReplayBuffer::from_snapshot(s).unwrap_err().to_string();
        assert!(e.contains("actions[2] = 3"), "{e}");

        let mut s = base();
        s.config.unroll = 0;
        let e = ReplayBuffer::from_snapshot(s).unwrap_err().to_string();
        assert!(e.contains("unroll = 0"), "{e}");

        let mut s = base();
        s.config.capacity_positions = 5;
        s.games.push(StoredGame {
            history: game(3, 1.0),
            priorities: vec![1.0; 3],
        });
        let e = ReplayBuffer::from_snapshot(s).unwrap_err().to_string();
        assert!(e.contains("over capacity_positions = 5"), "{e}");

        let mut s = base();
        s.first_position = u64::MAX - 1;
        assert!(ReplayBuffer::from_snapshot(s).is_err());

        let mut s = base();
        s.action_count = 4;
        let e = ReplayBuffer::from_snapshot(s).unwrap_err().to_string();
        assert!(e.contains("action_count 3"), "{e}");
    }

    #[test]
    fn monte_carlo_pass_matches_direct_sum() {
        let mut g = GameHistory::new(1, 2);
        for t in 0..7 {
            g.push_step(&[0.0], 0, t as f32 * 0.5 - 1.0, 3.0 + t as f32, &[1.0, 0.0])
                .unwrap();
        }
        for n in [7, 8, 100] {
            let fast = g.value_targets(n, 0.9);
            for (t, z) in fast.iter().enumerate() {
                assert!((z - g.value_target(t, n, 0.9)).abs() < 1e-5);
            }
        }
    }
}
