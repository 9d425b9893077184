//! The fast players and baselines give what the plain algorithms give: the greedy
//! player's own rule replayed turn by turn, and the heap's queries against brute force, on programs large and varied enough that beam lines part
//! and meet again, multi-level hardware included.

use accel_sim::{Hardware, Program};
use bench_workloads::synthetic::{large_random, random_dag};
use malloc_game::players::{greedy_action, BeamPlayer, GreedyPlayer, Player};
use malloc_game::{Game, GameOptions, GameSetup};
use std::sync::Arc;
use xla_msa::{Chunk, ChunkHeap, TopGap};

const MIB: u64 = 1 << 20;

fn setup(program: Program, hw: Hardware) -> Arc<GameSetup> {
    let options = GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..GameOptions::default()
    };
    GameSetup::new(Arc::new(program), hw, options).unwrap()
}

fn cases() -> Vec<(String, Arc<GameSetup>)> {
    let tpu = |cap| Hardware::tpu_v4i_like().with_capacity(1, cap).unwrap();
    let nnp = Hardware::nnp_i_like().with_capacity(2, 2 * MIB).unwrap();
    let mut v = Vec::new();
    for seed in 0..3 {
        v.push((
            format!("random-dag {seed}"),
            setup(random_dag(60, seed), tpu(MIB)),
        ));
        v.push((
            format!("large-random 300 {seed}"),
            setup(large_random(300, seed), tpu(8 * MIB)),
        ));
    }
    v.push(("large-random nnp".into(), setup(large_random(300, 7), nnp)));
    v
}

fn assert_same(what: &str, got: &Game, want: &Game) {
    assert_eq!(got.actions(), want.actions(), "{what}: actions");
    assert_eq!(got.rewards(), want.rewards(), "{what}: rewards");
    assert_eq!(got.mapping(), want.mapping(), "{what}: mapping");
    assert_eq!(got.proxy_latency(), want.proxy_latency(), "{what}: proxy");
    assert_eq!(got.final_latency(), want.final_latency(), "{what}: latency");
    assert_eq!(got.total_return(), want.total_return(), "{what}: return");
}

#[test]
fn players_report_progress_to_the_end() {
    let s = setup(large_random(300, 1), Hardware::tpu_v4i_like());
    for p in [&GreedyPlayer as &dyn Player, &BeamPlayer::new(4)] {
        let mut seen = Vec::new();
        let g = p.play_with_progress(&s, 0, &mut |done, of| seen.push((done, of)));
        let last = *seen.last().unwrap();
        assert_eq!(last.0, last.1, "{}", p.name());
        assert!(last.0 >= g.turn(), "{}", p.name());
        assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}

#[test]
fn the_beam_finds_the_same_game_on_any_number_of_threads() {
    for (name, s) in cases() {
        let one = BeamPlayer::new(8).play(&s, 0);
        for threads in [2, 3] {
            let many = BeamPlayer::new(8).with_threads(threads).play(&s, 0);
            assert_same(&format!("{name}, {threads} threads"), &many, &one);
        }
    }
}

#[test]
fn greedy_player_equals_its_rule_replayed() {
    for (name, s) in cases() {
        let got = GreedyPlayer.play(&s, 0);
        let mut want = s.start();
        while !want.is_terminal() {
            let a = greedy_action(&want);
            want.apply_action(a).unwrap();
        }
        assert_same(&name, &got, &want);
    }
}

#[test]
fn heap_best_fit_matches_brute_force_over_long_intervals() {
    // Long chunks from op 0 (weights resident over their live range) among short ones:
    // the case the union index exists for.
    let mut x: u64 = 7;
    let mut next = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let (t, capacity, alignment) = (300, 1 << 16, 64);
    let mut heap = ChunkHeap::new(capacity, alignment, t).unwrap();
    let mut chunks: Vec<(usize, usize, u64, u64)> = Vec::new();
    for i in 0..2000 {
        let (s, e) = if i % 5 == 0 {
            (0, next(t as u64) as usize)
        } else {
            let s = next(t as u64) as usize;
            (s, (s + next(6) as usize).min(t - 1))
        };
        let size = 1 + next(3000);
        let got = heap.best_fit(s, e, size, None, TopGap::Capacity);
        // Brute force: the gaps between the chunks overlapping s..=e, best fit first.
        let mut busy: Vec<(u64, u64)> = chunks
            .iter()
            .filter(|c| c.0 <= e && s <= c.1)
            .map(|c| (c.2, c.2 + c.3))
            .collect();
        busy.sort_unstable();
        let (mut reach, mut best): (u64, Option<(u64, u64)>) = (0, None);
        for (lo, hi) in busy.into_iter().chain([(capacity, capacity)]) {
            let o = reach.div_ceil(alignment) * alignment;
            if lo > reach && o < lo && lo - o >= size && best.is_none_or(|b| (lo - o, o) < b) {
                best = Some((lo - o, o));
            }
            reach = reach.max(hi);
        }
        assert_eq!(got, best.map(|b| b.1), "chunk {i}: {s}..={e}, {size} bytes");
        if let Some(o) = got {
            heap.commit(Chunk {
                start: s,
                end: e,
                offset: o,
                size,
            })
            .unwrap();
            chunks.push((s, e, o, size));
        }
    }
}
