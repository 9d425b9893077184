//! The physical limit of a program on a hardware: its latency if every operand and result
//! sat in the fastest memory and copies were free.

use accel_sim::{Hardware, Program};

/// Per op `max(compute, mem) + op_overhead`, with every read at the highest read bandwidth
/// of any level and every write at the highest write bandwidth (the fastest level's, on
/// every preset). The simulator charges each op at least this (its memory time only grows
/// with slower levels, and stalls only add), so no mapping's simulated latency is below it.
/// Not a mapping.
pub fn bound_latency(program: &Program, hw: &Hardware) -> f64 {
    let inv_read = hw
        .levels
        .iter()
        .map(|l| 1.0 / l.read_bw)
        .fold(f64::INFINITY, f64::min);
    let inv_write = hw
        .levels
        .iter()
        .map(|l| 1.0 / l.write_bw)
        .fold(f64::INFINITY, f64::min);
    program
        .ops()
        .iter()
        .map(|op| {
            let r: u64 = op.reads.iter().map(|&b| program.buffer(b).size).sum();
            let w: u64 = op.writes.iter().map(|&b| program.buffer(b).size).sum();
            let mem = r as f64 * inv_read + w as f64 * inv_write;
            (op.flops / hw.peak_flops).max(mem) + hw.op_overhead_s
        })
        .sum()
}
