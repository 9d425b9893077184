//! Replay buffer: hand-computed targets and priorities, batch layout and masks, sampling
//! frequencies, importance weights, eviction, snapshots and determinism.

use muzero::{GameHistory, ReplayBuffer, ReplayConfig, ReplayError};
use rand::rngs::StdRng;
use rand::SeedableRng;

const EPS: f32 = 1e-3;

fn config(td_steps: usize, discount: f32) -> ReplayConfig {
    ReplayConfig {
        capacity_positions: 1000,
        unroll: 5,
        td_steps,
        discount,
        alpha: 1.0,
        beta: 1.0,
        priority_epsilon: EPS,
    }
}

/// Length 4, rewards 1..4, root values 5..8, actions 2,0,1,2 over 3 actions; the
/// observation of position t is [10 t, 10 t + 1] and its policy is one-hot on t % 3.
fn tiny() -> GameHistory {
    let mut g = GameHistory::new(2, 3);
    let actions = [2, 0, 1, 2];
    for t in 0..4 {
        let mut policy = [0.0; 3];
        policy[t % 3] = 1.0;
        let obs = [10.0 * t as f32, 10.0 * t as f32 + 1.0];
        g.push_step(&obs, actions[t], (t + 1) as f32, (t + 5) as f32, &policy)
            .unwrap();
    }
    g
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-5
}

#[test]
fn n_step_targets_match_hand_computation() {
    let g = tiny();
    // n = 2, d = 0.9:
    // z0 = 1 + 0.9*2 + 0.81*v2(7) = 8.47; z1 = 2 + 0.9*3 + 0.81*v3(8) = 11.18
    // z2 = 3 + 0.9*4 (t+n = 4 = len: no bootstrap) = 6.6; z3 = 4; z4 = 0.
    let want_09 = [8.47, 11.18, 6.6, 4.0, 0.0, 0.0];
    // d = 1: z0 = 1+2+7 = 10; z1 = 2+3+8 = 13; z2 = 7; z3 = 4.
    let want_10 = [10.0, 13.0, 7.0, 4.0, 0.0, 0.0];
    for (d, want) in [(0.9, want_09), (1.0, want_10)] {
        let mut b = ReplayBuffer::new(config(2, d), 2, 3).unwrap();
        let id = b.push(tiny()).unwrap();
        for (t, &z) in want.iter().enumerate() {
            assert!(close(g.value_target(t, 2, d), z), "d {d} t {t}");
            assert!(close(b.value_target(id, t).unwrap(), z), "d {d} t {t}");
        }
    }
    // n = 1 bootstraps from the next value: z0 = 1 + 0.9*6.
    assert!(close(g.value_target(0, 1, 0.9), 6.4));
    // n >= len: Monte Carlo returns, z0 = 1 + .9*2 + .81*3 + .729*4 = 8.146.
    assert!(close(g.value_target(0, 4, 0.9), 8.146));
    assert!(close(g.value_targets(50, 0.9)[0], 8.146));
    assert!(close(g.value_target(0, usize::MAX, 1.0), 10.0));
}

#[test]
fn initial_priorities_are_value_errors() {
    let mut b = ReplayBuffer::new(config(2, 0.9), 2, 3).unwrap();
    let id = b.push(tiny()).unwrap();
    // |v_t - z_t| + eps with v = 5,6,7,8 and z = 8.47, 11.18, 6.6, 4.
    for (t, p) in [3.47, 5.18, 0.4, 4.0].iter().enumerate() {
        assert!(close(b.priority(id, t).unwrap(), p + EPS), "t {t}");
    }
    assert_eq!(b.priority(id, 4), None);
}

