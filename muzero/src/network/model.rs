//! [`MuZeroNet`]: the three networks built from a [`NetworkConfig`], their forward passes,
//! and the [`Model`] calls the search makes (on the CPU straight through `cpu_infer`).

use super::layers::{min_max_rows, mlp, Builder, Linear, Pass, ResBlock, LN_EPS, MIN_MAX_EPS};
use super::{NetError, NetworkConfig, Result};
use crate::cpu_infer;
use crate::model::{Model, ModelError, ModelOutput};
use candle_core::{Device, Layout, Storage, StorageRef, Tensor, Var};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// MuZero's three networks (see the module docs).
pub struct MuZeroNet {
    pub(super) config: NetworkConfig,
    pub(super) device: Device,
    pub(super) vars: Vec<(String, Var)>,
    repr: Vec<Linear>,
    repr_blocks: Vec<ResBlock>,
    /// The dynamics trunk followed by its output layer `dyn.out`, whose columns are the
    /// next hidden state then the reward logits (one matmul for both heads). The first
    /// layer's input is `[hidden, one_hot(action)]`.
    dyn_layers: Vec<Linear>,
    dyn_blocks: Vec<ResBlock>,
    /// The prediction trunk followed by `pred.heads`: policy logits then value logits.
    pred_layers: Vec<Linear>,
    /// Threads a CPU inference call may use (the machine's cores, read once here).
    inference_threads: usize,
}

impl MuZeroNet {
    /// A freshly initialised network; the same seed gives the same weights.
    pub fn new(config: &NetworkConfig, seed: u64, device: &Device) -> Result<MuZeroNet> {
        config.check().map_err(NetError::Config)?;
        let c = config;
        let mut b = Builder {
            rng: StdRng::seed_from_u64(seed),
            device: device.clone(),
            vars: Vec::new(),
        };
        let mut repr = b.chain("repr", c.observation_len, &c.repr_layers)?;
        let r_last = c.repr_layers.last().copied().unwrap_or(c.observation_len);
        repr.push(b.linear(&format!("repr.{}", c.repr_layers.len()), r_last, c.hidden)?);
        let repr_blocks = (0..c.blocks)
            .map(|i| b.block(&format!("repr_block.{i}"), c.hidden))
            .collect::<Result<Vec<_>>>()?;
        let mut dyn_layers = b.chain("dyn", c.hidden + c.action_count, &c.dyn_layers)?;
        let d_last = c
            .dyn_layers
            .last()
            .copied()
            .unwrap_or(c.hidden + c.action_count);
        dyn_layers.push(b.linear("dyn.out", d_last, c.hidden + c.reward_support.bins)?);
        let dyn_blocks = (0..c.blocks)
            .map(|i| b.block(&format!("dyn_block.{i}"), c.hidden))
            .collect::<Result<Vec<_>>>()?;
        let mut pred_layers = b.chain("pred", c.hidden, &c.pred_layers)?;
        let p_last = c.pred_layers.last().copied().unwrap_or(c.hidden);
        pred_layers.push(b.linear("pred.heads", p_last, c.action_count + c.value_support.bins)?);
        let mut vars = b.vars;
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(MuZeroNet {
            config: config.clone(),
            device: device.clone(),
            vars,
            repr,
            repr_blocks,
            dyn_layers,
            dyn_blocks,
            pred_layers,
            inference_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        })
    }

    /// The sizes the network was built with.
    pub fn config(&self) -> &NetworkConfig {
        &self.config
    }

    /// Where its tensors live (the CPU, or a CUDA device).
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Every parameter, sorted by name.
    pub fn vars(&self) -> &[(String, Var)] {
        &self.vars
    }

    /// A deep copy with its own storage: what a self-play thread runs while the learner
    /// keeps updating this one.
    pub fn snapshot(&self) -> Result<MuZeroNet> {
        let copy = MuZeroNet::new(&self.config, 0, &self.device)?;
        copy.copy_weights_from(self)?;
        Ok(copy)
    }

