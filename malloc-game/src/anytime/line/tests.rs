//! A move on a line gives what the full replay gives: random moves (random spans, random
//! legal actions and repaired decisions) on suite cases and generated programs with one
//! and two fast levels and with a copy budget that binds, each against the same move
//! played turn by turn from a game replayed from scratch: the same decisions, mapping and
//! latency to the bit. The moves chain (each from the line the last made), so that the
//! states a line resumes from have been through the swaps of earlier moves.

use super::*;
use crate::players::{GreedyPlayer, Player, RandomPlayer, XlaPlayer};
use crate::GameOptions;
use accel_sim::{Hardware, Program};
use bench_workloads::synthetic::large_random;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MIB: u64 = 1 << 20;

fn setup(program: Program, hw: Hardware) -> Arc<GameSetup> {
    let options = GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..GameOptions::default()
    };
    GameSetup::new(Arc::new(program), hw, options).unwrap()
}

fn suite(workload: &str, hw: &str) -> Arc<GameSetup> {
    let case = bench_workloads::suite::cases()
        .into_iter()
        .find(|c| c.workload == workload && c.hardware().name == hw)
        .unwrap();
    setup(bench_workloads::load(workload).unwrap(), case.hardware())
}

/// Suite cases (one with two fast levels) and generated programs of several seeds.
fn cases() -> Vec<(String, Arc<GameSetup>)> {
    let tpu = |cap| Hardware::tpu_v4i_like().with_capacity(1, cap).unwrap();
    let nnp = Hardware::nnp_i_like().with_capacity(2, 2 * MIB).unwrap();
    let mut v: Vec<(String, Arc<GameSetup>)> = [
        ("alexnet", "tpu-v4i-like"),
        ("gpt2-small-s128", "tpu-v4i-like"),
        ("bert-base-s128", "tpu-v4i-like"),
        ("random-dag", "tpu-v4i-like"),
        ("resnet50", "nnp-i-like"),
    ]
    .into_iter()
    .map(|(w, hw)| (format!("{w} {hw}"), suite(w, hw)))
    .collect();
    for seed in [1, 2, 3] {
        let name = format!("large-random 300 seed {seed} tpu");
        v.push((name, setup(large_random(300, seed), tpu(8 * MIB))));
    }
    for seed in [7, 8] {
        let name = format!("large-random 300 seed {seed} nnp");
        v.push((name, setup(large_random(300, seed), nnp.clone())));
    }
    // Copies slow beside the ops: the copy budget binds, and a move's copies change what
    // later buffers find room for in it.
    let mut slow = tpu(8 * MIB);
    slow.levels[0].read_bw /= 16.0;
    slow.levels[0].write_bw /= 16.0;
    for seed in [4, 5] {
        let name = format!("large-random 300 seed {seed} tpu, slow copies");
        v.push((name, setup(large_random(300, seed), slow.clone())));
    }
    v
}

/// The game of `decisions` played turn by turn from the start.
fn replayed(setup: &Arc<GameSetup>, decisions: impl IntoIterator<Item = Decision>) -> Game {
    let mut g = setup.start();
    for d in decisions {
        g.apply_decision(d).unwrap();
    }
    g
}

/// A re-decided turn: a random legal action, or the line's repair.
fn choose(line: &Line, game: &Game, rng: &mut StdRng) -> Decision {
    if rng.random_bool(0.3) {
        return line.repair(game);
    }
    let legal = game.legal_actions();
    Decision::Action(legal[rng.random_range(0..legal.len())])
}

/// The move played turn by turn from a game replayed from scratch.
fn full_replay(line: &Line, t: usize, changed: usize, seed: u64) -> Game {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut g = replayed(line.setup(), (0..t).map(|k| line.decision_at(k).unwrap()));
    for _ in 0..changed {
        if g.is_terminal() {
            break;
        }
        let d = choose(line, &g, &mut rng);
        g.apply_decision(d).unwrap();
    }
    while !g.is_terminal() {
        let d = line.repair(&g);
        g.apply_decision(d).unwrap();
    }
    g
}

