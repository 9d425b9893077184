//! `best/`: the fastest mapping a run has found, written the moment it is found.
//!
//! `game.game` is written first and is what counts: a resume reads the best back from it
//! (the saved game replays to its return), so a session killed at any moment never lets
//! the next one replace the best with a worse mapping. `mapping.json` and `found.json`
//! follow it, and are rewritten from it when a kill came between the writes.

use super::selfplay::PlayedGame;
use super::TrainError;
use accel_sim::MappingFile;
use binio::json::write_json;
use malloc_game::record::GameRecord;
use malloc_game::{Game, GameSetup};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The viewer of the best game against xla's line, beside `game.game`.
pub const COMPARE_XLA: &str = "compare-xla.html";

/// The fastest mapping found so far, and where and how to record a better one.
pub(super) struct Best {
    pub ret: f64,
    pub latency: f64,
    /// The game itself (the agent's own), for branching and self-imitation.
    pub game: Option<Game>,
    dir: PathBuf,
    workload: String,
    seed: u64,
    xla: f64,
}

/// When and by how much a best was found, for `found.json`.
pub(super) struct Found {
    pub iteration: Option<u64>,
    pub train_steps: Option<u64>,
}

impl Best {
    /// The best of the run in `dir` (none yet: `ret` is -inf). `setup` is the run's game; a
    /// saved best that does not replay on it is an error, never silently replaced.
    pub fn read_back(
        dir: &Path,
        setup: &Arc<GameSetup>,
        workload: &str,
        seed: u64,
        xla: f64,
    ) -> Result<Best, TrainError> {
        let mut best = Best {
            ret: f64::NEG_INFINITY,
            latency: f64::INFINITY,
            game: None,
            dir: dir.to_path_buf(),
            workload: workload.to_string(),
            seed,
            xla,
        };
        let path = dir.join("game.game");
        if !path.exists() {
            return Ok(best);
        }
        // The run goes on without its best game, once the user moves it aside: said, since
        // nothing else in the message tells that the damage is not fatal to the run.
        let aside = |e: String| {
            TrainError::Resume(format!(
                "{e}; to continue the run without it, move it aside (`mv {p} {p}.damaged`): the run then keeps its checkpoints and records its next best game there",
                p = path.display()
            ))
        };
        let record = GameRecord::load(&path).map_err(|e| aside(e.to_string()))?;
        let replay = record
            .replay(Arc::clone(setup.program_arc()))
            .map_err(|source| {
                aside(
                    TrainError::BestReplay {
                        path: path.display().to_string(),
                        source: Box::new(source),
                    }
                    .to_string(),
                )
            })?;
        let same_rules = serde_json::to_value(&record.hardware).ok()
            == serde_json::to_value(setup.hardware().to_file()).ok()
            && &record.options == setup.options();
        if !same_rules {
            return Err(TrainError::Resume(format!(
                "{} was played on other hardware or game options than this run's",
                path.display()
            )));
        }
        best.ret = replay.game.total_return();
        best.latency = replay.game.final_latency().unwrap_or(f64::INFINITY);
        if best.recorded_return() != Some(best.ret) {
            let unknown = Found {
                iteration: None,
                train_steps: None,
            };
            best.write_mapping_and_summary(&replay.game, &unknown)?;
        }
        best.game = Some(replay.game);
        Ok(best)
    }

    /// The return `found.json` names, if it is readable.
    fn recorded_return(&self) -> Option<f64> {
        let text = accel_sim::read_text(&self.dir.join("found.json")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v["return"].as_f64()
    }

    /// Keeps `g` if it beats the best so far. Returns whether it did.
    pub fn consider(&mut self, g: &PlayedGame, found: &Found) -> Result<bool, TrainError> {
        let ret = g.game.total_return();
        if ret <= self.ret {
            return Ok(false);
        }
        GameRecord::from_game(&g.game, "muzero", self.seed, Some(g.search.clone()))?
            .save(&self.dir.join("game.game"))?;
        self.ret = ret;
        self.latency = g.game.final_latency().unwrap_or(f64::INFINITY);
        self.write_mapping_and_summary(&g.game, found)?;
        self.game = Some(g.game.clone());
        Ok(true)
    }

    /// Writes `compare-xla.html` beside `game.game`: the viewer of the best game against
    /// the xla player's line (malloc_game::viewer), with the search's statistics the saved
    /// game carries. Nothing when no game was found yet.
    pub fn write_compare_xla(&self) -> Result<(), TrainError> {
        let Some(game) = &self.game else {
            return Ok(());
        };
        let search = GameRecord::load(&self.dir.join("game.game"))
            .ok()
            .and_then(|r| r.search);
        let html = malloc_game::viewer::against_xla_html(
            game,
            "muzero",
            self.seed,
            search.as_deref(),
            &malloc_game::viewer::ViewLimits::default(),
        );
        binio::write_bytes_atomic(&self.dir.join(COMPARE_XLA), html.as_bytes())?;
        Ok(())
    }

    fn write_mapping_and_summary(&self, game: &Game, found: &Found) -> Result<(), TrainError> {
        let program = game.setup().program();
        let mapping = MappingFile::from_mapping(program, &game.mapping());
        write_json(&self.dir.join("mapping.json"), &mapping)?;
        write_json(
            &self.dir.join("found.json"),
            &serde_json::json!({
                "workload": self.workload, "latency_s": self.latency, "return": self.ret,
                "speedup_vs_xla": self.xla / self.latency, "iteration": found.iteration,
                "train_steps": found.train_steps,
            }),
        )?;
        Ok(())
    }
}
