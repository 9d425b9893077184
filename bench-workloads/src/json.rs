//! The program JSON format: traced models (embedded in the binary) and user files.
//!
//! ```json
//! {
//!   "format": "mallocmuzero-program", "version": 1,
//!   "name": "resnet50", "description": "...",
//!   "source": {"generator": "scripts/export_workloads.py", "torch": "2.15.0", "dtype_bytes": 2},
//!   "stats": {"ops": 174, "buffers": 442, "total_flops": 6.6e10,
//!             "peak_live_bytes": 89591808, "weight_bytes": 51221504},
//!   "buffers": [{"name": "conv1.weight", "kind": "weight", "bytes": 18816,
//!                "shape": [64,3,7,7], "dtype": "bf16"}, ...],
//!   "ops": [{"name": "convolution", "kind": "convolution", "flops": 1.9e9,
//!            "reads": [0, 1], "writes": [2]}, ...]
//! }
//! ```
//!
//! `description`, `source`, `stats`, `shape` and `dtype` are optional. Buffer kinds are
//! `weight`, `input`, `activation`, `output`; ops refer to buffers by index. `stats` is
//! what the generator computed on its side; the loader does not use it (the
//! `workload_stats` test checks it against the Rust IR for every embedded file).
//!
//! The loader walks a [`serde_json::Value`] rather than deserializing [`ProgramFile`]
//! directly so that every error names the JSON path and the offending value
//! (`buffers[3].bytes: must be > 0, got 0`), which serde's derive cannot do.
//!
//! This file holds the format (its types, the writer, the checks that build the
//! [`Program`]); `json/walk.rs` reads the JSON value into it.

use crate::WorkloadError;
use accel_sim::{Buffer, BufferKind, Op, Program};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

mod walk;

use walk::from_value;

/// Traced models embedded in the binary: (name, JSON text), written by
/// `scripts/export_workloads.py`.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("resnet50", include_str!("../data/resnet50.json")),
    ("resnet101", include_str!("../data/resnet101.json")),
    ("alexnet", include_str!("../data/alexnet.json")),
    ("mobilenet-v2", include_str!("../data/mobilenet-v2.json")),
    ("vgg16", include_str!("../data/vgg16.json")),
    ("vit-b16", include_str!("../data/vit-b16.json")),
    (
        "bert-base-s128",
        include_str!("../data/bert-base-s128.json"),
    ),
    (
        "bert-base-s384",
        include_str!("../data/bert-base-s384.json"),
    ),
    (
        "gpt2-small-s128",
        include_str!("../data/gpt2-small-s128.json"),
    ),
    ("unet", include_str!("../data/unet.json")),
    // Families for the bundled generalist's training (issue 14).
    ("googlenet", include_str!("../data/googlenet.json")),
    ("squeezenet1-1", include_str!("../data/squeezenet1-1.json")),
    ("shufflenet-v2", include_str!("../data/shufflenet-v2.json")),
    (
        "regnet-y-400mf",
        include_str!("../data/regnet-y-400mf.json"),
    ),
    (
        "llama-small-s128",
        include_str!("../data/llama-small-s128.json"),
    ),
];

/// The value of the `format` field.
pub const FORMAT: &str = "mallocmuzero-program";
/// The only format version this build reads and writes.
pub const VERSION: u64 = 1;

/// A program file as written on disk (see the module docs for the schema).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramFile {
    /// Always `mallocmuzero-program` ([`FORMAT`]): a file of another kind is refused.
    pub format: String,
    /// The format version ([`VERSION`]).
    pub version: u64,
    /// The program's name: saved games and mappings name it.
    pub name: String,
    /// What the program is, in words.
    #[serde(default)]
    pub description: String,
    /// Where it came from (the exporter and the library versions), for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The exporter's summary figures, for the record: the loader does not use them (a
    /// test checks those of every embedded file against the program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
    /// The buffers; ops name them by their index here.
    pub buffers: Vec<BufferEntry>,
    /// The ops, in schedule order.
    pub ops: Vec<OpEntry>,
}