/// Every row of a batch from `tiny()` against hand-written targets (n = 2, d = 1, K = 5).
#[test]
fn batch_rows_follow_the_batch_conventions() {
    // Uniform sampling, so every position shows up (position 2 has priority epsilon).
    let cfg = ReplayConfig {
        alpha: 0.0,
        ..config(2, 1.0)
    };
    let mut b = ReplayBuffer::new(cfg, 2, 3).unwrap();
    let id = b.push(tiny()).unwrap();
    let z = [10.0, 13.0, 7.0, 4.0];
    let rewards = [1.0, 2.0, 3.0, 4.0];
    let actions = [2usize, 0, 1, 2];
    let batch = b.sample(64, &mut StdRng::seed_from_u64(3)).unwrap();
    assert_eq!((batch.batch, batch.unroll, batch.action_count), (64, 5, 3));
    assert_eq!(batch.observations.len(), 64 * 2);
    assert_eq!(batch.actions.len(), 64 * 5);
    assert_eq!(batch.target_policies.len(), 64 * 6 * 3);
    let mut seen = [false; 4];
    for j in 0..64 {
        let (g, t) = batch.indices[j];
        assert_eq!(g, id);
        seen[t] = true;
        assert_eq!(
            &batch.observations[j * 2..j * 2 + 2],
            &[10.0 * t as f32, 10.0 * t as f32 + 1.0]
        );
        for k in 0..=5 {
            let pos = t + k;
            let i = j * 6 + k;
            let m = |c: bool| if c { 1.0 } else { 0.0 };
            assert_eq!(batch.mask[i], m(pos <= 4), "t {t} k {k}");
            assert_eq!(batch.policy_mask[i], m(pos < 4), "t {t} k {k}");
            let value = if pos < 4 { z[pos] } else { 0.0 };
            assert_eq!(batch.target_values[i], value, "t {t} k {k}");
            // The reward of the action that led to t + k; at t + k == len that is the
            // last action's reward.
            let reward = if k >= 1 && pos <= 4 {
                rewards[pos - 1]
            } else {
                0.0
            };
            assert_eq!(batch.target_rewards[i], reward, "t {t} k {k}");
            let policy = &batch.target_policies[i * 3..i * 3 + 3];
            let mut want = [0.0; 3];
            if pos < 4 {
                want[pos % 3] = 1.0;
            }
            assert_eq!(policy, &want, "t {t} k {k}");
            if k < 5 {
                let a = batch.actions[j * 5 + k];
                if pos < 4 {
                    assert_eq!(a, actions[pos], "t {t} k {k}");
                } else {
                    assert!(a < 3);
                }
            }
        }
    }
    assert_eq!(seen, [true; 4]);
}

#[test]
fn past_end_actions_are_uniform() {
    let mut b = ReplayBuffer::new(config(2, 1.0), 2, 3).unwrap();
    let mut g = GameHistory::new(2, 3);
    g.push_step(&[0.0, 0.0], 0, 1.0, 0.0, &[1.0, 0.0, 0.0])
        .unwrap();
    b.push(g).unwrap();
    let mut counts = [0usize; 3];
    let mut rng = StdRng::seed_from_u64(9);
    for _ in 0..200 {
        let batch = b.sample(32, &mut rng).unwrap();
        for j in 0..32 {
            assert_eq!(batch.actions[j * 5], 0);
            for k in 1..5 {
                counts[batch.actions[j * 5 + k]] += 1;
            }
        }
    }
    // 25,600 draws over 3 actions: each share within 0.01 of a third (3.4 sigma).
    for c in counts {
        assert!((c as f64 / 25_600.0 - 1.0 / 3.0).abs() < 0.01, "{counts:?}");
    }
}

/// Pearson's chi-square of observed counts against expected probabilities.
fn chi_square(counts: &[usize], probs: &[f64]) -> f64 {
    let n: usize = counts.iter().sum();
    counts
        .iter()
        .zip(probs)
        .map(|(&c, &p)| {
            let e = n as f64 * p;
            (c as f64 - e).powi(2) / e
        })
        .sum()
}

