//! The buffer's saved form: the config, the games and their priorities; everything else
//! (targets, the sum tree) is rebuilt, and checked, on load.

use super::buffer::{ring_size, Entry, ReplayBuffer, ReplayConfig};
use super::history::{check_len, GameHistory};
use super::sum_tree::SumTree;
use super::ReplayError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::VecDeque;

impl ReplayBuffer {
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
    use crate::replay::fixtures::game;

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
}
