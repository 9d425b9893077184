//! EGRL's policy-gradient learner: discrete soft actor-critic (SAC) on the shared replay
//! buffer.
//!
//! Why SAC and not PPO: the replay buffer is shared with the evolutionary population, so
//! most of what the learner sees was played by other policies. SAC is off-policy and
//! learns from it; PPO's clipped ratio needs samples from (nearly) its own policy and
//! would throw the population's experience away. The EGRL paper builds on SAC too, in its
//! discrete form.
//!
//! The problem is a one-step episode: the state is the graph, the action is a level per
//! decision, the reward is the fitness. The critic is a GNN giving per decision and level
//! a value `q[d, l]`, and `Q(a) = c + sum_d q[d, a_d]` (an additive critic over the
//! factored action, fitted by least squares to the replayed fitness). The actor is a GNN
//! policy, `pi[d] = softmax(logits[d])`, trained on SAC's discrete actor loss
//! `sum_d sum_l pi[d, l] (alpha log pi[d, l] - q[d, l])`, whose minimum is
//! `softmax(q[d] / alpha)`. The temperature `alpha` is tuned so the mean entropy per
//! decision tracks `target_entropy * ln(levels)`.

use crate::gnn::{forward, GnnShape, GraphTensors, Params, Vars};
use crate::problem::Assignment;
use candle_core::{backprop::GradStore, DType, Device, Result, Tensor, Var, D};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The learner's knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LearnerConfig {
    /// Adam's step size for the actor and the critic.
    pub learning_rate: f64,
    /// Assignments per gradient step, drawn from the replay buffer.
    pub batch: usize,
    /// Gradient steps per generation.
    pub steps_per_generation: usize,
    /// Games the actor plays per generation (sampled from its policy).
    pub rollouts_per_generation: usize,
    /// The entropy's first weight in the actor's objective (SAC's temperature); it then
    /// adapts toward `target_entropy`.
    pub initial_alpha: f64,
    /// Target entropy per decision, as a share of the uniform policy's `ln(levels)`.
    pub target_entropy: f64,
    /// Step of `ln(alpha)` per unit of entropy error.
    pub alpha_learning_rate: f64,
}

impl Default for LearnerConfig {
    fn default() -> Self {
        LearnerConfig {
            learning_rate: 1e-3,
            batch: 64,
            steps_per_generation: 1,
            rollouts_per_generation: 8,
            initial_alpha: 1e-3,
            target_entropy: 0.3,
            alpha_learning_rate: 0.05,
        }
    }
}

/// Adam over a list of variables, its moments kept for checkpoints.
struct Adam {
    lr: f64,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    t: u64,
}

const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
const EPS: f64 = 1e-8;

impl Adam {
    fn new(vars: &[Var], lr: f64) -> Result<Adam> {
        let zeros = |v: &Var| v.as_tensor().zeros_like();
        Ok(Adam {
            lr,
            m: vars.iter().map(zeros).collect::<Result<_>>()?,
            v: vars.iter().map(zeros).collect::<Result<_>>()?,
            t: 0,
        })
    }

    fn step(&mut self, vars: &[Var], grads: &GradStore) -> Result<()> {
        self.t += 1;
        let c1 = 1.0 - BETA1.powi(self.t.min(i32::MAX as u64) as i32);
        let c2 = 1.0 - BETA2.powi(self.t.min(i32::MAX as u64) as i32);
        for (i, var) in vars.iter().enumerate() {
            let Some(g) = grads.get(var) else { continue };
            // Gradients of ops on variables track their graph: without `detach` every
            // moment would keep every earlier step's graph alive (gigabytes in a minute).
            let g = g.detach();
            self.m[i] = ((&self.m[i] * BETA1)? + (&g * (1.0 - BETA1))?)?.detach();
            self.v[i] = ((&self.v[i] * BETA2)? + (g.sqr()? * (1.0 - BETA2))?)?.detach();
            let step = ((&self.m[i] / c1)? / ((&self.v[i] / c2)?.sqrt()? + EPS)?)?;
            var.set(&(var.as_tensor().detach() - (step * self.lr)?)?)?;
        }
        Ok(())
    }

    fn state(&self) -> Result<AdamState> {
        let flat = |ts: &[Tensor]| {
            ts.iter()
                .map(|t| t.flatten_all()?.to_vec1::<f32>())
                .collect::<Result<Vec<_>>>()
        };
        Ok(AdamState {
            m: flat(&self.m)?,
            v: flat(&self.v)?,
            t: self.t,
        })
    }

