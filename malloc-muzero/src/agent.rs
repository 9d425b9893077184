//! A trained agent loaded from a run folder (or the bundled generalist), playing a program
//! as one noise-free game, its search stepping through the network's learned dynamics or
//! through the game itself.

use crate::generalist;
use crate::train::{self, RunInfo, TrainError};
use crate::SearchModel;
use accel_sim::{Hardware, Mapping, Program};
use malloc_game::GameSetup;
use muzero::{MuZeroNet, SearchConfig};
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
    model: SearchModel,
}

impl Agent {
    /// Loads the agent of run folder `dir`; `simulations` overrides the run's evaluation
    /// setting. It searches the game ([`SearchModel::Game`], whatever the run's
    /// `search_model`); `with_search_model(SearchModel::Learned)` searches its learned model.
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
            model: SearchModel::default(),
        })
    }

    /// This agent with its search stepping through `model`.
    pub fn with_search_model(mut self, model: SearchModel) -> Agent {
        self.model = model;
        self
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
        let search = (&self.search, self.model);
        let played = train::play_greedy(&self.net, &setup, search, self.info.config.seed)?;
        Ok(played.game.mapping())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searching_the_game_itself_plays_a_valid_reproducible_mapping() {
        let program = bench_workloads::load("diamond").unwrap();
        let hw = Hardware::tpu_v4i_like().with_capacity(1, 1 << 20).unwrap();
        let agent = Agent::bundled(Some(8))
            .unwrap()
            .with_search_model(SearchModel::Game);
        let first = agent.play(&program, &hw).unwrap();
        first.validate(&program, &hw).unwrap();
        assert_eq!(first, agent.play(&program, &hw).unwrap());
    }

    #[test]
    fn search_models_parse_by_name() {
        assert_eq!("game".parse(), Ok(SearchModel::Game));
        assert_eq!("learned".parse(), Ok(SearchModel::Learned));
        let err = "exact".parse::<SearchModel>().unwrap_err();
        assert!(err.contains("`learned` or `game`"), "{err}");
    }
}
