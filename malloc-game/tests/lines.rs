//! Rules v3: every valid mapping is a line of the game. `trajectory_of` plays it move by
//! move and ends with the very allocations, so the same copies and the same simulated
//! latency to the bit; the line saves and replays; a local search can start from it.
//! The mappings: the baselines' (greedy-size and xla-repack are not lines of numbered
//! actions), random games', and random valid mappings made from them by moving offsets,
//! prefetch starts, hold ends and evictions wherever the validator still accepts them.

use accel_sim::{Allocation, Arrival, Hardware, Mapping, Program, Simulator};
use malloc_game::players::player;
use malloc_game::record::GameRecord;
use malloc_game::{Decision, GameOptions, GameSetup};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

fn setup(program: &Arc<Program>, hw: &Hardware) -> Arc<GameSetup> {
    let options = GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..GameOptions::default()
    };
    GameSetup::new(Arc::clone(program), hw.clone(), options).unwrap()
}

/// `m` with one allocation of one buffer changed at random, if the validator accepts
/// the change (else `m` as it was).
fn nudge(m: &mut Mapping, p: &Program, hw: &Hardware, rng: &mut StdRng) {
    let placed: Vec<(usize, usize)> = m
        .buffers
        .iter()
        .enumerate()
        .flat_map(|(b, pl)| (0..pl.allocations.len()).map(move |i| (b, i)))
        .collect();
    if placed.is_empty() {
        return;
    }
    let (b, i) = placed[rng.random_range(0..placed.len())];
    let old = m.buffers[b].allocations[i];
    let mut a = old;
    let level = &hw.levels[a.level];
    let (_, live_end) = p.live_range(b);
    match rng.random_range(0..4) {
        0 => {
            let slots = (level.capacity - p.buffer(b).size) / level.alignment;
            a.offset = rng.random_range(0..=slots) * level.alignment;
        }
        1 if a.arrival == Arrival::Prefetch => a.start = rng.random_range(0..=a.start),
        2 => a.end = rng.random_range(a.end..=live_end),
        3 if a.arrival == Arrival::Defined => {
            a.eviction = match rng.random_range(0..3) {
                0 => None,
                _ => Some(rng.random_range(a.start..=a.end)),
            }
        }
        _ => return,
    }
    m.buffers[b].allocations[i] = a;
    if m.validate(p, hw).is_err() {
        m.buffers[b].allocations[i] = old;
    }
}

/// A defined chunk written before its first use and evicted: a chunk no use reads.
fn written_before(m: &mut Mapping, p: &Program, hw: &Hardware, rng: &mut StdRng) {
    let b = rng.random_range(0..p.buffers().len());
    let Some(d) = p.def(b) else { return };
    let first_use = p.uses(b).first().copied().unwrap_or(p.live_range(b).1);
    let old = std::mem::take(&mut m.buffers[b].allocations);
    let end = rng.random_range(d..=first_use.max(d));
    let mut new = vec![Allocation {
        level: hw.fastest(),
        offset: 0,
        start: d,
        end,
        arrival: Arrival::Defined,
        eviction: Some(rng.random_range(d..=end)),
    }];
    new.extend(old.iter().copied().filter(|a| a.start > end));
    m.buffers[b].allocations = new;
    if m.validate(p, hw).is_err() {
        m.buffers[b].allocations = old;
    }
}

/// `mapping` (valid) is a line: played move by move, it ends with the same allocations
/// and the same simulated latency to the bit, and its saved game replays.
fn check_line(name: &str, s: &Arc<GameSetup>, mapping: &Mapping) -> usize {
    let (p, hw) = (s.program(), s.hardware());
    mapping.validate(p, hw).unwrap();
    let g = s
        .trajectory_of(mapping)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(&g.mapping(), mapping, "{name}");
    let want = Simulator::new(p, hw).run(mapping, false).latency_s;
    assert_eq!(
        g.final_latency().map(f64::to_bits),
        Some(want.to_bits()),
        "{name}"
    );
    assert_eq!(
        s.nearest_trajectory(mapping)
            .final_latency()
            .map(f64::to_bits),
        Some(want.to_bits()),
        "{name}: nearest"
    );
    let rec = GameRecord::from_game(&g, "mapping", 0, None).unwrap();
    let again = GameRecord::from_json(&rec.to_json(), "line.json").unwrap();
    let replay = again.replay(Arc::clone(s.program_arc())).unwrap();
    assert_eq!(replay.game.decisions(), g.decisions(), "{name}");
    g.decisions()
        .iter()
        .filter(|d| matches!(d, Decision::Move(_)))
        .count()
}

#[test]
fn every_baseline_mapping_is_a_line_on_every_suite_case() {
    let mut given = 0;
    for case in bench_workloads::suite::cases() {
        let program = Arc::new(bench_workloads::load(case.workload).unwrap());
        let hw = case.hardware();
        let s = setup(&program, &hw);
        for solver in xla_msa::baselines() {
            let name = format!("{} on {}, {}", case.workload, case.hardware, solver.name());
            given += check_line(&name, &s, &solver.solve(&program, &hw));
        }
    }
    assert!(given > 0, "greedy-size's mappings need moves given in full");
}

#[test]
fn random_valid_mappings_are_lines() {
    let mut tpu = Hardware::tpu_v4i_like();
    tpu.levels[1].capacity = 1 << 20;
    let mut nnp = Hardware::nnp_i_like();
    nnp.levels[1].capacity = 2 << 20;
    nnp.levels[2].capacity = 512 << 10;
    let random = player("random").unwrap();
    let mut given = 0;
    for seed in 0..10 {
        let program = Arc::new(bench_workloads::synthetic::random_dag(40, seed));
        for hw in [&tpu, &nnp] {
            let s = setup(&program, hw);
            let mut rng = StdRng::seed_from_u64(seed);
            for game in 0..3 {
                let mut m = random.play(&s, seed * 10 + game).mapping();
                for _ in 0..200 {
                    nudge(&mut m, &program, hw, &mut rng);
                }
                for _ in 0..10 {
                    written_before(&mut m, &program, hw, &mut rng);
                }
                let name = format!("random_dag(40, {seed}) on {}, game {game}", hw.name);
                given += check_line(&name, &s, &m);
            }
        }
    }
    assert!(
        given > 100,
        "the nudged mappings need moves given in full: {given}"
    );
}

/// A mapping that breaks the rules in a level the game fills is named at its turn; one
/// for a level the game does not fill ends unlike it.
#[test]
fn a_mapping_the_validator_refuses_is_not_a_line() {
    let program = Arc::new(bench_workloads::synthetic::random_dag(30, 1));
    let mut hw = Hardware::tpu_v4i_like();
    hw.levels[1].capacity = 1 << 20;
    let s = setup(&program, &hw);
    let mut m = player("random").unwrap().play(&s, 3).mapping();
    let (b, a) = m
        .buffers
        .iter_mut()
        .enumerate()
        .find_map(|(b, p)| p.allocations.first_mut().map(|a| (b, a)))
        .expect("a random game places something");
    a.offset = hw.levels[1].capacity;
    assert!(m.validate(&program, &hw).is_err());
    let e = s.trajectory_of(&m).unwrap_err();
    assert_eq!(e.buffer, program.buffer(b).name, "{e}");
}
