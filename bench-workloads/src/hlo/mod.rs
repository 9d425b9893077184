//! XLA programs: HLO text (from JAX or any XLA front end) as programs.
//!
//! `jax.jit(f).lower(*args).compile().as_text()` prints the module XLA optimized and
//! scheduled; `jax.jit(f).lower(*args).as_text(dialect="hlo")` the module before
//! optimization. Both load: the entry computation's instructions, in the order written,
//! become ops. docs/workloads.md says what each module gives, how HLO values map onto
//! buffers (aliases, in-place updates, loops), the FLOP rules, and how to bring a model.
//!
//! Errors name the file, the line and the instruction: `model.hlo.txt: line 12 (`%dot.3`):
//! operand `%x` is not an instruction of computation `main`.` Loading is bounded: an op
//! budget ([`DEFAULT_MAX_OPS`], [`MAX_OPS_VARIABLE`]) on what inlining and unrolling make,
//! no recursion on the file's depth, sizes checked (docs/workloads.md, "Bounds").

mod arity;
mod budget;
mod cost;
mod graph;
mod loops;
mod lower;
mod shape;
mod text;

pub use budget::{DEFAULT_MAX_OPS, MAX_OPS_VARIABLE};

use crate::WorkloadError;
use accel_sim::Program;
use std::path::Path;

/// How to read a module beyond its text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The program's name; the module's (`jit_step`) when `None`.
    pub name: Option<String>,
    /// Entry parameter numbers whose buffers are `weight`s; the rest are `input`s.
    pub weight_parameters: Vec<usize>,
    /// Opens the program's description (what the model is); the rest says how it was read.
    pub description: Option<String>,
    /// The op budget: the most instructions inlining calls and unrolling loops may make
    /// (docs/workloads.md, "Bounds"). `None`: [`MAX_OPS_VARIABLE`] where it is set, else
    /// [`DEFAULT_MAX_OPS`].
    pub max_ops: Option<u64>,
}

/// A JAX program bundled as a built-in workload.
pub struct Bundled {
    /// The workload's name (`jax-mlp-train`, ...).
    pub name: &'static str,
    /// The module's text (scheduled; before optimization for a `-lowered` name), written
    /// by `scripts/export_jax_hlo.py --bundle`.
    pub text: &'static str,
    /// Entry parameters `0..weights` are the model's weights (and optimizer state).
    pub weights: usize,
    /// What the program is, in words, for `mallocmuzero workloads`.
    pub description: &'static str,
}

/// The JAX programs bundled as workloads (the JAX code is this project's own,
/// `scripts/jax_programs.py`; no data or code from elsewhere).
pub const EMBEDDED: &[Bundled] = &[
    Bundled {
        name: "jax-transformer-4l-train",
        text: include_str!("../../data/jax/jax-transformer-4l-train.hlo.txt"),
        weights: 79,
        description: "a training step of a 4-layer pre-LN transformer (d 128, 4 heads, FFN 512, GELU, causal) with a 512-token tied embedding, batch 8 x 64 tokens, next-token cross-entropy: jax.value_and_grad and Adam written by hand (scripts/jax_programs.py), jax 0.10.2 on CPU, f32",
    },
    Bundled {
        name: "jax-transformer-4l-train-lowered",
        text: include_str!("../../data/jax/jax-transformer-4l-train-lowered.hlo.txt"),
        weights: 79,
        description: "the training step of jax-transformer-4l-train as the module before XLA's optimizations (every JAX op in program order, no fusion): a 4-layer pre-LN transformer (d 128, 4 heads, FFN 512, GELU, causal) with a 512-token tied embedding, batch 8 x 64 tokens, next-token cross-entropy, jax.value_and_grad and Adam written by hand (scripts/jax_programs.py), jax 0.10.2, f32",
    },
    Bundled {
        name: "jax-convnet-train",
        text: include_str!("../../data/jax/jax-convnet-train.hlo.txt"),
        weights: 8,
        description: "a training step of a 3-convolution network (3x3 convolutions to 32, 64, 64 channels, strides 1, 2, 2, ReLU, average pool, dense to 10, MSE loss), batch 8 of 32x32x3: jax.value_and_grad and SGD with momentum written by hand (scripts/jax_programs.py), jax 0.10.2 on CPU, f32",
    },
    Bundled {
        name: "jax-mlp-train",
        text: include_str!("../../data/jax/jax-mlp-train.hlo.txt"),
        weights: 12,
        description: "a training step of a 3-layer MLP (256-512-512-10, ReLU, MSE loss), batch 32: jax.value_and_grad and SGD with momentum written by hand (scripts/jax_programs.py), jax 0.10.2 on CPU, f32",
    },
    Bundled {
        name: "jax-rnn-scan",
        text: include_str!("../../data/jax/jax-rnn-scan.hlo.txt"),
        weights: 3,
        description: "an Elman RNN (64 in, 128 hidden, tanh, 16 out) over 12 steps of a batch of 16 with jax.lax.scan (a while loop XLA knows the trip count of, unrolled here), inference (scripts/jax_programs.py), jax 0.10.2 on CPU, f32",
    },
];