/// Two games of 3 and 5 positions with priorities 1..8 (after epsilon).
fn prioritized(alpha: f32) -> (ReplayBuffer, Vec<(usize, usize)>, Vec<f64>) {
    let cfg = ReplayConfig {
        alpha,
        ..config(2, 1.0)
    };
    let mut b = ReplayBuffer::new(cfg, 2, 3).unwrap();
    let g0 = b.push(tiny()).unwrap();
    let g1 = b.push(tiny()).unwrap();
    let idx: Vec<(usize, usize)> = (0..4)
        .map(|t| (g0, t))
        .chain((0..4).map(|t| (g1, t)))
        .collect();
    let raw: Vec<f32> = (1..=8).map(|p| p as f32 - EPS).collect();
    assert_eq!(b.update_priorities(&idx, &raw).unwrap(), 8);
    let weights: Vec<f64> = (1..=8).map(|p| (p as f64).powf(alpha as f64)).collect();
    let total: f64 = weights.iter().sum();
    (b, idx, weights.iter().map(|w| w / total).collect())
}

#[test]
fn sampling_frequencies_follow_priorities() {
    for alpha in [1.0, 0.5, 0.0] {
        let (b, idx, probs) = prioritized(alpha);
        let mut counts = vec![0usize; 8];
        let mut rng = StdRng::seed_from_u64(42);
        for _ in 0..400 {
            let batch = b.sample(100, &mut rng).unwrap();
            for pair in &batch.indices {
                counts[idx.iter().position(|p| p == pair).unwrap()] += 1;
            }
        }
        // 7 degrees of freedom: the 99.9% quantile is 24.3.
        let chi = chi_square(&counts, &probs);
        assert!(chi < 24.3, "alpha {alpha}: chi2 {chi}, counts {counts:?}");
        if alpha == 1.0 {
            // And the test has power: the uniform law is far off.
            assert!(chi_square(&counts, &[0.125; 8]) > 1000.0);
        }
    }
}

#[test]
fn importance_weights_match_hand_computation() {
    // Two positions with priorities 1 and 3 (alpha 1): P = 1/4 and 3/4, N = 2.
    // beta 0.5: w = (N P)^-0.5 = sqrt(2) and sqrt(2/3); max-normalised: 1 and 1/sqrt(3).
    let cfg = ReplayConfig {
        beta: 0.5,
        ..config(2, 1.0)
    };
    let mut b = ReplayBuffer::new(cfg, 2, 3).unwrap();
    let mut g = GameHistory::new(2, 3);
    for _ in 0..2 {
        g.push_step(&[0.0, 0.0], 0, 0.0, 0.0, &[1.0, 0.0, 0.0])
            .unwrap();
    }
    let id = b.push(g).unwrap();
    b.update_priorities(&[(id, 0), (id, 1)], &[1.0 - EPS, 3.0 - EPS])
        .unwrap();
    let batch = b.sample(64, &mut StdRng::seed_from_u64(5)).unwrap();
    let (mut n0, mut n1) = (0, 0);
    for (&(_, t), &w) in batch.indices.iter().zip(&batch.weights) {
        if t == 0 {
            n0 += 1;
            assert!(close(w, 1.0), "{w}");
        } else {
            n1 += 1;
            assert!(close(w, 1.0 / 3f32.sqrt()), "{w}");
        }
    }
    // Stratified: exactly a quarter of the slices lie in position 0's mass.
    assert_eq!((n0, n1), (16, 48));

    // With beta 0 every weight is 1.
    b.set_beta(0.0).unwrap();
    let batch = b.sample(8, &mut StdRng::seed_from_u64(5)).unwrap();
    assert!(batch.weights.iter().all(|&w| w == 1.0));
    assert!(b.set_beta(1.5).is_err());
}