/// Where a program came from. Free-form beyond the named fields, which the exporter fills.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The script that wrote the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// The torch version that traced the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<String>,
    /// The torchvision version, for its models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torchvision: Option<String>,
    /// The transformers version, for its models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transformers: Option<String>,
    /// Bytes per floating-point element the sizes were computed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype_bytes: Option<u64>,
    /// Any other keys, kept as they are.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Summary figures, with the same definitions as [`Program`]'s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stats {
    /// The number of ops.
    pub ops: usize,
    /// The number of buffers.
    pub buffers: usize,
    /// The FLOPs of every op together.
    pub total_flops: f64,
    /// The most bytes live at one time.
    pub peak_live_bytes: u64,
    /// The bytes of every weight buffer together.
    pub weight_bytes: u64,
}

impl Stats {
    /// The figures of a program, as the exporter computes them.
    pub fn of(program: &Program) -> Stats {
        Stats {
            ops: program.len(),
            buffers: program.buffers().len(),
            total_flops: program.total_flops(),
            peak_live_bytes: program.peak_live_bytes(),
            weight_bytes: program
                .buffers()
                .iter()
                .filter(|b| b.kind == BufferKind::Weight)
                .map(|b| b.size)
                .sum(),
        }
    }
}

/// One entry of `buffers`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferEntry {
    /// The buffer's name, unique in the program.
    pub name: String,
    /// What it holds: `weight`, `input`, `activation` or `output`.
    pub kind: BufferKind,
    /// Its size in bytes.
    pub bytes: u64,
    /// The tensor's shape, for the record (the size is `bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// The element type, for the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
}

/// One entry of `ops`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpEntry {
    /// The op's name.
    pub name: String,
    /// Its kind (`conv2d`, `matmul`, ...), for reports.
    pub kind: String,
    /// Its floating-point operations.
    pub flops: f64,
    /// The buffers it reads, by index into `buffers`.
    pub reads: Vec<usize>,
    /// The buffers it writes (defines), by index.
    pub writes: Vec<usize>,
}

/// Parses a program JSON text; `origin` names the file in errors.
pub fn parse_program(text: &str, origin: &str) -> Result<Program, WorkloadError> {
    parse_file(text, origin)?.to_program(origin)
}

/// Reads and parses a program JSON file.
pub fn load_file(path: &Path) -> Result<Program, WorkloadError> {
    let text = accel_sim::read_text(path)?;
    parse_program(&text, &path.display().to_string())
}

/// Parses a program JSON text into its file form, checking types and field names but not
/// indices or sizes (see [`ProgramFile::to_program`]).
pub fn parse_file(text: &str, origin: &str) -> Result<ProgramFile, WorkloadError> {
    let parse_err = |msg: String| WorkloadError::Parse {
        origin: origin.into(),
        msg,
    };
    let root: Value =
        serde_json::from_str(text).map_err(|e| parse_err(format!("malformed JSON: {e}")))?;
    from_value(&root).map_err(parse_err)
}

/// A program written back in the file format, with freshly computed `stats`: a readable
/// header, then one line per buffer and per op.
pub fn to_json(program: &Program, source: Option<Source>) -> String {
    ProgramFile::from_program(program, source).to_json()
}

impl ProgramFile {
    /// The file form of a program (no shapes or dtypes: the IR does not keep them).
    pub fn from_program(program: &Program, source: Option<Source>) -> ProgramFile {
        ProgramFile {
            format: FORMAT.into(),
            version: VERSION,
            name: program.name().into(),
            description: program.description().into(),
            source,
            stats: Some(Stats::of(program)),
            buffers: program
                .buffers()
                .iter()
                .map(|b| BufferEntry {
                    name: b.name.clone(),
                    kind: b.kind,
                    bytes: b.size,
                    shape: None,
                    dtype: None,
                })
                .collect(),
            ops: program
                .ops()
                .iter()
                .map(|o| OpEntry {
                    name: o.name.clone(),
                    kind: o.kind.clone(),
                    flops: o.flops,
                    reads: o.reads.clone(),
                    writes: o.writes.clone(),
                })
                .collect(),
        }
    }

