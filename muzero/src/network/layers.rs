//! The layers the networks are built from, each with a tracked (training) and a detached
//! (inference) view of the same weights, and the seeded initialiser that creates them.

use super::Result;
use crate::cpu_infer;
use candle_core::{Device, Tensor, Var, D};
use rand::rngs::StdRng;
use rand::Rng;

/// Whether a forward pass records the autograd graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pass {
    Train,
    Infer,
}

/// `x W + b` with `W` stored `[in, out]` (JAX's "kernel" layout): the matmul then reads a
/// contiguous right-hand side, measurably faster in candle's CPU gemm than `x W^T` over a
/// transposed view. `w`/`b` are the Vars' tensors (tracked); `wd`/`bd` detached views of
/// the same storage for inference.
#[derive(Clone)]
pub(super) struct Linear {
    w: Tensor,
    b: Tensor,
    pub(super) wd: Tensor,
    pub(super) bd: Tensor,
}

impl Linear {
    pub(super) fn params(&self, pass: Pass) -> (&Tensor, &Tensor) {
        match pass {
            Pass::Train => (&self.w, &self.b),
            Pass::Infer => (&self.wd, &self.bd),
        }
    }

    pub(super) fn forward(&self, x: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        let (w, b) = self.params(pass);
        x.matmul(w)?.broadcast_add(b)
    }
}

/// Layer norm over the last dimension, from differentiable primitives.
pub fn layer_norm(
    x: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    eps: f64,
) -> candle_core::Result<Tensor> {
    let centered = x.broadcast_sub(&x.mean_keepdim(D::Minus1)?)?;
    let var = centered.sqr()?.mean_keepdim(D::Minus1)?;
    centered
        .broadcast_div(&(var + eps)?.sqrt()?)?
        .broadcast_mul(gamma)?
        .broadcast_add(beta)
}

pub(super) const LN_EPS: f64 = 1e-5;

#[derive(Clone)]
pub(super) struct LayerNorm {
    gamma: Tensor,
    beta: Tensor,
    pub(super) gamma_d: Tensor,
    pub(super) beta_d: Tensor,
}

impl LayerNorm {
    fn forward(&self, x: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        match pass {
            Pass::Train => layer_norm(x, &self.gamma, &self.beta, LN_EPS),
            Pass::Infer => layer_norm(x, &self.gamma_d, &self.beta_d, LN_EPS),
        }
    }
}

/// Pre-norm residual MLP block: `x + fc2(relu(fc1(LN(x))))`.
#[derive(Clone)]
pub(super) struct ResBlock {
    pub(super) ln: LayerNorm,
    pub(super) fc1: Linear,
    pub(super) fc2: Linear,
}

impl ResBlock {
    pub(super) fn forward(&self, x: &Tensor, pass: Pass) -> candle_core::Result<Tensor> {
        let y = self.ln.forward(x, pass)?;
        let y = self.fc1.forward(&y, pass)?.relu()?;
        x + self.fc2.forward(&y, pass)?
    }
}

/// MuZero's hidden-state scaling: each row mapped to `[0, 1]` by its own min and max. The
/// small constant keeps a constant row finite (it maps to zeros).
pub(super) fn min_max_scale(x: &Tensor) -> candle_core::Result<Tensor> {
    let min = x.min_keepdim(D::Minus1)?;
    let range = (x.max_keepdim(D::Minus1)? - &min)? + MIN_MAX_EPS;
    x.broadcast_sub(&min)?.broadcast_div(&range?)
}

pub(super) const MIN_MAX_EPS: f64 = 1e-5;

/// [`min_max_scale`] on plain rows, with the same operations in the same order (so the
/// same bits): inference scales outside candle because candle's row reductions cost more
/// than the round trip through a `Vec`.
pub(super) fn min_max_rows(data: &mut [f32], width: usize) {
    cpu_infer::min_max_rows(data, width, MIN_MAX_EPS as f32)
}

/// Applies `layers` with ReLU between them (`relu_last` adds one after the last).
pub(super) fn mlp(
    layers: &[Linear],
    x: &Tensor,
    relu_last: bool,
    pass: Pass,
) -> candle_core::Result<Tensor> {
    let mut x = x.clone();
    for (i, l) in layers.iter().enumerate() {
        x = l.forward(&x, pass)?;
        if relu_last || i + 1 < layers.len() {
            x = x.relu()?;
        }
    }
    Ok(x)
}

/// Scales the gradient flowing back through `x` by `s`, leaving the value unchanged.
pub(super) fn scale_gradient(x: &Tensor, s: f64) -> candle_core::Result<Tensor> {
    (x * s)? + (x.detach() * (1.0 - s))?
}

/// Creates the Vars with seeded PyTorch-style initialisation (uniform in
/// `±1/sqrt(fan_in)` for weights and biases; layer norm gain 1, shift 0).
pub(super) struct Builder {
    pub(super) rng: StdRng,
    pub(super) device: Device,
    pub(super) vars: Vec<(String, Var)>,
}

