//! Saved games: what was played, against which program and hardware, and a replay that
//! re-plays every action and checks every reward.
//!
//! A saved game is a `binio` file of kind `MMZGAME` (or its JSON export).
//! It names the program by name and content hash rather than embedding it: the workload is
//! loaded again at replay, and a changed workload is reported instead of replayed. The
//! hardware and the game options are embedded, so a replay needs nothing else.

use crate::game::{Decision, Game, Hold, Move, Read};
use crate::options::GameOptions;
use accel_sim::HardwareFile;
use binio::BinError;
use serde::{Deserialize, Serialize};
use std::path::Path;

mod names;
mod replay;

pub use names::{bounded_name, safe_file_name, saved_game_name};
pub use replay::{Replay, ReplayError, TurnInfo};

/// The format version of saved games (binary header and the `format_version` field).
// 2: binio files carry a checksum. 3: rules v2 (a turn per use, docs/mallocgame.md).
// 4: the options name the reward kind (`simulated` or `proxy`). 5: rules v3 (a turn at a
// definition no use comes before, a turn wherever a move given in full exists, and those
// moves recorded in `moves`).
pub const GAME_FORMAT_VERSION: u32 = 5;
/// The last format version whose games were played under rules v2 (turns where only
/// action 0 was on offer were not turns, and no move was given in full).
pub const LAST_RULES_V2_VERSION: u32 = 4;
/// The action a saved game records for a turn decided by a move given in full (the move
/// itself is in [`GameRecord::moves`]).
pub const MOVE_ACTION: u32 = u32::MAX;
/// The last format version whose games were played under rules v1 (one turn per buffer).
pub const LAST_RULES_V1_VERSION: u32 = 2;
/// The last format version whose games did not record their reward kind (every one of
/// them earned the cost model's rewards, today's `reward: proxy`).
pub const LAST_PROXY_ONLY_VERSION: u32 = 3;
/// The magic of a saved-game file.
pub const GAME_MAGIC: &[u8; 8] = b"MMZGAME\0";

use crate::options::MAX_SLOTS;

/// One played game.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameRecord {
    /// [`GAME_FORMAT_VERSION`] when written.
    pub format_version: u32,
    /// The program's name.
    pub workload: String,
    /// [`accel_sim::Program::content_hash`] of the program played.
    pub program_hash: u64,
    /// The hardware the game was played on.
    #[serde(with = "hardware_serde")]
    pub hardware: HardwareFile,
    /// The rules' knobs the game was played under.
    pub options: GameOptions,
    /// Who played (a baseline's name, `muzero`, `random`, ...).
    pub player: String,
    /// The player's seed.
    pub seed: u64,
    /// One action per turn, in turn order ([`MOVE_ACTION`] for a move given in full).
    pub actions: Vec<u32>,
    /// The moves given in full, by turn, in turn order: one for each [`MOVE_ACTION`].
    pub moves: Vec<SavedMove>,
    /// The reward of each turn.
    pub rewards: Vec<f64>,
    /// The simulated latency `S` of the final mapping, seconds.
    pub final_latency_s: f64,
    /// `S0`, seconds.
    pub all_slow_latency_s: f64,
    /// Per turn, for agents that search (visit counts per action, root value).
    pub search: Option<Vec<SearchStats>>,
}

/// A move given in full, as saved: the turn it decided and the move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedMove {
    /// The turn the move decided.
    pub turn: u64,
    /// Where the use reads from.
    pub read: SavedRead,
    /// How the chunk it reads from ends, where the move says so.
    pub hold: Option<SavedHold>,
    /// The offset and hold of a chunk written at the definition before the use.
    pub written_before: Option<(u64, SavedHold)>,
}

/// [`Read`] as saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum SavedRead {
    /// Level 0.
    Level0,
    /// The chunk held so far.
    Keep,
    /// A chunk the defining op writes.
    Define {
        /// Where in the level.
        offset: u64,
    },
    /// A chunk a copy from level 0 fills.
    Prefetch {
        /// The op at whose start the copy is issued.
        start: u64,
        /// Where in the level.
        offset: u64,
    },
}

