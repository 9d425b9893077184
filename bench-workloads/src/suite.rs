//! The benchmark suite: each workload with the hardware and fast capacity it is evaluated
//! at.
//!
//! Capacities are chosen so that no case is trivial (every beneficial buffer fits at once)
//! or hopeless (nothing useful fits): each sits below the workload's *beneficial peak* (the
//! most bytes of memory-bound buffers live at one time, see [`beneficial_peak`]), and at
//! each the xla baseline is 7-115% slower than the physical bound while all-slow is
//! slower still, so there is room to win. `mallocmuzero suite` prints the figures;
//! `mallocmuzero evaluate --workload W --fast-capacity C` scans other capacities.
//!
//! The scale suite ([`scale_cases`]) holds the scale tier's programs ([`crate::scale`]) on
//! both presets, with capacities by one rule ([`scale_divisor`]) instead of by hand.

use accel_sim::{BufferKind, CostModel, Hardware, Program};

/// One evaluation case.
#[derive(Clone, Debug, PartialEq)]
pub struct SuiteCase {
    /// The workload's name.
    pub workload: &'static str,
    /// The hardware preset.
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

/// Which suite: the 14 cases (`standard`, what `--suite` alone runs) or the scale tier's
/// (`scale`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SuiteName {
    /// The 14 cases of traced models on both presets: what `--suite` alone runs.
    #[default]
    Standard,
    /// The scale tier: JAX programs as XLA scheduled them, far larger.
    Scale,
}

impl SuiteName {
    /// Both suites.
    pub const ALL: [SuiteName; 2] = [SuiteName::Standard, SuiteName::Scale];

    /// The suite's name on the command line (`standard`, `scale`).
    pub fn as_str(self) -> &'static str {
        match self {
            SuiteName::Standard => "standard",
            SuiteName::Scale => "scale",
        }
    }
}

impl std::fmt::Display for SuiteName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SuiteName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        SuiteName::ALL
            .into_iter()
            .find(|n| n.as_str() == s)
            .ok_or_else(|| format!("unknown suite `{s}` (known: standard, scale)"))
    }
}

/// A case of the scale suite: a scale-tier workload on a preset whose fast levels are all
/// divided by `divisor`, the power of two [`scale_divisor`] gives for the program.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleCase {
    /// The scale-tier workload's name.
    pub workload: &'static str,
    /// The hardware preset.
    pub hardware: &'static str,
    /// The power of two the preset's fast levels are divided by.
    pub divisor: u64,
}

/// The scale suite's fast levels together hold at most 1/`SCALE_PEAK_SHARE` of the
/// program's peak live bytes ([`scale_divisor`]).
pub const SCALE_PEAK_SHARE: u64 = 16;

/// The rule of the scale suite's capacities: the smallest power of two `k >= 1` such that
/// the hardware's fast levels, each divided by `k`, together hold at most 1/16 of the
/// program's peak live bytes. A program large enough that the real chip already binds
/// keeps the preset's capacities; a smaller one sees the chip shrunk with it, every fast
/// level by the same factor, so the levels' ratios stay the preset's. Either way the
/// all-fast mapping cannot fit.
pub fn scale_divisor(program: &Program, hw: &Hardware) -> u64 {
    let fast: u64 = hw.levels[1..].iter().map(|l| l.capacity).sum();
    divisor_for(fast, program.peak_live_bytes())
}

/// [`scale_divisor`] of fast levels holding `fast` bytes together and a program whose peak
/// live bytes are `peak`.
fn divisor_for(fast: u64, peak: u64) -> u64 {
    let share = peak / SCALE_PEAK_SHARE;
    let mut k = 1u64;
    // 2^40 takes any capacity below the 2^53 limit down to a few KiB: past it, every
    // level is one aligned unit anyway.
    while fast / k > share && k < 1 << 40 {
        k *= 2;
    }
    k
}

/// `hw` with every fast level's capacity divided by `divisor`, rounded down to the level's
/// alignment (at least one aligned unit).
pub fn divide_fast_levels(mut hw: Hardware, divisor: u64) -> Hardware {
    for l in hw.levels.iter_mut().skip(1) {
        let align = l.alignment.max(1);
        l.capacity = (l.capacity / divisor.max(1) / align).max(1) * align;
    }
    hw
}

/// `hw` with the scale suite's capacities for `program` ([`scale_divisor`]): how a program
/// outside the tier is raced the same way.
pub fn scale_hardware(program: &Program, hw: Hardware) -> Hardware {
    let k = scale_divisor(program, &hw);
    divide_fast_levels(hw, k)
}

