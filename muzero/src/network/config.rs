//! The networks' sizes ([`NetworkConfig`]) and the bounds that keep a careless one from
//! aborting the process.

use crate::support::Support;
use serde::{Deserialize, Serialize};

/// The widest layer (and the most residual blocks) a network may have.
pub const MAX_WIDTH: usize = 1 << 16;
/// The most parameters a network may have (4 GiB of f32).
pub const MAX_PARAMETERS: usize = 1 << 30;

/// Sizes of the three networks. See the module docs for how they are wired.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkConfig {
    /// Length of the observation vector the representation reads.
    pub observation_len: usize,
    /// Number of discrete actions: the policy head's width, and the one-hot the dynamics
    /// read.
    pub action_count: usize,
    /// Width of the hidden state.
    pub hidden: usize,
    /// Widths of the representation MLP's inner layers (its output is `hidden` wide).
    pub repr_layers: Vec<usize>,
    /// Residual blocks after the representation and after the dynamics.
    pub blocks: usize,
    /// Widths of the dynamics trunk (input `hidden + action_count`).
    pub dyn_layers: Vec<usize>,
    /// Widths of the prediction trunk (input `hidden`).
    pub pred_layers: Vec<usize>,
    /// The value head's categorical support.
    pub value_support: Support,
    /// The reward head's categorical support.
    pub reward_support: Support,
}

impl NetworkConfig {
    /// The bench's reference shape (issue 4): observation 512, hidden 256, 13 actions,
    /// representation 512-256-256, dynamics 269-256-256 with a reward head, prediction
    /// 256-256 with policy and value heads, no residual blocks. The value and reward heads
    /// are categorical with the default 25-bin supports, as in training: the bench then
    /// times the network the agent really runs (the two heads add 50 output columns to
    /// the 256-wide layers, under 7% of the multiply-adds).
    pub fn reference() -> NetworkConfig {
        NetworkConfig {
            observation_len: 512,
            action_count: 13,
            hidden: 256,
            repr_layers: vec![256],
            blocks: 0,
            dyn_layers: vec![256],
            pred_layers: vec![256],
            value_support: Support::default(),
            reward_support: Support::default(),
        }
    }

    /// A small default for training on 2 CPU cores: hidden 128 with one residual block in
    /// h and g.
    pub fn small(observation_len: usize, action_count: usize) -> NetworkConfig {
        NetworkConfig {
            observation_len,
            action_count,
            hidden: 128,
            repr_layers: vec![256],
            blocks: 1,
            dyn_layers: vec![256],
            pred_layers: vec![128],
            value_support: Support::default(),
            reward_support: Support::default(),
        }
    }

    /// Rejects impossible sizes, naming the field.
    pub fn check(&self) -> std::result::Result<(), String> {
        for (field, v) in [
            ("observation_len", self.observation_len),
            ("action_count", self.action_count),
            ("hidden", self.hidden),
        ] {
            if v == 0 {
                return Err(format!("{field} is 0, must be at least 1"));
            }
        }
        for (field, layers) in [
            ("repr_layers", &self.repr_layers),
            ("dyn_layers", &self.dyn_layers),
            ("pred_layers", &self.pred_layers),
        ] {
            if let Some(i) = layers.iter().position(|&w| w == 0) {
                return Err(format!("{field}[{i}] is 0, must be at least 1"));
            }
        }
        self.value_support.check("value_support")?;
        self.reward_support.check("reward_support")?;
        // A careless width (`"hidden": 1e9`) must be an error, not an allocation that aborts
        // the process: every width and the total are capped, the total in checked arithmetic.
        let widest = [
            self.hidden,
            self.observation_len,
            self.action_count,
            self.value_support.bins,
            self.reward_support.bins,
        ]
        .into_iter()
        .chain(self.repr_layers.iter().copied())
        .chain(self.dyn_layers.iter().copied())
        .chain(self.pred_layers.iter().copied())
        .max()
        .unwrap_or(0);
        if widest > MAX_WIDTH {
            return Err(format!(
                "a width of {widest} is more than the {MAX_WIDTH} a network may have"
            ));
        }
        if self.blocks > MAX_WIDTH {
            return Err(format!("blocks: {} is more than {MAX_WIDTH}", self.blocks));
        }
        let params = self.parameter_count();
        if params > MAX_PARAMETERS {
            return Err(format!(
                "{params} parameters is more than the {MAX_PARAMETERS} a network may have"
            ));
        }
        Ok(())
    }

    /// Number of scalar parameters (`usize::MAX` when the count would overflow).
    pub fn parameter_count(&self) -> usize {
        self.checked_parameter_count().unwrap_or(usize::MAX)
    }

    fn checked_parameter_count(&self) -> Option<usize> {
        let lin = |i: usize, o: usize| i.checked_mul(o)?.checked_add(o);
        let chain = |input: usize, widths: &[usize]| -> Option<(usize, usize)> {
            let mut total: usize = 0;
            let mut last = input;
            for &w in widths {
                total = total.checked_add(lin(last, w)?)?;
                last = w;
            }
            Some((total, last))
        };
        let h = self.hidden;
        let block = h.checked_mul(2)?.checked_add(lin(h, h)?.checked_mul(2)?)?;
        let (repr, r_last) = chain(self.observation_len, &self.repr_layers)?;
        let (dyn_, d_last) = chain(h.checked_add(self.action_count)?, &self.dyn_layers)?;
        let (pred, p_last) = chain(h, &self.pred_layers)?;
        [
            repr,
            lin(r_last, h)?,
            dyn_,
            lin(d_last, h)?,
            lin(d_last, self.reward_support.bins)?,
            pred,
            lin(p_last, self.action_count)?,
            lin(p_last, self.value_support.bins)?,
            self.blocks.checked_mul(2)?.checked_mul(block)?,
        ]
        .into_iter()
        .try_fold(0usize, |acc, x| acc.checked_add(x))
    }
}

#[cfg(test)]
mod tests {
    use crate::network::fixtures::tiny;
    use crate::network::{MuZeroNet, NetError};
    use candle_core::Device;

    #[test]
    fn careless_sizes_are_errors_not_aborts() {
        let mut c = tiny();
        c.hidden = 1_000_000_000;
        assert!(c.check().unwrap_err().contains("width"), "{:?}", c.check());
        let mut c = tiny();
        c.repr_layers = vec![60_000, 60_000, 60_000];
        assert!(c.check().unwrap_err().contains("parameters"));
        let mut c = tiny();
        c.blocks = usize::MAX / 2;
        assert!(c.check().is_err());
        assert_eq!(c.parameter_count(), usize::MAX);
        assert!(tiny().check().is_ok());
    }

    #[test]
    fn config_check_names_the_field() {
        let mut c = tiny();
        c.dyn_layers = vec![4, 0];
        assert_eq!(
            c.check().unwrap_err(),
            "dyn_layers[1] is 0, must be at least 1"
        );
        let mut c = tiny();
        c.hidden = 0;
        assert_eq!(c.check().unwrap_err(), "hidden is 0, must be at least 1");
        let mut c = tiny();
        c.reward_support.bins = 0;
        assert!(c.check().unwrap_err().starts_with("reward_support.bins"));
        assert!(matches!(
            MuZeroNet::new(&c, 0, &Device::Cpu),
            Err(NetError::Config(_))
        ));
    }
}
