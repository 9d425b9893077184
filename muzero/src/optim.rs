//! AdamW with a warm-up/decay learning-rate schedule and global-norm gradient clipping,
//! with a state that checkpoints and resumes exactly.
//!
//! Written over the network's Vars rather than wrapping `candle_nn::AdamW`, whose moment
//! tensors are private: without them a resumed run would restart Adam's moments from zero
//! and not continue where it stopped.

use binio::BinError;
use candle_core::{Tensor, Var};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Magic of an optimizer-state file.
pub const OPTIM_MAGIC: &[u8; 8] = b"MMZOPTM\0";
/// Format version of an optimizer-state file.
// 2: binio files carry a checksum.
pub const OPTIM_VERSION: u32 = 2;

/// An error from the optimizer.
#[derive(Debug, thiserror::Error)]
pub enum OptimError {
    /// A config value is out of range (its field named).
    #[error("optimizer config: {0}")]
    Config(String),
    /// The gradient norm was NaN or infinite: the loss or the weights diverged.
    #[error(
        "non-finite gradient norm ({grad_norm}) at step {step}: the loss or the weights \
         diverged; the step was not applied"
    )]
    NonFinite {
        /// The step that would have been applied.
        step: u64,
        /// The norm found.
        grad_norm: f32,
    },
    /// A saved optimizer state does not fit the network or cannot be read.
    #[error("{path}: {msg}")]
    State {
        /// The file.
        path: String,
        /// What does not fit.
        msg: String,
    },
    /// The state file could not be read or written.
    #[error(transparent)]
    Bin(#[from] BinError),
    /// The tensor backend failed.
    #[error("tensor backend: {0}")]
    Candle(#[from] candle_core::Error),
}

type Result<T> = std::result::Result<T, OptimError>;

/// One loss's gradient per parameter of an [`Optimizer`], in its order (`None`: the
/// parameter is outside the loss's graph).
pub struct Gradients(Vec<Option<Tensor>>);

impl Gradients {
    /// The parameter-wise sum of two losses' gradients (of the same optimizer).
    pub fn plus(self, other: Gradients) -> Result<Gradients> {
        if self.0.len() != other.0.len() {
            return Err(OptimError::Config(format!(
                "plus: gradients of {} and {} parameters",
                self.0.len(),
                other.0.len()
            )));
        }
        let sum = self
            .0
            .into_iter()
            .zip(other.0)
            .map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => Ok(Some((a + b)?)),
                (a, b) => Ok(a.or(b)),
            })
            .collect::<Result<_>>()?;
        Ok(Gradients(sum))
    }
}

/// How the learning rate falls after the warm-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decay {
    /// Half a cosine from the peak rate down to the final rate.
    Cosine,
    /// A straight line from the peak rate down to the final rate.
    Linear,
    /// The peak rate throughout.
    Constant,
}

/// Optimizer settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OptimConfig {
    /// Peak learning rate, reached at the end of the warm-up.
    pub learning_rate: f64,
    /// Steps of linear warm-up from `learning_rate / warmup_steps` to `learning_rate`.
    pub warmup_steps: u64,
    /// How the rate falls from the end of the warm-up to `total_steps`.
    pub decay: Decay,
    /// The step at which the decay reaches `final_lr_fraction * learning_rate`; the rate
    /// stays there afterwards.
    pub total_steps: u64,
    /// The rate at `total_steps` and after, as a fraction of `learning_rate`.
    pub final_lr_fraction: f64,
    /// Decoupled weight decay (AdamW), applied to weight matrices only: decaying biases
    /// and layer-norm gains toward 0 only fights the normalisation.
    pub weight_decay: f64,
    /// Adam's decay rate of the first moment (the gradients' running mean).
    pub beta1: f64,
    /// Adam's decay rate of the second moment (the squared gradients' running mean).
    pub beta2: f64,
    /// Added to the second moment's square root, so a parameter with no gradient yet does
    /// not divide by 0.
    pub eps: f64,
    /// Global gradient-norm limit; 0 turns clipping off.
    pub max_grad_norm: f64,
}

