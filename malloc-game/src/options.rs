//! Game options. The defaults are the rules of docs/mallocgame.md ("Game options").

use serde::{Deserialize, Serialize};

/// What a turn does with the pending use of the current buffer (docs/mallocgame.md,
/// "One turn"). Action 0, the use reads level 0, is not a mode: it is always on offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The chunk the buffer holds in the level stays through this use, at the same
    /// offset, with no copy. One action (there is no offset to choose).
    Keep,
    /// The defining op writes the buffer into the level, held through this use (its
    /// first). Offered on the first use of a buffer that has a defining op.
    Define,
    /// The chunk held so far (if any) ends, evicted if level 0 lacks the data, and a copy
    /// from level 0 brings the buffer in for this use, starting where XLA's picker
    /// search starts it (the preferred start, else the nearest one with a chunk and room
    /// in the copy budget).
    Prefetch,
    /// As `Prefetch`, at the picker's latest start: a shorter hold, more risk of a stall.
    PrefetchLate,
    /// As `Prefetch`, at the picker's earliest start; where XLA's picker has no window
    /// (no start hides enough of the copy), at the earliest start whose overlap stays
    /// under `max_copy`, and even where the copy budget has no room: a move XLA does not
    /// make, left for the simulator to judge.
    PrefetchEarly,
}

impl Mode {
    /// Every mode, in the order the menu lists them.
    pub const ALL: [Mode; 5] = [
        Mode::Keep,
        Mode::Define,
        Mode::Prefetch,
        Mode::PrefetchLate,
        Mode::PrefetchEarly,
    ];
    /// The mode's name in files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Keep => "keep",
            Mode::Define => "define",
            Mode::Prefetch => "prefetch",
            Mode::PrefetchLate => "prefetch-late",
            Mode::PrefetchEarly => "prefetch-early",
        }
    }
    /// How many actions the mode has: one per offset slot, but `keep` has no offset to
    /// choose.
    pub fn slots(self, k: usize) -> usize {
        match self {
            Mode::Keep => 1,
            _ => k,
        }
    }
}

/// The order in which buffers take their turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// XLA's order: most memory-bound first, then larger, then longer-lived.
    Xla,
    /// By the start of the live range.
    ByStart,
    /// Largest first.
    BySize,
}

impl Order {
    /// The names [`Order::from_str`](std::str::FromStr) accepts.
    pub const NAMES: [&'static str; 3] = ["xla", "by-start", "by-size"];
}

impl std::str::FromStr for Order {
    type Err = String;

    fn from_str(s: &str) -> Result<Order, String> {
        match s {
            "xla" => Ok(Order::Xla),
            "by-start" => Ok(Order::ByStart),
            "by-size" => Ok(Order::BySize),
            other => Err(format!(
                "unknown order `{other}` ({})",
                Order::NAMES.join(", ")
            )),
        }
    }
}

/// What a turn's reward measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reward {
    /// The simulated latency itself: turn `t` earns `(S(t-1) - S(t)) / S0`, where `S(t)` is
    /// the simulated latency of the mapping so far (uses not decided yet read level 0).
    #[default]
    Simulated,
    /// The paper's setting: the cost model's change `(P(t-1) - P(t)) / S0`, and on the last
    /// turn the correction `(P(end) - S) / S0 - (P(0) - S0) / S0`, so the return is still
    /// `(S0 - S) / S0`.
    Proxy,
}

impl Reward {
    /// The names [`Reward::from_str`](std::str::FromStr) accepts.
    pub const NAMES: [&'static str; 2] = ["simulated", "proxy"];

    /// The reward's name in files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Reward::Simulated => "simulated",
            Reward::Proxy => "proxy",
        }
    }
}

impl std::str::FromStr for Reward {
    type Err = String;

    fn from_str(s: &str) -> Result<Reward, String> {
        match s {
            "simulated" => Ok(Reward::Simulated),
            "proxy" => Ok(Reward::Proxy),
            other => Err(format!(
                "unknown reward `{other}` ({})",
                Reward::NAMES.join(", ")
            )),
        }
    }
}

/// The largest K the game accepts (a corrupt or careless value must not allocate wildly).
pub const MAX_SLOTS: usize = 1024;

