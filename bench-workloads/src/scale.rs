//! The scale tier: full-size JAX models (a GPT-style training step, a LLaMA-style prefill
//! and decode step, ViT-B/16, ResNet-50, a diffusion U-Net, a mixture of experts) as XLA's
//! HLO, each as the scheduled module and as the module before optimization (`-lowered`),
//! 600 to 9,000 ops each.
//!
//! `scripts/export_jax_hlo.py --scale` writes them (gzip-compressed) into
//! `data/scale/` with `scale.json`, which says for each program its file, its stage, how
//! many leading entry parameters are weights (and optimizer state), its description and
//! XLA's own figures for it. The JAX code is this project's own
//! (`scripts/jax_scale_programs.py`), with random weights: nothing licensed comes in.
//! docs/workloads.md lists them; [`crate::suite::scale_cases`] is their suite.
//!
//! Beside them, the same way (`--generalist`, `data/generalist/`,
//! `scripts/jax_generalist_programs.py`): programs of the tier's size that are not the
//! tier's, on which the bundled generalist trains and is validated ([`generalist_names`]).

use crate::{hlo, WorkloadError};
use accel_sim::Program;
use serde::Deserialize;
use std::io::Read;

/// A file of `data/DIR/` with its name.
macro_rules! data_file {
    ($dir:literal, $name:literal) => {
        ($name, include_bytes!(concat!("../data/", $dir, "/", $name)))
    };
}

/// A set of compressed HLO programs with their manifest, as the exporter writes them.
struct Set {
    /// The folder under `data/`, as errors name it.
    dir: &'static str,
    /// The manifest's file name.
    manifest_file: &'static str,
    /// The script whose models they are.
    script: &'static str,
    /// The compressed files, by file name (the manifest names each program's file).
    files: &'static [(&'static str, &'static [u8])],
    manifest: &'static str,
}

/// The scale tier.
const SCALE: Set = Set {
    dir: "scale",
    manifest_file: "scale.json",
    script: "scripts/jax_scale_programs.py",
    files: &[
        data_file!("scale", "jax-gpt-12l-train.hlo.txt.gz"),
        data_file!("scale", "jax-gpt-12l-train-lowered.hlo.txt.gz"),
        data_file!("scale", "jax-llama-1b-prefill.hlo.txt.gz"),
        data_file!("scale", "jax-llama-1b-prefill-lowered.hlo.txt.gz"),
        data_file!("scale", "jax-llama-1b-decode.hlo.txt.gz"),
        data_file!("scale", "jax-llama-1b-decode-lowered.hlo.txt.gz"),
        data_file!("scale", "jax-vit-b16-train.hlo.txt.gz"),
        data_file!("scale", "jax-vit-b16-train-lowered.hlo.txt.gz"),
        data_file!("scale", "jax-resnet50-train.hlo.txt.gz"),
        data_file!("scale", "jax-resnet50-train-lowered.hlo.txt.gz"),
        data_file!("scale", "jax-unet-diffusion-train.hlo.txt.gz"),
        data_file!("scale", "jax-unet-diffusion-train-lowered.hlo.txt.gz"),
        data_file!("scale", "jax-moe-8e-train.hlo.txt.gz"),
        data_file!("scale", "jax-moe-8e-train-lowered.hlo.txt.gz"),
    ],
    manifest: include_str!("../data/scale/scale.json"),
};

/// Programs of the tier's size that are not the tier's, for the bundled generalist's
/// training and validation: other models and shapes, `scripts/export_jax_hlo.py
/// --generalist`.
const GENERALIST: Set = Set {
    dir: "generalist",
    manifest_file: "generalist.json",
    script: "scripts/jax_generalist_programs.py",
    files: &[
        data_file!("generalist", "jax-bert-6l-mlm-train.hlo.txt.gz"),
        data_file!("generalist", "jax-bert-6l-mlm-train-lowered.hlo.txt.gz"),
        data_file!("generalist", "jax-llama-6l-train.hlo.txt.gz"),
        data_file!("generalist", "jax-llama-6l-train-lowered.hlo.txt.gz"),
        data_file!("generalist", "jax-mixer-8l-train.hlo.txt.gz"),
        data_file!("generalist", "jax-mixer-8l-train-lowered.hlo.txt.gz"),
        data_file!("generalist", "jax-wrn-16-train.hlo.txt.gz"),
        data_file!("generalist", "jax-wrn-16-train-lowered.hlo.txt.gz"),
        data_file!("generalist", "jax-encoder-24l-forward.hlo.txt.gz"),
        data_file!("generalist", "jax-encoder-24l-forward-lowered.hlo.txt.gz"),
        data_file!("generalist", "jax-regnety-train.hlo.txt.gz"),
        data_file!("generalist", "jax-regnety-train-lowered.hlo.txt.gz"),
    ],
    manifest: include_str!("../data/generalist/generalist.json"),
};

