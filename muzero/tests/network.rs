//! The networks end to end: gradients reach every parameter, checkpoints round-trip
//! bitwise and fail clearly, the loss can overfit a batch, and the optimizer resumes
//! exactly.

use candle_core::Device;
use muzero::Model;
use muzero::Support;
use muzero::TrainingBatch;
use muzero::{LossWeights, MuZeroNet, NetworkConfig};
use muzero::{OptimConfig, Optimizer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;

fn tiny(observation_len: usize) -> NetworkConfig {
    NetworkConfig {
        observation_len,
        action_count: 4,
        hidden: 16,
        repr_layers: vec![24],
        blocks: 1,
        dyn_layers: vec![20],
        pred_layers: vec![12],
        value_support: Support::symmetric(6, 10.0),
        reward_support: Support::symmetric(4, 10.0),
    }
}

/// A batch with random observations and targets, every position present.
fn random_batch(config: &NetworkConfig, n: usize, k: usize, seed: u64) -> TrainingBatch {
    let mut rng = StdRng::seed_from_u64(seed);
    let a = config.action_count;
    let mut target_policies = vec![0.0f32; n * (k + 1) * a];
    for row in target_policies.chunks_mut(a) {
        let raw: Vec<f32> = (0..a).map(|_| rng.random_range(0.0..1.0)).collect();
        let z: f32 = raw.iter().sum();
        for (t, r) in row.iter_mut().zip(raw) {
            *t = r / z;
        }
    }
    TrainingBatch {
        batch: n,
        unroll: k,
        action_count: a,
        observations: (0..n * config.observation_len)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect(),
        actions: (0..n * k).map(|_| rng.random_range(0..a)).collect(),
        target_values: (0..n * (k + 1))
            .map(|_| rng.random_range(-0.5..0.5))
            .collect(),
        target_rewards: (0..n * (k + 1))
            .map(|i| {
                if i % (k + 1) == 0 {
                    0.0
                } else {
                    rng.random_range(-0.1..0.1)
                }
            })
            .collect(),
        target_policies,
        mask: vec![1.0; n * (k + 1)],
        policy_mask: vec![1.0; n * (k + 1)],
        weights: (0..n).map(|_| rng.random_range(0.5..1.0)).collect(),
        indices: (0..n).map(|i| (0, i)).collect(),
    }
}

/// A fresh path in the system temp folder, removed on drop.
struct TempPath(PathBuf);

impl TempPath {
    fn new(name: &str) -> TempPath {
        let dir = std::env::temp_dir().join(format!("muzero-net-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempPath(dir.join(name))
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn every_parameter_gets_a_nonzero_gradient() {
    let config = tiny(10);
    let net = MuZeroNet::new(&config, 1, &Device::Cpu).unwrap();
    let batch = random_batch(&config, 8, 3, 2);
    let out = net.loss(&batch, &LossWeights::default()).unwrap();
    let grads = out.loss.backward().unwrap();
    let mut missing = Vec::new();
    for (name, var) in net.vars() {
        let total = grads.get(var).map(|g| {
            g.abs()
                .unwrap()
                .sum_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap()
        });
        match total {
            Some(t) if t > 0.0 && t.is_finite() => {}
            other => missing.push(format!("{name} ({other:?})")),
        }
    }
    assert!(
        missing.is_empty(),
        "parameters without a gradient: {missing:?}"
    );
    // Every kind of parameter is in the list: blocks (with layer norm) and all heads.
    let names: Vec<&str> = net.vars().iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "repr_block.0.ln.weight",
        "dyn_block.0.fc2.bias",
        "dyn.out.weight",
        "pred.heads.bias",
    ] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
}

#[test]
fn loss_parts_are_consistent_and_masks_silence_them() {
    let config = tiny(10);
    let net = MuZeroNet::new(&config, 1, &Device::Cpu).unwrap();
    let mut batch = random_batch(&config, 6, 2, 3);
    let w = LossWeights {
        value: 0.25,
        reward: 2.0,
        policy: 1.0,
    };
    let out = net.loss(&batch, &w).unwrap();
    let p = out.parts;
    assert!(p.value > 0.0 && p.reward > 0.0 && p.policy > 0.0);
    assert!((p.total - (0.25 * p.value + 2.0 * p.reward + p.policy)).abs() < 1e-5);
    assert_eq!(out.loss.to_scalar::<f32>().unwrap(), p.total);

    // The priorities are the step-0 value errors of the model's own predictions.
    let init = net.initial_inference(&batch.observations, 6).unwrap();
    for (i, e) in out.value_errors.iter().enumerate() {
        let want = (init.value[i] - batch.target_values[i * 3]).abs();
        assert!((e - want).abs() < 1e-4, "sample {i}: {e} vs {want}");
    }

    batch.mask.fill(0.0);
    batch.policy_mask.fill(0.0);
    let silent = net.loss(&batch, &w).unwrap().parts;
    assert_eq!(
        (silent.value, silent.reward, silent.policy),
        (0.0, 0.0, 0.0)
    );

    // No unroll at all: only step 0 counts, no reward term.
    let flat = random_batch(&config, 4, 0, 4);
    let p = net.loss(&flat, &w).unwrap().parts;
    assert!(p.value > 0.0 && p.policy > 0.0 && p.reward == 0.0);
}

#[test]
fn bad_batches_are_errors_naming_the_field() {
    let config = tiny(10);
    let net = MuZeroNet::new(&config, 1, &Device::Cpu).unwrap();
    let good = random_batch(&config, 4, 2, 5);
    let mut b = good.clone();
    b.target_policies.pop();
    let e = net.loss(&b, &LossWeights::default()).err().unwrap();
    assert!(
        e.to_string()
            .starts_with("training batch: `target_policies` has 47 entries, expected 48"),
        "{e}"
    );
    let mut b = good.clone();
    b.weights[2] = f32::NAN;
    let e = net.loss(&b, &LossWeights::default()).err().unwrap();
    assert!(e.to_string().contains("`weights`[2] is NaN"), "{e}");
    let mut b = good.clone();
    b.actions[1] = 9;
    let e = net.loss(&b, &LossWeights::default()).err().unwrap();
    assert!(e.to_string().contains("action 9"), "{e}");
    let b = TrainingBatch { batch: 0, ..good };
    let e = net.loss(&b, &LossWeights::default()).err().unwrap();
    assert_eq!(e.to_string(), "training batch: batch is 0");
}

#[test]
fn save_then_load_gives_bitwise_identical_outputs() {
    let config = tiny(10);
    let net = MuZeroNet::new(&config, 11, &Device::Cpu).unwrap();
    let path = TempPath::new("roundtrip.safetensors");
    net.save(&path.0).unwrap();
    let back = MuZeroNet::load(&path.0, &config, &Device::Cpu).unwrap();
    assert_eq!(MuZeroNet::read_config(&path.0).unwrap(), config);

    let batch = random_batch(&config, 5, 1, 6);
    let a = net.initial_inference(&batch.observations, 5).unwrap();
    let b = back.initial_inference(&batch.observations, 5).unwrap();
    assert_eq!(a, b);
    let actions = [0, 1, 2, 3, 1];
    let ra = net.recurrent_inference(&a.hidden, &actions, 5).unwrap();
    let rb = back.recurrent_inference(&b.hidden, &actions, 5).unwrap();
    assert_eq!(ra, rb);
    // A different seed really is different, so the equality above means something.
    let other = MuZeroNet::new(&config, 12, &Device::Cpu).unwrap();
    assert_ne!(other.initial_inference(&batch.observations, 5).unwrap(), a);

    // The snapshot a self-play thread would use is a copy, not a view.
    let snap = net.snapshot().unwrap();
    assert_eq!(snap.initial_inference(&batch.observations, 5).unwrap(), a);
    net.copy_weights_from(&other).unwrap();
    assert_eq!(snap.initial_inference(&batch.observations, 5).unwrap(), a);
}

#[test]
fn loading_another_shape_or_a_bad_file_is_a_clear_error() {
    let config = tiny(10);
    let net = MuZeroNet::new(&config, 11, &Device::Cpu).unwrap();
    let path = TempPath::new("shape.safetensors");
    net.save(&path.0).unwrap();
    let shown = path.0.display().to_string();

    let wider = tiny(12);
    let e = MuZeroNet::load(&path.0, &wider, &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{shown}: checkpoint built with another network shape: tensor `repr.0.weight` \
             is [10, 24], the config needs [12, 24]"
        )
    );
    let deeper = NetworkConfig {
        blocks: 2,
        ..config.clone()
    };
    let e = MuZeroNet::load(&path.0, &deeper, &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("it lacks tensor `dyn_block.1.fc1.bias`"), "{e}");

    let missing = TempPath::new("never-written.safetensors");
    let e = MuZeroNet::load(&missing.0, &config, &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.ends_with("no such file"), "{e}");

    let bytes = std::fs::read(&path.0).unwrap();
    let truncated = TempPath::new("truncated.safetensors");
    std::fs::write(&truncated.0, &bytes[..bytes.len() / 2]).unwrap();
    let e = MuZeroNet::load(&truncated.0, &config, &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("not a network checkpoint (corrupt or truncated)"),
        "{e}"
    );

    // A flipped byte inside the weights passes safetensors' own checks; the checksum
    // catches it.
    let mut flipped = bytes.clone();
    let at = flipped.len() - 7;
    flipped[at] ^= 0x40;
    let e = MuZeroNet::from_bytes("flipped", &flipped, &config, &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("flipped: corrupt checkpoint: tensor data checksum"),
        "{e}"
    );

    let e = MuZeroNet::from_bytes("junk", b"hello, not weights", &config, &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.starts_with("junk: not a network checkpoint"), "{e}");
}

/// The loss of a perfect predictor: each cross-entropy at its floor, the entropy of its
/// target, with the same step scales, masks and weights as the loss.
fn entropy_floor(config: &NetworkConfig, b: &TrainingBatch, w: &LossWeights) -> f32 {
    let entropy = |p: &[f32]| -> f32 { p.iter().filter(|&&x| x > 0.0).map(|&x| -x * x.ln()).sum() };
    let (n, k, a) = (b.batch, b.unroll, b.action_count);
    let mut total = 0.0;
    for i in 0..n {
        for s in 0..=k {
            let j = i * (k + 1) + s;
            let scale = b.weights[i] / n as f32 * if s == 0 { 1.0 } else { 1.0 / k as f32 };
            let v = entropy(&config.value_support.encode(b.target_values[j]));
            let p = entropy(&b.target_policies[j * a..(j + 1) * a]);
            total += scale * (w.value * v * b.mask[j] + w.policy * p * b.policy_mask[j]);
            if s > 0 {
                let r = entropy(&config.reward_support.encode(b.target_rewards[j]));
                total += scale * w.reward * r * b.mask[j];
            }
        }
    }
    total
}

#[test]
fn overfitting_one_batch_drives_the_loss_down() {
    let config = tiny(10);
    let net = MuZeroNet::new(&config, 21, &Device::Cpu).unwrap();
    let batch = random_batch(&config, 8, 3, 22);
    let mut opt = Optimizer::new(
        net.vars(),
        OptimConfig {
            learning_rate: 1e-2,
            warmup_steps: 5,
            total_steps: 50,
            ..OptimConfig::default()
        },
    )
    .unwrap();
    let w = LossWeights::default();
    let floor = entropy_floor(&config, &batch, &w);
    let first = net.loss(&batch, &w).unwrap().parts;
    for _ in 0..50 {
        let out = net.loss(&batch, &w).unwrap();
        opt.step(&out.loss).unwrap();
    }
    let last = net.loss(&batch, &w).unwrap().parts;
    // The loss cannot fall below the targets' own entropy; what it can lose is the rest.
    assert!(first.total > floor && last.total > floor - 1e-4);
    assert!(
        last.total - floor < 0.4 * (first.total - floor),
        "loss {} -> {} (floor {floor})",
        first.total,
        last.total
    );
    assert!(last.value < first.value && last.reward < first.reward);
    assert!(last.policy < first.policy);
}

#[test]
fn optimizer_state_resumes_training_exactly() {
    let config = tiny(10);
    let oc = OptimConfig {
        learning_rate: 2e-3,
        warmup_steps: 2,
        total_steps: 20,
        ..OptimConfig::default()
    };
    let batches: Vec<TrainingBatch> = (0..6)
        .map(|s| random_batch(&config, 4, 2, 30 + s))
        .collect();
    let w = LossWeights::default();

    let straight = MuZeroNet::new(&config, 5, &Device::Cpu).unwrap();
    let mut opt = Optimizer::new(straight.vars(), oc.clone()).unwrap();
    let net_path = TempPath::new("resume.safetensors");
    let opt_path = TempPath::new("resume.optim");
    for (i, b) in batches.iter().enumerate() {
        if i == 3 {
            straight.save(&net_path.0).unwrap();
            opt.save(&opt_path.0).unwrap();
        }
        opt.step(&straight.loss(b, &w).unwrap().loss).unwrap();
    }

    let resumed = MuZeroNet::load(&net_path.0, &config, &Device::Cpu).unwrap();
    let mut ropt = Optimizer::load(&opt_path.0, resumed.vars(), None).unwrap();
    assert_eq!(ropt.steps(), 3);
    assert_eq!(ropt.config(), &oc);
    for b in &batches[3..] {
        ropt.step(&resumed.loss(b, &w).unwrap().loss).unwrap();
    }
    assert_eq!(ropt.steps(), 6);
    assert!(resumed.to_bytes().unwrap() == straight.to_bytes().unwrap());

    // Another shape is refused by name.
    let other = MuZeroNet::new(&tiny(12), 5, &Device::Cpu).unwrap();
    let e = Optimizer::load(&opt_path.0, other.vars(), None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("optimizer state built for another network shape"),
        "{e}"
    );
}

/// Splitting a batch keeps every sample once, in order, with all of its fields.
#[test]
fn a_split_batch_appends_back_to_itself() {
    let config = tiny(10);
    let batch = random_batch(&config, 7, 3, 40);
    for parts in [1, 2, 3, 7, 9] {
        let split = batch.split(parts);
        assert_eq!(split.len(), parts.min(7));
        let sizes: Vec<usize> = split.iter().map(|b| b.batch).collect();
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        let mut joined = TrainingBatch::default();
        for b in &split {
            joined.append(b);
        }
        assert_eq!(joined, batch, "{parts} parts");
    }
}

/// A step on a batch split between threads is the whole batch's step: the loss terms and
/// priorities agree, the weights after a few steps agree to float rounding, and a split
/// step repeats bitwise.
#[test]
fn a_step_split_among_threads_is_the_whole_batch_step() {
    let config = tiny(10);
    let batches: Vec<TrainingBatch> = (0..4)
        .map(|s| random_batch(&config, 9, 3, 50 + s))
        .collect();
    let w = LossWeights::default();
    let oc = OptimConfig {
        learning_rate: 1e-2,
        warmup_steps: 1,
        total_steps: 10,
        ..OptimConfig::default()
    };
    let run = |shards: usize| {
        let net = MuZeroNet::new(&config, 3, &Device::Cpu).unwrap();
        let mut opt = Optimizer::new(net.vars(), oc.clone()).unwrap();
        let reports: Vec<_> = batches
            .iter()
            .map(|b| muzero::train_step(&net, &mut opt, b, &w, shards).unwrap())
            .collect();
        (net, reports)
    };
    let (whole, whole_reports) = run(1);
    let (split, split_reports) = run(2);
    let (again, _) = run(2);
    assert!(split.to_bytes().unwrap() == again.to_bytes().unwrap());
    for (a, b) in whole_reports.iter().zip(&split_reports) {
        assert!((a.parts.total - b.parts.total).abs() < 1e-4 * a.parts.total.abs().max(1.0));
        assert!((a.stats.grad_norm - b.stats.grad_norm).abs() < 1e-4 * a.stats.grad_norm);
        assert_eq!(a.value_errors.len(), b.value_errors.len());
        for (x, y) in a.value_errors.iter().zip(&b.value_errors) {
            assert!((x - y).abs() < 1e-3, "{x} vs {y}");
        }
    }
    let obs: Vec<f32> = batches[0].observations.clone();
    let (x, y) = (
        whole.initial_inference(&obs, 9).unwrap(),
        split.initial_inference(&obs, 9).unwrap(),
    );
    for (p, q) in x.policy_logits.iter().zip(&y.policy_logits) {
        assert!((p - q).abs() < 1e-3, "{p} vs {q}");
    }
}

/// The update's threads share out parameters, never arithmetic: any number of them gives
/// the same weights bit for bit.
#[test]
fn the_update_is_the_same_on_any_number_of_threads() {
    let config = tiny(10);
    let batch = random_batch(&config, 6, 2, 60);
    let w = LossWeights::default();
    let run = |threads: usize| {
        let net = MuZeroNet::new(&config, 4, &Device::Cpu).unwrap();
        let mut opt = Optimizer::new(net.vars(), OptimConfig::default()).unwrap();
        for _ in 0..3 {
            let grads = opt.gradients(&net.loss(&batch, &w).unwrap().loss).unwrap();
            opt.apply(grads, threads).unwrap();
        }
        net.to_bytes().unwrap()
    };
    let one = run(1);
    assert!(one == run(2));
    assert!(one == run(5));
}
