//! The benchmark suite: each workload with the hardware and fast capacity it is evaluated
//! at.
//!
//! Capacities are chosen so that no case is trivial (every beneficial buffer fits at once)
//! or hopeless (nothing useful fits): each sits below the workload's *beneficial peak* (the
//! most bytes of memory-bound buffers live at one time, see [`beneficial_peak`]), and at
//! each the xla baseline is 7-115% slower than the physical bound while all-slow is
//! slower still, so there is room to win. `mallocmuzero suite` prints the figures;
//! `mallocmuzero evaluate --workload W --fast-capacity C` scans other capacities.

use accel_sim::{BufferKind, CostModel, Hardware, Program};

/// One evaluation case.
#[derive(Clone, Debug, PartialEq)]
pub struct SuiteCase {
    pub workload: &'static str,
    pub hardware: &'static str,
    /// Capacity of the fastest level, overriding the preset's.
    pub fast_capacity: u64,
}

const MIB: u64 = 1 << 20;

/// The suite, in a stable order.
pub fn cases() -> Vec<SuiteCase> {
    let c = |workload, hardware, fast_capacity| SuiteCase {
        workload,
        hardware,
        fast_capacity,
    };
    vec![
        c("resnet50", "tpu-v4i-like", 16 * MIB),
        c("resnet101", "tpu-v4i-like", 16 * MIB),
        c("alexnet", "tpu-v4i-like", 16 * MIB),
        c("mobilenet-v2", "tpu-v4i-like", 8 * MIB),
        c("vgg16", "tpu-v4i-like", 32 * MIB),
        c("vit-b16", "tpu-v4i-like", 8 * MIB),
        c("bert-base-s128", "tpu-v4i-like", 16 * MIB),
        c("bert-base-s384", "tpu-v4i-like", 8 * MIB),
        c("gpt2-small-s128", "tpu-v4i-like", 8 * MIB),
        c("unet", "tpu-v4i-like", 8 * MIB),
        c("alphatensor-4x4", "tpu-v4i-like", 64 * MIB),
        c("resnet50", "nnp-i-like", 4 * MIB),
        c("bert-base-s128", "nnp-i-like", 4 * MIB),
        c("random-dag", "tpu-v4i-like", 4 * MIB),
    ]
}

/// The suite's case of `workload` on the preset `hardware`, if there is one: a user who
/// names a suite workload on its suite hardware without a capacity gets the suite's.
pub fn case_of(workload: &str, hardware: &str) -> Option<SuiteCase> {
    cases()
        .into_iter()
        .find(|c| c.workload == workload && c.hardware == hardware)
}

impl SuiteCase {
    /// The case's hardware with its fast capacity applied.
    pub fn hardware(&self) -> Hardware {
        preset_with_fast_capacity(self.hardware, self.fast_capacity)
    }
}

/// A built-in preset with its fastest level at `capacity` bytes: the hardware of the
/// suite's and the small cases' tables, whose entries are known to be valid.
pub(crate) fn preset_with_fast_capacity(preset: &str, capacity: u64) -> Hardware {
    let hw = Hardware::preset(preset).expect("case tables name built-in presets");
    let fastest = hw.fastest();
    hw.with_capacity(fastest, capacity)
        .expect("case tables hold valid capacities")
}

/// The most bytes live at one time among buffers that would make some op faster if they
/// sat in `level` (XLA's memory-boundedness > 0), counting weights and inputs only from
/// their first use, since a prefetch can bring them in just before it.
pub fn beneficial_peak(program: &Program, hw: &Hardware, level: usize) -> u64 {
    let cost = CostModel::new(program, hw);
    let t = program.len();
    let mut diff = vec![0i128; t + 1];
    for (b, buf) in program.buffers().iter().enumerate() {
        if cost.memory_boundedness(b, level) <= 0.0 {
            continue;
        }
        let (s, e) = program.live_range(b);
        let s = match buf.kind {
            BufferKind::Weight | BufferKind::Input => program.uses(b)[0],
            _ => s,
        };
        diff[s] += buf.size as i128;
        diff[e + 1] -= buf.size as i128;
    }
    let mut acc = 0i128;
    let mut peak = 0i128;
    for d in &diff[..t] {
        acc += d;
        peak = peak.max(acc);
    }
    peak as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_loads_and_is_neither_trivial_nor_empty() {
        for c in cases() {
            let p = crate::load(c.workload).unwrap();
            let hw = c.hardware();
            let fastest = hw.fastest();
            let beneficial = beneficial_peak(&p, &hw, fastest);
            // Not trivial: the bytes that would help exceed the fast capacity.
            assert!(beneficial > c.fast_capacity, "{c:?}: {beneficial}");
            // Not hopeless: the smallest buffer fits.
            let smallest = p.buffers().iter().map(|b| b.size).min().unwrap();
            assert!(smallest <= c.fast_capacity, "{c:?}");
        }
    }
}