impl Default for OptimConfig {
    fn default() -> Self {
        OptimConfig {
            learning_rate: 1e-3,
            warmup_steps: 100,
            decay: Decay::Cosine,
            total_steps: 10_000,
            final_lr_fraction: 0.1,
            weight_decay: 1e-4,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            max_grad_norm: 5.0,
        }
    }
}

impl OptimConfig {
    /// Rejects impossible values, naming the field.
    pub fn check(&self) -> std::result::Result<(), String> {
        let finite_pos = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{field} is {v}, must be finite and > 0"))
            }
        };
        let finite_nonneg = |field: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!("{field} is {v}, must be finite and >= 0"))
            }
        };
        finite_pos("learning_rate", self.learning_rate)?;
        finite_pos("eps", self.eps)?;
        finite_nonneg("weight_decay", self.weight_decay)?;
        finite_nonneg("max_grad_norm", self.max_grad_norm)?;
        if !(0.0..=1.0).contains(&self.final_lr_fraction) {
            return Err(format!(
                "final_lr_fraction is {}, must be in [0, 1]",
                self.final_lr_fraction
            ));
        }
        for (field, b) in [("beta1", self.beta1), ("beta2", self.beta2)] {
            if !(0.0..1.0).contains(&b) {
                return Err(format!("{field} is {b}, must be in [0, 1)"));
            }
        }
        Ok(())
    }

    /// The learning rate of update number `step` (0-based).
    pub fn learning_rate_at(&self, step: u64) -> f64 {
        let peak = self.learning_rate;
        if step < self.warmup_steps {
            return peak * (step + 1) as f64 / self.warmup_steps as f64;
        }
        let span = self.total_steps.saturating_sub(self.warmup_steps).max(1);
        let p = ((step - self.warmup_steps) as f64 / span as f64).min(1.0);
        let f = self.final_lr_fraction;
        let factor = match self.decay {
            Decay::Cosine => f + (1.0 - f) * 0.5 * (1.0 + (std::f64::consts::PI * p).cos()),
            Decay::Linear => 1.0 - (1.0 - f) * p,
            Decay::Constant => 1.0,
        };
        peak * factor
    }
}

/// What one update did.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    /// Updates applied so far, this one included.
    pub step: u64,
    /// The learning rate this update used.
    pub lr: f64,
    /// Global gradient norm before clipping.
    pub grad_norm: f32,
    /// Whether the gradients were scaled down to `max_grad_norm`.
    pub clipped: bool,
}

struct Param {
    name: String,
    var: Var,
    m: Tensor,
    v: Tensor,
    decay: bool,
}

/// One AdamW update's constants.
#[derive(Clone, Copy)]
struct AdamW {
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    lr: f64,
    bias1: f64,
    bias2: f64,
    /// The factor scaling a gradient whose norm is over the limit.
    clip: Option<f64>,
}

impl AdamW {
    fn one(&self, p: &mut Param, g: Tensor) -> Result<()> {
        let g = match self.clip {
            Some(clip) => (g * clip)?,
            None => g,
        };
        let m = ((&p.m * self.beta1)? + (&g * (1.0 - self.beta1))?)?;
        let v = ((&p.v * self.beta2)? + (g.sqr()? * (1.0 - self.beta2))?)?;
        let denom = ((&v * (1.0 / self.bias2))?.sqrt()? + self.eps)?;
        let update = ((&m * (self.lr / self.bias1))? / denom)?;
        let theta = p.var.as_tensor().detach();
        let theta = if p.decay {
            (theta * (1.0 - self.lr * self.weight_decay))?
        } else {
            theta
        };
        p.var.set(&(theta - update)?)?;
        p.m = m;
        p.v = v;
        Ok(())
    }

