//! Hardware configs: memory levels (level 0 = slowest, unbounded), compute peak, DMA.
//!
//! Configs come from the presets here or from a JSON/TOML file in the format of
//! [`HardwareFile`] (bandwidths in GB/s = 1e9 bytes/s, capacities as bytes or strings such
//! as `"128MiB"`).

use serde::{Deserialize, Serialize};
use std::path::Path;

/// One memory level.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryLevel {
    /// The level's name in reports and files (`HBM`, `CMEM`, ...).
    pub name: String,
    /// Bytes; `u64::MAX` for level 0, which is unbounded.
    pub capacity: u64,
    /// Bytes per second.
    pub read_bw: f64,
    /// Bytes per second.
    pub write_bw: f64,
    /// Offsets in this level must be multiples of this (a power of two).
    pub alignment: u64,
}

/// The DMA copy model: copies between level 0 and a faster level.
#[derive(Clone, Debug, PartialEq)]
pub struct Dma {
    /// Copies in flight at once. They share level 0's bandwidth, so more engines mean
    /// overlap of their fixed setup latency, not more bytes per second.
    pub engines: u32,
    /// Fixed latency of one copy, seconds (simulator only; the cost model ignores it).
    pub setup_s: f64,
}

/// A validated hardware config.
#[derive(Clone, Debug, PartialEq)]
pub struct Hardware {
    /// The config's name (a preset's, or the file's `name`).
    pub name: String,
    /// `levels[0]` is the slow unbounded memory; the others are faster and bounded.
    pub levels: Vec<MemoryLevel>,
    /// FLOP/s.
    pub peak_flops: f64,
    /// A fixed cost of every op, seconds (simulator only, like XLA's runtime overheads).
    pub op_overhead_s: f64,
    /// How copies between level 0 and the fast levels are made.
    pub dma: Dma,
}

/// A problem with a hardware config; names the field.
#[derive(Debug, thiserror::Error)]
pub enum HardwareError {
    /// No built-in config has this name.
    #[error("unknown hardware `{0}` (built in: {list})", list = PRESETS.join(", "))]
    UnknownPreset(String),
    /// The config file could not be read.
    #[error(transparent)]
    File(#[from] crate::TextFileError),
    /// The config file is not valid TOML or JSON of a hardware config.
    #[error("{path}: {msg}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message.
        msg: String,
    },
    /// A field's value is out of range or inconsistent with the others.
    #[error("{context}field `{field}`: {msg}")]
    Field {
        /// Where the field is (`levels[1].`, or nothing at the top level).
        context: String,
        /// The field.
        field: String,
        /// What is wrong with it.
        msg: String,
    },
}

/// Names of the built-in configs.
pub const PRESETS: [&str; 2] = ["tpu-v4i-like", "nnp-i-like"];

const GB: f64 = 1e9;
const MIB: u64 = 1 << 20;

impl Hardware {
    /// A built-in config by name (see [`PRESETS`]).
    pub fn preset(name: &str) -> Result<Hardware, HardwareError> {
        match name {
            "tpu-v4i-like" => Ok(Self::tpu_v4i_like()),
            "nnp-i-like" => Ok(Self::nnp_i_like()),
            other => Err(HardwareError::UnknownPreset(other.to_string())),
        }
    }

    /// After Google's TPUv4i (Jouppi et al., "Ten Lessons From Three Generations Shaped
    /// Google's TPUv4i", ISCA 2021): 8 GiB HBM2 at 614 GB/s, a 128 MiB common memory
    /// (CMEM), 138 TFLOP/s bf16 peak. The paper gives CMEM's capacity, not its bandwidth;
    /// we assume 2,000 GB/s (about 3x HBM), which keeps HBM the bottleneck the paper
    /// describes. Alignment 512 B and 0.5 us per op are our assumptions.
    pub fn tpu_v4i_like() -> Hardware {
        Hardware {
            name: "tpu-v4i-like".into(),
            levels: vec![
                MemoryLevel {
                    name: "HBM".into(),
                    capacity: u64::MAX,
                    read_bw: 614.0 * GB,
                    write_bw: 614.0 * GB,
                    alignment: 1,
                },
                MemoryLevel {
                    name: "CMEM".into(),
                    capacity: 128 * MIB,
                    read_bw: 2000.0 * GB,
                    write_bw: 2000.0 * GB,
                    alignment: 512,
                },
            ],
            peak_flops: 138e12,
            op_overhead_s: 0.5e-6,
            dma: Dma {
                engines: 2,
                setup_s: 0.5e-6,
            },
        }
    }

