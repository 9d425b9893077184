//! A trained agent loaded from a run folder (or the bundled generalist), playing a program
//! as one noise-free game.

use crate::generalist;
use crate::train::{self, RunInfo, TrainError};
use accel_sim::{Hardware, Mapping, Program};
use malloc_game::GameSetup;
use muzero::MuZeroNet;
use muzero::SearchConfig;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a trained agent cannot play a case.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Train(#[from] TrainError),
    #[error("{dir}: --simulations: {msg}")]
    Simulations { dir: String, msg: String },
    #[error("{dir}: the agent cannot play `{program}` on `{hardware}`: {msg}")]
    Incompatible {
        dir: String,
        program: String,
        hardware: String,
        msg: String,
    },
    #[error(transparent)]
    Game(#[from] malloc_game::GameError),
}

/// The network of a run's newest checkpoint, its run's game rules, and a search without
/// noise.
pub struct Agent {
    /// The run folder, or [`crate::generalist::ORIGIN`]: how messages name the agent.
    dir: PathBuf,
    info: RunInfo,
    net: MuZeroNet,
    search: SearchConfig,
}

impl Agent {
    /// Loads the agent of run folder `dir`; `simulations` overrides the run's evaluation
    /// setting.
    pub fn load(dir: &Path, simulations: Option<usize>) -> Result<Agent, AgentError> {
        let info = train::read_run_info(dir)?;
        let net = train::load_network(dir)?;
        Agent::new(dir.to_path_buf(), info, net, simulations)
    }

    /// The bundled generalist ([`crate::generalist`]); `simulations` overrides its
    /// evaluation setting.
    pub fn bundled(simulations: Option<usize>) -> Result<Agent, AgentError> {
        let (info, net) = (generalist::info()?, generalist::network()?);
        Agent::new(PathBuf::from(generalist::ORIGIN), info, net, simulations)
    }

    fn new(
        dir: PathBuf,
        info: RunInfo,
        net: MuZeroNet,
        simulations: Option<usize>,
    ) -> Result<Agent, AgentError> {
        let search = SearchConfig {
            simulations: simulations.unwrap_or(info.config.eval_simulations),
            ..info.config.search.clone()
        };
        search.check().map_err(|msg| AgentError::Simulations {
            dir: dir.display().to_string(),
            msg,
        })?;
        Ok(Agent {
            dir,
            info,
            net,
            search,
        })
    }

    /// What differs between the run and the case without stopping play (another program
    /// or hardware: the agent then plays zero-shot), one sentence each.
    pub fn warnings(&self, program: &Program, hw: &Hardware) -> Vec<String> {
        let dir = self.dir.display();
        let hash = program.content_hash();
        if !self.info.cases.is_empty() {
            // A multi-program run was trained on several hardware settings: only the
            // program says whether the agent has seen the case.
            if self.info.cases.iter().any(|c| c.program_hash == hash) {
                return Vec::new();
            }
            return vec![format!(
                "{dir} was trained on {} cases, none of them `{}`: the agent plays it zero-shot",
                self.info.cases.len(),
                program.name()
            )];
        }
        let mut out = Vec::new();
        if hash != self.info.program_hash {
            out.push(format!(
                "{dir} was trained on `{}`; `{}` is another program (hash {:#x}, trained {:#x}): the agent plays it zero-shot",
                self.info.workload,
                program.name(),
                hash,
                self.info.program_hash
            ));
        }
        let trained_on = self.info.hardware.clone().into_hardware("").ok();
        if trained_on.as_ref() != Some(hw) {
            out.push(format!(
                "{dir} was trained on hardware `{}` with other levels or capacities than `{}`",
                self.info.hardware.name, hw.name
            ));
        }
        out
    }

    /// The game this agent would play, or why it cannot: the network's observation and
    /// action sizes follow from the run's rules, which must fit the hardware.
    fn setup(&self, program: &Program, hw: &Hardware) -> Result<Arc<GameSetup>, AgentError> {
        let incompatible = |msg: String| AgentError::Incompatible {
            dir: self.dir.display().to_string(),
            program: program.name().to_string(),
            hardware: hw.name.clone(),
            msg,
        };
        let setup = GameSetup::new(
            Arc::new(program.clone()),
            hw.clone(),
            self.info.options.clone(),
        )
        .map_err(|e| incompatible(e.to_string()))?;
        let obs = malloc_game::observation::observation_len(setup.options());
        let net = &self.info.network;
        if obs != net.observation_len || setup.action_count() != net.action_count {
            return Err(incompatible(format!(
                "its network takes observations of {} and {} actions; this game has {obs} and {}",
                net.observation_len,
                net.action_count,
                setup.action_count()
            )));
        }
        Ok(setup)
    }

    /// The agent's mapping of `program` on `hw`: one game, greedy over the search.
    pub fn play(&self, program: &Program, hw: &Hardware) -> Result<Mapping, AgentError> {
        let setup = self.setup(program, hw)?;
        let g = train::play_greedy(&self.net, &setup, &self.search, self.info.config.seed)?;
        Ok(g.game.mapping())
    }
}
