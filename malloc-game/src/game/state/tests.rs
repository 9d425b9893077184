//! The game's tests on a small program: the whole tree of play, illegal actions, slots,
//! a mapping outside the rules.

use super::*;
use crate::game::Decision;
use crate::game::GameSetup;

fn small() -> Arc<Program> {
    Arc::new(accel_sim::fixtures::three_ops("small", 1 << 20, 1e6))
}

fn hw() -> Hardware {
    Hardware::tpu_v4i_like().with_capacity(1, 3 << 20).unwrap()
}

#[test]
fn every_action_sequence_ends_valid_with_the_right_return() {
    // Every legal action at every turn of a small game (the whole tree), checking the
    // invariants at each leaf.
    let g = Game::new(small(), hw(), GameOptions::default()).unwrap();
    let mut stack = vec![g];
    let mut leaves = 0;
    while let Some(g) = stack.pop() {
        if g.is_terminal() {
            let m = g.mapping();
            m.validate(g.setup().program(), g.setup().hardware())
                .unwrap();
            let s0 = g.setup().all_slow_latency();
            let s = g.final_latency().unwrap();
            assert!((g.total_return() - (s0 - s) / s0).abs() < 1e-12);
            assert_eq!(g.length(), g.turn());
            leaves += 1;
            continue;
        }
        let legal = g.legal_actions();
        assert_eq!(legal[0], 0);
        assert!(legal.len() >= 2, "a turn with only action 0 is skipped");
        for a in legal {
            let mut c = g.clone();
            let delta = c.cost_delta(a);
            let before = c.proxy_latency();
            c.apply_action(a).unwrap();
            // The move's own delta, before what the game does up to the next turn.
            assert!(delta.is_finite() && before.is_finite());
            stack.push(c);
        }
    }
    assert!(leaves >= 4, "{leaves}");
}

#[test]
fn illegal_actions_are_errors_and_change_nothing() {
    let mut g = Game::new(small(), hw(), GameOptions::default()).unwrap();
    let legal = g.legal_actions();
    let illegal = (0..g.action_count()).find(|a| !legal.contains(a)).unwrap();
    let before = g.mapping();
    assert!(matches!(
        g.apply_action(illegal),
        Err(GameError::Illegal { .. })
    ));
    assert!(g.apply_action(999).is_err());
    assert_eq!(g.mapping(), before);
    assert_eq!(g.turn(), 0);
    while !g.is_terminal() {
        g.apply_action(0).unwrap();
    }
    assert_eq!(g.apply_action(0), Err(GameError::Terminal));
    assert!(g.total_return().abs() < 1e-12);
    assert_eq!(g.mapping(), Mapping::all_slow(g.setup().program()));
}

#[test]
fn slot_zero_of_a_mode_is_xla_best_fit_and_slots_differ() {
    let g = Game::new(small(), hw(), GameOptions::default()).unwrap();
    let mut seen = Vec::new();
    g.for_each_legal(|a, alloc, gap| {
        assert!(gap >= g.setup().program().buffer(g.current_buffer().unwrap()).size);
        seen.push((a, alloc));
    });
    for (i, x) in seen.iter().enumerate() {
        for y in &seen[i + 1..] {
            assert_ne!(x.1, y.1, "twins {} and {}", x.0, y.0);
        }
    }
}

#[test]
fn a_mapping_outside_the_rules_is_named() {
    let p = small();
    let setup = GameSetup::new(Arc::clone(&p), hw(), GameOptions::default()).unwrap();
    // The all-slow mapping is the all-zero trajectory.
    let g = setup.trajectory_of(&Mapping::all_slow(&p)).unwrap();
    assert!(g.actions().iter().all(|&a| a == 0));
    // A chunk at an offset no slot offers (not a gap start): a line all the same, with a
    // move given in full, ending in the very mapping.
    let mut m = Mapping::all_slow(&p);
    m.buffers[2].allocations = vec![Allocation {
        level: 1,
        offset: 512,
        start: 0,
        end: 1,
        arrival: Arrival::Defined,
        eviction: None,
    }];
    m.validate(&p, &hw()).unwrap();
    let g = setup.trajectory_of(&m).unwrap();
    assert!(g.decisions().iter().any(|d| matches!(d, Decision::Move(_))));
    assert_eq!(g.mapping(), m);
    // A misaligned offset breaks the rules: the error names the buffer and why.
    m.buffers[2].allocations[0].offset = 100;
    assert!(m.validate(&p, &hw()).is_err());
    let e = setup.trajectory_of(&m).unwrap_err();
    assert!(e.reason.contains("offset 100 is not free"), "{e}");
    assert_eq!(e.buffer, "a");
}
