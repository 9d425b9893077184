//! A trained agent loaded from a run folder (or the bundled generalist), playing a program
//! as one noise-free game, its search stepping through the network's learned dynamics or
//! through the game itself.

use crate::generalist;
use crate::train::{self, RunInfo, TrainConfig, TrainError};
use crate::SearchModel;
use accel_sim::{Hardware, Mapping, Program};
use malloc_game::GameSetup;
use muzero::{MuZeroNet, SearchConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a trained agent cannot play a case.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The run folder could not be read or its network loaded.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// The search's simulations are out of range.
    #[error("{dir}: --simulations: {msg}")]
    Simulations {
        /// The run folder.
        dir: String,
        /// What is wrong with the value.
        msg: String,
    },
    /// The agent's network cannot play this case: its observation or actions differ
    /// (another number of fast levels, other game options).
    #[error("{dir}: the agent cannot play `{program}` on `{hardware}`: {msg}")]
    Incompatible {
        /// The run folder.
        dir: String,
        /// The program asked for.
        program: String,
        /// The hardware asked for.
        hardware: String,
        /// What differs.
        msg: String,
    },
    /// A game could not be set up on the case.
    #[error(transparent)]
    Game(#[from] malloc_game::GameError),
    /// More rounds of proposals were asked for than an agent makes.
    #[error("{dir}: --proposal-rounds: must be at most {MAX_PROPOSAL_ROUNDS}, got {rounds}")]
    ProposalRounds {
        /// The run folder.
        dir: String,
        /// The rounds asked for.
        rounds: usize,
    },
}

/// The most rounds of proposals an agent makes after its game (a training run's limit).
pub const MAX_PROPOSAL_ROUNDS: usize = 1 << 16;

/// Rounds of proposals an agent makes after its game unless told otherwise. Chosen on the
/// generalist's validation split (6 cases, one core): 0, 8, 32, 64 and 128 rounds gave
/// 1.0028x, 1.0040x, 1.0061x, 1.0084x and 1.0089x over xla by geometric mean; 128 took
/// 9.9 s on densenet121 (1,037 buffers), at the 10 s zero-shot limit, 64 about half that.
pub const DEFAULT_PROPOSAL_ROUNDS: usize = 64;

/// The network of a run's newest checkpoint, its run's game rules, and a search without
/// noise.
pub struct Agent {
    /// The run folder, or [`crate::generalist::ORIGIN`]: how messages name the agent.
    dir: PathBuf,
    info: RunInfo,
    net: MuZeroNet,
    search: SearchConfig,
    model: SearchModel,
    /// Rounds of branch proposals after its game.
    proposal_rounds: usize,
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
            proposal_rounds: DEFAULT_PROPOSAL_ROUNDS,
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

    /// This agent making `rounds` rounds of branch proposals after its game (0: the game
    /// alone; at most [`MAX_PROPOSAL_ROUNDS`]).
    pub fn with_proposal_rounds(mut self, rounds: usize) -> Result<Agent, AgentError> {
        if rounds > MAX_PROPOSAL_ROUNDS {
            return Err(AgentError::ProposalRounds {
                dir: self.dir.display().to_string(),
                rounds,
            });
        }
        self.proposal_rounds = rounds;
        Ok(self)
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

    /// The agent's mapping of `program` on `hw`: one game, greedy over the search, then
    /// rounds of branch proposals from it as its self-play makes them (the run's search,
    /// proposals per round and temperature): the fastest game met, by the simulator.
    pub fn play(&self, program: &Program, hw: &Hardware) -> Result<Mapping, AgentError> {
        let setup = self.setup(program, hw)?;
        let search = (&self.search, self.model);
        let c = &self.info.config;
        let played = train::play_greedy(&self.net, &setup, search, c.seed)?;
        if self.proposal_rounds == 0 {
            return Ok(played.game.mapping());
        }
        let config = TrainConfig {
            proposal_rounds: self.proposal_rounds,
            ..c.clone()
        };
        let best = train::improve_by_proposals(&self.net, &played.game, &config, self.model)?;
        Ok(best.mapping())
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
    fn proposals_after_the_game_keep_it_unless_faster_and_repeat() {
        let program = bench_workloads::load("diamond").unwrap();
        let hw = Hardware::tpu_v4i_like().with_capacity(1, 1 << 20).unwrap();
        let latency = |agent: &Agent| {
            let m = agent.play(&program, &hw).unwrap();
            m.validate(&program, &hw).unwrap();
            accel_sim::Simulator::new(&program, &hw)
                .run(&m, false)
                .latency_s
        };
        let game_alone = Agent::bundled(Some(4))
            .unwrap()
            .with_proposal_rounds(0)
            .unwrap();
        let with_proposals = Agent::bundled(Some(4))
            .unwrap()
            .with_proposal_rounds(4)
            .unwrap();
        let alone = latency(&game_alone);
        let improved = latency(&with_proposals);
        assert!(improved <= alone, "{improved} > {alone}");
        assert_eq!(improved, latency(&with_proposals));
        let err = Agent::bundled(Some(4))
            .unwrap()
            .with_proposal_rounds(MAX_PROPOSAL_ROUNDS + 1)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("--proposal-rounds: must be at most 65536"),
            "{err}"
        );
    }

    #[test]
    fn search_models_parse_by_name() {
        assert_eq!("game".parse(), Ok(SearchModel::Game));
        assert_eq!("learned".parse(), Ok(SearchModel::Learned));
        let err = "exact".parse::<SearchModel>().unwrap_err();
        assert!(err.contains("`learned` or `game`"), "{err}");
    }
}