/// The rules' knobs. The observation's size depends on these alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GameOptions {
    /// How many of the hardware's fastest levels the game fills, one pass each, fastest
    /// first.
    pub fast_levels: usize,
    /// K: offset candidates per mode that chooses an offset.
    pub slots: usize,
    /// The kinds of move on each turn's menu (besides level 0).
    pub modes: Vec<Mode>,
    /// The order in which a pass's buffers take their turns.
    pub order: Order,
    /// How many upcoming buffers the observation describes.
    pub lookahead: usize,
    /// Occupancy grid of the observation: time bins over the buffer's live range.
    pub grid_time: usize,
    /// Occupancy grid of the observation: offset bins over the level's capacity.
    pub grid_offset: usize,
    /// What the rewards, [`crate::Game::cost_delta`] and the planners that rank by it
    /// measure; the observation shows the simulator's state only under `simulated`.
    pub reward: Reward,
}

impl Default for GameOptions {
    fn default() -> Self {
        GameOptions {
            fast_levels: 1,
            slots: 4,
            modes: Mode::ALL.to_vec(),
            order: Order::Xla,
            lookahead: 4,
            grid_time: 8,
            grid_offset: 8,
            reward: Reward::Simulated,
        }
    }
}

impl GameOptions {
    /// Number of discrete actions: action 0 plus one per (mode, slot).
    pub fn action_count(&self) -> usize {
        1 + self
            .modes
            .iter()
            .map(|m| m.slots(self.slots))
            .sum::<usize>()
    }

    /// The (mode index, slot) of a non-zero action.
    pub fn decode(&self, action: usize) -> Option<(usize, usize)> {
        let mut first = 1;
        for (mi, m) in self.modes.iter().enumerate() {
            let n = m.slots(self.slots);
            if (first..first + n).contains(&action) {
                return Some((mi, action - first));
            }
            first += n;
        }
        None
    }

    /// The action of slot `slot` of mode index `mode_index` (slot 0 for `keep`).
    pub fn encode(&self, mode_index: usize, slot: usize) -> usize {
        1 + self.modes[..mode_index]
            .iter()
            .map(|m| m.slots(self.slots))
            .sum::<usize>()
            + slot
    }

    /// Checks the options against themselves and the number of fast levels on offer.
    pub fn check(&self, fast_levels_available: usize) -> Result<(), String> {
        if self.fast_levels == 0 || self.fast_levels > fast_levels_available {
            return Err(format!(
                "fast_levels: must be in 1..={fast_levels_available} for this hardware, got {}",
                self.fast_levels
            ));
        }
        if self.slots == 0 || self.slots > MAX_SLOTS {
            return Err(format!(
                "slots: must be in 1..={MAX_SLOTS}, got {}",
                self.slots
            ));
        }
        if self.modes.is_empty() {
            return Err("modes: at least one mode is needed".into());
        }
        for (i, m) in self.modes.iter().enumerate() {
            if self.modes[..i].contains(m) {
                return Err(format!("modes: `{}` is listed twice", m.as_str()));
            }
        }
        if self.grid_time == 0 || self.grid_offset == 0 {
            return Err("grid_time, grid_offset: must be >= 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_encode_densely() {
        let o = GameOptions::default();
        // 0, keep, then 4 slots each of define, prefetch, prefetch-late, prefetch-early.
        assert_eq!(o.action_count(), 18);
        let mut seen = [false; 18];
        for (mi, m) in o.modes.iter().enumerate() {
            for k in 0..m.slots(o.slots) {
                let a = o.encode(mi, k);
                assert_eq!(o.decode(a), Some((mi, k)));
                assert!(!seen[a]);
                seen[a] = true;
            }
        }
        assert!(seen[1..].iter().all(|&s| s));
        assert_eq!(o.decode(0), None);
        assert_eq!(o.decode(18), None);
    }

    #[test]
    fn bad_options_are_named() {
        let o = GameOptions {
            slots: 0,
            ..GameOptions::default()
        };
        assert!(o.check(1).unwrap_err().starts_with("slots"));
        let o = GameOptions {
            fast_levels: 2,
            ..GameOptions::default()
        };
        assert!(o.check(1).unwrap_err().starts_with("fast_levels"));
        let o = GameOptions {
            modes: vec![Mode::Keep, Mode::Keep],
            ..GameOptions::default()
        };
        assert!(o.check(1).unwrap_err().contains("twice"));
    }
}
