//! The search's own cost per simulation, without a network: a cheap pseudo-random model
//! ([`RandomModel`]) on the bench's reference shape (observation 512, hidden 256, 13
//! actions, 3 masked at the root), batch 256 x 16 simulations, pUCT and Gumbel. Time
//! inside the model is measured and subtracted, so "search only" is what the tree costs.
//!
//! `cargo run --release -p muzero --example search_speed [-- BATCH SIMS REPEATS]`

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use muzero::toy::RandomModel;
use muzero::{GumbelConfig, SearchConfig, Searcher};
use muzero::{Model, ModelError, ModelOutput};
use rand::rngs::StdRng;
use rand::SeedableRng;

const ROUNDS: usize = 5;

/// Adds up the wall time spent inside the wrapped model.
struct Timed<M> {
    inner: M,
    nanos: AtomicU64,
}

impl<M: Model> Timed<M> {
    fn time<T>(&self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }
}

impl<M: Model> Model for Timed<M> {
    fn observation_len(&self) -> usize {
        self.inner.observation_len()
    }
    fn hidden_len(&self) -> usize {
        self.inner.hidden_len()
    }
    fn action_count(&self) -> usize {
        self.inner.action_count()
    }
    fn initial_inference(&self, o: &[f32], batch: usize) -> Result<ModelOutput, ModelError> {
        self.time(|| self.inner.initial_inference(o, batch))
    }
    fn recurrent_inference(
        &self,
        h: &[f32],
        a: &[usize],
        batch: usize,
    ) -> Result<ModelOutput, ModelError> {
        self.time(|| self.inner.recurrent_inference(h, a, batch))
    }
}

fn main() -> Result<(), ModelError> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().map_err(|e| format!("argument {a:?}: {e}")))
        .collect::<Result<_, _>>()?;
    let batch = args.first().copied().unwrap_or(256);
    let sims = args.get(1).copied().unwrap_or(16);
    let repeats = args.get(2).copied().unwrap_or(20);
    let (obs_len, hidden, actions) = (512, 256, 13);
    let model = Timed {
        inner: RandomModel::new(obs_len, hidden, actions, 1)?,
        nanos: AtomicU64::new(0),
    };
    let obs: Vec<f32> = (0..batch * obs_len)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
        .collect();
    // The reference shape masks 3 actions at each root (which 3 varies by root).
    let legal: Vec<bool> = (0..batch * actions)
        .map(|i| (i % actions + i / actions) % actions >= 3)
        .collect();
    let configs = [
        (
            "gumbel",
            SearchConfig {
                simulations: sims,
                gumbel: Some(GumbelConfig::default()),
                ..Default::default()
            },
        ),
        (
            "puct",
            SearchConfig {
                simulations: sims,
                ..Default::default()
            },
        ),
    ];
    println!("batch {batch}, {sims} simulations, best of {ROUNDS} rounds of {repeats} searches; obs {obs_len}, hidden {hidden}, {actions} actions");
    for (name, config) in configs {
        let mut searcher = Searcher::new();
        let mut rng = StdRng::seed_from_u64(0);
        // One warm-up search sizes the buffers.
        searcher.search(&model, &obs, &legal, batch, &config, &mut rng)?;
        // The best of several rounds: the machine is shared, and other load only slows.
        let mut best: Option<(f64, f64, f64)> = None;
        for _ in 0..ROUNDS {
            model.nanos.store(0, Ordering::Relaxed);
            let mut depth = 0.0;
            let start = Instant::now();
            for _ in 0..repeats {
                let outs = searcher.search(&model, &obs, &legal, batch, &config, &mut rng)?;
                depth += outs.iter().map(|o| o.mean_depth as f64).sum::<f64>() / batch as f64;
            }
            let total = start.elapsed().as_secs_f64();
            let in_model = model.nanos.load(Ordering::Relaxed) as f64 * 1e-9;
            if best.is_none_or(|(t, _, _)| total < t) {
                best = Some((total, in_model, depth / repeats as f64));
            }
        }
        let (total, in_model, depth) = best.expect("ROUNDS > 0");
        let n = (batch * sims * repeats) as f64;
        println!(
            "{name:>7}: {:>10.0} sims/s with the dummy model, {:>10.0} sims/s search only \
             ({:.3} us/sim; model {:.0}% of the time), mean depth {depth:.2}",
            n / total,
            n / (total - in_model),
            (total - in_model) / n * 1e6,
            100.0 * in_model / total,
        );
    }
    Ok(())
}
