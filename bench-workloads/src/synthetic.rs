//! Small hand-shaped programs for tests and quick experiments.
//!
//! Sizes and FLOPs are realistic in scale (KiB..MiB buffers, MFLOP..GFLOP ops) so that on
//! `tpu-v4i-like` (614 GB/s slow, 2000 GB/s fast, 138 TFLOP/s: a ridge point of about 225
//! FLOP per slow byte) some ops are memory-bound and some compute-bound.
//!
//! - `chain`: an MLP, each op a bf16 matmul of a 32-token activation with its own weight;
//!   widths alternate 1024 and 4096, so weights are 8 MiB and dominate: memory-bound.
//! - `diamond`: a stem, then a fork: a cheap projection (the skip connection, a buffer that
//!   stays live across the other branch) and a chain of compute-bound convolutions; a join
//!   adds them.
//! - `random-dag`: seeded random DAG of 60 ops with fan-in up to 3, mixed sizes and
//!   arithmetic intensities, some weights, and outputs.
//!
//! [`large_random`] scales the same ingredients up to programs of any length (100k ops and
//! more), for timing the solvers; it is not a built-in workload. Write one as program JSON
//! with `cargo run --release -p bench-workloads --example gen_program`.

use accel_sim::{Buffer, BufferId, BufferKind, Op, Program};

/// Built-in synthetic workloads.
pub const NAMES: [&str; 3] = ["chain", "diamond", "random-dag"];

/// The seed of the built-in `random-dag`.
pub const RANDOM_DAG_SEED: u64 = 1;
/// Ops in the built-in `random-dag`.
pub const RANDOM_DAG_OPS: usize = 60;
/// Ops in the built-in `chain`.
pub const CHAIN_OPS: usize = 12;

/// A built-in synthetic workload by name.
pub fn builtin(name: &str) -> Option<Program> {
    match name {
        "chain" => Some(chain(CHAIN_OPS)),
        "diamond" => Some(diamond()),
        "random-dag" => Some(random_dag(RANDOM_DAG_OPS, RANDOM_DAG_SEED)),
        _ => None,
    }
}

/// bf16.
const ELEM: u64 = 2;
const KIB: u64 = 1024;

/// Collects buffers and ops; `finish` validates them.
#[derive(Default)]
struct Builder {
    buffers: Vec<Buffer>,
    ops: Vec<Op>,
}

impl Builder {
    fn buf(&mut self, name: impl Into<String>, size: u64, kind: BufferKind) -> BufferId {
        self.buffers.push(Buffer {
            name: name.into(),
            size,
            kind,
        });
        self.buffers.len() - 1
    }
    fn op(
        &mut self,
        name: impl Into<String>,
        kind: &str,
        flops: f64,
        reads: Vec<BufferId>,
        writes: Vec<BufferId>,
    ) {
        self.ops.push(Op {
            name: name.into(),
            kind: kind.into(),
            flops,
            reads,
            writes,
        });
    }
    /// The generators here only build valid programs (their tests check every shape), so
    /// a failure is a bug in this module, not bad input.
    fn finish(self, name: &str, description: String) -> Program {
        match Program::new(name, description, self.buffers, self.ops) {
            Ok(p) => p,
            Err(e) => unreachable!("synthetic program `{name}` is invalid: {e}"),
        }
    }
}

/// An MLP of `n` matmul layers (at least 1) over 32 tokens: layer `i` reads the previous
/// activation and its weight and writes the next; the last writes the output.
pub fn chain(n: usize) -> Program {
    let n = n.max(1);
    let tokens = 32u64;
    let width = |i: usize| [1024u64, 4096][i % 2];
    let mut b = Builder::default();
    let mut h = b.buf("x", tokens * width(0) * ELEM, BufferKind::Input);
    for i in 0..n {
        let (din, dout) = (width(i), width(i + 1));
        let w = b.buf(format!("w{i}"), din * dout * ELEM, BufferKind::Weight);
        let kind = if i + 1 == n {
            BufferKind::Output
        } else {
            BufferKind::Activation
        };
        let next = b.buf(format!("h{}", i + 1), tokens * dout * ELEM, kind);
        let flops = 2.0 * (tokens * din * dout) as f64;
        b.op(format!("dense{i}"), "matmul", flops, vec![h, w], vec![next]);
        h = next;
    }
    b.finish(
        "chain",
        format!("MLP of {n} bf16 dense layers over 32 tokens, widths alternating 1024/4096 (memory-bound: weights dominate)"),
    )
}

