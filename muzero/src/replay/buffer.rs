//! The prioritized replay buffer over the positions of whole games: its config, insertion
//! and eviction, priorities, reanalyse, and stratified sampling into a [`TrainingBatch`].

use super::history::{check_finite, check_len, check_policies, GameHistory};
use super::history::{PRIORITIES, REANALYSE};
use super::sum_tree::SumTree;
use super::ReplayError;
use crate::batch::TrainingBatch;
use rand::rngs::StdRng;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

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

/// A stored game with what the buffer derives from it.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) history: GameHistory,
    /// Raw priorities (epsilon included), one per position.
    pub(super) priorities: Vec<f32>,
    /// Cached n-step value targets, one per position.
    pub(super) targets: Vec<f32>,
    /// Global index of position 0: positions of successive games are numbered
    /// contiguously, and a position's leaf is its global index modulo the tree size.
    pub(super) start: u64,
}

/// Prioritized replay over the positions of whole games.
#[derive(Clone)]
pub struct ReplayBuffer {
    pub(super) config: ReplayConfig,
    pub(super) observation_len: usize,
    pub(super) action_count: usize,
    pub(super) games: VecDeque<Entry>,
    /// Id of `games[0]`; ids are consecutive, so game `id` is `games[id - first_id]`.
    pub(super) first_id: usize,
    pub(super) positions: usize,
    pub(super) next_start: u64,
    pub(super) tree: SumTree,
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

    /// The buffer's capacity, priorities and target settings.
    pub fn config(&self) -> &ReplayConfig {
        &self.config
    }

    /// Length of the observations its games hold.
    pub fn observation_len(&self) -> usize {
        self.observation_len
    }

    /// Number of actions: the length of each stored policy.
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

    pub(super) fn leaf(&self, global: u64) -> usize {
        (global % self.tree.size as u64) as usize
    }

    pub(super) fn leaf_value(&self, priority: f32) -> f64 {
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
}

/// Leaves of the sum tree's ring for this capacity and content.
pub(super) fn ring_size(capacity: usize, live: usize) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::fixtures::game;
    use rand::SeedableRng;

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
}