    /// Overwrites this network's weights with `other`'s (same config required).
    pub fn copy_weights_from(&self, other: &MuZeroNet) -> Result<()> {
        if self.config != other.config {
            return Err(NetError::Input(
                "copy_weights_from: the two networks have different configs".into(),
            ));
        }
        for ((_, dst), (_, src)) in self.vars.iter().zip(&other.vars) {
            dst.set(&src.as_tensor().to_device(&self.device)?.detach())?;
        }
        Ok(())
    }

    /// The representation before the min-max scaling.
    pub(super) fn represent_raw(&self, obs: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        let mut x = mlp(&self.repr, obs, false, pass)?;
        for b in &self.repr_blocks {
            x = b.forward(&x, pass)?;
        }
        Ok(x)
    }

    /// The dynamics before the min-max scaling: `(next hidden, reward logits)` for
    /// `actions` (u32, `[B]`), both possibly strided views of one `[B, H + bins]` output.
    pub(super) fn dynamics_raw(
        &self,
        hidden: &Tensor,
        actions: &Tensor,
        pass: Pass,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let h = self.config.hidden;
        let a = self.config.action_count;
        let last = self.dyn_layers.len() - 1;
        // The first layer on `[hidden, one_hot(action)]`, without building either: the
        // one-hot part of the product is just the action's row of the weight.
        let (w, b) = self.dyn_layers[0].params(pass);
        let action_rows = w.narrow(0, h, a)?.index_select(actions, 0)?;
        let mut x = (hidden.matmul(&w.narrow(0, 0, h)?)? + action_rows)?.broadcast_add(b)?;
        for (i, layer) in self.dyn_layers.iter().enumerate() {
            if i > 0 {
                x = layer.forward(&x, pass)?;
            }
            if i < last {
                x = x.relu()?;
            }
        }
        let reward = x.narrow(1, h, self.config.reward_support.bins)?;
        let mut next = x.narrow(1, 0, h)?;
        for b in &self.dyn_blocks {
            next = b.forward(&next, pass)?;
        }
        Ok((next, reward))
    }

    /// `[B, A + value bins]`: policy logits then value logits.
    pub(super) fn predict(&self, hidden: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        mlp(&self.pred_layers, hidden, false, pass)
    }

    /// `act` (at `position` of its batch) as a weight-row index, if the network has it.
    fn action_index(&self, position: usize, act: usize) -> Result<u32> {
        let a = self.config.action_count;
        if act >= a {
            return Err(NetError::Input(format!(
                "action {act} at position {position} is out of range (the network has {a} actions)"
            )));
        }
        Ok(act as u32)
    }

    pub(super) fn actions_tensor(&self, actions: impl Iterator<Item = usize>) -> Result<Tensor> {
        let mut idx = Vec::with_capacity(actions.size_hint().0);
        for (i, act) in actions.enumerate() {
            idx.push(self.action_index(i, act)?);
        }
        let n = idx.len();
        Ok(Tensor::from_vec(idx, n, &self.device)?)
    }

    /// Scales raw hidden states (`[B, H]`) and runs the prediction on them, in candle.
    fn finish(&self, raw_hidden: &Tensor, reward: Option<&Tensor>) -> Result<ModelOutput> {
        let h = self.config.hidden;
        let batch = raw_hidden.dim(0)?;
        let mut hidden = raw_hidden.flatten_all()?.to_vec1::<f32>()?;
        min_max_rows(&mut hidden, h);
        let scaled = Tensor::from_slice(&hidden, (batch, h), &self.device)?;
        let heads = self
            .predict(&scaled, Pass::Infer)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let reward = match reward {
            Some(r) => r.flatten_all()?.to_vec1::<f32>()?,
            None => Vec::new(),
        };
        Ok(self.decode(hidden, &heads, &reward, batch))
    }