/// A residual block: stem conv, a 1x1 projection kept live as the skip connection, four 3x3
/// convs on the other branch, a join adding both, and a pooling head.
pub fn diamond() -> Program {
    // 56x56 feature maps with 256 channels, batch 1, bf16: 1.5 MiB each.
    let (hw, c) = (56u64 * 56, 256u64);
    let fmap = hw * c * ELEM;
    let conv_flops = |k: u64| 2.0 * (hw * c * c * k * k) as f64;
    let mut b = Builder::default();
    let x = b.buf("x", fmap, BufferKind::Input);
    let w_stem = b.buf("w_stem", c * c * ELEM, BufferKind::Weight);
    let stem = b.buf("stem", fmap, BufferKind::Activation);
    b.op(
        "stem",
        "conv1x1",
        conv_flops(1),
        vec![x, w_stem],
        vec![stem],
    );
    let w_skip = b.buf("w_skip", c * c * ELEM, BufferKind::Weight);
    let skip = b.buf("skip", fmap, BufferKind::Activation);
    b.op(
        "skip_proj",
        "conv1x1",
        conv_flops(1),
        vec![stem, w_skip],
        vec![skip],
    );
    let mut h = stem;
    for i in 0..4 {
        let w = b.buf(format!("w_conv{i}"), 9 * c * c * ELEM, BufferKind::Weight);
        let out = b.buf(format!("branch{i}"), fmap, BufferKind::Activation);
        b.op(
            format!("conv{i}"),
            "conv3x3",
            conv_flops(3),
            vec![h, w],
            vec![out],
        );
        h = out;
    }
    let joined = b.buf("joined", fmap, BufferKind::Activation);
    b.op("join", "add", (hw * c) as f64, vec![h, skip], vec![joined]);
    let pooled = b.buf("pooled", c * ELEM, BufferKind::Output);
    b.op(
        "pool",
        "reduce",
        (hw * c) as f64,
        vec![joined],
        vec![pooled],
    );
    b.finish(
        "diamond",
        "residual block on a 56x56x256 bf16 feature map: the skip projection stays live across four 3x3 convs".into(),
    )
}

