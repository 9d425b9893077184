//! The learned start (issue 59.2): a small network that predicts, for each use of a
//! buffer and each fast level, the probability that a best mapping reads that use from
//! that level, trained on solution pools (the MIP's and the local search's best mappings of
//! many generated and traced programs, never the suite's, the scale tier's, the held-out
//! or the validation programs). The literature's two ways of using such a prediction
//! (Neural Diving, Nair et al. 2020; Predict-and-Search, Han et al. 2023) are wired in the
//! harness: a trust region around it for the MIP (`exact::TrustRegion`), and its own line
//! ([`learned_line`]) as a start for the guided search.
//!
//! - [`features`]: what the predictor reads of a use and a level;
//! - [`Predictor`]: the network (`start/weights.safetensors` is the bundled one:
//!   [`bundled`]; `start/README.md` says how it was made);
//! - [`Prediction`]: its answer on a program, and the level it puts each use in;
//! - [`pool`]: the training data's folders; [`train`]: the training and its metrics.

mod features;
mod line;
mod mlp;
pub mod pool;
pub mod train;

pub use features::{features, sites, FeatureTable, Site, FEATURES, FEATURE_NAMES};
pub use line::learned_line;
pub use mlp::Predictor;

use accel_sim::{BufferId, Hardware, OpId, Program};
use std::collections::HashMap;

const BUNDLED: &[u8] = include_bytes!("../../start/weights.safetensors");

/// How errors name the bundled predictor.
pub const ORIGIN: &str = "the bundled learned start (malloc-muzero/start/weights.safetensors)";

/// A prediction holds a use in a level where its probability there is at least this (and
/// the highest of the levels').
pub const THRESHOLD: f32 = 0.5;

/// Why the learned start could not be made or trained.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A file (a pool's, a predictor's) that could not be read or written, and why.
    #[error("{path}: {msg}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// A predictor's bytes that do not make one.
    #[error("{origin}: {msg}")]
    Predictor {
        /// Where the bytes came from.
        origin: String,
        /// What is wrong with them.
        msg: String,
    },
    /// A training setting out of range.
    #[error("learned start: {0}")]
    Config(String),
    /// The network's arithmetic failed.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
    /// The optimizer could not be built.
    #[error(transparent)]
    Optim(#[from] muzero::OptimError),
}

/// The bundled predictor.
pub fn bundled() -> Result<Predictor, StartError> {
    Predictor::from_bytes(ORIGIN, BUNDLED)
}

/// A predictor's answer on one program and hardware: per site, the level it puts the use
/// in (0: level 0), and the probability of each row.
#[derive(Clone, Debug)]
pub struct Prediction {
    /// Every use, as in [`FeatureTable::sites`].
    pub sites: Vec<Site>,
    /// Per row: its site, its level, and the probability that a best mapping reads the
    /// site's use from that level.
    pub rows: Vec<(usize, usize, f32)>,
    /// Per site: the level the prediction puts it in.
    pub levels: Vec<usize>,
    index: HashMap<Site, usize>,
}

impl Prediction {
    /// `predictor`'s answer on `program` and `hw`.
    pub fn of(predictor: &Predictor, program: &Program, hw: &Hardware) -> Prediction {
        let table = features(program, hw);
        let rows: Vec<(usize, usize, f32)> = table
            .rows
            .iter()
            .enumerate()
            .map(|(r, &(s, level))| (s, level, predictor.probability(table.row(r))))
            .collect();
        Prediction::from_rows(table.sites, rows)
    }

    /// A prediction of these rows' probabilities (each `(site, level, probability)`).
    pub fn from_rows(sites: Vec<Site>, rows: Vec<(usize, usize, f32)>) -> Prediction {
        let mut best = vec![(0usize, 0f32); sites.len()];
        for &(s, level, p) in &rows {
            if p >= THRESHOLD && p > best[s].1 {
                best[s] = (level, p);
            }
        }
        let index = sites.iter().enumerate().map(|(i, &s)| (s, i)).collect();
        Prediction {
            levels: best.into_iter().map(|(l, _)| l).collect(),
            sites,
            rows,
            index,
        }
    }

    /// The level the prediction puts `b`'s use at `u` in (0 for an op that does not read
    /// `b`).
    pub fn level_of(&self, b: BufferId, u: OpId) -> usize {
        self.index.get(&(b, u)).map_or(0, |&i| self.levels[i])
    }

    /// The uses it holds in a fast level, as `(buffer, use, level)`.
    pub fn fast_set(&self) -> Vec<(BufferId, OpId, usize)> {
        self.sites
            .iter()
            .zip(&self.levels)
            .filter(|(_, &l)| l > 0)
            .map(|(&(b, u), &l)| (b, u, l))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use malloc_game::anytime::Limit;
    use malloc_game::{GameOptions, GameSetup};
    use std::sync::Arc;

    #[test]
    fn the_bundled_predictor_loads_and_is_small() {
        let p = bundled().unwrap();
        assert!(BUNDLED.len() < 1 << 20, "{} bytes", BUNDLED.len());
        assert!(!p.hidden().is_empty());
    }

    /// The line of a prediction that is a mapping's own fast set plays that mapping's
    /// holds where the menu has them: on a small case it is never slower than level 0
    /// everywhere, and a prediction of nothing plays the all-level-0 game.
    #[test]
    fn the_learned_line_follows_its_prediction() {
        let program = Arc::new(bench_workloads::load("diamond").unwrap());
        let hw = accel_sim::Hardware::preset("tpu-v4i-like").unwrap();
        let setup =
            GameSetup::new(Arc::clone(&program), hw.clone(), GameOptions::default()).unwrap();
        let limit = Limit::from_now(60.0, 1);
        let none = Prediction::from_rows(sites(&program), Vec::new());
        let slow = learned_line(&setup, &none, &limit).unwrap();
        assert!(slow
            .mapping()
            .buffers
            .iter()
            .all(|p| p.allocations.is_empty()));
        let p = Prediction::of(&bundled().unwrap(), &program, &hw);
        let line = learned_line(&setup, &p, &limit).unwrap();
        line.mapping().validate(&program, &hw).unwrap();
        // Every use it reads from a fast level, the prediction put there.
        for (b, u, l) in line.mapping().fast_uses(&program) {
            assert_eq!(p.level_of(b, u), l, "buffer {b} at op {u}");
        }
    }
}
