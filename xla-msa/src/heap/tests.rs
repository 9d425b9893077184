//! The chunk heap's tests: best fit, the peak rule, alignment, overlaps against brute
//! force, and packings of MiniMalloc's instances.
use super::*;
use accel_sim::Program;
use std::path::PathBuf;

fn chunk(start: OpId, end: OpId, offset: u64, size: u64) -> Chunk {
    Chunk {
        start,
        end,
        offset,
        size,
    }
}

/// A brute-force reference: every chunk, filtered by time overlap.
fn overlapping_naive(h: &ChunkHeap, s: OpId, e: OpId) -> Vec<Chunk> {
    let mut v: Vec<Chunk> = h
        .iter()
        .map(|(_, c)| *c)
        .filter(|c| c.start <= e && s <= c.end)
        .collect();
    v.sort_by_key(|c| (c.start, c.end, c.offset));
    v
}

#[test]
fn best_fit_picks_the_smallest_gap_then_the_lower_offset() {
    // Over ops 2..=3, chunks at [0,10), [14,20), [30,34) leave gaps [10,14) (4 bytes),
    // [20,30) (10) and [34,100) (66).
    let mut h = ChunkHeap::new(100, 1, 10).unwrap();
    h.commit(chunk(0, 5, 0, 10)).unwrap();
    h.commit(chunk(2, 2, 14, 6)).unwrap();
    h.commit(chunk(3, 9, 30, 4)).unwrap();
    // A chunk only live at op 8 does not matter for ops 2..=3.
    h.commit(chunk(8, 8, 10, 4)).unwrap();
    assert_eq!(h.best_fit(2, 3, 4, None, TopGap::Capacity), Some(10));
    assert_eq!(h.best_fit(2, 3, 5, None, TopGap::Capacity), Some(20));
    assert_eq!(h.best_fit(2, 3, 11, None, TopGap::Capacity), Some(34));
    assert_eq!(h.best_fit(2, 3, 67, None, TopGap::Capacity), None);
    // The preferred offset wins wherever it fits, and only there.
    assert_eq!(h.best_fit(2, 3, 5, Some(40), TopGap::Capacity), Some(40));
    assert_eq!(h.best_fit(2, 3, 5, Some(12), TopGap::Capacity), Some(20));
    let mut c = Vec::new();
    h.candidates(2, 3, 4, &mut c);
    assert_eq!(
        c,
        vec![
            Candidate { offset: 10, gap: 4 },
            Candidate {
                offset: 20,
                gap: 10
            },
            Candidate {
                offset: 34,
                gap: 66
            },
        ]
    );
    h.candidates(2, 3, 5, &mut c);
    assert_eq!(c.iter().map(|c| c.offset).collect::<Vec<_>>(), vec![20, 34]);
}

#[test]
fn the_peak_rule_keeps_the_heap_compact() {
    // Ops 0..=1 hold [0,10) and [60,80); ops 5..=6 hold [0,40): the peak is 80.
    let mut h = ChunkHeap::new(100, 1, 10).unwrap();
    h.commit(chunk(0, 1, 0, 10)).unwrap();
    h.commit(chunk(5, 6, 0, 40)).unwrap();
    h.commit(chunk(0, 1, 60, 20)).unwrap();
    // Gaps over 0..=1: [10,60) (50) and [80,100) (20).
    assert_eq!(h.best_fit(0, 1, 15, None, TopGap::Capacity), Some(80));
    // Under the peak rule the top gap counts only up to the peak (80): it has no room
    // below the peak, so [10,60) wins.
    assert_eq!(h.peak_address(), 80);
    assert_eq!(h.best_fit(0, 1, 15, None, TopGap::Peak), Some(10));
    // Nothing below the peak holds 55 bytes: no gap holds it at all.
    assert_eq!(h.best_fit(0, 1, 55, None, TopGap::Peak), None);
    // 20 bytes fit only in the top gap, which then grows the heap.
    let mut g = ChunkHeap::new(100, 1, 10).unwrap();
    g.commit(chunk(0, 1, 0, 50)).unwrap();
    assert_eq!(g.best_fit(0, 1, 20, None, TopGap::Peak), Some(50));
}