    /// After Intel's NNP-I 1000 ("Spring Hill", Hot Chips 2019), the chip of the EGRL paper
    /// (Khadka et al., ICLR 2021): LPDDR4x DRAM at ~68 GB/s, a 24 MiB LLC at ~680 GB/s and
    /// 4 MiB of deep SRAM at ~6.8 TB/s (the 1:10:100 ratio EGRL reports). Compute: the chip
    /// reaches 92 TOPS int8; we take 48 TFLOP/s for 16-bit data, our assumption.
    /// Alignment 64 B and 1 us per op are our assumptions.
    pub fn nnp_i_like() -> Hardware {
        Hardware {
            name: "nnp-i-like".into(),
            levels: vec![
                MemoryLevel {
                    name: "DRAM".into(),
                    capacity: u64::MAX,
                    read_bw: 68.0 * GB,
                    write_bw: 68.0 * GB,
                    alignment: 1,
                },
                MemoryLevel {
                    name: "LLC".into(),
                    capacity: 24 * MIB,
                    read_bw: 680.0 * GB,
                    write_bw: 680.0 * GB,
                    alignment: 64,
                },
                MemoryLevel {
                    name: "SRAM".into(),
                    capacity: 4 * MIB,
                    read_bw: 6800.0 * GB,
                    write_bw: 6800.0 * GB,
                    alignment: 64,
                },
            ],
            peak_flops: 48e12,
            op_overhead_s: 1.0e-6,
            dma: Dma {
                engines: 2,
                setup_s: 1.0e-6,
            },
        }
    }

    /// Loads a config from a `.json` or `.toml` file.
    pub fn from_file(path: &Path) -> Result<Hardware, HardwareError> {
        let shown = path.display().to_string();
        let text = crate::read_text(path)?;
        let file: HardwareFile = if path.extension().is_some_and(|e| e == "toml") {
            toml::from_str(&text).map_err(|e| HardwareError::Parse {
                path: shown.clone(),
                msg: e.to_string(),
            })?
        } else {
            crate::parse_json(&text).map_err(|msg| HardwareError::Parse {
                path: shown.clone(),
                msg,
            })?
        };
        file.into_hardware(&format!("{shown}: "))
    }

    /// A preset name or a path to a JSON/TOML file.
    pub fn by_name_or_file(spec: &str) -> Result<Hardware, HardwareError> {
        if PRESETS.contains(&spec) {
            return Self::preset(spec);
        }
        let p = Path::new(spec);
        if p.extension().is_some_and(|e| e == "json" || e == "toml") {
            return Self::from_file(p);
        }
        Err(HardwareError::UnknownPreset(spec.to_string()))
    }

    /// The same config with the capacity of one fast level replaced.
    pub fn with_capacity(mut self, level: usize, capacity: u64) -> Result<Hardware, HardwareError> {
        if level == 0 || level >= self.levels.len() {
            return Err(HardwareError::Field {
                context: format!("{}: ", self.name),
                field: "fast-capacity".into(),
                msg: format!(
                    "level {level} is not a fast level (this hardware has levels 1..{})",
                    self.levels.len() - 1
                ),
            });
        }
        check_capacity(capacity, self.levels[level].alignment).map_err(|msg| {
            HardwareError::Field {
                context: format!("{}: ", self.name),
                field: format!("fast-capacity (level {level})"),
                msg,
            }
        })?;
        self.levels[level].capacity = capacity;
        Ok(self)
    }