    fn restore(vars: &[Var], lr: f64, s: &AdamState) -> Result<Adam> {
        let mut a = Adam::new(vars, lr)?;
        if s.m.len() != vars.len() || s.v.len() != vars.len() {
            return Err(candle_core::Error::Msg(
                "optimizer state of another network".into(),
            ));
        }
        for (i, var) in vars.iter().enumerate() {
            a.m[i] = Tensor::from_slice(&s.m[i], var.dims(), var.device())?;
            a.v[i] = Tensor::from_slice(&s.v[i], var.dims(), var.device())?;
        }
        a.t = s.t;
        Ok(a)
    }
}

/// Adam's moments and step count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdamState {
    /// First moments, one vector per variable.
    pub m: Vec<Vec<f32>>,
    /// Second moments, one vector per variable.
    pub v: Vec<Vec<f32>>,
    /// Steps taken.
    pub t: u64,
}

/// Everything a checkpoint keeps of the learner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LearnerState {
    /// The policy network.
    pub actor: Params,
    /// The value network.
    pub critic: Params,
    /// The critic's output bias.
    pub critic_bias: f32,
    /// The actor's Adam state.
    pub actor_adam: AdamState,
    /// The critic's Adam state.
    pub critic_adam: AdamState,
    /// The logarithm of the entropy's weight.
    pub log_alpha: f64,
    /// Gradient steps taken.
    pub steps: u64,
}

impl LearnerState {
    /// The state of a learner that has not trained: random networks, no Adam moments.
    pub fn fresh(shape: GnnShape, config: &LearnerConfig, rng: &mut impl Rng) -> LearnerState {
        let no_moments = AdamState {
            m: vec![],
            v: vec![],
            t: 0,
        };
        LearnerState {
            actor: shape.init(rng),
            critic: shape.init(rng),
            critic_bias: 0.0,
            actor_adam: no_moments.clone(),
            critic_adam: no_moments,
            log_alpha: config.initial_alpha.max(1e-12).ln(),
            steps: 0,
        }
    }
}

/// What one gradient step measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepStats {
    /// The critic's mean squared error on the batch.
    pub critic_loss: f64,
    /// Mean entropy per decision of the actor.
    pub entropy: f64,
    /// The entropy's weight after the step.
    pub alpha: f64,
}

/// The SAC learner over one problem's graph.
pub struct Learner {
    config: LearnerConfig,
    shape: GnnShape,
    graph: Arc<GraphTensors>,
    actor: Vars,
    critic: Vars,
    critic_bias: Var,
    actor_adam: Adam,
    critic_adam: Adam,
    log_alpha: f64,
    steps: u64,
}

impl Learner {
    /// A fresh learner with random networks.
    pub fn new(
        shape: GnnShape,
        graph: Arc<GraphTensors>,
        config: LearnerConfig,
        rng: &mut impl Rng,
    ) -> Result<Learner> {
        let state = LearnerState::fresh(shape, &config, rng);
        Learner::restore(shape, graph, config, &state)
    }

    /// A learner from a checkpoint (empty Adam moments start fresh).
    pub fn restore(
        shape: GnnShape,
        graph: Arc<GraphTensors>,
        config: LearnerConfig,
        s: &LearnerState,
    ) -> Result<Learner> {
        let device = Device::Cpu;
        if !shape.fits(&s.actor) || !shape.fits(&s.critic) {
            return Err(candle_core::Error::Msg(
                "learner state of another network shape".into(),
            ));
        }
        let actor = Vars::new(&s.actor, &shape, &device)?;
        let critic = Vars::new(&s.critic, &shape, &device)?;
        let critic_bias = Var::from_tensor(&Tensor::new(&[s.critic_bias], &device)?)?;
        let critic_vars = critic_all(&critic, &critic_bias);
        let (actor_adam, critic_adam) = if s.actor_adam.t == 0 && s.actor_adam.m.is_empty() {
            (
                Adam::new(&actor.0, config.learning_rate)?,
                Adam::new(&critic_vars, config.learning_rate)?,
            )
        } else {
            (
                Adam::restore(&actor.0, config.learning_rate, &s.actor_adam)?,
                Adam::restore(&critic_vars, config.learning_rate, &s.critic_adam)?,
            )
        };
        Ok(Learner {
            config,
            shape,
            graph,
            actor,
            critic,
            critic_bias,
            actor_adam,
            critic_adam,
            log_alpha: s.log_alpha,
            steps: s.steps,
        })
    }