/// [`Hold`] as saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedHold {
    /// The last op the chunk is held through.
    pub end: u64,
    /// The op after which it is copied back to level 0, if it is.
    pub eviction: Option<u64>,
}

impl SavedHold {
    fn of(h: Hold) -> SavedHold {
        SavedHold {
            end: h.end as u64,
            eviction: h.eviction.map(|e| e as u64),
        }
    }
    /// The hold, `None` where an op number does not fit this machine's words (a corrupt
    /// file; the replay then reports the turn).
    fn hold(&self) -> Option<Hold> {
        Some(Hold {
            end: usize::try_from(self.end).ok()?,
            eviction: match self.eviction {
                None => None,
                Some(e) => Some(usize::try_from(e).ok()?),
            },
        })
    }
}

impl SavedMove {
    /// Move `m`, given in full at turn `turn`, as saved.
    pub fn of(turn: usize, m: &Move) -> SavedMove {
        SavedMove {
            turn: turn as u64,
            read: match m.read {
                Read::Level0 => SavedRead::Level0,
                Read::Keep => SavedRead::Keep,
                Read::Define { offset } => SavedRead::Define { offset },
                Read::Prefetch { start, offset } => SavedRead::Prefetch {
                    start: start as u64,
                    offset,
                },
            },
            hold: m.hold.map(SavedHold::of),
            written_before: m.written_before.map(|(o, h)| (o, SavedHold::of(h))),
        }
    }

    /// The move, `None` where an op number does not fit this machine's words.
    pub fn to_move(&self) -> Option<Move> {
        let read = match self.read {
            SavedRead::Level0 => Read::Level0,
            SavedRead::Keep => Read::Keep,
            SavedRead::Define { offset } => Read::Define { offset },
            SavedRead::Prefetch { start, offset } => Read::Prefetch {
                start: usize::try_from(start).ok()?,
                offset,
            },
        };
        let hold = match self.hold {
            None => None,
            Some(h) => Some(h.hold()?),
        };
        let written_before = match self.written_before {
            None => None,
            Some((o, h)) => Some((o, h.hold()?)),
        };
        Some(Move {
            read,
            hold,
            written_before,
        })
    }
}

/// What a searching agent saw at one turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchStats {
    /// One count per action (`GameOptions::action_count` entries).
    pub visits: Vec<u32>,
    /// The search's value of the turn's position.
    pub root_value: f32,
}