    /// The same config with a capacity given as text: `16MiB` for the fastest level, or
    /// `1:16MiB` for level 1 (the `--fast-capacity` flag's syntax).
    pub fn with_capacity_spec(self, spec: &str) -> Result<Hardware, HardwareError> {
        let field = |msg: String| HardwareError::Field {
            context: format!("{}: ", self.name),
            field: "fast-capacity".into(),
            msg,
        };
        let (level, size) = match spec.split_once(':') {
            Some((l, s)) => {
                let level = l
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| field(format!("`{spec}`: `{l}` is not a level number")))?;
                (level, s)
            }
            None => (self.fastest(), spec),
        };
        let bytes = parse_size(size).map_err(field)?;
        self.with_capacity(level, bytes)
    }

    /// Index of the fastest level (the last one).
    pub fn fastest(&self) -> usize {
        self.levels.len() - 1
    }

    /// Seconds to copy `bytes` between level 0 and `level`: limited by the slower side
    /// (level 0's read and the level's write bandwidth). XLA's `async_copy_elapsed` uses
    /// level 0's bandwidth alone; with the presets here the fast side is never slower.
    pub fn copy_seconds(&self, level: usize, bytes: u64) -> f64 {
        bytes as f64 / self.copy_bw(level)
    }

    /// Bytes per second of a copy between level 0 and `level`.
    pub fn copy_bw(&self, level: usize) -> f64 {
        let l0 = &self.levels[0];
        let l = &self.levels[level];
        l0.read_bw.min(l.write_bw).min(l0.write_bw.min(l.read_bw))
    }

    /// The file form of this config (for saving beside results).
    pub fn to_file(&self) -> HardwareFile {
        HardwareFile {
            name: self.name.clone(),
            peak_tflops: self.peak_flops / 1e12,
            op_overhead_us: self.op_overhead_s * 1e6,
            dma: DmaFile {
                engines: self.dma.engines,
                setup_us: self.dma.setup_s * 1e6,
            },
            levels: self
                .levels
                .iter()
                .enumerate()
                .map(|(i, l)| LevelFile {
                    name: l.name.clone(),
                    capacity: (i > 0).then_some(ByteSize::Bytes(l.capacity)),
                    read_gb_per_s: l.read_bw / GB,
                    write_gb_per_s: l.write_bw / GB,
                    alignment: l.alignment,
                })
                .collect(),
        }
    }
}

/// The user-facing file format of a hardware config.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareFile {
    /// The config's name.
    pub name: String,
    /// Peak compute, in TFLOP/s.
    pub peak_tflops: f64,
    /// A fixed cost of every op, in microseconds (the simulator's; the cost model ignores
    /// it).
    #[serde(default)]
    pub op_overhead_us: f64,
    /// The copy engines.
    #[serde(default)]
    pub dma: DmaFile,
    /// Slowest first. The first level's capacity is ignored (unbounded).
    pub levels: Vec<LevelFile>,
}

/// The DMA copy model as a file writes it (see [`Dma`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaFile {
    /// Copies in flight at once.
    #[serde(default = "one")]
    pub engines: u32,
    /// Fixed latency of one copy, in microseconds.
    #[serde(default)]
    pub setup_us: f64,
}
fn one() -> u32 {
    1
}
fn one_u64() -> u64 {
    1
}
impl Default for DmaFile {
    fn default() -> Self {
        DmaFile {
            engines: 1,
            setup_us: 0.0,
        }
    }
}

/// One memory level as a file writes it (see [`MemoryLevel`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelFile {
    /// The level's name.
    pub name: String,
    /// Its size: bytes or a string such as `"16MiB"`. Absent for level 0, which is
    /// unbounded; required for every other level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<ByteSize>,
    /// Read bandwidth, in GB/s (10^9 bytes per second).
    pub read_gb_per_s: f64,
    /// Write bandwidth, in GB/s.
    pub write_gb_per_s: f64,
    /// Offsets must be multiples of it (a power of two; 1 when absent).
    #[serde(default = "one_u64")]
    pub alignment: u64,
}