/// Names of the bundled JAX programs.
pub fn names() -> impl Iterator<Item = &'static str> {
    EMBEDDED.iter().map(|b| b.name)
}

/// A bundled JAX program by name.
pub fn builtin(name: &str) -> Option<Result<Program, WorkloadError>> {
    let b = EMBEDDED.iter().find(|b| b.name == name)?;
    let options = Options {
        name: Some(b.name.to_string()),
        weight_parameters: (0..b.weights).collect(),
        description: Some(b.description.to_string()),
        max_ops: None,
    };
    Some(parse_program_with(b.text, b.name, &options))
}

/// Parses HLO text into a program, every entry parameter an input; `origin` names the
/// file in errors.
pub fn parse_program(text: &str, origin: &str) -> Result<Program, WorkloadError> {
    parse_program_with(text, origin, &Options::default())
}

/// Parses HLO text into a program with the given options.
pub fn parse_program_with(
    text: &str,
    origin: &str,
    options: &Options,
) -> Result<Program, WorkloadError> {
    let parse_err = |e: text::TextError| WorkloadError::Parse {
        origin: origin.into(),
        msg: e.to_string(),
    };
    let max_ops = match options.max_ops {
        Some(n) => n,
        None => max_ops_from_environment().map_err(|msg| WorkloadError::Parse {
            origin: origin.into(),
            msg,
        })?,
    };
    let module = text::parse_module(text).map_err(parse_err)?;
    let lowered = lower::lower(&module, &options.weight_parameters, max_ops).map_err(parse_err)?;
    let stage = if module.scheduled {
        "the scheduled module (after XLA's optimizations)"
    } else {
        "the module before optimization (program order as the schedule)"
    };
    let mut description = match &options.description {
        Some(d) => format!("{d}; "),
        None => String::new(),
    };
    description.push_str(&format!(
        "HLO module `{}`, {stage}, read by bench-workloads' HLO loader: {} call(s) inlined, {} while loop(s) unrolled, {} in-place update(s) sharing their buffer; tuples, get-tuple-element and bitcasts aliased (no op, no buffer); FLOPs as XLA's cost analysis counts them, transcendentals included",
        module.name, lowered.calls, lowered.whiles, lowered.in_place
    ));
    let name = options.name.clone().unwrap_or_else(|| module.name.clone());
    Program::new(name, description, lowered.buffers, lowered.ops).map_err(|source| {
        WorkloadError::Program {
            origin: origin.into(),
            source,
        }
    })
}

/// The op budget [`MAX_OPS_VARIABLE`] sets, or [`DEFAULT_MAX_OPS`] where it is unset.
fn max_ops_from_environment() -> Result<u64, String> {
    match std::env::var(MAX_OPS_VARIABLE) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_MAX_OPS),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "{MAX_OPS_VARIABLE}={}: the op budget is a whole number of instructions above 0",
                shape::snippet(&v)
            )),
        },
        Err(std::env::VarError::NotUnicode(_)) => Err(format!(
            "{MAX_OPS_VARIABLE}: not text; the op budget is a whole number of instructions above 0"
        )),
    }
}

/// Reads and parses an HLO text file (every entry parameter an input), named by the file
/// (`model.hlo.txt`: `model`) rather than the module (`jit_step` for most of JAX's).
pub fn load_file(path: &Path) -> Result<Program, WorkloadError> {
    let text = accel_sim::read_text(path)?;
    let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
    let name = file.map(|f| {
        let stem = f.strip_suffix(".txt").unwrap_or(&f);
        stem.strip_suffix(".hlo").unwrap_or(stem).to_string()
    });
    let options = Options {
        name: name.filter(|n| !n.is_empty()),
        ..Options::default()
    };
    parse_program_with(&text, &path.display().to_string(), &options)
}

/// Whether a path names an HLO text file: `.hlo` or `.hlo.txt`.
pub fn is_hlo_path(path: &str) -> bool {
    path.ends_with(".hlo") || path.ends_with(".hlo.txt")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_programs_load_with_their_weights() {
        for b in EMBEDDED {
            let t = std::time::Instant::now();
            let p = builtin(b.name).unwrap().unwrap();
            let kinds = |k| p.buffers().iter().filter(|x| x.kind == k).count();
            println!(
                "{}: {} ops, {} buffers, {:.3e} FLOPs, peak {} B, weights {} ({} B), {:?}",
                b.name,
                p.len(),
                p.buffers().len(),
                p.total_flops(),
                p.peak_live_bytes(),
                kinds(accel_sim::BufferKind::Weight),
                p.buffers()
                    .iter()
                    .filter(|x| x.kind == accel_sim::BufferKind::Weight)
                    .map(|x| x.size)
                    .sum::<u64>(),
                t.elapsed()
            );
            assert_eq!(p.name(), b.name);
            assert!(p.description().starts_with(b.description));
            assert!(kinds(accel_sim::BufferKind::Output) > 0);
            assert!(kinds(accel_sim::BufferKind::Weight) >= b.weights);
        }
    }
}
