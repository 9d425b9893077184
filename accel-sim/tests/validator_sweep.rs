//! The validator's overlap sweep (a map of held allocations by offset) against the plain
//! sweep that compares each allocation with every one held: the same verdict, the same
//! pair named on an overlap, the same peaks, on crowded random mappings.

use accel_sim::{
    Allocation, Arrival, Buffer, BufferKind, Hardware, Mapping, MappingError, Op, Program,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Op `t` defines activation `t`, read once by a later op (within `span`); the last is
/// an output.
fn program(rng: &mut StdRng, ops: usize, span: usize) -> Program {
    let mut reads: Vec<Vec<usize>> = vec![Vec::new(); ops];
    let mut buffers = Vec::new();
    for t in 0..ops {
        let last = t + 1 == ops;
        buffers.push(Buffer {
            name: format!("a{t}"),
            size: 512 * rng.random_range(1..16),
            kind: if last {
                BufferKind::Output
            } else {
                BufferKind::Activation
            },
        });
        if !last {
            reads[rng.random_range(t + 1..=(t + span).min(ops - 1))].push(t);
        }
    }
    let ops = reads
        .into_iter()
        .enumerate()
        .map(|(t, reads)| Op {
            name: format!("op{t}"),
            kind: "t".into(),
            flops: 1e6,
            reads,
            writes: vec![t],
        })
        .collect();
    Program::new("sweep", "", buffers, ops).unwrap()
}

/// Activations written into level 1 over their live ranges, at random offsets in a
/// narrow band so that many meet.
fn mapping(rng: &mut StdRng, p: &Program, band: u64) -> Mapping {
    let mut m = Mapping::all_slow(p);
    for b in 0..p.buffers().len() {
        if p.buffer(b).kind != BufferKind::Activation || rng.random_bool(0.3) {
            continue;
        }
        let (start, end) = p.live_range(b);
        m.buffers[b].allocations.push(Allocation {
            level: 1,
            offset: 512 * rng.random_range(0..band),
            start,
            end,
            arrival: Arrival::Defined,
            eviction: None,
        });
    }
    m
}

type Rect = (usize, usize, u64, u64, usize);

/// The plain sweep: every allocation against every one still held, in arrival order.
fn plain(p: &Program, m: &Mapping, levels: usize) -> Result<(Vec<u64>, Vec<u64>), MappingError> {
    let mut per_level: Vec<Vec<Rect>> = vec![Vec::new(); levels];
    for (b, pl) in m.buffers.iter().enumerate() {
        for a in &pl.allocations {
            per_level[a.level].push((a.start, a.end, a.offset, p.buffer(b).size, b));
        }
    }
    let (mut peak_address, mut peak_bytes) = (vec![0; levels], vec![0; levels]);
    for (level, rects) in per_level.iter_mut().enumerate() {
        rects.sort_unstable_by_key(|r| (r.0, r.2));
        let mut held: Vec<Rect> = Vec::new();
        for &(s, e, o, size, b) in rects.iter() {
            held.retain(|x| x.1 >= s);
            if let Some(x) = held.iter().find(|x| x.2 < o + size && o < x.2 + x.3) {
                return Err(MappingError::Overlap {
                    a: p.buffer(x.4).name.clone(),
                    b: p.buffer(b).name.clone(),
                    level,
                    t0: s,
                    t1: e.min(x.1),
                    o0: o.max(x.2),
                    o1: (o + size).min(x.2 + x.3),
                });
            }
            held.push((s, e, o, size, b));
            peak_bytes[level] = peak_bytes[level].max(held.iter().map(|x| x.3).sum());
            peak_address[level] = peak_address[level].max(o + size);
        }
    }
    Ok((peak_address, peak_bytes))
}

#[test]
fn the_sweep_agrees_with_the_plain_one() {
    let hw = Hardware::tpu_v4i_like();
    let mut rng = StdRng::seed_from_u64(5);
    let (mut valid, mut overlaps) = (0, 0);
    for case in 0..400 {
        let (ops, span) = (rng.random_range(2..120), rng.random_range(1..30));
        let p = program(&mut rng, ops, span);
        // Wide bands give valid mappings, narrow ones overlaps.
        let m = mapping(&mut rng, &p, [4, 64, 4096][case % 3]);
        let got = m.validate(&p, &hw).map(|s| (s.peak_address, s.peak_bytes));
        let want = plain(&p, &m, hw.levels.len());
        assert_eq!(got, want, "case {case}");
        match got {
            Ok(_) => valid += 1,
            Err(_) => overlaps += 1,
        }
    }
    assert!(
        valid > 50 && overlaps > 50,
        "{valid} valid, {overlaps} overlapping"
    );
}