/// A size in a file: a number of bytes or a string such as `"16MiB"`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ByteSize {
    /// A plain number of bytes.
    Bytes(u64),
    /// A number with a unit (`"16MiB"`, `"1.5 GiB"`).
    Text(String),
}

impl HardwareFile {
    /// Validates the file's values; `context` prefixes every error (the file name).
    pub fn into_hardware(self, context: &str) -> Result<Hardware, HardwareError> {
        let err = |field: String, msg: String| HardwareError::Field {
            context: context.to_string(),
            field,
            msg,
        };
        if self.levels.len() < 2 {
            return Err(err(
                "levels".into(),
                format!(
                    "need at least 2 memory levels (slow and fast), got {}",
                    self.levels.len()
                ),
            ));
        }
        // Physical ranges, wide enough for any real chip: past them every latency would be
        // astronomically large or small, and sums of them could overflow to infinity.
        in_range("peak_tflops", self.peak_tflops, 1e-6, 1e9).map_err(|m| err(m.0, m.1))?;
        in_range("op_overhead_us", self.op_overhead_us, 0.0, 1e9).map_err(|m| err(m.0, m.1))?;
        if self.dma.engines == 0 {
            return Err(err("dma.engines".into(), "must be >= 1".into()));
        }
        in_range("dma.setup_us", self.dma.setup_us, 0.0, 1e9).map_err(|m| err(m.0, m.1))?;
        let mut levels = Vec::new();
        for (i, l) in self.levels.into_iter().enumerate() {
            let f = |name: &str| format!("levels[{i}].{name}");
            for (name, v) in [
                ("read_gb_per_s", l.read_gb_per_s),
                ("write_gb_per_s", l.write_gb_per_s),
            ] {
                in_range(&f(name), v, 1e-6, 1e9).map_err(|m| err(m.0, m.1))?;
            }
            if l.alignment == 0 || !l.alignment.is_power_of_two() {
                return Err(err(
                    f("alignment"),
                    format!("must be a power of two, got {}", l.alignment),
                ));
            }
            let capacity = if i == 0 {
                u64::MAX
            } else {
                let c = l.capacity.as_ref().ok_or_else(|| {
                    err(f("capacity"), "missing (fast levels are bounded)".into())
                })?;
                let bytes = match c {
                    ByteSize::Bytes(b) => *b,
                    ByteSize::Text(s) => parse_size(s).map_err(|m| err(f("capacity"), m))?,
                };
                check_capacity(bytes, l.alignment).map_err(|m| err(f("capacity"), m))?;
                bytes
            };
            levels.push(MemoryLevel {
                name: l.name,
                capacity,
                read_bw: l.read_gb_per_s * GB,
                write_bw: l.write_gb_per_s * GB,
                alignment: l.alignment,
            });
        }
        Ok(Hardware {
            name: self.name,
            levels,
            peak_flops: self.peak_tflops * 1e12,
            op_overhead_s: self.op_overhead_us * 1e-6,
            dma: Dma {
                engines: self.dma.engines,
                setup_s: self.dma.setup_us * 1e-6,
            },
        })
    }
}

/// `v` within `[lo, hi]` (and finite), else the field and a message.
fn in_range(field: &str, v: f64, lo: f64, hi: f64) -> Result<(), (String, String)> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err((
            field.to_string(),
            format!("must be in [{lo:e}, {hi:e}], got {v}"),
        ))
    }
}

/// A fast level's capacity holds at least one aligned byte and stays within the sizes the
/// cost model represents exactly.
fn check_capacity(bytes: u64, alignment: u64) -> Result<(), String> {
    if bytes == 0 {
        return Err("must be > 0".into());
    }
    if bytes < alignment {
        return Err(format!(
            "{bytes} B is smaller than the level's alignment ({alignment} B): no buffer could be placed"
        ));
    }
    if bytes > crate::MAX_BYTES {
        return Err(format!(
            "{bytes} B is larger than the {} limit on sizes",
            format_size(crate::MAX_BYTES)
        ));
    }
    Ok(())
}