#[test]
fn alignment_rounds_gap_starts_up() {
    let mut h = ChunkHeap::new(256, 64, 4).unwrap();
    h.commit(chunk(0, 3, 0, 10)).unwrap();
    assert_eq!(h.best_fit(0, 0, 64, None, TopGap::Capacity), Some(64));
    assert!(!h.fits(0, 0, 10, 4), "misaligned");
    assert!(h.fits(1, 1, 64, 192));
    assert!(!h.fits(1, 1, 128, 192), "over capacity");
    assert_eq!(
        h.commit(chunk(0, 0, 10, 4)),
        Err(HeapError::Misaligned {
            offset: 10,
            alignment: 64
        })
    );
    let mut c = Vec::new();
    h.candidates(0, 3, 192, &mut c);
    assert_eq!(
        c,
        vec![Candidate {
            offset: 64,
            gap: 192
        }]
    );
    h.candidates(0, 3, 193, &mut c);
    assert!(c.is_empty());
}

#[test]
fn commit_rejects_overlaps_and_remove_undoes() {
    let mut h = ChunkHeap::new(100, 1, 10).unwrap();
    let a = h.commit(chunk(2, 5, 0, 50)).unwrap();
    let e = h.commit(chunk(5, 7, 40, 20)).unwrap_err();
    assert!(e.to_string().contains("overlaps"), "{e}");
    assert!(h.commit(chunk(6, 7, 40, 20)).is_ok());
    assert!(matches!(
        h.commit(chunk(3, 10, 60, 1)),
        Err(HeapError::BadInterval { .. })
    ));
    assert!(matches!(
        h.commit(chunk(3, 3, 60, 41)),
        Err(HeapError::OverCapacity { .. })
    ));
    assert_eq!(h.peak_address(), 60);
    assert_eq!(h.remove(a), Some(chunk(2, 5, 0, 50)));
    assert_eq!(h.remove(a), None);
    assert!(h.fits(2, 5, 0, 100));
    assert_eq!(h.len(), 1);
    assert_eq!(h.peak_address(), 60);
    assert!(matches!(
        ChunkHeap::new(10, 3, 1),
        Err(HeapError::BadAlignment(3))
    ));
    assert!(ChunkHeap::new(0, 1, 1).is_err());
    assert!(ChunkHeap::new(1, 1, 0).is_err());
}

#[test]
fn overlap_query_matches_brute_force() {
    // A deterministic LCG so the test needs no dependency.
    let mut x: u64 = 12345;
    let mut next = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let t = 37;
    let mut h = ChunkHeap::new(1 << 40, 1, t).unwrap();
    let mut ids = Vec::new();
    for i in 0..400u64 {
        let s = next(t as u64) as usize;
        let e = (s + next(8) as usize).min(t - 1);
        // Distinct offsets: no overlaps in address.
        ids.push(h.commit(chunk(s, e, i * 10, 10)).unwrap());
        if i % 3 == 0 {
            let k = next(ids.len() as u64) as usize;
            h.remove(ids.swap_remove(k));
        }
    }
    for s in 0..t {
        for e in s..t {
            let mut got = Vec::new();
            h.for_each_overlapping(s, e, |c| got.push(*c));
            got.sort_by_key(|c| (c.start, c.end, c.offset));
            assert_eq!(got, overlapping_naive(&h, s, e), "{s}..={e}");
        }
    }
}