    /// Updates every parameter of `work`, split into `threads` contiguous runs of about
    /// the same number of elements.
    fn run(&self, work: Vec<(&mut Param, Tensor)>, threads: usize) -> Result<()> {
        let total: usize = work.iter().map(|(p, _)| p.var.elem_count()).sum();
        let threads = threads.clamp(1, work.len().max(1));
        if threads == 1 {
            return work.into_iter().try_for_each(|(p, g)| self.one(p, g));
        }
        // A parameter goes to the run its first element falls in.
        let mut runs: Vec<Vec<(&mut Param, Tensor)>> = (0..threads).map(|_| Vec::new()).collect();
        let mut filled = 0;
        for (p, g) in work {
            let k = (filled * threads / total.max(1)).min(threads - 1);
            filled += p.var.elem_count();
            runs[k].push((p, g));
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = runs
                .into_iter()
                .filter(|run| !run.is_empty())
                .map(|run| s.spawn(move || run.into_iter().try_for_each(|(p, g)| self.one(p, g))))
                .collect();
            handles.into_iter().try_for_each(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(OptimError::Config(
                        "apply: an update thread panicked".into(),
                    ))
                })
            })
        })
    }
}

/// AdamW over named parameters (every parameter of a
/// [`MuZeroNet`](crate::network::MuZeroNet), say).
pub struct Optimizer {
    config: OptimConfig,
    step: u64,
    params: Vec<Param>,
}

#[derive(Serialize, Deserialize)]
struct SavedParam {
    name: String,
    shape: Vec<usize>,
    m: Vec<f32>,
    v: Vec<f32>,
}

#[derive(Serialize, Deserialize)]
struct SavedState {
    config: OptimConfig,
    step: u64,
    params: Vec<SavedParam>,
}