/// The same move on the line.
fn spliced(line: &Line, t: usize, changed: usize, seed: u64) -> Line {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut redecide = |l: &Line, g: &mut Game, i: usize| {
        if i >= changed {
            return None;
        }
        // The repair's greedy fallback reads the simulation: as a guide that reads it.
        g.sync_simulation();
        Some(choose(l, g, &mut rng))
    };
    line.moved(t, &mut redecide, &|| false).unwrap()
}

fn assert_same(what: &str, line: &Line, want: &Game) {
    assert_eq!(
        line.decisions.iter().copied().collect::<Vec<_>>(),
        want.decisions(),
        "{what}: decisions"
    );
    let mapping = want.mapping();
    let bad: Vec<(usize, Option<usize>)> = line
        .allocs
        .iter()
        .enumerate()
        .filter(|(b, a)| ***a != mapping.buffers[*b].allocations)
        .map(|(b, _)| (b, line.shape.position_of(line.last_pass, b)))
        .collect();
    if !bad.is_empty() {
        // Where the runs part: the first position whose run differs from the full
        // replay's.
        let full = Line::of(want, 16).unwrap();
        let first = (0..full.runs.len()).find(|&q| {
            let (a, b) = (&line.runs[q], &full.runs[q]);
            a.placed != b.placed || a.turns != b.turns || a.charges != b.charges
        });
        if let Some(q) = first {
            panic!(
                "{what}: buffers (and positions) that differ: {bad:?}; first run that differs: {q}:\n spliced {:?}\n full {:?}",
                line.runs[q], full.runs[q]
            );
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: buffers (and positions) that differ: {bad:?}"
    );
    for (b, a) in line.allocs.iter().enumerate() {
        assert!(
            **a == mapping.buffers[b].allocations,
            "{what}: buffer {b}'s allocations {:?}, the full replay's {:?}",
            **a,
            mapping.buffers[b].allocations
        );
    }
    assert_eq!(
        line.latency().to_bits(),
        want.final_latency().unwrap().to_bits(),
        "{what}: latency"
    );
}

#[test]
fn moves_give_what_the_full_replay_gives() {
    for (name, s) in cases() {
        let starts = [
            GreedyPlayer.play(&s, 0),
            XlaPlayer.play(&s, 0),
            RandomPlayer.play(&s, 3),
        ];
        for (k, start) in starts.iter().enumerate() {
            let mut line = Line::of(start, 16).unwrap();
            assert_same(&format!("{name} start {k}"), &line, start);
            let mut rng = StdRng::seed_from_u64(k as u64);
            for m in 0..48 {
                let t = rng.random_range(0..line.len());
                let changed = rng.random_range(1..4);
                let seed = rng.random();
                let want = full_replay(&line, t, changed, seed);
                let got = spliced(&line, t, changed, seed);
                assert_same(
                    &format!("{name} start {k} move {m} at turn {t}"),
                    &got,
                    &want,
                );
                line = got;
            }
            // The line's game, played turn by turn, is the last move's.
            assert_eq!(
                line.game().decisions(),
                line.decisions.iter().copied().collect::<Vec<_>>()
            );
            assert_eq!(line.game().final_latency(), Some(line.latency()));
        }
    }
}

#[test]
fn a_lines_states_are_its_games_states() {
    for (name, s) in cases() {
        let mut line = Line::of(&GreedyPlayer.play(&s, 0), 8).unwrap();
        let mut rng = StdRng::seed_from_u64(9);
        for m in 0..10 {
            let t = rng.random_range(0..line.len());
            line = spliced(&line, t, 2, rng.random());
            for _ in 0..3 {
                let t = rng.random_range(0..line.len());
                let got = line.state_before(t);
                let want = replayed(&s, (0..t).map(|k| line.decision_at(k).unwrap()));
                let what = format!("{name} move {m}, turn {t}");
                assert_eq!(got.turn(), want.turn(), "{what}");
                assert_eq!(got.pending(), want.pending(), "{what}");
                assert_eq!(got.legal_actions(), want.legal_actions(), "{what}");
                assert!(got.mapping() == want.mapping(), "{what}: mappings differ");
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
                assert!(
                    close(got.simulated_latency(), want.simulated_latency()),
                    "{what}"
                );
                assert!(close(got.proxy_latency(), want.proxy_latency()), "{what}");
            }
        }
    }
}
