//! Categorical supports for the value and reward heads (MuZero, appendix F).
//!
//! A scalar `x` is trained as a distribution over a fixed grid of bins: first it is scaled
//! and squashed, `y = h(scale * x)` with `h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x`, then
//! `y` is written as a "two-hot" vector: the two bins around `y` share the mass so that the
//! expected bin value is exactly `y`. Decoding takes the expected bin value under the
//! predicted distribution and inverts `h` and the scale.
//!
//! Why the scale: in the mallocGame a whole game's return is a fraction of the all-slow
//! latency (at most 1) and one turn's reward is often below 0.01. Without scaling, every
//! target would sit between the two middle bins of an integer support and the network could
//! barely tell 0.001 from 0.01; `scale = 100` spreads returns in `[-1, 1]` over
//! `h(±100) ≈ ±9.15`, so an integer support `[-12, 12]` (25 bins) covers them with room.

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

/// The `eps` of MuZero's value transform; makes `h` strictly monotone with a linear tail.
pub const H_EPS: f64 = 0.001;

/// `h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x`.
pub fn h(x: f64) -> f64 {
    x.signum() * ((x.abs() + 1.0).sqrt() - 1.0) + H_EPS * x
}

/// The exact inverse of [`h`]: solves the quadratic in `sqrt(|x| + 1)`.
pub fn h_inv(y: f64) -> f64 {
    let root = ((1.0 + 4.0 * H_EPS * (y.abs() + 1.0 + H_EPS)).sqrt() - 1.0) / (2.0 * H_EPS);
    y.signum() * (root * root - 1.0)
}

/// A categorical support: `bins` evenly spaced values from `min` to `max` (in h-space), for
/// scalars multiplied by `scale` before `h`. Targets beyond the range are clamped to its
/// ends.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Support {
    /// The lowest bin's value, in h-space.
    pub min: f32,
    /// The highest bin's value, in h-space.
    pub max: f32,
    /// Number of bins, evenly spaced from `min` to `max`.
    pub bins: usize,
    /// The factor a scalar is multiplied by before `h`: rewards of order `1/scale` use the
    /// support's full range.
    pub scale: f32,
}

impl Default for Support {
    /// Sized for the mallocGame (see the module docs): returns and rewards in `[-1, 1]`.
    fn default() -> Self {
        Support::symmetric(12, 100.0)
    }
}

impl Support {
    /// MuZero's integer support `[-s, s]` with `2s + 1` bins.
    pub fn symmetric(s: u32, scale: f32) -> Support {
        Support {
            min: -(s as f32),
            max: s as f32,
            bins: 2 * s as usize + 1,
            scale,
        }
    }