#[test]
fn a_heap_answers_by_what_it_holds_not_by_how_it_was_committed() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for _ in 0..40 {
        let t = 24;
        // Chunks in pieces (a hold extended use by use), and whole: the same bytes.
        let mut pieces = ChunkHeap::new(256, 8, t).unwrap();
        let mut whole = ChunkHeap::new(256, 8, t).unwrap();
        let mut placed = Vec::new();
        for _ in 0..30 {
            let (s, len, size) = (
                rng.random_range(0..t),
                rng.random_range(0..8),
                8 * rng.random_range(1..6),
            );
            let e = (s + len).min(t - 1);
            let Some(o) = whole.best_fit(s, e, size, None, TopGap::Capacity) else {
                continue;
            };
            if o + size > 256 {
                continue;
            }
            whole.commit(chunk(s, e, o, size)).unwrap();
            let mut from = s;
            while from <= e {
                let to = (from + rng.random_range(0..3)).min(e);
                pieces.commit(chunk(from, to, o, size)).unwrap();
                from = to + 1;
            }
            placed.push(chunk(s, e, o, size));
        }
        // Some allocations taken out of both, the pieces by where they lie.
        for c in placed.iter().filter(|_| rng.random_bool(0.3)) {
            assert!(pieces.remove_at(c.start, c.end, c.offset, c.size) >= 1);
            let id = whole
                .iter()
                .find(|(_, x)| *x == c)
                .map(|(id, _)| id)
                .unwrap();
            whole.remove(id);
        }
        for _ in 0..60 {
            let s = rng.random_range(0..t);
            let e = (s + rng.random_range(0..10)).min(t - 1);
            let size = 8 * rng.random_range(1..8);
            let o = 8 * rng.random_range(0..32);
            assert_eq!(pieces.fits(s, e, o, size), whole.fits(s, e, o, size));
            assert_eq!(
                pieces.best_fit(s, e, size, None, TopGap::Capacity),
                whole.best_fit(s, e, size, None, TopGap::Capacity)
            );
            let (mut a, mut b) = (Vec::new(), Vec::new());
            pieces.candidates(s, e, size, &mut a);
            whole.candidates(s, e, size, &mut b);
            assert_eq!(a, b);
        }
    }
}

#[test]
fn packing_input_12_by_hand() {
    // minimalloc's input.12 (capacity 12): b1 [0,2], b2 [3,8], b3 [0,8], b4 [9,20],
    // b5 [0,20], all 4 bytes. Order: b5 (longest), b4, b3, b2, b1.
    // b5 -> 0; b4 beside b5 -> 4; b3 beside b5 -> 4; b2 beside b5, b3 -> 8;
    // b1 beside b5, b3 -> 8. Peak 12.
    let iv = [(0, 2, 4), (3, 8, 4), (0, 8, 4), (9, 20, 4), (0, 20, 4)];
    let p = pack_decreasing_size(&iv, 12, 1, TopGap::Capacity).unwrap();
    assert_eq!(p.offsets, vec![Some(8), Some(8), Some(4), Some(4), Some(0)]);
    assert_eq!((p.placed, p.peak), (5, 12));
}

/// The third-party instances committed with bench-workloads (see its `data/*/README.md`).
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench-workloads/data");

fn csv_instance(name: &str) -> Option<bench_workloads::csv::CsvInstance> {
    let path = PathBuf::from(format!("{DATA}/minimalloc/{name}"));
    match bench_workloads::csv::load_file(&path) {
        Ok(c) => Some(c),
        Err(e) => {
            println!(
                "{}: loader not ready or file missing ({e}): skipped",
                path.display()
            );
            None
        }
    }
}

fn intervals(p: &Program) -> Vec<(usize, usize, u64)> {
    (0..p.buffers().len())
        .map(|b| {
            let (s, e) = p.live_range(b);
            (s, e, p.buffer(b).size)
        })
        .collect()
}

#[test]
fn minimalloc_packing_with_the_best_fit_heap() {
    let Some(c) = csv_instance("input.12.csv") else {
        return;
    };
    assert_eq!(c.capacity, Some(12));
    let pack = pack_decreasing_size(&intervals(&c.program), 12, 1, TopGap::Capacity).unwrap();
    assert_eq!(pack.placed, 5, "{pack:?}");
    assert!(pack.peak <= 12);
    for name in ["A", "C", "E", "G", "I", "K"] {
        let file = format!("{name}.1048576.csv");
        let Some(c) = csv_instance(&file) else {
            continue;
        };
        let cap = c.capacity.unwrap_or(1 << 20);
        let iv = intervals(&c.program);
        for top in [TopGap::Capacity, TopGap::Peak] {
            let within = pack_decreasing_size(&iv, cap, 1, top).unwrap();
            let unbounded = pack_decreasing_size(&iv, u64::MAX / 2, 1, top).unwrap();
            println!(
                "{file} ({} buffers, peak live {}): best fit {top:?}: {} fit in {cap}; \
                 unbounded peak address {} ({:.3} x capacity)",
                iv.len(),
                c.program.peak_live_bytes(),
                within.placed,
                unbounded.peak,
                unbounded.peak as f64 / cap as f64
            );
            assert!(within.placed <= iv.len() && within.peak <= cap);
            assert_eq!(unbounded.placed, iv.len());
            assert!(unbounded.peak >= c.program.peak_live_bytes());
        }
    }
}
