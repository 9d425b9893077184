//! The network a run starts from (`init`): the bundled generalist, or a run folder's;
//! and the network a run's config gives a game ([`TrainConfig::network_for`]), which must
//! fit the one it starts from.

use super::run_dir::{load_network, read_run_info, RunInfo};
use super::{TrainConfig, TrainError};
use malloc_game::{observation, GameOptions, GameSetup};
use muzero::NetworkConfig;

/// What `init` names: the bundled generalist ([`crate::generalist`]).
pub const INIT_BUNDLED: &str = "bundled";

/// The run info of the network `init` names: `bundled`, or a run folder.
pub fn init_info(init: &str) -> Result<RunInfo, TrainError> {
    let info = if init == INIT_BUNDLED {
        crate::generalist::info()
    } else {
        read_run_info(std::path::Path::new(init))
    };
    info.map_err(|e| TrainError::Config(format!("init: {e}")))
}

/// The network `init` names (see [`init_info`]), to start a run from.
pub(super) fn load_init(init: &str) -> Result<muzero::MuZeroNet, TrainError> {
    let net = if init == INIT_BUNDLED {
        crate::generalist::network()
    } else {
        load_network(std::path::Path::new(init))
    };
    net.map_err(|e| TrainError::Config(format!("init: {e}")))
}

impl TrainConfig {
    /// The network for a game with these sizes; a configured one must match them.
    pub fn network_for(&self, setup: &GameSetup) -> Result<NetworkConfig, TrainError> {
        let obs = observation::observation_len(setup.options());
        let actions = setup.action_count();
        if let Some(dir) = &self.init {
            let info = init_info(dir)?;
            // Same sizes are not the same game: another order or other modes present other
            // buffers and moves behind the same indices, and the network's policy means
            // nothing there.
            let differ = differing_fields(&info.options, setup.options());
            if !differ.is_empty() {
                return Err(TrainError::Config(format!(
                    "init: `{dir}` was trained with other game options ({}); fine-tuning plays its game (drop the flags that set them)",
                    differ.join(", ")
                )));
            }
            let n = info.network;
            if n.observation_len != obs || n.action_count != actions {
                return Err(TrainError::Config(format!(
                    "init: the network of `{dir}` takes observations of {} and {} actions; this game has {obs} and {actions} (other game options or another number of fast levels; see --fast-levels)",
                    n.observation_len, n.action_count
                )));
            }
            if self.network.as_ref().is_some_and(|own| *own != n) {
                return Err(TrainError::Config(format!(
                    "network: differs from the network of the run in {dir} (init), which this run keeps"
                )));
            }
            return Ok(n);
        }
        match &self.network {
            None => Ok(NetworkConfig::small(obs, actions)),
            Some(n) if n.observation_len == obs && n.action_count == actions => Ok(n.clone()),
            Some(n) => Err(TrainError::Config(format!(
                "network: observation_len {} and action_count {} do not match this game's {obs} and {actions}",
                n.observation_len, n.action_count
            ))),
        }
    }
}

/// The fields of two game options that differ, each as `name: theirs there, ours here`.
fn differing_fields(theirs: &GameOptions, ours: &GameOptions) -> Vec<String> {
    let (Ok(a), Ok(b)) = (serde_json::to_value(theirs), serde_json::to_value(ours)) else {
        return vec!["options".into()];
    };
    accel_sim::json_differences(&a, &b, "")
        .into_iter()
        .map(|(k, v, w)| format!("{k}: {v} there, {w} here"))
        .collect()
}