    /// The model's outputs from scaled hidden states, prediction heads (`[B, A + value
    /// bins]`) and reward logits (`[B, reward bins]`, or empty at the roots).
    fn decode(&self, hidden: Vec<f32>, heads: &[f32], reward: &[f32], batch: usize) -> ModelOutput {
        let c = &self.config;
        let a = c.action_count;
        let vs = &c.value_support;
        let mut policy_logits = Vec::with_capacity(batch * a);
        let mut value = Vec::with_capacity(batch);
        for row in heads.chunks_exact(a + vs.bins) {
            policy_logits.extend_from_slice(&row[..a]);
            value.push(vs.decode_logits(&row[a..]));
        }
        let rs = &c.reward_support;
        let reward = if reward.is_empty() {
            vec![0.0; batch]
        } else {
            reward
                .chunks_exact(rs.bins)
                .map(|row| rs.decode_logits(row))
                .collect()
        };
        ModelOutput {
            hidden,
            reward,
            policy_logits,
            value,
        }
    }

    /// Runs `f` on the weights as plain slices (the Vars' own storage, locked for reading
    /// meanwhile); `None` off the CPU, where inference stays in candle.
    fn with_cpu_weights<R>(&self, f: impl FnOnce(&cpu_infer::Weights<'_>) -> R) -> Option<R> {
        type Guard<'a> = (StorageRef<'a>, &'a Layout);
        fn lock(t: &Tensor) -> Guard<'_> {
            t.storage_and_layout()
        }
        fn slice<'a>(g: &'a Guard<'_>) -> Option<&'a [f32]> {
            let Storage::Cpu(cpu) = &*g.0 else {
                return None;
            };
            let (start, end) = g.1.contiguous_offsets()?;
            cpu.as_slice::<f32>().ok()?.get(start..end)
        }
        fn linears(ls: &[Linear]) -> Vec<Guard<'_>> {
            ls.iter().flat_map(|l| [lock(&l.wd), lock(&l.bd)]).collect()
        }
        fn block_guards(bs: &[ResBlock]) -> Vec<Guard<'_>> {
            bs.iter()
                .flat_map(|b| {
                    [
                        &b.ln.gamma_d,
                        &b.ln.beta_d,
                        &b.fc1.wd,
                        &b.fc1.bd,
                        &b.fc2.wd,
                        &b.fc2.bd,
                    ]
                    .map(lock)
                })
                .collect()
        }
        fn dense<'a>(g: &'a [Guard<'_>]) -> Option<Vec<cpu_infer::Dense<'a>>> {
            g.chunks_exact(2)
                .map(|wb| {
                    let dims = wb[0].1.dims();
                    Some(cpu_infer::Dense {
                        w: slice(&wb[0])?,
                        b: slice(&wb[1])?,
                        input: dims[0],
                        output: dims[1],
                    })
                })
                .collect()
        }
        fn blocks<'a>(g: &'a [Guard<'_>]) -> Option<Vec<cpu_infer::Block<'a>>> {
            g.chunks_exact(6)
                .map(|p| {
                    let mut fc = dense(&p[2..])?.into_iter();
                    Some(cpu_infer::Block {
                        gamma: slice(&p[0])?,
                        beta: slice(&p[1])?,
                        fc1: fc.next()?,
                        fc2: fc.next()?,
                    })
                })
                .collect()
        }
        if !self.device.is_cpu() {
            return None;
        }
        let guards = [
            linears(&self.repr),
            block_guards(&self.repr_blocks),
            linears(&self.dyn_layers),
            block_guards(&self.dyn_blocks),
            linears(&self.pred_layers),
        ];
        let weights = cpu_infer::Weights {
            hidden: self.config.hidden,
            repr: dense(&guards[0])?,
            repr_blocks: blocks(&guards[1])?,
            dyn_layers: dense(&guards[2])?,
            dyn_blocks: blocks(&guards[3])?,
            pred: dense(&guards[4])?,
            ln_eps: LN_EPS as f32,
            min_max_eps: MIN_MAX_EPS as f32,
        };
        Some(f(&weights))
    }

    fn initial(&self, observations: &[f32], batch: usize) -> Result<ModelOutput> {
        let o = self.config.observation_len;
        if batch == 0 || observations.len() != batch * o {
            return Err(NetError::Input(format!(
                "initial_inference: {} observation values for batch {batch} x observation_len {o}",
                observations.len()
            )));
        }
        let input = cpu_infer::Input::Observations(observations);
        match self.with_cpu_weights(|w| w.run(input, batch, self.inference_threads)) {
            Some(out) => Ok(self.decode(out.hidden, &out.heads, &out.reward_logits, batch)),
            None => self.initial_candle(observations, batch),
        }
    }

    /// [`MuZeroNet::initial`] through candle: the path off the CPU, and the reference the
    /// CPU path is tested against.
    fn initial_candle(&self, observations: &[f32], batch: usize) -> Result<ModelOutput> {
        let o = self.config.observation_len;
        let obs = Tensor::from_slice(observations, (batch, o), &self.device)?;
        let raw = self.represent_raw(&obs, Pass::Infer)?;
        self.finish(&raw, None)
    }

    fn recurrent(&self, hidden: &[f32], actions: &[usize], batch: usize) -> Result<ModelOutput> {
        let h = self.config.hidden;
        if batch == 0 || hidden.len() != batch * h || actions.len() != batch {
            return Err(NetError::Input(format!(
                "recurrent_inference: {} hidden values and {} actions for batch {batch} \
                 (hidden_len {h})",
                hidden.len(),
                actions.len()
            )));
        }
        for (i, &act) in actions.iter().enumerate() {
            self.action_index(i, act)?;
        }
        let input = cpu_infer::Input::Transitions { hidden, actions };
        match self.with_cpu_weights(|w| w.run(input, batch, self.inference_threads)) {
            Some(out) => Ok(self.decode(out.hidden, &out.heads, &out.reward_logits, batch)),
            None => self.recurrent_candle(hidden, actions, batch),
        }
    }

    /// [`MuZeroNet::recurrent`] through candle.
    fn recurrent_candle(
        &self,
        hidden: &[f32],
        actions: &[usize],
        batch: usize,
    ) -> Result<ModelOutput> {
        let h = self.config.hidden;
        let hidden = Tensor::from_slice(hidden, (batch, h), &self.device)?;
        let actions = self.actions_tensor(actions.iter().copied())?;
        let (next, reward) = self.dynamics_raw(&hidden, &actions, Pass::Infer)?;
        self.finish(&next, Some(&reward))
    }
}

