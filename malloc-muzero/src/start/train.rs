//! Training the learned start on a solution pool ([`super::pool`]): each row of each case
//! (a use and a fast level) labelled with the share of the case's kept mappings that read
//! the use from the level, binary cross-entropy on the predictor's logit, each case
//! weighing the same in the loss whatever its size (a 2,000-op program would otherwise
//! drown the small ones). The pool's programs are split by program, never by row: a
//! validation program's cases are all held back ([`validation_programs`]).
//!
//! [`Metrics`] reads a predictor (or a baseline's 0/1 guess) against the labels: the
//! cross-entropy, the accuracy at [`super::THRESHOLD`], and the AUC (how often a row a
//! best mapping holds fast scores above one it does not).

use super::features::{features, FEATURES};
use super::mlp::{forward, Predictor};
use super::pool::{labels, Pool};
use super::StartError;
use candle_core::{Device, Tensor};
use muzero::{Decay, OptimConfig, Optimizer};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Index of the feature "xla reads it from this level" (a baseline's guess).
const XLA_FEATURE: usize = 28;
/// Index of the feature "greedy-size reads it from this level".
const GREEDY_SIZE_FEATURE: usize = 30;

/// How the predictor is trained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StartTraining {
    /// Widths of the hidden layers.
    pub hidden: Vec<usize>,
    /// Passes over the training rows.
    pub epochs: usize,
    /// Rows per step.
    pub batch: usize,
    /// The peak learning rate (warm-up, then cosine decay).
    pub learning_rate: f64,
    /// Seeds the initial weights and the rows' order.
    pub seed: u64,
    /// A case's mappings within this fraction of its fastest are its labels' (the
    /// fastest always is).
    pub within: f64,
}

impl Default for StartTraining {
    fn default() -> Self {
        StartTraining {
            hidden: vec![64, 64],
            epochs: 40,
            batch: 512,
            learning_rate: 2e-3,
            seed: 0,
            within: 0.01,
        }
    }
}

/// Rows of many cases: features, labels, loss weights, and the baselines' guesses.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// [`FEATURES`] numbers per row.
    pub x: Vec<f32>,
    /// Per row: the share of the kept mappings that read the use from the level.
    pub y: Vec<f32>,
    /// Per row: its weight in the loss (each case weighs the same).
    pub w: Vec<f32>,
    /// Per row: 1 where xla reads the use from the level.
    pub xla: Vec<f32>,
    /// Per row: 1 where greedy-size reads the use from the level.
    pub greedy_size: Vec<f32>,
    /// Cases read.
    pub cases: usize,
}

impl Samples {
    /// Rows.
    pub fn len(&self) -> usize {
        self.y.len()
    }
    /// No row.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
}

/// The programs of `pool` held back for validation: every fifth distinct program, in the
/// order they first appear (so a program's cases at several capacities stay together).
pub fn validation_programs(pool: &Pool) -> Vec<String> {
    let mut seen: Vec<&str> = Vec::new();
    for c in &pool.cases {
        if !seen.contains(&c.program.as_str()) {
            seen.push(&c.program);
        }
    }
    seen.iter()
        .enumerate()
        .filter(|(i, _)| i % 5 == 4)
        .map(|(_, p)| p.to_string())
        .collect()
}

/// The rows of `pool`'s cases whose program `keep` accepts (read from `dir`).
pub fn samples(
    pool: &Pool,
    dir: &Path,
    within: f64,
    keep: impl Fn(&str) -> bool,
) -> Result<Samples, StartError> {
    let mut s = Samples::default();
    for (i, case) in pool.cases.iter().enumerate() {
        if !keep(&case.program) || case.mappings.is_empty() {
            continue;
        }
        let loaded = pool.load_case(dir, i)?;
        let best = loaded
            .mappings
            .iter()
            .map(|(_, l)| *l)
            .fold(f64::INFINITY, f64::min);
        let kept: Vec<&accel_sim::Mapping> = loaded
            .mappings
            .iter()
            .filter(|(_, l)| *l <= best * (1.0 + within))
            .map(|(m, _)| m)
            .collect();
        let table = features(&loaded.program, &loaded.hw);
        if table.rows.is_empty() {
            continue;
        }
        let y = labels(&table, &kept);
        let w = 1000.0 / table.rows.len() as f32;
        for r in 0..table.rows.len() {
            let row = table.row(r);
            s.x.extend_from_slice(row);
            s.xla.push(row[XLA_FEATURE]);
            s.greedy_size.push(row[GREEDY_SIZE_FEATURE]);
            s.w.push(w);
        }
        s.y.extend(y);
        s.cases += 1;
    }
    Ok(s)
}