impl Optimizer {
    /// An optimizer over `params` (for a network:
    /// [`MuZeroNet::vars`](crate::network::MuZeroNet::vars)).
    pub fn new(params: &[(String, Var)], config: OptimConfig) -> Result<Optimizer> {
        config.check().map_err(OptimError::Config)?;
        let params = params
            .iter()
            .map(|(name, var)| {
                Ok(Param {
                    name: name.clone(),
                    var: var.clone(),
                    m: var.zeros_like()?.detach(),
                    v: var.zeros_like()?.detach(),
                    decay: var.rank() >= 2,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Optimizer {
            config,
            step: 0,
            params,
        })
    }

    /// The settings the optimizer was made with.
    pub fn config(&self) -> &OptimConfig {
        &self.config
    }

    /// Updates applied so far.
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// Back-propagates `loss` and applies one AdamW update.
    pub fn step(&mut self, loss: &Tensor) -> Result<StepStats> {
        let grads = self.gradients(loss)?;
        self.apply(grads, 1)
    }

    /// The gradients of `loss` with respect to this optimizer's parameters. Read-only, so
    /// threads may each back-propagate a loss of their own ([`Gradients::plus`] sums them).
    pub fn gradients(&self, loss: &Tensor) -> Result<Gradients> {
        let grads = loss.backward()?;
        Ok(Gradients(
            self.params
                .iter()
                .map(|p| grads.get(&p.var).map(|g| g.detach()))
                .collect(),
        ))
    }

    /// Applies one AdamW update with `grads` (from [`Optimizer::gradients`] of this
    /// optimizer), clipped to `max_grad_norm`, the parameters split among `threads`
    /// threads (each parameter's update is its own, so the result does not depend on
    /// them).
    pub fn apply(&mut self, grads: Gradients, threads: usize) -> Result<StepStats> {
        let gs = grads.0;
        if gs.len() != self.params.len() {
            return Err(OptimError::Config(format!(
                "apply: {} gradients for {} parameters",
                gs.len(),
                self.params.len()
            )));
        }
        let sums = gs
            .iter()
            .flatten()
            .map(|g| g.sqr()?.sum_all())
            .collect::<candle_core::Result<Vec<_>>>()?;
        let grad_norm = if sums.is_empty() {
            0.0
        } else {
            Tensor::stack(&sums, 0)?
                .sum_all()?
                .to_scalar::<f32>()?
                .sqrt()
        };
        if !grad_norm.is_finite() {
            return Err(OptimError::NonFinite {
                step: self.step,
                grad_norm,
            });
        }
        let c = &self.config;
        let clipped = c.max_grad_norm > 0.0 && grad_norm as f64 > c.max_grad_norm;
        let t = (self.step + 1) as i32;
        let update = AdamW {
            beta1: c.beta1,
            beta2: c.beta2,
            eps: c.eps,
            weight_decay: c.weight_decay,
            lr: c.learning_rate_at(self.step),
            bias1: 1.0 - c.beta1.powi(t),
            bias2: 1.0 - c.beta2.powi(t),
            clip: clipped.then(|| c.max_grad_norm / grad_norm as f64),
        };
        // A parameter outside the loss's graph keeps its value and moments.
        let work: Vec<(&mut Param, Tensor)> = self
            .params
            .iter_mut()
            .zip(gs)
            .filter_map(|(p, g)| g.map(|g| (p, g)))
            .collect();
        update.run(work, threads)?;
        self.step += 1;
        Ok(StepStats {
            step: self.step,
            lr: update.lr,
            grad_norm,
            clipped,
        })
    }

    /// Writes the step count, the config and Adam's moments, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        binio::write_bytes_atomic(path, &self.to_bytes()?)?;
        Ok(())
    }

    /// What [`Optimizer::save`] writes: a copy of the state as it is now, which a
    /// thread of its own may write while training goes on.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let params = self
            .params
            .iter()
            .map(|p| {
                Ok(SavedParam {
                    name: p.name.clone(),
                    shape: p.var.dims().to_vec(),
                    m: p.m.flatten_all()?.to_vec1::<f32>()?,
                    v: p.v.flatten_all()?.to_vec1::<f32>()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let state = SavedState {
            config: self.config.clone(),
            step: self.step,
            params,
        };
        Ok(binio::to_bytes(
            "optimizer state",
            OPTIM_MAGIC,
            OPTIM_VERSION,
            &state,
        )?)
    }

    /// Restores an optimizer saved by [`Optimizer::save`] over the same `params`. The saved
    /// config is kept unless `config` overrides it (a resumed run may change its schedule).
    pub fn load(
        path: &Path,
        params: &[(String, Var)],
        config: Option<OptimConfig>,
    ) -> Result<Optimizer> {
        let state: SavedState = binio::read(path, OPTIM_MAGIC, OPTIM_VERSION)?;
        let shown = path.display().to_string();
        let err = |msg: String| OptimError::State {
            path: shown.clone(),
            msg,
        };
        let mut opt = Optimizer::new(params, config.unwrap_or(state.config))?;
        if state.params.len() != opt.params.len() {
            return Err(err(format!(
                "optimizer state for {} parameter tensors, the network has {}",
                state.params.len(),
                opt.params.len()
            )));
        }
        for (p, s) in opt.params.iter_mut().zip(state.params) {
            let want = p.var.dims().to_vec();
            let count: usize = want.iter().product();
            if p.name != s.name || s.shape != want || s.m.len() != count || s.v.len() != count {
                return Err(err(format!(
                    "optimizer state built for another network shape: `{}` {:?}, the \
                     network has `{}` {:?}",
                    s.name, s.shape, p.name, want
                )));
            }
            let dev = p.var.device();
            p.m = Tensor::from_vec(s.m, want.as_slice(), dev)?;
            p.v = Tensor::from_vec(s.v, want.as_slice(), dev)?;
        }
        opt.step = state.step;
        Ok(opt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn one_step_matches_hand_computed_adamw_with_clipping() {
        let w = Var::new(&[[1.0f32, -1.0]], &Device::Cpu).unwrap();
        let b = Var::new(&[0.5f32], &Device::Cpu).unwrap();
        let params = vec![("b".to_string(), b.clone()), ("w".to_string(), w.clone())];
        let config = OptimConfig {
            learning_rate: 0.1,
            warmup_steps: 0,
            weight_decay: 0.5,
            max_grad_norm: 2.5,
            ..OptimConfig::default()
        };
        let mut opt = Optimizer::new(&params, config).unwrap();
        // loss = 3 w0 - 4 w1 + 0 b: grads (3, -4), norm 5, clipped by 0.5 to (1.5, -2).
        let k = Tensor::new(&[[3.0f32, -4.0]], &Device::Cpu).unwrap();
        let loss = ((w.as_tensor() * k).unwrap().sum_all().unwrap()
            + (b.as_tensor() * 0.0).unwrap().sum_all().unwrap())
        .unwrap();
        let stats = opt.step(&loss).unwrap();
        assert_eq!(stats.step, 1);
        assert!((stats.grad_norm - 5.0).abs() < 1e-5 && stats.clipped);
        assert!((stats.lr - 0.1).abs() < 1e-12);
        // First Adam step: m_hat / sqrt(v_hat) = sign(g) (eps aside), so each weight moves
        // by lr after decay: 1 * (1 - 0.05) - 0.1 and -1 * (1 - 0.05) + 0.1.
        let got = w.as_tensor().to_vec2::<f32>().unwrap();
        assert!((got[0][0] - 0.85).abs() < 1e-6 && (got[0][1] + 0.85).abs() < 1e-6);
        // The bias (rank 1) is not decayed and its zero gradient moves it by 0.
        assert_eq!(b.as_tensor().to_vec1::<f32>().unwrap(), vec![0.5]);
    }

    #[test]
    fn non_finite_gradient_is_refused_without_update() {
        let w = Var::new(&[1.0f32], &Device::Cpu).unwrap();
        let params = vec![("w".to_string(), w.clone())];
        let mut opt = Optimizer::new(&params, OptimConfig::default()).unwrap();
        let loss = (w.as_tensor() * f64::NAN).unwrap().sum_all().unwrap();
        let e = opt.step(&loss).unwrap_err();
        assert!(matches!(e, OptimError::NonFinite { step: 0, .. }), "{e}");
        assert_eq!(opt.steps(), 0);
        assert_eq!(w.as_tensor().to_vec1::<f32>().unwrap(), vec![1.0]);
    }

    #[test]
    fn schedule_warms_up_then_decays() {
        let c = OptimConfig {
            learning_rate: 1.0,
            warmup_steps: 10,
            total_steps: 110,
            final_lr_fraction: 0.1,
            ..OptimConfig::default()
        };
        assert!((c.learning_rate_at(0) - 0.1).abs() < 1e-12);
        assert!((c.learning_rate_at(9) - 1.0).abs() < 1e-12);
        assert!((c.learning_rate_at(10) - 1.0).abs() < 1e-12);
        // Halfway through the cosine: (1 + 0.1) / 2.
        assert!((c.learning_rate_at(60) - 0.55).abs() < 1e-12);
        assert!((c.learning_rate_at(110) - 0.1).abs() < 1e-12);
        assert!((c.learning_rate_at(5000) - 0.1).abs() < 1e-12);
        let lin = OptimConfig {
            decay: Decay::Linear,
            ..c.clone()
        };
        assert!((lin.learning_rate_at(35) - 0.775).abs() < 1e-12);
        let flat = OptimConfig {
            decay: Decay::Constant,
            ..c
        };
        assert_eq!(flat.learning_rate_at(1000), 1.0);
    }

    #[test]
    fn config_check_names_the_field() {
        let bad = OptimConfig {
            beta2: 1.0,
            ..OptimConfig::default()
        };
        assert_eq!(bad.check().unwrap_err(), "beta2 is 1, must be in [0, 1)");
        let bad = OptimConfig {
            learning_rate: 0.0,
            ..OptimConfig::default()
        };
        assert_eq!(
            bad.check().unwrap_err(),
            "learning_rate is 0, must be finite and > 0"
        );
        assert!(OptimConfig::default().check().is_ok());
    }
}
