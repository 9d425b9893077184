//! Property tests of the validator: random mappings over random programs. Whenever two
//! allocations overlap in time x address (checked here by brute force), the validator must
//! reject the mapping; whenever it accepts one, the simulator and cost model must give
//! finite latencies no better than the physical floor of compute time.

use accel_sim::{
    Allocation, Arrival, Buffer, BufferKind, BufferPlacement, CostModel, CostState, Hardware,
    Mapping, Op, Program, Simulator,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn random_program(rng: &mut StdRng) -> Program {
    let ops = rng.random_range(2..12);
    let mut buffers = Vec::new();
    let mut op_list = Vec::new();
    let weights = rng.random_range(1..4);
    for i in 0..weights {
        buffers.push(Buffer {
            name: format!("w{i}"),
            size: 512 * rng.random_range(1..8),
            kind: BufferKind::Weight,
        });
    }
    for t in 0..ops {
        let id = buffers.len();
        buffers.push(Buffer {
            name: format!("a{t}"),
            size: 512 * rng.random_range(1..8),
            kind: if t + 1 == ops {
                BufferKind::Output
            } else {
                BufferKind::Activation
            },
        });
        let mut reads = Vec::new();
        for _ in 0..rng.random_range(1..3) {
            let b = rng.random_range(0..id);
            if !reads.contains(&b) {
                reads.push(b);
            }
        }
        op_list.push(Op {
            name: format!("op{t}"),
            kind: "t".into(),
            flops: rng.random_range(0.0..1e9),
            reads,
            writes: vec![id],
        });
    }
    // Weights never read would be rejected; read them all in the last op if needed.
    let last = op_list.len() - 1;
    for w in 0..weights {
        if !op_list.iter().any(|o| o.reads.contains(&w)) {
            op_list[last].reads.push(w);
        }
    }
    Program::new("random", "", buffers, op_list).unwrap()
}

/// A random allocation that satisfies every per-buffer rule (so only overlaps can fail).
fn random_placement(rng: &mut StdRng, p: &Program, b: usize, cap: u64) -> BufferPlacement {
    let size = p.buffer(b).size;
    let (_, end) = p.live_range(b);
    let offset = 512 * rng.random_range(0..=(cap - size) / 512);
    let uses = p.uses(b);
    if let Some(d) = p.def(b) {
        if rng.random_bool(0.5) {
            let needs_evict =
                p.buffer(b).kind == BufferKind::Output || uses.iter().any(|&u| u > end);
            return BufferPlacement {
                allocations: vec![Allocation {
                    level: 1,
                    offset,
                    start: d,
                    end,
                    arrival: Arrival::Defined,
                    eviction: needs_evict.then_some(d),
                }],
            };
        }
        let later: Vec<_> = uses.iter().copied().filter(|&u| u > d).collect();
        if let Some(&u) = later.first() {
            let start = rng.random_range(d + 1..=u);
            return BufferPlacement {
                allocations: vec![Allocation {
                    level: 1,
                    offset,
                    start,
                    end,
                    arrival: Arrival::Prefetch,
                    eviction: None,
                }],
            };
        }
        return BufferPlacement::default();
    }
    let u = uses[0];
    BufferPlacement {
        allocations: vec![Allocation {
            level: 1,
            offset,
            start: rng.random_range(0..=u),
            end,
            arrival: Arrival::Prefetch,
            eviction: None,
        }],
    }
}

/// The cost model written out directly from its definition, against the incremental
/// state built in a random order.
fn check_cost_model(p: &Program, hw: &Hardware, m: &Mapping, rng: &mut StdRng) {
    let cm = CostModel::new(p, hw);
    let mut reference = 0.0;
    for (t, op) in p.ops().iter().enumerate() {
        let mut mem = 0.0;
        for &b in &op.reads {
            mem += p.buffer(b).size as f64 / hw.levels[m.buffers[b].read_level(t)].read_bw;
        }
        for &b in &op.writes {
            mem += p.buffer(b).size as f64 / hw.levels[m.buffers[b].write_level()].write_bw;
        }
        reference += (op.flops / hw.peak_flops).max(mem);
    }
    for (b, pl) in m.buffers.iter().enumerate() {
        reference += cm.copy_cost(b, &pl.allocations);
    }
    let mut order: Vec<usize> = (0..m.buffers.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let mut state = CostState::new(&cm);
    for b in order {
        let d = state.delta(b, &m.buffers[b]);
        let before = state.latency();
        assert!((state.apply(b, m.buffers[b].clone()) - d).abs() < 1e-15);
        assert!((state.latency() - before - d).abs() < 1e-15);
    }
    assert!(
        (state.latency() - reference).abs() <= 1e-12 * reference,
        "{} vs {}",
        state.latency(),
        reference
    );
}

/// The incremental simulation, built one buffer at a time in a random order and taken
/// apart again, against whole runs of each partial mapping (a subset of a valid mapping's
/// placements is valid); a clone taken halfway keeps its own state.
fn check_live_sim(p: &Program, hw: &Hardware, m: &Mapping, rng: &mut StdRng) {
    let mut sim = Simulator::new(p, hw);
    let mut live = sim.live();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-12);
    let s0 = sim.run(&Mapping::all_slow(p), false).latency_s;
    assert_eq!(live.latency_s(), s0);
    let mut order: Vec<usize> = (0..m.buffers.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let mut partial = Mapping::all_slow(p);
    let mut halfway = None;
    for (k, &b) in order.iter().enumerate() {
        let new = &m.buffers[b].allocations;
        let guess = live.latency_with(b, &partial.buffers[b].allocations, new);
        let got = live.change(b, &partial.buffers[b].allocations, new);
        assert_eq!(guess, got);
        partial.buffers[b].allocations.clone_from(new);
        let want = sim.run(&partial, false);
        assert!(close(got, want.latency_s), "{got} vs {}", want.latency_s);
        assert!(close(live.stall_s() + 1.0, want.stall_s + 1.0));
        if k == order.len() / 2 {
            halfway = Some((live.clone(), partial.clone()));
        }
    }
    let (old, old_mapping) = halfway.unwrap();
    let want = sim.run(&old_mapping, false).latency_s;
    assert!(close(old.latency_s(), want));
    for &b in order.iter().rev() {
        live.change(b, &m.buffers[b].allocations, &[]);
    }
    assert!(close(live.latency_s(), s0));
}

/// The exact incremental simulation, built one buffer at a time in a random order and
/// taken apart again, against whole runs of each partial mapping: the same latency to
/// the bit, and a clone taken halfway keeps its own.
fn check_exact_sim(p: &Program, hw: &Hardware, m: &Mapping, rng: &mut StdRng) {
    let mut sim = Simulator::new(p, hw);
    let placed = |m: &Mapping| {
        m.buffers
            .iter()
            .enumerate()
            .map(|(b, pl)| (b, pl.allocations.clone()))
            .collect::<Vec<_>>()
    };
    let whole = placed(m);
    let of = sim.exact_of(whole.iter().map(|(b, a)| (*b, a.as_slice())));
    assert_eq!(of.latency_s(), sim.run(m, false).latency_s);
    let mut exact = sim.exact_of(std::iter::empty());
    let s0 = sim.run(&Mapping::all_slow(p), false).latency_s;
    assert_eq!(exact.latency_s(), s0);
    let mut order: Vec<usize> = (0..m.buffers.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let mut partial = Mapping::all_slow(p);
    let mut halfway = None;
    for (k, &b) in order.iter().enumerate() {
        let new = &m.buffers[b].allocations;
        exact.change(b, &partial.buffers[b].allocations, new);
        partial.buffers[b].allocations.clone_from(new);
        assert_eq!(exact.latency_s(), sim.run(&partial, false).latency_s);
        if k == order.len() / 2 {
            halfway = Some((exact.clone(), partial.clone()));
        }
    }
    let (old, old_mapping) = halfway.unwrap();
    assert_eq!(old.latency_s(), sim.run(&old_mapping, false).latency_s);
    for &b in order.iter().rev() {
        exact.change(b, &m.buffers[b].allocations, &[]);
    }
    assert_eq!(exact.latency_s(), s0);
}

fn overlaps(p: &Program, m: &Mapping) -> bool {
    let mut rects = Vec::new();
    for (b, pl) in m.buffers.iter().enumerate() {
        for a in &pl.allocations {
            rects.push((
                a.level,
                a.start,
                a.end,
                a.offset,
                a.offset + p.buffer(b).size,
            ));
        }
    }
    for i in 0..rects.len() {
        for j in i + 1..rects.len() {
            let (l1, s1, e1, o1, t1) = rects[i];
            let (l2, s2, e2, o2, t2) = rects[j];
            if l1 == l2 && s1 <= e2 && s2 <= e1 && o1 < t2 && o2 < t1 {
                return true;
            }
        }
    }
    false
}

#[test]
fn overlapping_random_mappings_never_validate() {
    let mut rng = StdRng::seed_from_u64(7);
    let cap = 8 * 512;
    let hw = Hardware::tpu_v4i_like().with_capacity(1, cap).unwrap();
    let (mut rejected, mut accepted) = (0, 0);
    for _ in 0..3000 {
        let p = random_program(&mut rng);
        let mut m = Mapping::all_slow(&p);
        for b in 0..p.buffers().len() {
            if rng.random_bool(0.6) {
                m.buffers[b] = random_placement(&mut rng, &p, b, cap);
            }
        }
        let overlap = overlaps(&p, &m);
        match m.validate(&p, &hw) {
            Ok(_) => {
                assert!(!overlap, "validator accepted an overlapping mapping: {m:?}");
                accepted += 1;
                let sim = Simulator::new(&p, &hw).run(&m, true).latency_s;
                let compute: f64 = (0..p.len()).map(|t| p.op(t).flops / hw.peak_flops).sum();
                assert!(sim.is_finite() && sim >= compute);
                check_cost_model(&p, &hw, &m, &mut rng);
                check_live_sim(&p, &hw, &m, &mut rng);
                check_exact_sim(&p, &hw, &m, &mut rng);
            }
            Err(e) => {
                assert!(overlap, "a mapping without overlaps was rejected: {e}");
                rejected += 1;
            }
        }
    }
    // Both outcomes must actually occur, or the test proves nothing.
    assert!(rejected > 300 && accepted > 300, "{rejected} {accepted}");
}