#[test]
fn eviction_keeps_indices_valid() {
    let cfg = ReplayConfig {
        capacity_positions: 10,
        ..config(2, 1.0)
    };
    let mut b = ReplayBuffer::new(cfg, 2, 3).unwrap();
    let ids: Vec<usize> = (0..3).map(|_| b.push(tiny()).unwrap()).collect();
    assert_eq!(ids, [0, 1, 2]);
    // 12 positions would pass 10: game 0 went before game 2 came in.
    assert_eq!((b.games(), b.positions()), (2, 8));
    assert_eq!(b.game_ids(), 1..3);
    assert!(b.game(0).is_none());
    assert_eq!(b.value_target(0, 0), None);
    assert_eq!(b.value_target(2, 0), Some(10.0));
    let batch = b.sample(50, &mut StdRng::seed_from_u64(1)).unwrap();
    assert!(batch.indices.iter().all(|&(g, _)| g == 1 || g == 2));

    // A learner answering after eviction: the stale pairs are skipped.
    let applied = b
        .update_priorities(&[(0, 1), (2, 1), (2, 9), (7, 0)], &[5.0, 5.0, 5.0, 5.0])
        .unwrap();
    assert_eq!(applied, 1);
    assert_eq!(b.priority(2, 1), Some(5.0 + EPS));
    assert_eq!(b.reanalyse(0, &[0.0; 4], &[0.0; 12]), Ok(false));

    // The pairs a batch hands out stay valid while their games live, and point at the
    // right positions after many evictions (observations tell positions apart).
    let mut rng = StdRng::seed_from_u64(2);
    for _ in 0..20 {
        b.push(tiny()).unwrap();
        let batch = b.sample(16, &mut rng).unwrap();
        for (j, &(g, t)) in batch.indices.iter().enumerate() {
            let h = b.game(g).unwrap();
            assert_eq!(&batch.observations[j * 2..j * 2 + 2], h.observation(t));
        }
    }
    assert_eq!(b.game_ids(), 21..23);
}

#[test]
fn reanalyse_replaces_values_and_targets() {
    let mut b = ReplayBuffer::new(config(2, 1.0), 2, 3).unwrap();
    let id = b.push(tiny()).unwrap();
    let before = b.priority(id, 0);
    let policies = [1.0 / 3.0; 12];
    assert_eq!(
        b.reanalyse(id, &[0.0, 0.0, 100.0, 0.0], &policies),
        Ok(true)
    );
    // z0 now bootstraps from the new v2 = 100: 1 + 2 + 100.
    assert_eq!(b.value_target(id, 0), Some(103.0));
    assert_eq!(b.value_target(id, 1), Some(5.0));
    assert_eq!(b.game(id).unwrap().policy(3), &[1.0 / 3.0; 3]);
    assert_eq!(b.priority(id, 0), before);
    let batch = b.sample(8, &mut StdRng::seed_from_u64(0)).unwrap();
    assert!(batch
        .target_policies
        .iter()
        .all(|&p| p == 1.0 / 3.0 || p == 0.0));

    let e = b.reanalyse(id, &[0.0; 3], &policies).unwrap_err();
    assert_eq!(
        e.to_string(),
        "reanalyse: root_values has 3 entries, expected 4"
    );
    let mut bad = policies;
    bad[5] = -1.0;
    let e = b.reanalyse(id, &[0.0; 4], &bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        "reanalyse: policies[5] = -1: must be finite and >= 0"
    );
}

#[test]
fn snapshot_round_trip() {
    let cfg = ReplayConfig {
        capacity_positions: 10,
        alpha: 0.6,
        beta: 0.4,
        ..config(3, 0.9)
    };
    let mut b = ReplayBuffer::new(cfg, 2, 3).unwrap();
    for _ in 0..5 {
        b.push(tiny()).unwrap();
    }
    b.update_priorities(&[(4, 2), (3, 0)], &[9.0, 0.0]).unwrap();
    let bytes = binio::to_bytes("replay", b"MMZREPL\0", 1, &b).unwrap();
    let back: ReplayBuffer = binio::from_bytes("replay", &bytes, b"MMZREPL\0", 1).unwrap();
    assert_eq!(back.config(), b.config());
    assert_eq!((back.games(), back.positions()), (b.games(), b.positions()));
    assert_eq!(back.game_ids(), b.game_ids());
    for id in b.game_ids() {
        assert_eq!(back.game(id), b.game(id));
        for t in 0..4 {
            assert_eq!(back.priority(id, t), b.priority(id, t));
            assert_eq!(back.value_target(id, t), b.value_target(id, t));
        }
    }
    let s1 = b.sample(32, &mut StdRng::seed_from_u64(8)).unwrap();
    let s2 = back.sample(32, &mut StdRng::seed_from_u64(8)).unwrap();
    assert_eq!(s1, s2);
    // The restored buffer goes on numbering and evicting where the original stopped.
    let mut back = back;
    assert_eq!(back.push(tiny()).unwrap(), 5);
    assert_eq!(back.game_ids(), 4..6);

    // A truncated snapshot is an error, not a panic.
    let cut = &bytes[..bytes.len() - 7];
    assert!(binio::from_bytes::<ReplayBuffer>("replay", cut, b"MMZREPL\0", 1).is_err());
}