/// How well scores (probabilities, or 0/1 guesses) match the labels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Rows scored.
    pub rows: usize,
    /// Rows whose label is at least one half.
    pub positives: usize,
    /// Rows scored at least [`super::THRESHOLD`].
    pub predicted: usize,
    /// Weighted binary cross-entropy (scores clamped to `[1e-6, 1 - 1e-6]`).
    pub bce: f64,
    /// Share of rows on the right side of the threshold (labels rounded).
    pub accuracy: f64,
    /// Area under the ROC curve (ties count a half).
    pub auc: f64,
}

/// [`Metrics`] of `scores` against `s`'s labels.
pub fn metrics(scores: &[f32], s: &Samples) -> Metrics {
    let n = s.len();
    let mut bce = 0.0;
    let mut wsum = 0.0;
    let mut right = 0;
    for ((&score, &y), &w) in scores.iter().zip(&s.y).zip(&s.w) {
        let p = (score as f64).clamp(1e-6, 1.0 - 1e-6);
        let (y64, w) = (y as f64, w as f64);
        bce -= w * (y64 * p.ln() + (1.0 - y64) * (1.0 - p).ln());
        wsum += w;
        if (score >= super::THRESHOLD) == (y >= 0.5) {
            right += 1;
        }
    }
    Metrics {
        rows: n,
        positives: s.y.iter().filter(|&&y| y >= 0.5).count(),
        predicted: scores.iter().filter(|&&p| p >= super::THRESHOLD).count(),
        bce: if wsum > 0.0 { bce / wsum } else { 0.0 },
        accuracy: right as f64 / n.max(1) as f64,
        auc: auc(scores, &s.y),
    }
}

/// The AUC of `scores` for labels rounded at one half.
fn auc(scores: &[f32], y: &[f32]) -> f64 {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    // Mann-Whitney: the positives' mean rank, ties at their mean rank.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        let mid = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            if y[k] >= 0.5 {
                rank_sum += mid;
            }
        }
        i = j + 1;
    }
    let pos = y.iter().filter(|&&v| v >= 0.5).count() as f64;
    let neg = y.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 {
        return 0.5;
    }
    (rank_sum - pos * (pos + 1.0) / 2.0) / (pos * neg)
}

/// What one epoch reached.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Epoch {
    /// Its number, from 0.
    pub epoch: usize,
    /// The mean training loss over its steps.
    pub train_loss: f64,
    /// The predictor's metrics on the validation rows after it.
    pub validation: Metrics,
}

/// The predictor's probabilities on every row of `s`.
pub fn predict(p: &Predictor, s: &Samples) -> Vec<f32> {
    s.x.chunks_exact(FEATURES)
        .map(|row| p.probability(row))
        .collect()
}