/// Parses `"16MiB"`, `"1.5 GiB"`, `"512KB"`, `"4096"` into bytes (KiB/MiB/GiB are powers
/// of 1024, KB/MB/GB of 1000). Whole numbers are parsed exactly; a size above
/// [`MAX_BYTES`](crate::MAX_BYTES) is an error, never a saturated or wrapped number.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let s = text.trim();
    // A sign would otherwise be read as the start of a unit (`-5MiB`: unit `-5mib`).
    if let Some(rest) = s.strip_prefix(['-', '+']) {
        return Err(if s.starts_with('-') && !rest.is_empty() {
            format!("`{text}`: a size cannot be negative")
        } else {
            format!("`{text}`: a size is written without a sign (16MiB, 512KiB or a byte count)")
        });
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let not_a_size = || format!("`{text}` is not a size (try 16MiB, 512KiB or a byte count)");
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (use B, KiB, MiB, GiB, KB, MB, GB)"
            ))
        }
    };
    let too_large = || {
        format!(
            "`{text}` is larger than the {} limit on sizes",
            format_size(crate::MAX_BYTES)
        )
    };
    let bytes = if num.contains('.') {
        let value: f64 = num.parse().map_err(|_| not_a_size())?;
        let bytes = value * mult as f64;
        if !bytes.is_finite() || bytes > crate::MAX_BYTES as f64 {
            return Err(too_large());
        }
        bytes.round() as u64
    } else {
        // Digits only: exact, so a 20-digit count is refused rather than rounded.
        let value: u64 = match num.parse() {
            Ok(v) => v,
            Err(_) if !num.is_empty() => return Err(too_large()),
            Err(_) => return Err(not_a_size()),
        };
        value.checked_mul(mult).ok_or_else(too_large)?
    };
    if bytes > crate::MAX_BYTES {
        return Err(too_large());
    }
    if bytes == 0 {
        return Err(format!("`{text}` must be at least 1 byte"));
    }
    Ok(bytes)
}