/// `scale.json`: what the exporter wrote beside the files.
#[derive(Debug, Deserialize)]
pub struct Manifest {
    /// The jax version that traced them.
    pub jax: String,
    /// Every program of the tier.
    pub programs: Vec<ScaleProgram>,
}

/// One program of the tier.
#[derive(Debug, Deserialize)]
pub struct ScaleProgram {
    /// The workload name (`jax-gpt-12l-train`, `jax-gpt-12l-train-lowered`).
    pub name: String,
    /// The model, the same for both stages.
    pub model: String,
    /// The compressed HLO text's file name in `data/scale/` (or `data/generalist/`).
    pub file: String,
    /// `optimized` (XLA's scheduled module) or `lowered` (before optimization).
    pub stage: String,
    /// Entry parameters `0..weights` are weights and optimizer state; the rest inputs.
    pub weights: usize,
    /// What the program is, in words.
    pub description: String,
    /// XLA's figures of the compiled program (`cost_analysis()`, `memory_analysis()`).
    pub xla: XlaFigures,
}

/// XLA's own figures of a compiled program, as the exporter recorded them.
#[derive(Clone, Debug, Deserialize)]
pub struct XlaFigures {
    /// FLOPs, as XLA's cost analysis counts them.
    pub flops: f64,
    /// Transcendental operations (exp, log, ...).
    pub transcendentals: f64,
    /// Bytes read and written, as XLA counts them.
    pub bytes_accessed: f64,
    /// Bytes of the entry parameters.
    pub argument_bytes: u64,
    /// Bytes of the outputs.
    pub output_bytes: u64,
    /// Bytes of the outputs that alias a parameter (donated buffers).
    pub alias_bytes: u64,
    /// Bytes of XLA's temporary buffers: what its own buffer assignment holds besides
    /// arguments and outputs.
    pub temp_bytes: u64,
}

impl Set {
    /// The set's manifest. The file is checked in beside the programs; the tests read it,
    /// so a parse failure here is a broken checkout.
    fn manifest(&self) -> Manifest {
        serde_json::from_str(self.manifest).expect("a data manifest parses (checked by the tests)")
    }

    fn names(&self) -> Vec<&'static str> {
        self.files
            .iter()
            .map(|(f, _)| f.strip_suffix(".hlo.txt.gz").unwrap_or(f))
            .collect()
    }

    fn builtin(&self, name: &str) -> Option<Result<Program, WorkloadError>> {
        let (file, bytes) = self
            .files
            .iter()
            .find(|(f, _)| f.strip_suffix(".hlo.txt.gz") == Some(name))?;
        let manifest = self.manifest();
        let Some(entry) = manifest.programs.iter().find(|p| p.file == *file) else {
            return Some(Err(WorkloadError::Parse {
                origin: format!("data/{}/{}", self.dir, self.manifest_file),
                msg: format!("no entry for `{file}`"),
            }));
        };
        Some(gunzip(bytes, file).and_then(|text| {
            let options = hlo::Options {
                name: Some(name.to_string()),
                weight_parameters: (0..entry.weights).collect(),
                description: Some(format!(
                    "{} ({}, jax {} on CPU, f32; the {})",
                    entry.description,
                    self.script,
                    manifest.jax,
                    if entry.stage == "lowered" {
                        "module before XLA's optimizations"
                    } else {
                        "module XLA scheduled"
                    }
                )),
                ..hlo::Options::default()
            };
            hlo::parse_program_with(&text, name, &options)
        }))
    }
}