/// A saved game that cannot be made, read or trusted.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The game is not over: only finished games are saved.
    #[error("cannot save an unfinished game: turn {turn} of {length}")]
    NotTerminal {
        /// Turns played.
        turn: usize,
        /// Turns in the game.
        length: usize,
    },
    /// The binary file could not be read or written.
    #[error(transparent)]
    Bin(#[from] BinError),
    /// The JSON form does not parse as a saved game.
    #[error("{origin}: not a saved game: {msg}")]
    Json {
        /// The file.
        origin: String,
        /// The parser's message.
        msg: String,
    },
    /// A game saved by rules v1, which this build does not replay.
    #[error("{origin}: saved by rules v1 (saved-game format version {found}): this build plays rules v2, where a turn decides one use of a buffer (docs/mallocgame.md); replay it with a build from before rules v2, or play the game again")]
    RulesV1 {
        /// The file.
        origin: String,
        /// The format version it has.
        found: u32,
    },
    /// A game saved by rules v2, which this build does not replay.
    #[error("{origin}: saved by rules v2 (saved-game format version {found}): this build plays rules v3, where the game also stops at a definition and wherever a move given in full exists (docs/mallocgame.md); replay it with a build from before rules v3, or play the game again")]
    RulesV2 {
        /// The file.
        origin: String,
        /// The format version it has.
        found: u32,
    },
    /// A game saved before games named their reward kind.
    #[error("{origin}: saved-game format version {found}, from before saved games named their reward kind (its rewards were the cost model's, today's `--reward proxy`); this build reads version {expected}: play the game again")]
    NoRewardKind {
        /// The file.
        origin: String,
        /// The format version it has.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// A format version this build does not know.
    #[error("{origin}: saved-game format version {found}, this build reads {expected}")]
    Version {
        /// The file.
        origin: String,
        /// The format version it has.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// A field holds what no game could have (an action past the menu, a length that
    /// disagrees).
    #[error("{origin}: field `{field}`: {msg}")]
    Invalid {
        /// The file.
        origin: String,
        /// The field.
        field: &'static str,
        /// What is wrong.
        msg: String,
    },
}

/// The error for a saved game of format version `found`, which this build does not read.
fn version_error(origin: &str, found: u32) -> RecordError {
    let origin = origin.to_string();
    if (1..=LAST_RULES_V1_VERSION).contains(&found) {
        RecordError::RulesV1 { origin, found }
    } else if found == LAST_RULES_V2_VERSION {
        RecordError::RulesV2 { origin, found }
    } else if found == LAST_PROXY_ONLY_VERSION {
        RecordError::NoRewardKind {
            origin,
            found,
            expected: GAME_FORMAT_VERSION,
        }
    } else {
        RecordError::Version {
            origin,
            found,
            expected: GAME_FORMAT_VERSION,
        }
    }
}

impl GameRecord {
    /// The record of a finished game. `search`, when given, has one entry per turn.
    pub fn from_game(
        game: &Game,
        player: &str,
        seed: u64,
        search: Option<Vec<SearchStats>>,
    ) -> Result<GameRecord, RecordError> {
        let not_over = || RecordError::NotTerminal {
            turn: game.turn(),
            length: game.length(),
        };
        if !game.is_terminal() {
            return Err(not_over());
        }
        let final_latency_s = game.final_latency().ok_or_else(not_over)?;
        let setup = game.setup();
        let program = setup.program();
        let origin = format!("game of `{}`", program.name());
        let mut actions = Vec::with_capacity(game.turn());
        let mut moves = Vec::new();
        for (t, d) in game.decisions().iter().enumerate() {
            match d {
                Decision::Action(a) => actions.push(
                    u32::try_from(*a)
                        .ok()
                        .filter(|&a| a != MOVE_ACTION)
                        .ok_or_else(|| RecordError::Invalid {
                            origin: origin.clone(),
                            field: "actions",
                            msg: format!("action {a} does not fit in 32 bits"),
                        })?,
                ),
                Decision::Move(m) => {
                    actions.push(MOVE_ACTION);
                    moves.push(SavedMove::of(t, m));
                }
            }
        }
        let record = GameRecord {
            format_version: GAME_FORMAT_VERSION,
            workload: program.name().to_string(),
            program_hash: program.content_hash(),
            hardware: setup.hardware().to_file(),
            options: setup.options().clone(),
            player: player.to_string(),
            seed,
            actions,
            moves,
            rewards: game.rewards().to_vec(),
            final_latency_s,
            all_slow_latency_s: setup.all_slow_latency(),
            search,
        };
        record.check(&origin)?;
        Ok(record)
    }

    /// Checks what can be checked without the program: the version and the lengths.
    fn check(&self, origin: &str) -> Result<(), RecordError> {
        if (1..=LAST_RULES_V1_VERSION).contains(&self.format_version) {
            return Err(RecordError::RulesV1 {
                origin: origin.to_string(),
                found: self.format_version,
            });
        }
        if self.format_version != GAME_FORMAT_VERSION {
            return Err(version_error(origin, self.format_version));
        }
        let invalid = |field, msg| RecordError::Invalid {
            origin: origin.to_string(),
            field,
            msg,
        };
        if self.rewards.len() != self.actions.len() {
            return Err(invalid(
                "rewards",
                format!(
                    "{} rewards for {} actions",
                    self.rewards.len(),
                    self.actions.len()
                ),
            ));
        }
        let given: Vec<usize> = (0..self.actions.len())
            .filter(|&t| self.actions[t] == MOVE_ACTION)
            .collect();
        let listed: Vec<u64> = self.moves.iter().map(|m| m.turn).collect();
        if listed.len() != given.len() || listed.iter().zip(&given).any(|(&a, &b)| a != b as u64) {
            return Err(invalid(
                "moves",
                format!(
                    "{} moves given in full for {} turns whose action is {MOVE_ACTION}: one for each, in turn order",
                    self.moves.len(),
                    given.len()
                ),
            ));
        }
        // A corrupt file can hold any numbers; these bounds keep the game's per-turn buffers
        // (sized by the slot count) and the action count small before any game is built.
        if !(1..=MAX_SLOTS).contains(&self.options.slots) {
            return Err(invalid(
                "options.slots",
                format!("must be in 1..={MAX_SLOTS}, got {}", self.options.slots),
            ));
        }
        let fast_on_offer = self.hardware.levels.len().saturating_sub(1);
        if self.options.fast_levels > fast_on_offer {
            return Err(invalid(
                "options.fast_levels",
                format!(
                    "{} fast levels, the saved hardware has {fast_on_offer}",
                    self.options.fast_levels
                ),
            ));
        }
        if let Some(msg) = self.search_mismatch() {
            return Err(invalid("search", msg));
        }
        Ok(())
    }

    /// What is wrong with the search's statistics, if anything: an entry per turn, a visit
    /// count per action.
    fn search_mismatch(&self) -> Option<String> {
        let search = self.search.as_ref()?;
        if search.len() != self.actions.len() {
            return Some(format!(
                "{} entries for {} turns",
                search.len(),
                self.actions.len()
            ));
        }
        let count = self.options.action_count();
        let (t, s) = search
            .iter()
            .enumerate()
            .find(|(_, s)| s.visits.len() != count)?;
        Some(format!(
            "turn {t}: {} visit counts, the game has {count} actions",
            s.visits.len()
        ))
    }

    /// Writes the binary form atomically.
    pub fn save(&self, path: &Path) -> Result<(), RecordError> {
        binio::write_atomic(path, GAME_MAGIC, GAME_FORMAT_VERSION, self)?;
        Ok(())
    }

    /// Reads a file written by [`GameRecord::save`].
    pub fn load(path: &Path) -> Result<GameRecord, RecordError> {
        let record: GameRecord =
            binio::read(path, GAME_MAGIC, GAME_FORMAT_VERSION).map_err(|e| match e {
                BinError::Version { found, .. } => {
                    version_error(&path.display().to_string(), found)
                }
                e => RecordError::Bin(e),
            })?;
        record.check(&path.display().to_string())?;
        Ok(record)
    }

    /// The JSON form (pretty-printed), for tools and people.
    pub fn to_json(&self) -> String {
        // Cannot fail: every map key is a string and every type serializes. (A non-finite
        // float becomes `null`, which `from_json` then reports.)
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| unreachable!("a game record always serializes to JSON: {e}"))
    }

    /// Parses [`GameRecord::to_json`]'s form; `origin` (a file name) is what errors name.
    pub fn from_json(text: &str, origin: &str) -> Result<GameRecord, RecordError> {
        // A game saved under rules v1 has fields this build no longer reads (its modes):
        // name the rules, not the first field that fails.
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
            if let Some(found) = v.get("format_version").and_then(|f| f.as_u64()) {
                if found != u64::from(GAME_FORMAT_VERSION) {
                    let found = u32::try_from(found).unwrap_or(u32::MAX);
                    return Err(version_error(origin, found));
                }
            }
        }
        let record: GameRecord = accel_sim::parse_json(text).map_err(|msg| RecordError::Json {
            origin: origin.to_string(),
            msg,
        })?;
        record.check(origin)?;
        Ok(record)
    }
}