impl Builder {
    fn var(&mut self, name: String, data: Vec<f32>, shape: &[usize]) -> Result<(Tensor, Tensor)> {
        let var = Var::from_tensor(&Tensor::from_vec(data, shape, &self.device)?)?;
        let t = var.as_tensor().clone();
        let d = t.detach();
        self.vars.push((name, var));
        Ok((t, d))
    }

    fn uniform(&mut self, n: usize, bound: f32) -> Vec<f32> {
        (0..n)
            .map(|_| self.rng.random_range(-bound..bound))
            .collect()
    }

    pub(super) fn linear(&mut self, name: &str, input: usize, output: usize) -> Result<Linear> {
        let bound = 1.0 / (input as f32).sqrt();
        let w = self.uniform(input * output, bound);
        let b = self.uniform(output, bound);
        let (w, wd) = self.var(format!("{name}.weight"), w, &[input, output])?;
        let (b, bd) = self.var(format!("{name}.bias"), b, &[output])?;
        Ok(Linear { w, b, wd, bd })
    }

    pub(super) fn chain(
        &mut self,
        prefix: &str,
        input: usize,
        widths: &[usize],
    ) -> Result<Vec<Linear>> {
        let mut last = input;
        let mut out = Vec::with_capacity(widths.len());
        for (i, &w) in widths.iter().enumerate() {
            out.push(self.linear(&format!("{prefix}.{i}"), last, w)?);
            last = w;
        }
        Ok(out)
    }

    pub(super) fn block(&mut self, name: &str, width: usize) -> Result<ResBlock> {
        let (gamma, gamma_d) = self.var(format!("{name}.ln.weight"), vec![1.0; width], &[width])?;
        let (beta, beta_d) = self.var(format!("{name}.ln.bias"), vec![0.0; width], &[width])?;
        Ok(ResBlock {
            ln: LayerNorm {
                gamma,
                beta,
                gamma_d,
                beta_d,
            },
            fc1: self.linear(&format!("{name}.fc1"), width, width)?,
            fc2: self.linear(&format!("{name}.fc2"), width, width)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_norm_matches_hand_computation() {
        let x = Tensor::new(
            &[[1.0f32, 2.0, 3.0, 6.0], [-1.0, -1.0, 1.0, 1.0]],
            &Device::Cpu,
        )
        .unwrap();
        let gamma = Tensor::new(&[1.0f32, 2.0, 0.5, 1.0], &Device::Cpu).unwrap();
        let beta = Tensor::new(&[0.0f32, 1.0, 0.0, -1.0], &Device::Cpu).unwrap();
        let y = layer_norm(&x, &gamma, &beta, 1e-5)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        // Row 0: mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5.
        let sd0 = (3.5f32 + 1e-5).sqrt();
        let want0 = [-2.0 / sd0, 2.0 * (-1.0 / sd0) + 1.0, 0.0, 3.0 / sd0 - 1.0];
        // Row 1: mean 0, variance 1.
        let sd1 = (1.0f32 + 1e-5).sqrt();
        let want1 = [
            -1.0 / sd1,
            2.0 * (-1.0 / sd1) + 1.0,
            0.5 / sd1,
            1.0 / sd1 - 1.0,
        ];
        for (got, want) in y.iter().zip([want0, want1]) {
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-5, "{got:?} vs {want:?}");
            }
        }
    }

    #[test]
    fn layer_norm_passes_gradients() {
        let x = Var::new(&[[1.0f32, 2.0, 4.0]], &Device::Cpu).unwrap();
        let gamma = Var::new(&[1.0f32, 1.0, 1.0], &Device::Cpu).unwrap();
        let beta = Var::new(&[0.0f32, 0.0, 0.0], &Device::Cpu).unwrap();
        let w = Tensor::new(&[[1.0f32, -2.0, 0.5]], &Device::Cpu).unwrap();
        let y = layer_norm(x.as_tensor(), gamma.as_tensor(), beta.as_tensor(), 1e-5).unwrap();
        let loss = (y * w).unwrap().sum_all().unwrap();
        let grads = loss.backward().unwrap();
        for (name, v) in [("x", &x), ("gamma", &gamma), ("beta", &beta)] {
            let g = grads.get(v).expect(name).abs().unwrap();
            let g = g.sum_all().unwrap().to_scalar::<f32>().unwrap();
            assert!(g > 1e-3, "{name} gets no gradient");
        }
    }

    #[test]
    fn scale_gradient_keeps_value_and_halves_gradient() {
        let x = Var::new(&[1.0f32, -2.0], &Device::Cpu).unwrap();
        let y = scale_gradient(x.as_tensor(), 0.5).unwrap();
        assert_eq!(y.to_vec1::<f32>().unwrap(), vec![1.0, -2.0]);
        let grads = (y * 3.0).unwrap().sum_all().unwrap().backward().unwrap();
        let g = grads.get(&x).unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(g, vec![1.5, 1.5]);
    }
}