/// splitmix64: a tiny, well-mixed PRNG, so generated programs depend on the seed only.
struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant at these sizes.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// A random DAG of `ops` ops (at least 1), reproducible from `seed`.
///
/// Each op reads 1..=3 distinct earlier values (mostly from the 6 most recent, sometimes
/// from anywhere earlier, which makes long-lived buffers), sometimes a weight of its own,
/// and writes one value of 16 KiB..4 MiB. FLOPs are the op's bytes times an arithmetic
/// intensity from 0.5 to 2048 FLOP/byte, so both sides of the ridge point occur. Values no
/// op reads, and a few others, are outputs.
pub fn random_dag(ops: usize, seed: u64) -> Program {
    let ops = ops.max(1);
    let mut rng = SplitMix(seed);
    let sizes = [
        16 * KIB,
        64 * KIB,
        256 * KIB,
        512 * KIB,
        1024 * KIB,
        2048 * KIB,
        4096 * KIB,
    ];
    let intensities = [0.5, 2.0, 8.0, 32.0, 128.0, 512.0, 2048.0];
    let kinds = ["add", "mul", "gelu", "matmul", "conv", "reduce", "softmax"];
    let mut b = Builder::default();
    let n_inputs = 2.min(ops);
    // Values that ops may read: inputs first, then every op's result.
    let mut values: Vec<BufferId> = (0..n_inputs)
        .map(|i| b.buf(format!("in{i}"), rng.pick(&sizes), BufferKind::Input))
        .collect();
    let mut read = vec![false; values.len()];
    let mut results: Vec<BufferId> = Vec::with_capacity(ops);
    for t in 0..ops {
        let mut reads: Vec<BufferId> = Vec::new();
        // Inputs are read by the first ops so that each is used.
        if t < n_inputs {
            reads.push(values[t]);
        }
        let fan_in = 1 + rng.below(3);
        for _ in 0..fan_in * 2 {
            if reads.len() >= fan_in {
                break;
            }
            let v = if rng.chance(80) {
                values.len() - 1 - rng.below(values.len().min(6))
            } else {
                rng.below(values.len())
            };
            if !reads.contains(&values[v]) {
                reads.push(values[v]);
                read[v] = true;
            }
        }
        if t < n_inputs {
            read[t] = true;
        }
        if rng.chance(40) {
            let w = b.buf(format!("w{t}"), rng.pick(&sizes), BufferKind::Weight);
            reads.push(w);
        }
        let out = b.buf(format!("v{t}"), rng.pick(&sizes), BufferKind::Activation);
        let bytes: u64 = reads.iter().chain([&out]).map(|&x| b.buffers[x].size).sum();
        let flops = bytes as f64 * rng.pick(&intensities);
        let kind = rng.pick(&kinds);
        b.op(format!("{kind}{t}"), kind, flops, reads, vec![out]);
        values.push(out);
        read.push(false);
        results.push(out);
    }
    // Unread results would be dead code; make them (and about 1 in 10 others) outputs.
    for (i, &v) in values.iter().enumerate() {
        if b.buffers[v].kind == BufferKind::Activation && (!read[i] || rng.chance(10)) {
            b.buffers[v].kind = BufferKind::Output;
        }
    }
    b.finish(
        "random-dag",
        format!("random DAG of {ops} ops (seed {seed}): fan-in up to 3, 16 KiB..4 MiB bf16 values, 0.5..2048 FLOP/byte"),
    )
}

/// A large, model-shaped random program of `ops` ops (at least 1), reproducible from
/// `seed`, with about two buffers per op: for timing solvers at scale.
///
/// The ops form a chain of residual blocks of 4..=12 ops. Each op reads the previous op's
/// value, sometimes a second recent one, and (9 in 10) a weight of its own; one in 8 also
/// writes a small side value that a later op of its block reads. Each block's input is
/// kept live to the block's end (the skip connection); one block in 50 also reads a value
/// from up to 5,000 ops back (U-Net-style long skips). Sizes are 4 KiB..4 MiB,
/// intensities 0.5..2048 FLOP/byte, as in [`random_dag`]. Values no op reads, and one in
/// 200 others, are outputs.
pub fn large_random(ops: usize, seed: u64) -> Program {
    let ops = ops.max(1);
    let mut g = Large::new(seed);
    for t in 0..ops {
        g.op(t);
    }
    let Large {
        mut rng,
        mut b,
        values,
        read,
        ..
    } = g;
    for (i, &v) in values.iter().enumerate() {
        if b.buffers[v].kind == BufferKind::Activation && (!read[i] || rng.below(200) == 0) {
            b.buffers[v].kind = BufferKind::Output;
        }
    }
    b.finish(
        "large-random",
        format!("large random program of {ops} ops (seed {seed}): residual blocks, weights, side values, long skips; 4 KiB..4 MiB bf16 values, 0.5..2048 FLOP/byte"),
    )
}

const LARGE_SIZES: [u64; 8] = [
    4 * KIB,
    16 * KIB,
    64 * KIB,
    256 * KIB,
    512 * KIB,
    1024 * KIB,
    2048 * KIB,
    4096 * KIB,
];

/// The state of [`large_random`] between ops.
struct Large {
    rng: SplitMix,
    b: Builder,
    /// Every value an op wrote, in order, and whether some op reads it.
    values: Vec<BufferId>,
    read: Vec<bool>,
    /// Index in `values` of the previous op's main value, and of the block's input.
    last: usize,
    block_start: usize,
    block_left: usize,
    /// A side value waiting for its reader: (value index, the op that reads it).
    side: Option<(usize, usize)>,
}