/// `HardwareFile` is written for JSON and TOML: its capacities are an untagged enum and an
/// absent level-0 capacity is skipped, neither of which a non-self-describing format such
/// as bincode can read back. JSON gets the file form itself (a saved game's `hardware` reads
/// like a hardware file); binary formats get a plain mirror of it.
mod hardware_serde;

#[cfg(test)]
mod tests {
    use super::*;

    use accel_sim::{Buffer, BufferKind, Hardware, Op, Program};
    use std::sync::Arc;

    pub(super) fn program(flops: f64) -> Arc<Program> {
        let buf = |n: &str, s, k| Buffer {
            name: n.into(),
            size: s,
            kind: k,
        };
        let op = |n: &str, r: &[usize], w: &[usize]| Op {
            name: n.into(),
            kind: "t".into(),
            flops,
            reads: r.to_vec(),
            writes: w.to_vec(),
        };
        Arc::new(
            Program::new(
                "tiny",
                "",
                vec![
                    buf("x", 1 << 20, BufferKind::Input),
                    buf("w", 2 << 20, BufferKind::Weight),
                    buf("a", 1 << 20, BufferKind::Activation),
                    buf("b", 1 << 20, BufferKind::Activation),
                    buf("y", 1 << 20, BufferKind::Output),
                ],
                vec![
                    op("op0", &[0], &[2]),
                    op("op1", &[2, 1], &[3]),
                    op("op2", &[3, 1], &[4]),
                ],
            )
            .unwrap(),
        )
    }