/// Formats bytes for tables: `128.0 MiB`.
pub fn format_size(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes >= 1 << 50 {
        format!("{:.1} PiB", b / (1u64 << 50) as f64)
    } else if bytes >= 1 << 40 {
        format!("{:.1} TiB", b / (1u64 << 40) as f64)
    } else if bytes >= 1 << 30 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if bytes >= 1 << 20 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_past_the_limit_are_errors_not_wrapped_numbers() {
        for text in [
            "18446744073709551615",
            "99999999999999999999GiB",
            "99999999999999999999",
            "9007199254740993",
            "1e300",
            "8388609GiB",
        ] {
            let e = parse_size(text);
            assert!(e.is_err(), "{text}: {e:?}");
        }
        assert_eq!(parse_size("9007199254740992").unwrap(), crate::MAX_BYTES);
        assert_eq!(parse_size("8388608GiB").unwrap(), crate::MAX_BYTES);
        assert!(parse_size("0.4").unwrap_err().contains("at least 1 byte"));
        let hw = Hardware::nnp_i_like();
        let e = hw
            .clone()
            .with_capacity(1, u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(e.contains("limit"), "{e}");
        let e = hw.with_capacity(1, 63).unwrap_err().to_string();
        assert!(e.contains("alignment (64 B)"), "{e}");
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size("1.5 KiB").unwrap(), 1536);
        assert_eq!(parse_size("2MB").unwrap(), 2_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("abc").is_err());
        assert!(parse_size("3 furlongs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_size("0").is_err());
        assert!(parse_size("-5MiB").unwrap_err().contains("negative"));
        assert!(parse_size(" -1").unwrap_err().contains("negative"));
        assert!(parse_size("+5MiB").unwrap_err().contains("without a sign"));
    }

    #[test]
    fn presets_round_trip_through_the_file_format() {
        for name in PRESETS {
            let hw = Hardware::preset(name).unwrap();
            let json = serde_json::to_string(&hw.to_file()).unwrap();
            let back: HardwareFile = serde_json::from_str(&json).unwrap();
            let hw2 = back.into_hardware("").unwrap();
            assert_eq!(hw.levels.len(), hw2.levels.len());
            for (a, b) in hw.levels.iter().zip(&hw2.levels) {
                assert_eq!(a.capacity, b.capacity);
                assert!((a.read_bw - b.read_bw).abs() < 1.0);
            }
        }
        assert!(Hardware::preset("tpu-v5").is_err());
    }

    #[test]
    fn values_past_physical_ranges_are_refused() {
        // Once accepted: a 1e-300 GB/s level made every latency ~1e300 s, and sums of such
        // overflow to infinity.
        let file = |peak: f64, bw: f64| {
            let text = format!(
                r#"{{"name":"x","peak_tflops":{peak},"levels":[
                {{"name":"slow","read_gb_per_s":{bw},"write_gb_per_s":1}},
                {{"name":"fast","capacity":"1MiB","read_gb_per_s":1,"write_gb_per_s":1}}]}}"#
            );
            serde_json::from_str::<HardwareFile>(&text)
                .unwrap()
                .into_hardware("hw.json: ")
        };
        let e = file(1.0, 1e-300).unwrap_err().to_string();
        assert!(
            e.contains("levels[0].read_gb_per_s") && e.contains("1e-6"),
            "{e}"
        );
        let e = file(1e-300, 1.0).unwrap_err().to_string();
        assert!(e.contains("peak_tflops"), "{e}");
        assert!(file(1e-6, 1e9).is_ok());
    }

    #[test]
    fn bad_fields_are_named() {
        let text = r#"{"name":"x","peak_tflops":1,"levels":[
            {"name":"slow","read_gb_per_s":1,"write_gb_per_s":1},
            {"name":"fast","capacity":"12 parsecs","read_gb_per_s":1,"write_gb_per_s":1}]}"#;
        let f: HardwareFile = serde_json::from_str(text).unwrap();
        let e = f.into_hardware("hw.json: ").unwrap_err().to_string();
        assert!(e.contains("hw.json: field `levels[1].capacity`"), "{e}");
        let text = r#"{"name":"x","peak_tflops":1,"levels":[
            {"name":"slow","read_gb_per_s":1,"write_gb_per_s":1}]}"#;
        let f: HardwareFile = serde_json::from_str(text).unwrap();
        assert!(f
            .into_hardware("")
            .unwrap_err()
            .to_string()
            .contains("levels"));
        let toml_text = r#"
            name = "t"
            peak_tflops = 10
            [[levels]]
            name = "slow"
            read_gb_per_s = 100
            write_gb_per_s = 100
            [[levels]]
            name = "fast"
            capacity = "1MiB"
            read_gb_per_s = 1000
            write_gb_per_s = 1000
            alignment = 3
        "#;
        let f: HardwareFile = toml::from_str(toml_text).unwrap();
        let e = f.into_hardware("").unwrap_err().to_string();
        assert!(e.contains("levels[1].alignment"), "{e}");
    }

    #[test]
    fn capacity_override() {
        let hw = Hardware::tpu_v4i_like().with_capacity(1, 16 << 20).unwrap();
        assert_eq!(hw.levels[1].capacity, 16 << 20);
        assert!(Hardware::tpu_v4i_like().with_capacity(0, 5).is_err());
        assert!(Hardware::tpu_v4i_like().with_capacity(1, 0).is_err());
        let nnp = Hardware::nnp_i_like();
        let hw = nnp.clone().with_capacity_spec("1:2MiB").unwrap();
        assert_eq!(hw.levels[1].capacity, 2 << 20);
        let hw = nnp.clone().with_capacity_spec("3MiB").unwrap();
        assert_eq!(hw.levels[2].capacity, 3 << 20);
        for (spec, says) in [
            ("1:18446744073709551615", "limit"),
            ("x:1MiB", "not a level number"),
            ("3:1MiB", "not a fast level"),
            ("0:1MiB", "not a fast level"),
            ("1:32", "alignment"),
        ] {
            let e = nnp
                .clone()
                .with_capacity_spec(spec)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{spec}: {e}");
            assert!(e.contains("fast-capacity"), "{spec}: {e}");
        }
    }
}