    /// Serializes in the layout the exporter uses; parses back to an equal file.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\n");
        out += &format!("  \"format\": {},\n", line(&self.format));
        out += &format!("  \"version\": {},\n", line(&self.version));
        out += &format!("  \"name\": {},\n", line(&self.name));
        out += &format!("  \"description\": {},\n", line(&self.description));
        if let Some(s) = &self.source {
            out += &format!("  \"source\": {},\n", line(s));
        }
        if let Some(s) = &self.stats {
            out += &format!("  \"stats\": {},\n", line(s));
        }
        let list = |items: Vec<String>| {
            if items.is_empty() {
                "[]".to_string()
            } else {
                format!("[\n    {}\n  ]", items.join(",\n    "))
            }
        };
        let buffers = self.buffers.iter().map(line).collect();
        let ops = self.ops.iter().map(line).collect();
        out += &format!("  \"buffers\": {},\n", list(buffers));
        out += &format!("  \"ops\": {}\n}}\n", list(ops));
        out
    }

    /// Checks sizes, FLOPs and buffer indices (errors name the JSON path), then builds the
    /// program; the IR's own checks (read before write, ...) come back as
    /// [`WorkloadError::Program`].
    pub fn to_program(&self, origin: &str) -> Result<Program, WorkloadError> {
        let fail = |msg: String| WorkloadError::Parse {
            origin: origin.into(),
            msg,
        };
        let n = self.buffers.len();
        for (i, b) in self.buffers.iter().enumerate() {
            if b.bytes == 0 {
                return Err(fail(format!("buffers[{i}].bytes: must be > 0, got 0")));
            }
        }
        for (i, op) in self.ops.iter().enumerate() {
            if !(op.flops.is_finite() && op.flops >= 0.0) {
                return Err(fail(format!(
                    "ops[{i}].flops: must be finite and >= 0, got {}",
                    op.flops
                )));
            }
            for (field, list) in [("reads", &op.reads), ("writes", &op.writes)] {
                for (k, &b) in list.iter().enumerate() {
                    if b >= n {
                        return Err(fail(format!(
                            "ops[{i}].{field}[{k}]: buffer {b} does not exist (there are {n} buffers)"
                        )));
                    }
                    if let Some(first) = list[..k].iter().position(|&x| x == b) {
                        return Err(fail(format!(
                            "ops[{i}].{field}[{k}]: buffer {b} (`{}`) is already listed at {field}[{first}]",
                            self.buffers[b].name
                        )));
                    }
                }
            }
        }
        let buffers = self
            .buffers
            .iter()
            .map(|b| Buffer {
                name: b.name.clone(),
                size: b.bytes,
                kind: b.kind,
            })
            .collect();
        let ops = self
            .ops
            .iter()
            .map(|o| Op {
                name: o.name.clone(),
                kind: o.kind.clone(),
                flops: o.flops,
                reads: o.reads.clone(),
                writes: o.writes.clone(),
            })
            .collect();
        Program::new(&self.name, &self.description, buffers, ops).map_err(|source| {
            WorkloadError::Program {
                origin: origin.into(),
                source,
            }
        })
    }
}

/// One-line JSON for a part of the file.
fn line<T: Serialize>(v: &T) -> String {
    // Cannot fail: every map has string keys, and serde_json writes non-finite floats as
    // null (which the loader then rejects with a path).
    serde_json::to_string(v).expect("plain data always serializes")
}

#[cfg(test)]
mod fixtures {
    //! What the format's tests share.
    use super::*;

