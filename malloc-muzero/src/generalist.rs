//! The bundled generalist: a mallocMuZero network trained on many programs and hardware
//! settings at once, shipped in the crate (`generalist/weights.safetensors` and the
//! `run.json` of the run that made them; `generalist/README.md` says how to make them
//! again). `evaluate --solver muzero` without a checkpoint plays it, zero-shot, on any
//! program; `train --init bundled` fine-tunes it.
//!
//! Its game options use one fast level, so it plays any hardware: on hardware with more
//! fast levels it maps into the fastest one alone (the others stay unused), as
//! `--fast-levels 1` would.

use crate::train::{RunInfo, TrainError};
use muzero::{device, MuZeroNet};
use serde::{Deserialize, Serialize};

const WEIGHTS: &[u8] = include_bytes!("../generalist/weights.safetensors");
const RUN_JSON: &str = include_str!("../generalist/run.json");
const GUIDE_WEIGHTS: &[u8] = include_bytes!("../generalist/guide.safetensors");

/// How errors and warnings name the bundled network.
pub const ORIGIN: &str = "the bundled generalist";

/// How errors and warnings name the bundled guide network ([`guide_network`]).
pub const GUIDE_ORIGIN: &str = "the bundled guide (the generalist fitted to move outcomes)";

/// One case of a multi-program run as a user writes it (`train --cases FILE` takes a JSON
/// list of them): a workload (built-in name or program file), a hardware preset or file,
/// and a capacity (`16MiB`, or `1:16MiB` for level 1); the last two optional as in
/// `evaluate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    /// A built-in workload's name or a program file.
    pub workload: String,
    /// The hardware preset or file (the default preset when absent).
    #[serde(default)]
    pub hw: Option<String>,
    /// The fastest level's capacity (`16MiB`), overriding the preset's.
    #[serde(default)]
    pub fast_capacity: Option<String>,
}

/// The bundled workloads the generalist trains on: every family of the suite except those
/// held out (see [`HELD_OUT_WORKLOADS`]) or kept for validation (see
/// [`VALIDATION_WORKLOADS`]), and three families embedded for training only.
pub const TRAINING_WORKLOADS: &[&str] = &[
    "resnet50",
    "alexnet",
    "vgg16",
    "bert-base-s128",
    "unet",
    "alphatensor-4x4",
    "random-dag",
    "googlenet",
    "squeezenet1-1",
    "llama-small-s128",
];

/// Programs of the scale tier's size (500 to 800 ops, XLA's scheduled modules of JAX
/// models) that are not the tier's, with the fast capacities they train at: the scale
/// rule's (`scale-rule`, as the tier's own cases get theirs) and half of it. Other models
/// and shapes than the tier's (`bench_workloads::scale::generalist_names`).
pub const TRAINING_PROGRAMS: &[(&str, [&str; 2])] = &[
    ("jax-bert-6l-mlm-train", ["scale-rule", "64MiB"]),
    ("jax-llama-6l-train", ["scale-rule", "64MiB"]),
    ("jax-mixer-8l-train", ["scale-rule", "32MiB"]),
    ("jax-wrn-16-train", ["scale-rule", "64MiB"]),
    ("jax-encoder-24l-forward", ["scale-rule", "32MiB"]),
];

/// Whole families the generalist never trains on, on which its checkpoint is chosen: a
/// mobile convnet (ShuffleNet v2), a convnet with squeeze-excitation blocks (RegNetY) and
/// a vision transformer (ViT-B/16). None is held out: a choice made on them says nothing
/// about the held-out programs in advance.
pub const VALIDATION_WORKLOADS: &[&str] = &["shufflenet-v2", "regnet-y-400mf", "vit-b16"];

/// The validation family RegNetY at the scale tier's size (a training step, both stages),
/// with its capacities on tpu-v4i-like: `scripts/generalist_validate.py --tier-size` adds
/// these cases to the six of [`VALIDATION_WORKLOADS`].
pub const TIER_SIZE_VALIDATION: &[(&str, &str)] = &[
    ("jax-regnety-train", "scale-rule"),
    ("jax-regnety-train", "32MiB"),
    ("jax-regnety-train-lowered", "scale-rule"),
];

/// The bundled workloads the generalist never trains on, for its evaluation (with the
/// models of new families in `bench-workloads/heldout/`): MobileNet v2 and GPT-2 are
/// families it never saw; ResNet-101 and BERT at 384 tokens are deeper or longer members
/// of families it did.
pub const HELD_OUT_WORKLOADS: &[&str] = &[
    "resnet101",
    "mobilenet-v2",
    "bert-base-s384",
    "gpt2-small-s128",
];

/// The hardware of training: the TPU-like preset (one fast level). Not the NNP-I-like
/// preset: its two fast levels make another game (the generalist would map into its SRAM
/// alone while xla uses both).
const TRAINING_HARDWARE: &str = "tpu-v4i-like";

/// The fast capacities a workload trains at: four, from tight to roomy. The AlphaTensor
/// block matmul's smallest buffer is 8 MiB, so its four are larger.
fn training_capacities(workload: &str) -> &'static [&'static str] {
    match workload {
        "alphatensor-4x4" => &["16MiB", "32MiB", "64MiB", "128MiB"],
        _ => &["4MiB", "8MiB", "16MiB", "32MiB"],
    }
}