/// The tier's manifest.
pub fn manifest() -> Manifest {
    SCALE.manifest()
}

/// The tier's workload names, in the manifest's order (each model, then its `-lowered`).
pub fn names() -> Vec<&'static str> {
    SCALE.names()
}

/// The generalist's programs' manifest ([`generalist_names`]).
pub fn generalist_manifest() -> Manifest {
    GENERALIST.manifest()
}

/// The names of the programs of the tier's size kept for the bundled generalist's training
/// and validation, which are not the tier's: each model, then its `-lowered`.
pub fn generalist_names() -> Vec<&'static str> {
    GENERALIST.names()
}

/// A program of the tier, or of the generalist's programs of its size, by name.
pub fn builtin(name: &str) -> Option<Result<Program, WorkloadError>> {
    SCALE.builtin(name).or_else(|| GENERALIST.builtin(name))
}

/// gzip-compressed UTF-8 text, at most [`accel_sim::MAX_TEXT_BYTES`] once inflated (a
/// small file can inflate to gigabytes: it is cut off and refused); `origin` names it in
/// errors.
pub fn gunzip(bytes: &[u8], origin: &str) -> Result<String, WorkloadError> {
    gunzip_capped(bytes, origin, accel_sim::MAX_TEXT_BYTES)
}

fn gunzip_capped(bytes: &[u8], origin: &str, limit: u64) -> Result<String, WorkloadError> {
    let err = |msg: String| WorkloadError::Parse {
        origin: origin.to_string(),
        msg,
    };
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| err(format!("not gzip-compressed text: {e}")))?;
    if out.len() as u64 > limit {
        return Err(err(format!(
            "inflates past the {} limit on input files",
            accel_sim::format_size(limit)
        )));
    }
    String::from_utf8(out).map_err(|e| {
        err(format!(
            "inflated text is not UTF-8 (byte {} is invalid)",
            e.utf8_error().valid_up_to()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gunzip_refuses_what_is_not_gzip_text_or_inflates_too_far() {
        assert_eq!(gunzip(&gzip(b"HloModule m"), "f").unwrap(), "HloModule m");
        let e = gunzip(b"HloModule m", "f.hlo.txt.gz")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("f.hlo.txt.gz: not gzip-compressed text"),
            "{e}"
        );
        let e = gunzip(&gzip(b"ok \xff"), "f").unwrap_err().to_string();
        assert_eq!(e, "f: inflated text is not UTF-8 (byte 3 is invalid)");
        // A bomb: 1 MiB of zeros is a kilobyte compressed, cut off at the cap.
        let bomb = gzip(&vec![0u8; 1 << 20]);
        assert!(bomb.len() < 4096);
        let e = gunzip_capped(&bomb, "f", 1000).unwrap_err().to_string();
        assert_eq!(e, "f: inflates past the 1000 B limit on input files");
        let cut = &gzip(b"HloModule m")[..10];
        assert!(gunzip(cut, "f").is_err());
    }

    #[test]
    fn every_file_has_a_manifest_entry_and_every_entry_a_file() {
        for set in [&SCALE, &GENERALIST] {
            files_match_manifest(set);
        }
        assert!(builtin("jax-mlp-train").is_none());
        let scale = names();
        assert!(generalist_names().iter().all(|n| !scale.contains(n)));
    }

    fn files_match_manifest(set: &Set) {
        let m = set.manifest();
        assert_eq!(m.jax, "0.10.2");
        let files: Vec<&str> = set.files.iter().map(|(f, _)| *f).collect();
        let listed: Vec<&str> = m.programs.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(files, listed);
        for p in &m.programs {
            let suffix = if p.stage == "lowered" { "-lowered" } else { "" };
            assert!(p.stage == "lowered" || p.stage == "optimized", "{}", p.name);
            assert_eq!(p.name, format!("{}{suffix}", p.model));
            assert_eq!(p.file, format!("{}.hlo.txt.gz", p.name));
            assert!(p.weights > 0, "{}", p.name);
        }
        assert_eq!(set.names().len(), m.programs.len());
    }
}