    fn hw() -> Hardware {
        Hardware::tpu_v4i_like().with_capacity(1, 3 << 20).unwrap()
    }

    /// Plays the highest legal action every turn (places as much as it can).
    pub(super) fn played(p: Arc<Program>) -> Game {
        let mut g = Game::new(p, hw(), GameOptions::default()).unwrap();
        while !g.is_terminal() {
            let a = *g.legal_actions().last().unwrap();
            g.apply_action(a).unwrap();
        }
        g
    }

    #[test]
    fn presets_survive_the_file_form_exactly() {
        // The replay rebuilds the hardware from its file form; a lossy conversion would
        // shift every reward by rounding noise.
        for h in [
            hw(),
            Hardware::nnp_i_like(),
            Hardware::tpu_v4i_like().with_capacity(1, 16 << 20).unwrap(),
        ] {
            assert_eq!(h.to_file().into_hardware("").unwrap(), h);
        }
    }

    #[test]
    fn binary_and_json_keep_the_hardware() {
        let mut r = GameRecord::from_game(&played(program(1e6)), "test", 7, None).unwrap();
        r.hardware.levels[1].capacity = Some(accel_sim::ByteSize::Text("3MiB".into()));
        let b = binio::to_bytes("r", GAME_MAGIC, GAME_FORMAT_VERSION, &r).unwrap();
        let back: GameRecord = binio::from_bytes("r", &b, GAME_MAGIC, GAME_FORMAT_VERSION).unwrap();
        assert_eq!(back.to_json(), r.to_json());
        let j = GameRecord::from_json(&r.to_json(), "r.json").unwrap();
        assert_eq!(j.hardware.levels[1].capacity, r.hardware.levels[1].capacity);
        assert!(j.hardware.levels[0].capacity.is_none());
        // The JSON hardware reads like a hardware file.
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["hardware"]["levels"][1]["capacity"], "3MiB");
        assert_eq!(v["hardware"]["peak_tflops"], 138.0);
    }

    #[test]
    fn unfinished_games_are_refused() {
        let mut g = Game::new(program(1e6), hw(), GameOptions::default()).unwrap();
        g.apply_action(0).unwrap();
        let e = GameRecord::from_game(&g, "test", 0, None).unwrap_err();
        assert!(matches!(e, RecordError::NotTerminal { turn: 1, .. }), "{e}");
    }

    #[test]
    fn search_stats_must_cover_every_turn_and_action() {
        let g = played(program(1e6));
        let n = g.setup().action_count();
        let ok = vec![
            SearchStats {
                visits: vec![1; n],
                root_value: 0.5,
            };
            g.length()
        ];
        let n = g.length();
        assert!(n >= 2, "{n}");
        assert!(GameRecord::from_game(&g, "mz", 0, Some(ok.clone())).is_ok());
        let e = GameRecord::from_game(&g, "mz", 0, Some(ok[1..].to_vec())).unwrap_err();
        let want = format!("{} entries for {n} turns", n - 1);
        assert!(e.to_string().contains(&want), "{e}");
        let mut short = ok;
        short[1].visits.pop();
        let e = GameRecord::from_game(&g, "mz", 0, Some(short)).unwrap_err();
        assert!(e.to_string().contains("turn 1:"), "{e}");
    }
}