/// Trains a predictor on `train` for `config.epochs`, telling `on_epoch` of each epoch's
/// loss and its metrics on `validation`.
pub fn train(
    config: &StartTraining,
    train: &Samples,
    validation: &Samples,
    on_epoch: &mut dyn FnMut(&Epoch),
) -> Result<Predictor, StartError> {
    if train.is_empty() || config.batch == 0 || config.epochs == 0 {
        return Err(StartError::Config(
            "training needs rows, a batch of at least 1 and at least one epoch".into(),
        ));
    }
    let device = Device::Cpu;
    let mut predictor = Predictor::new(&config.hidden, config.seed);
    let vars = predictor.vars(&device)?;
    let batches = train.len().div_ceil(config.batch);
    let steps = (batches * config.epochs) as u64;
    let mut optimizer = Optimizer::new(
        &vars,
        OptimConfig {
            learning_rate: config.learning_rate,
            warmup_steps: (steps / 50).max(1),
            decay: Decay::Cosine,
            total_steps: steps,
            final_lr_fraction: 0.05,
            weight_decay: 1e-4,
            ..OptimConfig::default()
        },
    )?;
    let mut rng = StdRng::seed_from_u64(config.seed);
    let mut order: Vec<usize> = (0..train.len()).collect();
    for epoch in 0..config.epochs {
        order.shuffle(&mut rng);
        let mut total = 0.0;
        for chunk in order.chunks(config.batch) {
            let (x, y, w) = batch(train, chunk);
            let n = chunk.len();
            let x = Tensor::from_vec(x, (n, FEATURES), &device)?;
            let y = Tensor::from_vec(y, n, &device)?;
            let w = Tensor::from_vec(w, n, &device)?;
            let z = forward(&vars, &x)?;
            // max(z, 0) - z y + ln(1 + e^-|z|): the cross-entropy of logits, stable.
            let per_row = ((z.relu()? - (&z * &y)?)? + (z.abs()?.neg()?.exp()? + 1.0)?.log()?)?;
            let loss = ((per_row * &w)?.sum_all()? / w.sum_all()?.to_scalar::<f32>()? as f64)?;
            total += loss.to_scalar::<f32>()? as f64 * n as f64;
            optimizer.step(&loss)?;
        }
        predictor = predictor.with_vars(&vars)?;
        on_epoch(&Epoch {
            epoch,
            train_loss: total / train.len() as f64,
            validation: metrics(&predict(&predictor, validation), validation),
        });
    }
    Ok(predictor)
}

fn batch(s: &Samples, rows: &[usize]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut x = Vec::with_capacity(rows.len() * FEATURES);
    let mut y = Vec::with_capacity(rows.len());
    let mut w = Vec::with_capacity(rows.len());
    for &r in rows {
        x.extend_from_slice(&s.x[r * FEATURES..(r + 1) * FEATURES]);
        y.push(s.y[r]);
        w.push(s.w[r]);
    }
    (x, y, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_is_the_share_of_pairs_ordered_right() {
        let y = [1.0, 0.0, 1.0, 0.0];
        assert_eq!(auc(&[0.9, 0.1, 0.8, 0.2], &y), 1.0);
        assert_eq!(auc(&[0.1, 0.9, 0.2, 0.8], &y), 0.0);
        // One positive above both negatives, one between: 3 of 4 pairs.
        assert_eq!(auc(&[0.9, 0.5, 0.3, 0.1], &y), 0.75);
        // All tied: a half.
        assert_eq!(auc(&[0.5; 4], &y), 0.5);
    }

    /// Rows whose label is a simple function of one feature: training learns it.
    #[test]
    fn training_learns_a_separable_rule() {
        let mut s = Samples::default();
        let mut rng = StdRng::seed_from_u64(1);
        for i in 0..2000 {
            let row: Vec<f32> = (0..FEATURES)
                .map(|_| rand::Rng::random_range(&mut rng, -1.0..1.0))
                .collect();
            s.y.push(if row[3] > 0.2 { 1.0 } else { 0.0 });
            s.x.extend(row);
            s.w.push(1.0 + (i % 3) as f32);
        }
        s.xla = vec![0.0; s.len()];
        s.greedy_size = vec![0.0; s.len()];
        let config = StartTraining {
            hidden: vec![16],
            epochs: 30,
            batch: 128,
            learning_rate: 1e-2,
            ..StartTraining::default()
        };
        let mut last = None;
        let p = train(&config, &s, &s, &mut |e| last = Some(e.clone())).unwrap();
        let m = metrics(&predict(&p, &s), &s);
        assert!(m.auc > 0.98 && m.accuracy > 0.95, "{m:?}");
        assert_eq!(last.unwrap().validation, m);
    }
}