#[test]
fn sampling_is_deterministic_per_seed() {
    let (b, _, _) = prioritized(0.6);
    let a1 = b.sample(40, &mut StdRng::seed_from_u64(11)).unwrap();
    let a2 = b.sample(40, &mut StdRng::seed_from_u64(11)).unwrap();
    let c = b.sample(40, &mut StdRng::seed_from_u64(12)).unwrap();
    assert_eq!(a1, a2);
    assert_ne!(a1, c);
    // sample_into reuses a batch and gives the same result.
    let mut reused = b.sample(3, &mut StdRng::seed_from_u64(0)).unwrap();
    b.sample_into(40, &mut StdRng::seed_from_u64(11), &mut reused)
        .unwrap();
    assert_eq!(reused, a1);
}

#[test]
fn bad_input_is_an_error_naming_the_field() {
    let msg = |c: ReplayConfig| ReplayBuffer::new(c, 2, 3).unwrap_err().to_string();
    let base = config(2, 1.0);
    assert_eq!(
        msg(ReplayConfig {
            unroll: 0,
            ..base.clone()
        }),
        "replay config: unroll = 0: must be in 1..=1024 (K)"
    );
    assert!(msg(ReplayConfig {
        capacity_positions: 0,
        ..base.clone()
    })
    .contains("capacity_positions = 0"));
    assert!(msg(ReplayConfig {
        td_steps: 0,
        ..base.clone()
    })
    .contains("td_steps = 0"));
    assert!(msg(ReplayConfig {
        discount: 1.5,
        ..base.clone()
    })
    .contains("discount = 1.5"));
    assert!(msg(ReplayConfig {
        alpha: f32::NAN,
        ..base.clone()
    })
    .contains("alpha = NaN"));
    assert!(msg(ReplayConfig {
        beta: -0.1,
        ..base.clone()
    })
    .contains("beta = -0.1"));
    assert!(msg(ReplayConfig {
        priority_epsilon: 0.0,
        ..base.clone()
    })
    .contains("priority_epsilon = 0"));
    assert!(ReplayBuffer::new(base.clone(), 2, 0).is_err());

    let mut b = ReplayBuffer::new(base, 2, 3).unwrap();
    assert_eq!(
        b.sample(4, &mut StdRng::seed_from_u64(0)).unwrap_err(),
        ReplayError::Empty
    );
    assert_eq!(b.push(GameHistory::new(2, 3)), Err(ReplayError::EmptyGame));
    assert_eq!(
        b.push(GameHistory::new(5, 3)).unwrap_err().to_string(),
        "game history: observation_len = 5, but this buffer holds games with observation_len = 2"
    );
    let mut g = tiny();
    g.rewards[2] = f32::INFINITY;
    assert_eq!(
        b.push(g).unwrap_err().to_string(),
        "game history: rewards[2] = inf: must be finite"
    );
    let mut g = tiny();
    g.policies.pop();
    assert_eq!(
        b.push(g).unwrap_err().to_string(),
        "game history: policies has 11 entries, expected 12"
    );
    let mut g = tiny();
    assert!(g.push_step(&[0.0, 0.0], 3, 0.0, 0.0, &[0.0; 3]).is_err());
    assert!(g.push_step(&[0.0], 0, 0.0, 0.0, &[0.0; 3]).is_err());
    assert_eq!(g.len(), 4, "a refused step leaves the history unchanged");

    b.push(tiny()).unwrap();
    assert_eq!(
        b.sample(0, &mut StdRng::seed_from_u64(0)).unwrap_err(),
        ReplayError::ZeroBatch
    );
    assert_eq!(
        b.update_priorities(&[(0, 0)], &[]).unwrap_err().to_string(),
        "update_priorities: 1 indices but 0 priorities"
    );
    assert_eq!(
        b.update_priorities(&[(0, 0), (0, 1)], &[1.0, f32::NAN])
            .unwrap_err()
            .to_string(),
        "update_priorities: priorities[1] = NaN: must be finite and >= 0"
    );
    // Nothing was applied by the refused call.
    assert!(close(b.priority(0, 0).unwrap(), 5.0 + EPS));
}

