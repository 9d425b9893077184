//! The learned start's network: a small MLP (ReLU hidden layers, one logit out) over a
//! row's features ([`super::features`]), read by plain loops at inference (a few thousand
//! weights: no tensor library needed, and the same answer on every machine) and trained
//! with candle ([`super::train`]). Stored as safetensors: each layer's `w` (`[in, out]`)
//! and `b`, and one metadata entry naming the feature count and the layer widths.

use super::features::FEATURES;
use super::StartError;
use candle_core::{Device, Tensor, Var};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The one metadata entry of a predictor file.
const META_KEY: &str = "mallocmuzero-learned-start";
const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Meta {
    format_version: u32,
    features: usize,
    /// Widths of the hidden layers.
    hidden: Vec<usize>,
}

/// One dense layer: `x W + b`, `W` as `[in][out]` row-major.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Dense {
    pub(crate) inputs: usize,
    pub(crate) outputs: usize,
    pub(crate) w: Vec<f32>,
    pub(crate) b: Vec<f32>,
}

/// The predictor: for a row, the probability that a best mapping reads the row's use from
/// the row's level.
#[derive(Clone, Debug, PartialEq)]
pub struct Predictor {
    pub(crate) layers: Vec<Dense>,
}

impl Predictor {
    /// A freshly initialised predictor with hidden layers of `hidden` widths (He-uniform
    /// weights from `seed`, zero biases).
    pub fn new(hidden: &[usize], seed: u64) -> Predictor {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut widths = vec![FEATURES];
        widths.extend_from_slice(hidden);
        widths.push(1);
        let layers = widths
            .windows(2)
            .map(|w| {
                let limit = (6.0 / w[0] as f32).sqrt();
                Dense {
                    inputs: w[0],
                    outputs: w[1],
                    w: (0..w[0] * w[1])
                        .map(|_| rng.random_range(-limit..limit))
                        .collect(),
                    b: vec![0.0; w[1]],
                }
            })
            .collect();
        Predictor { layers }
    }

    /// The hidden layers' widths.
    pub fn hidden(&self) -> Vec<usize> {
        self.layers[..self.layers.len() - 1]
            .iter()
            .map(|l| l.outputs)
            .collect()
    }

    /// The logit of one row's features.
    pub fn logit(&self, features: &[f32]) -> f32 {
        let mut x = features.to_vec();
        let last = self.layers.len() - 1;
        for (k, l) in self.layers.iter().enumerate() {
            let mut y = l.b.clone();
            for (i, &xi) in x.iter().enumerate() {
                if xi != 0.0 {
                    let row = &l.w[i * l.outputs..(i + 1) * l.outputs];
                    for (yj, &wij) in y.iter_mut().zip(row) {
                        *yj += xi * wij;
                    }
                }
            }
            if k < last {
                y.iter_mut().for_each(|v| *v = v.max(0.0));
            }
            x = y;
        }
        x[0]
    }

    /// The probability of one row's features.
    pub fn probability(&self, features: &[f32]) -> f32 {
        sigmoid(self.logit(features))
    }