/// The cases of `train --suite`: every training workload at its training capacities, then
/// every training program of the tier's size ([`TRAINING_PROGRAMS`]) at its two.
pub fn training_cases() -> Vec<CaseSpec> {
    let small = TRAINING_WORKLOADS
        .iter()
        .flat_map(|w| training_capacities(w).iter().map(move |cap| (*w, *cap)));
    let large = TRAINING_PROGRAMS
        .iter()
        .flat_map(|(w, caps)| caps.iter().map(move |cap| (*w, *cap)));
    small
        .chain(large)
        .map(|(w, cap)| CaseSpec {
            workload: w.to_string(),
            hw: Some(TRAINING_HARDWARE.to_string()),
            fast_capacity: Some(cap.to_string()),
        })
        .collect()
}

/// The `run.json` of the run that made the bundled weights: its game options, network and
/// training config, and its cases.
pub fn info() -> Result<RunInfo, TrainError> {
    let info: RunInfo = serde_json::from_str(RUN_JSON)
        .and_then(crate::train::run_info_from)
        .map_err(|e| TrainError::Config(format!("{ORIGIN}: run.json: {e}")))?;
    if !malloc_game::NETWORK_RULES.contains(&info.rules) {
        return Err(TrainError::Config(format!(
            "{ORIGIN} was trained under rules v{} of the game; this build plays rules v{}",
            info.rules,
            malloc_game::RULES_VERSION
        )));
    }
    Ok(info)
}

/// The bundled network.
pub fn network() -> Result<MuZeroNet, TrainError> {
    let info = info()?;
    Ok(MuZeroNet::from_bytes(
        ORIGIN,
        WEIGHTS,
        &info.network,
        &device(),
    )?)
}

/// The bundled guide network: the generalist with its policy fitted to the local search's
/// move outcomes on the training cases (`guide.safetensors`; `generalist/README.md` says
/// how it was made). Its shape and rules are the generalist's.
pub fn guide_network() -> Result<MuZeroNet, TrainError> {
    let info = info()?;
    Ok(MuZeroNet::from_bytes(
        GUIDE_ORIGIN,
        GUIDE_WEIGHTS,
        &info.network,
        &device(),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_network_loads_and_is_small() {
        let info = info().unwrap();
        assert!(!info.cases.is_empty(), "a multi-program run made it");
        let net = network().unwrap();
        assert_eq!(net.config(), &info.network);
        assert!(WEIGHTS.len() < 4 << 20, "{} bytes", WEIGHTS.len());
        let guide = guide_network().unwrap();
        assert_eq!(guide.config(), &info.network);
        assert!(
            GUIDE_WEIGHTS.len() < 4 << 20,
            "{} bytes",
            GUIDE_WEIGHTS.len()
        );
    }

    #[test]
    fn no_held_out_or_validation_workload_is_trained_on() {
        let info = info().unwrap();
        for w in HELD_OUT_WORKLOADS.iter().chain(VALIDATION_WORKLOADS) {
            assert!(!TRAINING_WORKLOADS.contains(w));
            assert!(info.cases.iter().all(|c| c.workload != *w), "{w}");
        }
        for w in VALIDATION_WORKLOADS {
            assert!(!HELD_OUT_WORKLOADS.contains(w), "{w}");
        }
        for (w, _) in TIER_SIZE_VALIDATION {
            assert!(info.cases.iter().all(|c| c.workload != *w), "{w}");
            assert!(TRAINING_PROGRAMS.iter().all(|(t, _)| t != w), "{w}");
        }
        for c in &info.cases {
            assert!(!c.workload.contains("heldout"), "{}", c.workload);
        }
    }

    #[test]
    fn training_programs_are_not_the_tiers_and_train_at_the_rule_and_half_of_it() {
        let tier = bench_workloads::scale::names();
        let training = bench_workloads::scale::generalist_names();
        let hw = accel_sim::Hardware::preset(TRAINING_HARDWARE).unwrap();
        // Half the scale rule's fast capacity for the program named `w`, as a capacity flag.
        let half_of_rule = |w: &str| {
            let program = bench_workloads::load(w).unwrap();
            let ruled = bench_workloads::suite::scale_hardware(&program, hw.clone());
            format!("{}MiB", (ruled.levels[ruled.fastest()].capacity / 2) >> 20)
        };
        for (w, [rule, half]) in TRAINING_PROGRAMS {
            assert!(training.contains(w) && !tier.contains(w), "{w}");
            assert_eq!(*rule, "scale-rule");
            assert_eq!(*half, half_of_rule(w), "{w}");
        }
        // The tier-size validation step at the rule's capacity and at half of it.
        assert_eq!(
            TIER_SIZE_VALIDATION[1].1,
            half_of_rule(TIER_SIZE_VALIDATION[0].0)
        );
        // The bundled network's run trained on exactly these cases.
        let info = info().unwrap();
        let names: Vec<&str> = info.cases.iter().map(|c| c.workload.as_str()).collect();
        let cases = training_cases();
        assert_eq!(cases.len(), 50);
        assert!(cases.iter().map(|c| c.workload.as_str()).eq(names));
    }
}