    /// Rejects supports that cannot encode anything; `field` names the support in the error.
    pub fn check(&self, field: &str) -> Result<(), String> {
        if self.bins < 2 {
            return Err(format!("{field}.bins is {}, needs at least 2", self.bins));
        }
        if !(self.min.is_finite() && self.max.is_finite() && self.min < self.max) {
            return Err(format!(
                "{field}: min {} and max {} must be finite with min < max",
                self.min, self.max
            ));
        }
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Err(format!(
                "{field}.scale is {}, must be finite and > 0",
                self.scale
            ));
        }
        Ok(())
    }

    /// Distance between neighbouring bins, in h-space.
    pub fn step(&self) -> f64 {
        (self.max as f64 - self.min as f64) / (self.bins - 1) as f64
    }

    /// The value (in h-space) of bin `i`.
    pub fn bin_value(&self, i: usize) -> f64 {
        self.min as f64 + i as f64 * self.step()
    }

    /// The largest `|x|` representable without clamping (for the symmetric case; in
    /// general the range is `[lowest(), highest()]`).
    pub fn highest(&self) -> f64 {
        h_inv(self.max as f64) / self.scale as f64
    }

    /// The smallest value representable without clamping.
    pub fn lowest(&self) -> f64 {
        h_inv(self.min as f64) / self.scale as f64
    }

    /// Writes the two-hot encoding of `h(scale x)` into `out` (length `bins`). A non-finite
    /// `x` (never produced by the game) lands on the nearest end, NaN on the lower one.
    pub fn encode_into(&self, x: f32, out: &mut [f32]) {
        debug_assert_eq!(out.len(), self.bins);
        out.fill(0.0);
        let y = h(x as f64 * self.scale as f64);
        let pos = ((y - self.min as f64) / self.step()).clamp(0.0, (self.bins - 1) as f64);
        let pos = if pos.is_nan() { 0.0 } else { pos };
        let low = (pos.floor() as usize).min(self.bins - 1);
        let frac = pos - low as f64;
        if low + 1 < self.bins {
            out[low] = (1.0 - frac) as f32;
            out[low + 1] = frac as f32;
        } else {
            out[low] = 1.0;
        }
    }

    /// The two-hot encoding of `x` (see [`Support::encode_into`]).
    pub fn encode(&self, x: f32) -> Vec<f32> {
        let mut out = vec![0.0; self.bins];
        self.encode_into(x, &mut out);
        out
    }

    /// The scalar a distribution over the bins stands for: `h^-1(E[bin]) / scale`.
    pub fn decode(&self, probs: &[f32]) -> f32 {
        debug_assert_eq!(probs.len(), self.bins);
        let step = self.step();
        let expected: f64 = probs
            .iter()
            .enumerate()
            .map(|(i, &p)| p as f64 * (self.min as f64 + i as f64 * step))
            .sum();
        (h_inv(expected) / self.scale as f64) as f32
    }

    /// [`Support::decode`] of `softmax(logits)`, without allocating.
    pub fn decode_logits(&self, logits: &[f32]) -> f32 {
        debug_assert_eq!(logits.len(), self.bins);
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let step = self.step();
        let (mut z, mut acc) = (0.0f64, 0.0f64);
        for (i, &l) in logits.iter().enumerate() {
            let e = ((l - max) as f64).exp();
            z += e;
            acc += e * (self.min as f64 + i as f64 * step);
        }
        (h_inv(acc / z) / self.scale as f64) as f32
    }

    /// Two-hot encodings of `xs` as a `[xs.len(), bins]` tensor on `device`.
    pub fn encode_tensor(&self, xs: &[f32], device: &Device) -> candle_core::Result<Tensor> {
        let mut data = vec![0.0f32; xs.len() * self.bins];
        for (x, row) in xs.iter().zip(data.chunks_exact_mut(self.bins)) {
            self.encode_into(*x, row);
        }
        Tensor::from_vec(data, (xs.len(), self.bins), device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h_matches_hand_values_and_inverts() {
        // h(3) = sqrt(4) - 1 + 0.003 = 1.003; h(-8) = -(3 - 1) - 0.008.
        assert!((h(3.0) - 1.003).abs() < 1e-12);
        assert!((h(-8.0) + 2.008).abs() < 1e-12);
        assert_eq!(h(0.0), 0.0);
        let mut x = -1.0e4;
        while x <= 1.0e4 {
            let back = h_inv(h(x));
            assert!(
                (back - x).abs() <= 1e-9 * x.abs().max(1.0),
                "h_inv(h({x})) = {back}"
            );
            x += 7.3;
        }
    }

    #[test]
    fn two_hot_of_hand_values() {
        // Unscaled integer support [-2, 2]: bins -2, -1, 0, 1, 2.
        let s = Support::symmetric(2, 1.0);
        // h(3) = 1.003: 0.997 on bin 1, 0.003 on bin 2.
        let e = s.encode(3.0);
        assert!((e[3] - 0.997).abs() < 1e-6 && (e[4] - 0.003).abs() < 1e-6);
        assert_eq!(e[0] + e[1] + e[2], 0.0);
        // h(-8) = -2.008: clamped onto the lowest bin.
        assert_eq!(s.encode(-8.0), vec![1.0, 0.0, 0.0, 0.0, 0.0]);
        // 0 is exactly the middle bin.
        assert_eq!(s.encode(0.0), vec![0.0, 0.0, 1.0, 0.0, 0.0]);
        // Beyond the top: the last bin.
        assert_eq!(s.encode(1e6), vec![0.0, 0.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn decode_inverts_encode_over_the_range() {
        for s in [Support::default(), Support::symmetric(300, 1.0)] {
            let (lo, hi) = (s.lowest(), s.highest());
            for i in 0..=2000 {
                let x = (lo + (hi - lo) * i as f64 / 2000.0) as f32;
                let back = s.decode(&s.encode(x));
                assert!(
                    (back - x).abs() <= 1e-4 * x.abs().max(1.0),
                    "{s:?}: decode(encode({x})) = {back}"
                );
            }
        }
    }

    #[test]
    fn decode_logits_is_decode_of_softmax() {
        let s = Support::default();
        let logits: Vec<f32> = (0..s.bins).map(|i| ((i * 7) % 5) as f32 * 0.7).collect();
        let max = logits.iter().copied().fold(f32::MIN, f32::max);
        let exps: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
        let z: f32 = exps.iter().sum();
        let probs: Vec<f32> = exps.iter().map(|e| e / z).collect();
        assert!((s.decode_logits(&logits) - s.decode(&probs)).abs() < 1e-5);
    }

    #[test]
    fn default_support_covers_game_returns() {
        let s = Support::default();
        assert!(s.highest() > 1.0 && s.lowest() < -1.0);
        assert_eq!(s.bins, 25);
        assert!(s.check("value_support").is_ok());
        let bad = Support { bins: 1, ..s };
        assert_eq!(
            bad.check("value_support").unwrap_err(),
            "value_support.bins is 1, needs at least 2"
        );
        assert!(Support { scale: 0.0, ..s }
            .check("x")
            .unwrap_err()
            .contains("x.scale"));
        assert!(Support { min: 13.0, ..s }.check("x").is_err());
    }

    #[test]
    fn encode_tensor_rows_are_two_hot() {
        let s = Support::symmetric(2, 1.0);
        let t = s.encode_tensor(&[3.0, 0.0], &Device::Cpu).unwrap();
        let rows = t.to_vec2::<f32>().unwrap();
        assert_eq!(rows[0], s.encode(3.0));
        assert_eq!(rows[1], s.encode(0.0));
    }
}