/// Time per batch of 256 (K = 5) from ~100k positions with 400-float observations.
/// Run: cargo test --release -p muzero --test replay -- --ignored --nocapture
#[test]
#[ignore]
fn sample_speed() {
    use rand::Rng;
    let (obs, actions, len) = (400, 13, 500);
    let cfg = ReplayConfig {
        capacity_positions: 100_000,
        td_steps: 10,
        ..ReplayConfig::default()
    };
    let mut b = ReplayBuffer::new(cfg, obs, actions).unwrap();
    let mut rng = StdRng::seed_from_u64(0);
    let t0 = std::time::Instant::now();
    for _ in 0..201 {
        let mut g = GameHistory::new(obs, actions);
        let o: Vec<f32> = (0..obs).map(|i| i as f32).collect();
        let p = vec![1.0 / actions as f32; actions];
        for _ in 0..len {
            let a = rng.random_range(0..actions);
            g.push_step(&o, a, rng.random::<f32>() - 0.5, rng.random(), &p)
                .unwrap();
        }
        b.push(g).unwrap();
    }
    let push_s = t0.elapsed().as_secs_f64() / 201.0;
    assert_eq!(b.positions(), 100_000);
    let mut batch = b.sample(256, &mut rng).unwrap();
    let iters = 500;
    let t0 = std::time::Instant::now();
    for _ in 0..iters {
        b.sample_into(256, &mut rng, &mut batch).unwrap();
    }
    let per = t0.elapsed().as_secs_f64() / iters as f64;
    let t0 = std::time::Instant::now();
    for _ in 0..iters {
        std::hint::black_box(b.sample(256, &mut rng).unwrap());
    }
    let per_alloc = t0.elapsed().as_secs_f64() / iters as f64;
    let idx: Vec<_> = batch.indices.clone();
    let pr: Vec<f32> = (0..256).map(|i| i as f32 * 0.01).collect();
    let t0 = std::time::Instant::now();
    for _ in 0..iters {
        b.update_priorities(&idx, &pr).unwrap();
    }
    let upd = t0.elapsed().as_secs_f64() / iters as f64;
    println!(
        "positions {} games {}: sample_into {:.1} us/batch, sample {:.1} us/batch, \
         update_priorities(256) {:.1} us, push (500 positions) {:.1} us",
        b.positions(),
        b.games(),
        per * 1e6,
        per_alloc * 1e6,
        upd * 1e6,
        push_s * 1e6
    );
}

#[test]
fn careless_capacities_are_errors_not_aborts() {
    for (field, c) in [
        (
            "capacity_positions",
            ReplayConfig {
                capacity_positions: 1 << 50,
                ..ReplayConfig::default()
            },
        ),
        (
            "unroll",
            ReplayConfig {
                unroll: usize::MAX,
                ..ReplayConfig::default()
            },
        ),
    ] {
        let e = c.check().unwrap_err().to_string();
        assert!(e.contains(field), "{e}");
        assert!(ReplayBuffer::new(c, 4, 3).is_err());
    }
}
