//! Network speed at the bench's reference shape (issue 4) and a training-step rate.
//!
//! `cargo run --release -p muzero --example net_speed [seconds per measurement]`
//!
//! Prints recurrent and initial inference at batch 256 on `NetworkConfig::reference()`
//! (calls/s and microseconds per sample), then AdamW training steps/s for
//! `NetworkConfig::small(512, 13)` at batch 128 with K = 5, the batch whole and split
//! between two threads (`muzero::train_step`). Candle's matmul uses
//! `RAYON_NUM_THREADS` threads (default: the physical cores); its elementwise ops stay on
//! the calling thread (see `keep_candle_elementwise_single_threaded`) unless
//! `CANDLE_NUM_THREADS` says otherwise.

use candle_core::Device;
use muzero::Model;
use muzero::TrainingBatch;
use muzero::{LossWeights, MuZeroNet, NetworkConfig};
use muzero::{OptimConfig, Optimizer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// Runs `f` for about `budget` (after one warm-up call); returns calls per second.
fn rate(budget: Duration, mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < budget {
        f();
        calls += 1;
    }
    calls as f64 / start.elapsed().as_secs_f64()
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    muzero::keep_candle_elementwise_single_threaded();
    let secs: f64 = match std::env::args().nth(1) {
        Some(s) => s
            .parse()
            .map_err(|_| format!("seconds per measurement: `{s}` is not a number"))?,
        None => 3.0,
    };
    let budget = Duration::from_secs_f64(secs);
    let mut rng = StdRng::seed_from_u64(0);
    println!(
        "matmul threads: {}, elementwise threads: {}",
        candle_core::utils::get_num_threads(),
        std::env::var("CANDLE_NUM_THREADS").unwrap_or_default()
    );

    let config = NetworkConfig::reference();
    let net = MuZeroNet::new(&config, 0, &Device::Cpu)?;
    println!("reference shape: {} parameters", config.parameter_count());
    let batch = 256;
    let obs: Vec<f32> = (0..batch * config.observation_len)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let root = net.initial_inference(&obs, batch)?;
    let actions: Vec<usize> = (0..batch)
        .map(|_| rng.random_range(0..config.action_count))
        .collect();
    let mut failure = None;
    let r = rate(budget, || {
        if let Err(e) = net.recurrent_inference(&root.hidden, &actions, batch) {
            failure = Some(e.to_string());
        }
    });
    println!(
        "recurrent_inference  batch {batch}: {r:8.1} calls/s  {:7.3} us/sample",
        1e6 / (r * batch as f64)
    );
    let i = rate(budget, || {
        if let Err(e) = net.initial_inference(&obs, batch) {
            failure = Some(e.to_string());
        }
    });
    println!(
        "initial_inference    batch {batch}: {i:8.1} calls/s  {:7.3} us/sample",
        1e6 / (i * batch as f64)
    );

    let small = NetworkConfig::small(512, 13);
    let net = MuZeroNet::new(&small, 0, &Device::Cpu)?;
    let (n, k, a) = (128, 5, small.action_count);
    let mut policies = vec![0.0f32; n * (k + 1) * a];
    for row in policies.chunks_mut(a) {
        row[rng.random_range(0..a)] = 1.0;
    }
    let tb = TrainingBatch {
        batch: n,
        unroll: k,
        action_count: a,
        observations: (0..n * small.observation_len)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect(),
        actions: (0..n * k).map(|_| rng.random_range(0..a)).collect(),
        target_values: (0..n * (k + 1))
            .map(|_| rng.random_range(0.0..1.0))
            .collect(),
        target_rewards: (0..n * (k + 1))
            .map(|_| rng.random_range(0.0..0.05))
            .collect(),
        target_policies: policies,
        mask: vec![1.0; n * (k + 1)],
        policy_mask: vec![1.0; n * (k + 1)],
        weights: vec![1.0; n],
        indices: (0..n).map(|i| (0, i)).collect(),
    };
    let mut opt = Optimizer::new(net.vars(), OptimConfig::default())?;
    let w = LossWeights::default();
    for shards in [1, 2] {
        let t = rate(budget, || {
            if let Err(e) = muzero::train_step(&net, &mut opt, &tb, &w, shards) {
                failure = Some(e.to_string());
            }
        });
        println!(
            "train step (small: {} parameters, batch {n}, K {k}, {shards} shard(s)): {t:6.2} steps/s",
            small.parameter_count()
        );
    }
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