    /// The predictor's file: safetensors of each layer's weights and biases, with its
    /// shape in the metadata.
    pub fn to_bytes(&self) -> Result<Vec<u8>, StartError> {
        let meta = Meta {
            format_version: FORMAT_VERSION,
            features: FEATURES,
            hidden: self.hidden(),
        };
        let meta = HashMap::from([(
            META_KEY.to_string(),
            serde_json::to_string(&meta).map_err(|e| StartError::Config(e.to_string()))?,
        )]);
        let mut tensors: Vec<(String, Vec<u8>, Vec<usize>)> = Vec::new();
        for (k, l) in self.layers.iter().enumerate() {
            tensors.push((format!("l{k}.w"), le_bytes(&l.w), vec![l.inputs, l.outputs]));
            tensors.push((format!("l{k}.b"), le_bytes(&l.b), vec![l.outputs]));
        }
        let views = tensors
            .iter()
            .map(|(name, data, shape)| {
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), data)
                    .map(|v| (name.clone(), v))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| StartError::Config(e.to_string()))?;
        safetensors::tensor::serialize(views, Some(meta))
            .map_err(|e| StartError::Config(e.to_string()))
    }

    /// Reads a predictor file ([`Predictor::to_bytes`]); `origin` names it in errors.
    pub fn from_bytes(origin: &str, bytes: &[u8]) -> Result<Predictor, StartError> {
        let bad = |msg: String| StartError::Predictor {
            origin: origin.to_string(),
            msg,
        };
        let (_, metadata) = safetensors::SafeTensors::read_metadata(bytes)
            .map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        let st = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| bad(format!("not a safetensors file: {e}")))?;
        let meta_text = metadata
            .metadata()
            .as_ref()
            .and_then(|m| m.get(META_KEY))
            .ok_or_else(|| bad(format!("no `{META_KEY}` metadata: not a learned start")))?;
        let meta: Meta = serde_json::from_str(meta_text)
            .map_err(|e| bad(format!("metadata `{META_KEY}`: {e}")))?;
        if meta.format_version != FORMAT_VERSION || meta.features != FEATURES {
            return Err(bad(format!(
                "format {} over {} features; this build reads format {FORMAT_VERSION} over {FEATURES}",
                meta.format_version, meta.features
            )));
        }
        let mut widths = vec![FEATURES];
        widths.extend_from_slice(&meta.hidden);
        widths.push(1);
        let read = |name: String, shape: Vec<usize>| -> Result<Vec<f32>, StartError> {
            let t = st
                .tensor(&name)
                .map_err(|_| bad(format!("tensor `{name}` is missing")))?;
            if t.dtype() != safetensors::Dtype::F32 || t.shape() != shape.as_slice() {
                return Err(bad(format!(
                    "tensor `{name}` is {:?} {:?}, expected F32 {shape:?}",
                    t.dtype(),
                    t.shape()
                )));
            }
            let v: Vec<f32> = t
                .data()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            if v.iter().any(|x| !x.is_finite()) {
                return Err(bad(format!("tensor `{name}` holds a non-finite number")));
            }
            Ok(v)
        };
        let mut layers = Vec::new();
        for (k, w) in widths.windows(2).enumerate() {
            layers.push(Dense {
                inputs: w[0],
                outputs: w[1],
                w: read(format!("l{k}.w"), vec![w[0], w[1]])?,
                b: read(format!("l{k}.b"), vec![w[1]])?,
            });
        }
        Ok(Predictor { layers })
    }

    /// The layers as candle variables, for training.
    pub(crate) fn vars(&self, device: &Device) -> candle_core::Result<Vec<(String, Var)>> {
        let mut out = Vec::new();
        for (k, l) in self.layers.iter().enumerate() {
            let w = Tensor::from_vec(l.w.clone(), (l.inputs, l.outputs), device)?;
            let b = Tensor::from_vec(l.b.clone(), l.outputs, device)?;
            out.push((format!("l{k}.w"), Var::from_tensor(&w)?));
            out.push((format!("l{k}.b"), Var::from_tensor(&b)?));
        }
        Ok(out)
    }

    /// This predictor with the values of `vars` (as [`Predictor::vars`] made them).
    pub(crate) fn with_vars(&self, vars: &[(String, Var)]) -> candle_core::Result<Predictor> {
        let mut p = self.clone();
        for (k, l) in p.layers.iter_mut().enumerate() {
            l.w = vars[2 * k].1.as_tensor().flatten_all()?.to_vec1()?;
            l.b = vars[2 * k + 1].1.as_tensor().flatten_all()?.to_vec1()?;
        }
        Ok(p)
    }
}

/// The logits of a batch `x` (`[n, FEATURES]`) through `vars` (tracked, for training).
pub(crate) fn forward(vars: &[(String, Var)], x: &Tensor) -> candle_core::Result<Tensor> {
    let layers = vars.len() / 2;
    let mut h = x.clone();
    for k in 0..layers {
        h = h
            .matmul(vars[2 * k].1.as_tensor())?
            .broadcast_add(vars[2 * k + 1].1.as_tensor())?;
        if k + 1 < layers {
            h = h.relu()?;
        }
    }
    h.squeeze(1)
}

pub(crate) fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

fn le_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_predictor_round_trips_its_file_and_candle_agrees_with_the_loops() {
        let p = Predictor::new(&[16, 8], 3);
        let bytes = p.to_bytes().unwrap();
        let q = Predictor::from_bytes("test", &bytes).unwrap();
        assert_eq!(p, q);
        assert!(Predictor::from_bytes("test", &bytes[..bytes.len() / 2]).is_err());
        let x: Vec<f32> = (0..2 * FEATURES).map(|i| (i as f32 * 0.37).sin()).collect();
        let device = Device::Cpu;
        let vars = p.vars(&device).unwrap();
        let t = Tensor::from_vec(x.clone(), (2, FEATURES), &device).unwrap();
        let logits: Vec<f32> = forward(&vars, &t).unwrap().to_vec1().unwrap();
        for (r, &l) in logits.iter().enumerate() {
            let own = p.logit(&x[r * FEATURES..(r + 1) * FEATURES]);
            assert!((own - l).abs() < 1e-4, "{own} vs {l}");
        }
        assert_eq!(p.with_vars(&vars).unwrap(), p);
    }
}