    /// Everything a checkpoint keeps: the networks, their Adam states, the temperature.
    pub fn state(&self) -> Result<LearnerState> {
        Ok(LearnerState {
            actor: self.actor.params()?,
            critic: self.critic.params()?,
            critic_bias: self.critic_bias.as_tensor().to_vec1::<f32>()?[0],
            actor_adam: self.actor_adam.state()?,
            critic_adam: self.critic_adam.state()?,
            log_alpha: self.log_alpha,
            steps: self.steps,
        })
    }

    /// Gradient steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }
    /// The entropy's weight in the actor's objective now.
    pub fn alpha(&self) -> f64 {
        self.log_alpha.exp()
    }

    /// The actor's parameters (for migration into the population).
    pub fn actor_params(&self) -> Result<Params> {
        self.actor.params()
    }

    /// The actor's logits, `decisions x levels` row-major.
    pub fn actor_logits(&self) -> Result<Vec<f32>> {
        forward(&self.shape, &self.actor.tensors(), &self.graph)?
            .flatten_all()?
            .to_vec1::<f32>()
    }

    /// One gradient step of the critic, then of the actor and alpha, on `batch`
    /// (assignments with their fitness).
    pub fn train_step(&mut self, batch: &[(&Assignment, f64)]) -> Result<StepStats> {
        let device = Device::Cpu;
        let (d, l) = (self.graph.decisions(), self.shape.levels);
        let b = batch.len();
        let mut onehot = vec![0f32; b * d * l];
        for (i, (a, _)) in batch.iter().enumerate() {
            for (k, &level) in a.0.iter().enumerate().take(d) {
                onehot[i * d * l + k * l + (level as usize).min(l - 1)] = 1.0;
            }
        }
        let onehot = Tensor::from_slice(&onehot, (b, d * l), &device)?;
        let target: Vec<f32> = batch.iter().map(|(_, f)| *f as f32).collect();
        let target = Tensor::from_slice(&target, (b, 1), &device)?;
        let q = forward(&self.shape, &self.critic.tensors(), &self.graph)?;
        let pred = onehot
            .matmul(&q.reshape((d * l, 1))?)?
            .broadcast_add(self.critic_bias.as_tensor())?;
        let critic_loss = (pred - target)?.sqr()?.mean_all()?;
        let grads = critic_loss.backward()?;
        self.critic_adam
            .step(&critic_all(&self.critic, &self.critic_bias), &grads)?;

        let q = q.detach();
        let logits = forward(&self.shape, &self.actor.tensors(), &self.graph)?;
        let logp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
        let p = logp.exp()?;
        let alpha = self.alpha();
        let inner = ((&logp * alpha)? - q)?;
        let actor_loss = (&p * inner)?.sum(D::Minus1)?.mean_all()?;
        let grads = actor_loss.backward()?;
        self.actor_adam.step(&self.actor.0, &grads)?;
        let entropy = (&p * &logp)?
            .sum(D::Minus1)?
            .mean_all()?
            .neg()?
            .to_dtype(DType::F64)?
            .to_scalar::<f64>()?;
        let target_entropy = self.config.target_entropy * (l as f64).ln();
        self.log_alpha += self.config.alpha_learning_rate * (target_entropy - entropy);
        self.log_alpha = self.log_alpha.clamp(-30.0, 5.0);
        self.steps += 1;
        Ok(StepStats {
            critic_loss: critic_loss.to_dtype(DType::F64)?.to_scalar::<f64>()?,
            entropy,
            alpha: self.alpha(),
        })
    }

    /// How far one step on `batch` moves each parameter tensor (summed absolute change),
    /// taken on a copy: Adam moves a parameter exactly when its gradient is non-zero, so
    /// this is the test that every parameter learns.
    pub fn step_movement(&self, batch: &[(&Assignment, f64)]) -> Result<Vec<(String, f64)>> {
        let mut probe = Learner::restore(
            self.shape,
            Arc::clone(&self.graph),
            self.config.clone(),
            &self.state()?,
        )?;
        let before = probe.state()?;
        probe.train_step(batch)?;
        let after = probe.state()?;
        let mut out = Vec::new();
        for (net, x, y) in [
            ("actor", &before.actor, &after.actor),
            ("critic", &before.critic, &after.critic),
        ] {
            for (i, (p, q)) in x.0.iter().zip(&y.0).enumerate() {
                let moved: f64 = p.iter().zip(q).map(|(a, b)| (a - b).abs() as f64).sum();
                out.push((format!("{net}.{i}"), moved));
            }
        }
        let moved = (before.critic_bias - after.critic_bias).abs() as f64;
        out.push(("critic.bias".into(), moved));
        Ok(out)
    }
}

fn critic_all(critic: &Vars, bias: &Var) -> Vec<Var> {
    let mut v = critic.0.clone();
    v.push(bias.clone());
    v
}