impl Large {
    fn new(seed: u64) -> Large {
        let mut rng = SplitMix(seed);
        let mut b = Builder::default();
        let input = b.buf("in0", rng.pick(&LARGE_SIZES), BufferKind::Input);
        Large {
            rng,
            b,
            values: vec![input],
            read: vec![false],
            last: 0,
            block_start: 0,
            block_left: 0,
            side: None,
        }
    }

    /// The values op `t` reads, as indices in `values`.
    fn picks(&mut self, t: usize) -> Vec<usize> {
        let rng = &mut self.rng;
        if self.block_left == 0 {
            self.block_start = self.last;
            self.block_left = 4 + rng.below(9);
        }
        self.block_left -= 1;
        let n = self.values.len();
        let mut picks: Vec<usize> = vec![self.last];
        if rng.chance(30) {
            picks.push(n - 1 - rng.below(n.min(4)));
        }
        if self.block_left == 0 {
            picks.push(self.block_start);
            if rng.chance(2) {
                picks.push(n - 1 - rng.below(n.min(5000)));
            }
        }
        if let Some((v, at)) = self.side {
            if at <= t {
                picks.push(v);
                self.side = None;
            }
        }
        picks
    }

    fn op(&mut self, t: usize) {
        let kinds = ["add", "mul", "gelu", "matmul", "conv", "reduce", "softmax"];
        let intensities = [0.5, 2.0, 8.0, 32.0, 128.0, 512.0, 2048.0];
        let picks = self.picks(t);
        let (rng, b) = (&mut self.rng, &mut self.b);
        let mut reads: Vec<BufferId> = Vec::with_capacity(picks.len() + 1);
        for v in picks {
            if !reads.contains(&self.values[v]) {
                reads.push(self.values[v]);
                self.read[v] = true;
            }
        }
        if rng.chance(90) {
            reads.push(b.buf(format!("w{t}"), rng.pick(&LARGE_SIZES), BufferKind::Weight));
        }
        let value = b.buf(
            format!("v{t}"),
            rng.pick(&LARGE_SIZES),
            BufferKind::Activation,
        );
        let mut writes = vec![value];
        let kind = rng.pick(&kinds);
        let bytes: u64 = reads
            .iter()
            .chain(&writes)
            .map(|&x| b.buffers[x].size)
            .sum();
        let flops = bytes as f64 * rng.pick(&intensities);
        self.last = self.values.len();
        self.values.push(value);
        self.read.push(false);
        if self.side.is_none() && rng.chance(12) {
            let s = b.buf(
                format!("s{t}"),
                rng.pick(&LARGE_SIZES[..4]),
                BufferKind::Activation,
            );
            writes.push(s);
            // Read before the end of the program, or never (then it becomes an output).
            self.side = Some((self.values.len(), t + 1 + rng.below(self.block_left.max(1))));
            self.values.push(s);
            self.read.push(false);
        }
        b.op(format!("{kind}{t}"), kind, flops, reads, writes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::{CostModel, Hardware};

    /// (memory-bound ops, compute-bound ops) with everything in slow memory on tpu-v4i-like.
    fn bounds(p: &Program) -> (usize, usize) {
        let m = CostModel::new(p, &Hardware::preset("tpu-v4i-like").unwrap());
        let mem = (0..p.len())
            .filter(|&t| m.default_mem_s(t) > m.compute_s(t))
            .count();
        (mem, p.len() - mem)
    }

    #[test]
    fn every_builtin_builds_under_its_name() {
        for name in NAMES {
            let p = builtin(name).unwrap();
            assert_eq!(p.name(), name);
            assert!(!p.description().is_empty());
        }
        assert!(builtin("nope").is_none());
    }

    #[test]
    fn chain_is_a_memory_bound_line() {
        let p = chain(12);
        assert_eq!(p.len(), 12);
        assert_eq!(bounds(&p), (12, 0));
        // Each activation lives from its definition to the next op.
        for t in 0..11 {
            let h = p.op(t).writes[0];
            assert_eq!(p.live_range(h), (t, t + 1));
            assert_eq!(p.buffer(h).kind, BufferKind::Activation);
        }
        assert_eq!(p.buffer(p.op(11).writes[0]).kind, BufferKind::Output);
        assert_eq!(
            p.buffer(p.op(0).reads[1]).size,
            8 << 20,
            "1024x4096 bf16 weight"
        );
        assert_eq!(chain(0).len(), 1);
    }

    #[test]
    fn diamond_has_a_long_lived_skip_and_both_bounds() {
        let p = diamond();
        let skip = p.buffers().iter().position(|b| b.name == "skip").unwrap();
        let join = p.ops().iter().position(|o| o.name == "join").unwrap();
        assert_eq!(p.live_range(skip), (1, join));
        assert!(join > 4, "the skip spans the other branch");
        let (mem, comp) = bounds(&p);
        assert!(mem >= 2 && comp >= 4, "mem {mem} comp {comp}");
    }

    #[test]
    fn random_dag_is_seeded_and_mixed() {
        let p = random_dag(60, 1);
        assert_eq!(p.len(), 60);
        assert_eq!(p, random_dag(60, 1));
        assert_ne!(p.content_hash(), random_dag(60, 2).content_hash());
        let (mem, comp) = bounds(&p);
        assert!(mem >= 10 && comp >= 10, "mem {mem} comp {comp}");
        let count = |k| p.buffers().iter().filter(|b| b.kind == k).count();
        assert!(count(BufferKind::Weight) >= 10);
        assert!(count(BufferKind::Output) >= 2);
        assert!(p.ops().iter().all(|o| o.reads.len() <= 4));
        assert!(p.ops().iter().any(|o| o
            .reads
            .iter()
            .filter(|&&b| !p.buffer(b).kind.is_entry())
            .count()
            == 3));
        // Every activation is read: unread values became outputs.
        for (i, b) in p.buffers().iter().enumerate() {
            if b.kind == BufferKind::Activation {
                assert!(!p.uses(i).is_empty(), "{} is dead", b.name);
            }
        }
        // Some value outlives a window of 10 ops.
        assert!((0..p.buffers().len()).any(|i| {
            let (s, e) = p.live_range(i);
            !p.buffer(i).kind.is_entry() && e - s > 10
        }));
        let flops: Vec<f64> = p.ops().iter().map(|o| o.flops).collect();
        assert!(flops.iter().any(|&f| f < 1e7) && flops.iter().any(|&f| f > 1e9));
    }

    #[test]
    fn large_random_is_seeded_model_shaped_and_round_trips() {
        let p = large_random(3000, 4);
        assert_eq!(p.len(), 3000);
        assert_eq!(p, large_random(3000, 4));
        assert_ne!(p.content_hash(), large_random(3000, 5).content_hash());
        let n = p.buffers().len();
        assert!((5700..6300).contains(&n), "{n} buffers: about two per op");
        let count = |k| p.buffers().iter().filter(|b| b.kind == k).count();
        assert!(count(BufferKind::Weight) > 2500, "most ops have a weight");
        assert!(count(BufferKind::Output) >= 1);
        // Live ranges: mostly short, some skips spanning hundreds of ops.
        let mut spans: Vec<usize> = (0..n)
            .filter(|&b| !p.buffer(b).kind.is_entry())
            .map(|b| p.live_range(b).1 - p.live_range(b).0)
            .collect();
        spans.sort_unstable();
        assert!(
            spans[spans.len() / 2] <= 2,
            "median span {}",
            spans[spans.len() / 2]
        );
        assert!(
            spans[spans.len() - 1] > 500,
            "longest span {}",
            spans[spans.len() - 1]
        );
        let (mem, comp) = bounds(&p);
        assert!(mem >= 300 && comp >= 300, "mem {mem} comp {comp}");
        let back = crate::json::parse_program(&crate::json::to_json(&p, None), "back").unwrap();
        assert_eq!(back, p);
        for ops in [0, 1, 2, 5, 13] {
            assert_eq!(large_random(ops, 9).len(), ops.max(1));
        }
    }

    #[test]
    fn random_dag_is_valid_for_many_seeds_and_sizes() {
        for seed in 0..50 {
            for ops in [1, 2, 3, 10, 100] {
                assert_eq!(random_dag(ops, seed).len(), ops);
            }
        }
        assert_eq!(random_dag(0, 0).len(), 1);
    }
}