/// The scale suite: every program of the scale tier on tpu-v4i-like and on nnp-i-like,
/// with the divisor [`scale_divisor`] gives (a test recomputes each).
pub fn scale_cases() -> Vec<ScaleCase> {
    // (workload, divisor on tpu-v4i-like, divisor on nnp-i-like)
    const TABLE: &[(&str, u64, u64)] = &[
        ("jax-gpt-12l-train", 1, 1),
        ("jax-gpt-12l-train-lowered", 1, 1),
        ("jax-llama-1b-prefill", 1, 1),
        ("jax-llama-1b-prefill-lowered", 1, 1),
        ("jax-llama-1b-decode", 1, 1),
        ("jax-llama-1b-decode-lowered", 1, 1),
        ("jax-vit-b16-train", 1, 1),
        ("jax-vit-b16-train-lowered", 1, 1),
        ("jax-resnet50-train", 2, 1),
        ("jax-resnet50-train-lowered", 2, 1),
        ("jax-unet-diffusion-train", 2, 1),
        ("jax-unet-diffusion-train-lowered", 2, 1),
        ("jax-moe-8e-train", 1, 1),
        ("jax-moe-8e-train-lowered", 1, 1),
    ];
    let mut cases = Vec::new();
    for &(workload, tpu, nnp) in TABLE {
        for (hardware, divisor) in [("tpu-v4i-like", tpu), ("nnp-i-like", nnp)] {
            cases.push(ScaleCase {
                workload,
                hardware,
                divisor,
            });
        }
    }
    cases
}

/// The scale suite's case of `workload` on the preset `hardware`, if there is one.
pub fn scale_case_of(workload: &str, hardware: &str) -> Option<ScaleCase> {
    scale_cases()
        .into_iter()
        .find(|c| c.workload == workload && c.hardware == hardware)
}

impl ScaleCase {
    /// The case's hardware: the preset with its fast levels divided.
    pub fn hardware(&self) -> Hardware {
        let hw = Hardware::preset(self.hardware).expect("case tables name built-in presets");
        divide_fast_levels(hw, self.divisor)
    }
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
    fn the_scale_divisor_is_the_smallest_power_of_two_that_fits_a_sixteenth_of_the_peak() {
        let mib = 1u64 << 20;
        let mut peaks: Vec<u64> = (0..48).map(|i| 1u64 << i).collect();
        peaks.extend([0, 1, 15, 17, 1_728_937_032, 8_137_209_888, 3 * mib + 1]);
        for fast in [512, 28 * mib, 128 * mib, 96 * mib + 64] {
            for &peak in &peaks {
                let k = divisor_for(fast, peak);
                assert!(k.is_power_of_two(), "{fast} {peak}: {k}");
                let share = peak / SCALE_PEAK_SHARE;
                assert!(fast / k <= share || k == 1 << 40, "{fast} {peak}: {k}");
                // The smallest such: half the divisor would not fit.
                assert!(k == 1 || fast / (k / 2) > share, "{fast} {peak}: {k}");
            }
        }
        // A program 16x the preset's fast bytes or more keeps the preset.
        assert_eq!(divisor_for(128 * mib, 16 * 128 * mib), 1);
        assert_eq!(divisor_for(128 * mib, 16 * 128 * mib - 16), 2);
        assert_eq!(divisor_for(28 * mib, 28 * mib), 16);
    }

    #[test]
    fn dividing_the_fast_levels_keeps_their_alignment_and_ratio() {
        let nnp = Hardware::preset("nnp-i-like").unwrap();
        let half = divide_fast_levels(nnp.clone(), 2);
        assert_eq!(half.levels[0].capacity, nnp.levels[0].capacity);
        assert_eq!(half.levels[1].capacity, 12 << 20);
        assert_eq!(half.levels[2].capacity, 2 << 20);
        // Far down, each level keeps one aligned unit.
        let tiny = divide_fast_levels(nnp, 1 << 40);
        for l in &tiny.levels[1..] {
            assert_eq!(l.capacity, l.alignment);
        }
    }

    #[test]
    fn suite_names_parse_and_print() {
        for n in SuiteName::ALL {
            assert_eq!(n.to_string().parse::<SuiteName>(), Ok(n));
        }
        assert_eq!(SuiteName::default(), SuiteName::Standard);
        let e = "big".parse::<SuiteName>().unwrap_err();
        assert_eq!(e, "unknown suite `big` (known: standard, scale)");
    }

    #[test]
    fn the_scale_suite_is_every_scale_program_on_both_presets_at_the_rules_capacities() {
        let cases = scale_cases();
        let names = crate::scale::names();
        assert_eq!(cases.len(), 2 * names.len());
        for name in names {
            let program = crate::load(name).unwrap();
            for preset in ["tpu-v4i-like", "nnp-i-like"] {
                let c = scale_case_of(name, preset).unwrap();
                let hw = Hardware::preset(preset).unwrap();
                assert_eq!(c.divisor, scale_divisor(&program, &hw), "{c:?}");
                assert_eq!(c.hardware(), scale_hardware(&program, hw), "{c:?}");
                // The capacity binds: nothing near the all-fast mapping fits, and more
                // bytes would help at once than the fastest level holds.
                let hw = c.hardware();
                let fast: u64 = hw.levels[1..].iter().map(|l| l.capacity).sum();
                assert!(
                    fast <= program.peak_live_bytes() / SCALE_PEAK_SHARE,
                    "{c:?}"
                );
                let beneficial = beneficial_peak(&program, &hw, hw.fastest());
                assert!(beneficial > fast, "{c:?}: {beneficial}");
                let smallest = program.buffers().iter().map(|b| b.size).min().unwrap();
                assert!(smallest <= hw.levels[hw.fastest()].capacity, "{c:?}");
            }
        }
    }

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
