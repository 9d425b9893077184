//! Game options. The defaults are the rules of docs/mallocgame.md ("Game options").

use serde::{Deserialize, Serialize};

/// How a buffer gets into a fast level and for how long (docs/mallocgame.md, "One turn").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Over its whole live range: written there by its defining op; a weight or input is
    /// copied in at the program start; an output is evicted right after its definition.
    Resident,
    /// Defined in level 0, copied in before its first use after its definition at the
    /// picker's preferred start; held from the copy start to its last use.
    Prefetch,
    /// As `Prefetch`, at the picker's latest start: a shorter hold, more risk of a stall.
    PrefetchLate,
    /// Copied in only for its last use, at the picker's preferred start.
    PrefetchLast,
}

impl Mode {
    pub const ALL: [Mode; 4] = [
        Mode::Resident,
        Mode::Prefetch,
        Mode::PrefetchLate,
        Mode::PrefetchLast,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Resident => "resident",
            Mode::Prefetch => "prefetch",
            Mode::PrefetchLate => "prefetch-late",
            Mode::PrefetchLast => "prefetch-last",
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

/// The largest K the game accepts (a corrupt or careless value must not allocate wildly).
pub const MAX_SLOTS: usize = 1024;

/// The rules' knobs. The observation's size depends on these alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GameOptions {
    /// How many of the hardware's fastest levels the player may use (fastest first).
    pub fast_levels: usize,
    /// K: offset candidates per (level, mode).
    pub slots: usize,
    pub modes: Vec<Mode>,
    pub order: Order,
    /// How many upcoming buffers the observation describes.
    pub lookahead: usize,
    /// Occupancy grid of the observation: time bins over the buffer's live range.
    pub grid_time: usize,
    /// Occupancy grid of the observation: offset bins over the level's capacity.
    pub grid_offset: usize,
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
        }
    }
}

impl GameOptions {
    /// Number of discrete actions: action 0 plus one per (level, mode, slot).
    pub fn action_count(&self) -> usize {
        1 + self.fast_levels * self.modes.len() * self.slots
    }

    /// The (level index, mode index, slot) of a non-zero action.
    pub fn decode(&self, action: usize) -> Option<(usize, usize, usize)> {
        if action == 0 || action >= self.action_count() {
            return None;
        }
        let i = action - 1;
        let k = i % self.slots;
        let lm = i / self.slots;
        Some((lm / self.modes.len(), lm % self.modes.len(), k))
    }

    pub fn encode(&self, level_index: usize, mode_index: usize, slot: usize) -> usize {
        1 + (level_index * self.modes.len() + mode_index) * self.slots + slot
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
        let o = GameOptions {
            fast_levels: 2,
            ..GameOptions::default()
        };
        assert_eq!(o.action_count(), 33);
        let mut seen = [false; 33];
        for l in 0..2 {
            for m in 0..4 {
                for k in 0..4 {
                    let a = o.encode(l, m, k);
                    assert_eq!(o.decode(a), Some((l, m, k)));
                    assert!(!seen[a]);
                    seen[a] = true;
                }
            }
        }
        assert!(seen[1..].iter().all(|&s| s));
        assert_eq!(o.decode(0), None);
        assert_eq!(o.decode(33), None);
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
            modes: vec![Mode::Resident, Mode::Resident],
            ..GameOptions::default()
        };
        assert!(o.check(1).unwrap_err().contains("twice"));
    }
}