    /// x (input) -> op0 -> a -> op1 -> y (output); op0 also reads w.
    pub(super) const SMALL: &str = r#"{
      "format": "mallocmuzero-program", "version": 1, "name": "small",
      "buffers": [
        {"name": "x", "kind": "input", "bytes": 10},
        {"name": "w", "kind": "weight", "bytes": 4, "shape": [2], "dtype": "bf16"},
        {"name": "a", "kind": "activation", "bytes": 10},
        {"name": "y", "kind": "output", "bytes": 10}
      ],
      "ops": [
        {"name": "op0", "kind": "mm", "flops": 80, "reads": [0, 1], "writes": [2]},
        {"name": "op1", "kind": "relu", "flops": 5.5, "reads": [2], "writes": [3]}
      ]
    }"#;

    /// SMALL with one substring replaced; panics if the substring is absent, so a test
    /// cannot pass by editing nothing.
    pub(super) fn small_with(from: &str, to: &str) -> String {
        assert!(SMALL.contains(from), "test bug: `{from}` not in SMALL");
        SMALL.replacen(from, to, 1)
    }

    pub(super) fn parse_err(text: &str) -> String {
        match parse_program(text, "my.json") {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(e) => e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{parse_err, small_with, SMALL};
    use super::*;

    #[test]
    fn parses_a_user_file_without_stats_or_source() {
        let p = parse_program(SMALL, "my.json").unwrap();
        assert_eq!(p.name(), "small");
        assert_eq!(p.description(), "");
        assert_eq!(p.len(), 2);
        assert_eq!(p.buffer(1).kind, BufferKind::Weight);
        assert_eq!(p.buffer(3).size, 10);
        assert_eq!(p.op(1).flops, 5.5);
        assert_eq!(p.live_range(1), (0, 0));
        assert_eq!(p.live_range(3), (1, 1));
        let f = parse_file(SMALL, "my.json").unwrap();
        assert_eq!(f.buffers[1].shape, Some(vec![2]));
        assert_eq!(f.buffers[1].dtype.as_deref(), Some("bf16"));
        assert!(f.stats.is_none() && f.source.is_none());
    }

    #[test]
    fn malformed_json_reports_line_and_column() {
        let e = parse_err(&small_with("\"version\": 1,", "\"version\": 1"));
        assert!(e.starts_with("my.json: malformed JSON:"), "{e}");
        assert!(e.contains("line 2 column"), "{e}");
    }

    #[test]
    fn program_errors_are_wrapped_with_the_origin() {
        // op1 reads `a` before anything writes it once op0 no longer does.
        let text = small_with("\"writes\": [2]", "\"writes\": []");
        match parse_program(&text, "my.json") {
            Err(WorkloadError::Program { origin, source }) => {
                assert_eq!(origin, "my.json");
                assert!(matches!(
                    source,
                    accel_sim::ProgramError::ReadBeforeWrite { .. }
                ));
            }
            other => panic!("expected a Program error, got {other:?}"),
        }
        let e = parse_err(&small_with(
            "\"ops\": [\n        {\"name\": \"op0\", \"kind\": \"mm\", \"flops\": 80, \"reads\": [0, 1], \"writes\": [2]},\n        {\"name\": \"op1\", \"kind\": \"relu\", \"flops\": 5.5, \"reads\": [2], \"writes\": [3]}\n      ]",
            "\"ops\": []",
        ));
        assert_eq!(e, "my.json: program has no ops");
    }

    #[test]
    fn to_json_round_trips() {
        let p = parse_program(SMALL, "my.json").unwrap();
        let source = Source {
            generator: Some("test".into()),
            ..Source::default()
        };
        let text = to_json(&p, Some(source.clone()));
        let f = parse_file(&text, "back.json").unwrap();
        assert_eq!(f.source, Some(source));
        assert_eq!(f.stats, Some(Stats::of(&p)));
        let back = f.to_program("back.json").unwrap();
        assert_eq!(back, p);
        assert_eq!(back.content_hash(), p.content_hash());
        // The layout is one line per buffer and op, like the exporter's.
        assert_eq!(text.lines().count(), 12 + p.buffers().len() + p.len());
    }

    #[test]
    fn serde_derive_reads_what_the_walker_reads() {
        let (name, text) = EMBEDDED[2];
        let walked = parse_file(text, name).unwrap();
        let derived: ProgramFile = serde_json::from_str(text).unwrap();
        assert_eq!(walked, derived);
    }

    #[test]
    fn embedded_names_match_their_files() {
        let expected = [
            "resnet50",
            "resnet101",
            "alexnet",
            "mobilenet-v2",
            "vgg16",
            "vit-b16",
            "bert-base-s128",
            "bert-base-s384",
            "gpt2-small-s128",
            "unet",
            "googlenet",
            "squeezenet1-1",
            "shufflenet-v2",
            "regnet-y-400mf",
            "llama-small-s128",
        ];
        let names: Vec<&str> = EMBEDDED.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, expected);
        for (name, text) in EMBEDDED {
            assert_eq!(parse_file(text, name).unwrap().name, *name);
        }
    }
}
