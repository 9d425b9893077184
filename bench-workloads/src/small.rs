//! Small cases with known optima: windows of the bundled models (10 to 40 buffers) at
//! fast capacities where the choice matters (xla or greedy-size is above the optimum),
//! each with its cost-model optimum as the exact solver proved it (`exact` crate;
//! `cargo run --release -p exact --example small_cases` proves them again and prints this
//! table). Every solver can be measured against the true optimum on them.

use accel_sim::Hardware;

/// One small case and its proven optimum.
#[derive(Clone, Debug, PartialEq)]
pub struct SmallCase {
    /// A workload with a window: `resnet50@36..48`.
    pub workload: &'static str,
    /// The hardware preset.
    pub hardware: &'static str,
    /// Capacity of the fastest level, bytes.
    pub fast_capacity: u64,
    /// The cost model's optimum (`accel_sim::CostModel::latency` of an optimal mapping),
    /// seconds.
    pub optimum_s: f64,
}

impl SmallCase {
    /// The case's hardware with its fast capacity applied.
    pub fn hardware(&self) -> Hardware {
        crate::suite::preset_with_fast_capacity(self.hardware, self.fast_capacity)
    }
}

/// The small cases, in a stable order.
pub fn cases() -> Vec<SmallCase> {
    let c = |workload, hardware, fast_capacity, optimum_s| SmallCase {
        workload,
        hardware,
        fast_capacity,
        optimum_s,
    };
    vec![
        c(
            "resnet50@36..48",
            "tpu-v4i-like",
            12_976_128,
            1.276180208325544e-4,
        ),
        c(
            "resnet50@84..96",
            "tpu-v4i-like",
            6_946_816,
            6.129408693688335e-5,
        ),
        c(
            "resnet50@48..60",
            "nnp-i-like",
            7_708_672,
            2.3787778007843197e-4,
        ),
        c(
            "bert-base-s128@14..28",
            "tpu-v4i-like",
            2_830_848,
            7.563485424047598e-5,
        ),
        c(
            "bert-base-s128@56..70",
            "nnp-i-like",
            3_775_488,
            1.9755914541176494e-4,
        ),
        c(
            "gpt2-small-s128@56..70",
            "tpu-v4i-like",
            5_347_328,
            9.669082207279429e-5,
        ),
        c(
            "vit-b16@42..56",
            "tpu-v4i-like",
            8_714_240,
            2.6962123324401655e-4,
        ),
        c(
            "unet@0..14",
            "tpu-v4i-like",
            6_711_296,
            2.6536973313015175e-4,
        ),
        c(
            "mobilenet-v2@28..42",
            "tpu-v4i-like",
            3_613_696,
            5.044369605211725e-5,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_small_case_loads_small_and_has_an_optimum() {
        for c in cases() {
            let p = crate::load(c.workload).unwrap();
            assert!((10..=40).contains(&p.buffers().len()), "{c:?}");
            let hw = c.hardware();
            assert_eq!(hw.levels[hw.fastest()].capacity, c.fast_capacity);
            assert!(c.optimum_s.is_finite() && c.optimum_s > 0.0, "{c:?}");
        }
    }
}