impl Model for MuZeroNet {
    fn observation_len(&self) -> usize {
        self.config.observation_len
    }

    fn hidden_len(&self) -> usize {
        self.config.hidden
    }

    fn action_count(&self) -> usize {
        self.config.action_count
    }

    fn initial_inference(
        &self,
        observations: &[f32],
        batch: usize,
    ) -> std::result::Result<ModelOutput, ModelError> {
        Ok(self.initial(observations, batch)?)
    }

    fn recurrent_inference(
        &self,
        hidden: &[f32],
        actions: &[usize],
        batch: usize,
    ) -> std::result::Result<ModelOutput, ModelError> {
        Ok(self.recurrent(hidden, actions, batch)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::fixtures::tiny;
    use crate::support::Support;
    use rand::Rng;

    fn assert_close(what: &str, fast: &[f32], reference: &[f32]) {
        assert_eq!(fast.len(), reference.len(), "{what}: lengths");
        for (i, (a, b)) in fast.iter().zip(reference).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                "{what}[{i}]: CPU path {a} vs candle {b}"
            );
        }
    }

    /// The CPU inference path against candle's, on two residual blocks and deeper trunks,
    /// with a batch that leaves a partial group of rows; and the CPU path gives the same
    /// bits on 1 and on 3 threads.
    #[test]
    fn cpu_inference_matches_candle_and_ignores_thread_count() {
        let config = NetworkConfig {
            observation_len: 20,
            action_count: 5,
            hidden: 16,
            repr_layers: vec![24, 12],
            blocks: 2,
            dyn_layers: vec![18, 14],
            pred_layers: vec![11, 9],
            value_support: Support::symmetric(7, 10.0),
            reward_support: Support::symmetric(5, 10.0),
        };
        let mut net = MuZeroNet::new(&config, 3, &Device::Cpu).unwrap();
        let batch = 2 * cpu_infer::ROWS_PER_TASK + 37;
        let mut rng = StdRng::seed_from_u64(9);
        let obs: Vec<f32> = (0..batch * config.observation_len)
            .map(|_| rng.random_range(-2.0..2.0))
            .collect();
        let actions: Vec<usize> = (0..batch).map(|i| (i * 7) % config.action_count).collect();

        let reference = net.initial_candle(&obs, batch).unwrap();
        let mut runs = Vec::new();
        for threads in [1, 3] {
            net.inference_threads = threads;
            let fast = net.initial(&obs, batch).unwrap();
            let next = net.recurrent(&fast.hidden, &actions, batch).unwrap();
            runs.push((fast, next));
        }
        assert_eq!(runs[0], runs[1], "1 and 3 threads differ");
        let (fast, next) = &runs[0];
        assert_close("initial hidden", &fast.hidden, &reference.hidden);
        assert_close(
            "initial policy",
            &fast.policy_logits,
            &reference.policy_logits,
        );
        assert_close("initial value", &fast.value, &reference.value);
        let reference = net.recurrent_candle(&fast.hidden, &actions, batch).unwrap();
        assert_close("next hidden", &next.hidden, &reference.hidden);
        assert_close("reward", &next.reward, &reference.reward);
        assert_close("next policy", &next.policy_logits, &reference.policy_logits);
        assert_close("next value", &next.value, &reference.value);
        assert!(
            next.reward.iter().any(|&r| r != 0.0),
            "rewards were decoded"
        );
    }

    #[test]
    fn hidden_states_are_min_max_scaled() {
        let net = MuZeroNet::new(&tiny(), 3, &Device::Cpu).unwrap();
        let obs: Vec<f32> = (0..12).map(|i| (i as f32 * 0.37).sin()).collect();
        let out = net.initial(&obs, 2).unwrap();
        for row in out.hidden.chunks(8) {
            let min = row.iter().copied().fold(f32::MAX, f32::min);
            let max = row.iter().copied().fold(f32::MIN, f32::max);
            assert!(min.abs() < 1e-6 && (max - 1.0).abs() < 1e-4, "{row:?}");
        }
        assert_eq!(out.reward, vec![0.0, 0.0]);
        let next = net.recurrent(&out.hidden, &[2, 0], 2).unwrap();
        assert_eq!(next.policy_logits.len(), 6);
        for row in next.hidden.chunks(8) {
            let max = row.iter().copied().fold(f32::MIN, f32::max);
            assert!((max - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn same_seed_same_weights_and_parameter_count() {
        let c = tiny();
        let a = MuZeroNet::new(&c, 7, &Device::Cpu).unwrap();
        let b = MuZeroNet::new(&c, 7, &Device::Cpu).unwrap();
        assert!(a.to_bytes().unwrap() == b.to_bytes().unwrap());
        let counted: usize = a.vars().iter().map(|(_, v)| v.elem_count()).sum();
        assert_eq!(counted, c.parameter_count());
        let r = NetworkConfig::reference();
        let rn = MuZeroNet::new(&r, 0, &Device::Cpu).unwrap();
        let counted: usize = rn.vars().iter().map(|(_, v)| v.elem_count()).sum();
        assert_eq!(counted, r.parameter_count());
        let shape = |name: &str| {
            rn.vars()
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.dims().to_vec())
                .unwrap()
        };
        assert_eq!(shape("repr.0.weight"), vec![512, 256]);
        assert_eq!(shape("repr.1.weight"), vec![256, 256]);
        assert_eq!(shape("dyn.0.weight"), vec![269, 256]);
        // Next hidden state and 25 reward bins.
        assert_eq!(shape("dyn.out.weight"), vec![256, 281]);
        assert_eq!(shape("pred.0.weight"), vec![256, 256]);
        // 13 policy logits and 25 value bins.
        assert_eq!(shape("pred.heads.weight"), vec![256, 38]);
        assert_eq!(rn.vars().len(), 12);
    }

    #[test]
    fn bad_inference_input_is_an_error() {
        let net = MuZeroNet::new(&tiny(), 3, &Device::Cpu).unwrap();
        let e = net.initial(&[0.0; 5], 1).unwrap_err().to_string();
        assert!(e.contains("5 observation values for batch 1"), "{e}");
        let e = net.recurrent(&[0.0; 8], &[3], 1).unwrap_err().to_string();
        assert!(e.contains("action 3 at position 0 is out of range"), "{e}");
    }
}
