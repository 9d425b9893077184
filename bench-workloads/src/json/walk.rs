//! Value walking with paths: the loader reads a [`serde_json::Value`] field by field so
//! that every error names the JSON path and the offending value.

use super::{BufferEntry, OpEntry, ProgramFile, Source, Stats, FORMAT, VERSION};
use accel_sim::BufferKind;
use serde_json::{Map, Value};

/// How a path is shown in errors: top-level keys as "field `x`", nested ones as written.
fn at(path: &str) -> String {
    if path.contains(['.', '[']) {
        path.to_string()
    } else {
        format!("field `{path}`")
    }
}

/// A value as JSON, shortened so an error stays one readable line.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// The object at `path`, rejecting keys outside `allowed` (typos in optional fields would
/// otherwise be silently ignored).
fn object<'v>(
    v: &'v Value,
    path: &str,
    allowed: Option<&[&str]>,
) -> Result<&'v Map<String, Value>, String> {
    let what = if path.is_empty() {
        "the document".to_string()
    } else {
        at(path)
    };
    let m = v
        .as_object()
        .ok_or_else(|| format!("{what}: expected an object, got {}", show(v)))?;
    if let Some(allowed) = allowed {
        if let Some(k) = m.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!(
                "{}: unknown field (expected one of: {})",
                at(&join(path, k)),
                allowed.join(", ")
            ));
        }
    }
    Ok(m)
}

fn required<'v>(m: &'v Map<String, Value>, path: &str, key: &str) -> Result<&'v Value, String> {
    m.get(key).ok_or_else(|| {
        if path.is_empty() {
            format!("missing field `{key}`")
        } else {
            format!("{path}: missing field `{key}`")
        }
    })
}

fn string(v: &Value, path: &str) -> Result<String, String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{}: expected a string, got {}", at(path), show(v)))
}

fn uint(v: &Value, path: &str) -> Result<u64, String> {
    v.as_u64().ok_or_else(|| {
        format!(
            "{}: expected a non-negative integer, got {}",
            at(path),
            show(v)
        )
    })
}

fn number(v: &Value, path: &str) -> Result<f64, String> {
    v.as_f64()
        .ok_or_else(|| format!("{}: expected a number, got {}", at(path), show(v)))
}

fn array<'v>(v: &'v Value, path: &str) -> Result<&'v Vec<Value>, String> {
    v.as_array()
        .ok_or_else(|| format!("{}: expected an array, got {}", at(path), show(v)))
}

fn uint_list(v: &Value, path: &str) -> Result<Vec<u64>, String> {
    array(v, path)?
        .iter()
        .enumerate()
        .map(|(k, x)| uint(x, &format!("{path}[{k}]")))
        .collect()
}

fn index_list(v: &Value, path: &str) -> Result<Vec<usize>, String> {
    array(v, path)?
        .iter()
        .enumerate()
        .map(|(k, x)| {
            let p = format!("{path}[{k}]");
            let i = x
                .as_u64()
                .ok_or_else(|| format!("{p}: expected a buffer index, got {}", show(x)))?;
            usize::try_from(i).map_err(|_| format!("{p}: buffer index {i} is too large"))
        })
        .collect()
}

fn opt<'v>(m: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    m.get(key).filter(|v| !v.is_null())
}

pub(super) fn from_value(root: &Value) -> Result<ProgramFile, String> {
    const TOP: &[&str] = &[
        "format",
        "version",
        "name",
        "description",
        "source",
        "stats",
        "buffers",
        "ops",
    ];
    let m = object(root, "", Some(TOP))?;
    // The format first: a different kind of JSON file should be named as such, not
    // reported as missing half its fields.
    let format = required(m, "", "format")?;
    if format.as_str() != Some(FORMAT) {
        return Err(format!(
            "field `format`: expected \"{FORMAT}\", got {}",
            show(format)
        ));
    }
    let version = uint(required(m, "", "version")?, "version")?;
    if version != VERSION {
        return Err(format!(
            "field `version`: unsupported version {version} (this build reads version {VERSION})"
        ));
    }
    let name = string(required(m, "", "name")?, "name")?;
    let description = match opt(m, "description") {
        Some(v) => string(v, "description")?,
        None => String::new(),
    };
    let source = opt(m, "source").map(source_from).transpose()?;
    let stats = opt(m, "stats").map(stats_from).transpose()?;
    let buffers = array(required(m, "", "buffers")?, "buffers")?
        .iter()
        .enumerate()
        .map(|(i, v)| buffer_from(v, &format!("buffers[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let ops = array(required(m, "", "ops")?, "ops")?
        .iter()
        .enumerate()
        .map(|(i, v)| op_from(v, &format!("ops[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ProgramFile {
        format: FORMAT.into(),
        version,
        name,
        description,
        source,
        stats,
        buffers,
        ops,
    })
}

fn source_from(v: &Value) -> Result<Source, String> {
    let m = object(v, "source", None)?;
    let text = |key: &str| -> Result<Option<String>, String> {
        opt(m, key)
            .map(|v| string(v, &format!("source.{key}")))
            .transpose()
    };
    const NAMED: [&str; 5] = [
        "generator",
        "torch",
        "torchvision",
        "transformers",
        "dtype_bytes",
    ];
    Ok(Source {
        generator: text("generator")?,
        torch: text("torch")?,
        torchvision: text("torchvision")?,
        transformers: text("transformers")?,
        dtype_bytes: opt(m, "dtype_bytes")
            .map(|v| uint(v, "source.dtype_bytes"))
            .transpose()?,
        extra: m
            .iter()
            .filter(|(k, _)| !NAMED.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    })
}

fn stats_from(v: &Value) -> Result<Stats, String> {
    const KEYS: &[&str] = &[
        "ops",
        "buffers",
        "total_flops",
        "peak_live_bytes",
        "weight_bytes",
    ];
    let m = object(v, "stats", Some(KEYS))?;
    let get = |key: &str| required(m, "stats", key);
    let count = |key: &str| -> Result<usize, String> {
        let path = format!("stats.{key}");
        let n = uint(get(key)?, &path)?;
        usize::try_from(n).map_err(|_| format!("{path}: {n} is too large"))
    };
    Ok(Stats {
        ops: count("ops")?,
        buffers: count("buffers")?,
        total_flops: number(get("total_flops")?, "stats.total_flops")?,
        peak_live_bytes: uint(get("peak_live_bytes")?, "stats.peak_live_bytes")?,
        weight_bytes: uint(get("weight_bytes")?, "stats.weight_bytes")?,
    })
}

fn buffer_from(v: &Value, path: &str) -> Result<BufferEntry, String> {
    let m = object(v, path, Some(&["name", "kind", "bytes", "shape", "dtype"]))?;
    let field = |key: &str| (required(m, path, key), format!("{path}.{key}"));
    let (name, p) = field("name");
    let name = string(name?, &p)?;
    let (kind, p) = field("kind");
    let kind_text = string(kind?, &p)?;
    let kind = BufferKind::ALL
        .into_iter()
        .find(|k| k.as_str() == kind_text)
        .ok_or_else(|| {
            format!(
                "{p}: unknown buffer kind \"{kind_text}\" (expected weight, input, activation or output)"
            )
        })?;
    let (bytes, p) = field("bytes");
    let bytes = uint(bytes?, &p)?;
    let shape = opt(m, "shape")
        .map(|v| uint_list(v, &format!("{path}.shape")))
        .transpose()?;
    let dtype = opt(m, "dtype")
        .map(|v| string(v, &format!("{path}.dtype")))
        .transpose()?;
    Ok(BufferEntry {
        name,
        kind,
        bytes,
        shape,
        dtype,
    })
}

fn op_from(v: &Value, path: &str) -> Result<OpEntry, String> {
    let m = object(v, path, Some(&["name", "kind", "flops", "reads", "writes"]))?;
    let field = |key: &str| (required(m, path, key), format!("{path}.{key}"));
    let (name, p) = field("name");
    let name = string(name?, &p)?;
    let (kind, p) = field("kind");
    let kind = string(kind?, &p)?;
    let (flops, p) = field("flops");
    let flops = number(flops?, &p)?;
    let (reads, p) = field("reads");
    let reads = index_list(reads?, &p)?;
    let (writes, p) = field("writes");
    let writes = index_list(writes?, &p)?;
    Ok(OpEntry {
        name,
        kind,
        flops,
        reads,
        writes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::fixtures::{parse_err, small_with};
    use crate::json::parse_file;

    #[test]
    fn wrong_format_version_and_missing_fields_are_named() {
        let e = parse_err(&small_with("mallocmuzero-program", "something-else"));
        assert_eq!(
            e,
            "my.json: field `format`: expected \"mallocmuzero-program\", got \"something-else\""
        );
        let e = parse_err(&small_with("\"version\": 1", "\"version\": 2"));
        assert!(e.contains("field `version`: unsupported version 2"), "{e}");
        let e = parse_err(&small_with("\"name\": \"small\",", ""));
        assert_eq!(e, "my.json: missing field `name`");
        let e = parse_err(&small_with(
            "\"bytes\": 10},\n        {\"name\": \"w\"",
            "\"bytes\": 10},\n        {\"nam\": \"w\"",
        ));
        assert!(e.contains("buffers[1].nam: unknown field"), "{e}");
        let e = parse_err("[1, 2]");
        assert!(
            e.contains("the document: expected an object, got [1,2]"),
            "{e}"
        );
    }

    #[test]
    fn buffer_errors_name_index_field_and_value() {
        let e = parse_err(&small_with("\"bytes\": 4", "\"bytes\": 0"));
        assert_eq!(e, "my.json: buffers[1].bytes: must be > 0, got 0");
        let e = parse_err(&small_with("\"bytes\": 4", "\"bytes\": -4"));
        assert_eq!(
            e,
            "my.json: buffers[1].bytes: expected a non-negative integer, got -4"
        );
        let e = parse_err(&small_with("\"kind\": \"weight\"", "\"kind\": \"param\""));
        assert!(
            e.contains("buffers[1].kind: unknown buffer kind \"param\""),
            "{e}"
        );
        let e = parse_err(&small_with("\"shape\": [2]", "\"shape\": [2.5]"));
        assert!(
            e.contains("buffers[1].shape[0]: expected a non-negative integer, got 2.5"),
            "{e}"
        );
        let e = parse_err(&small_with(
            "{\"name\": \"a\", \"kind\": \"activation\", \"bytes\": 10}",
            "{\"name\": \"a\", \"kind\": \"activation\"}",
        ));
        assert_eq!(e, "my.json: buffers[2]: missing field `bytes`");
    }

    #[test]
    fn op_errors_name_index_field_and_value() {
        let e = parse_err(&small_with("\"reads\": [2]", "\"reads\": [999]"));
        assert_eq!(
            e,
            "my.json: ops[1].reads[0]: buffer 999 does not exist (there are 4 buffers)"
        );
        let e = parse_err(&small_with("\"reads\": [0, 1]", "\"reads\": [0, 1, 0]"));
        assert!(
            e.contains("ops[0].reads[2]: buffer 0 (`x`) is already listed at reads[0]"),
            "{e}"
        );
        let e = parse_err(&small_with("\"flops\": 80", "\"flops\": -1"));
        assert_eq!(e, "my.json: ops[0].flops: must be finite and >= 0, got -1");
        let e = parse_err(&small_with("\"flops\": 80", "\"flops\": \"80\""));
        assert_eq!(e, "my.json: ops[0].flops: expected a number, got \"80\"");
        let e = parse_err(&small_with("\"writes\": [2]", "\"writes\": 2"));
        assert_eq!(e, "my.json: ops[0].writes: expected an array, got 2");
        let e = parse_err(&small_with("\"reads\": [2]", "\"reads\": [\"a\"]"));
        assert!(
            e.contains("ops[1].reads[0]: expected a buffer index, got \"a\""),
            "{e}"
        );
    }

    #[test]
    fn stats_and_source_are_parsed_and_checked() {
        let text = small_with(
            "\"name\": \"small\",",
            "\"name\": \"small\", \"source\": {\"generator\": \"hand\", \"torch\": \"2.15.0\", \"dtype_bytes\": 2, \"date\": \"today\"}, \
             \"stats\": {\"ops\": 2, \"buffers\": 4, \"total_flops\": 85.5, \"peak_live_bytes\": 24, \"weight_bytes\": 4},",
        );
        let f = parse_file(&text, "my.json").unwrap();
        let p = f.to_program("my.json").unwrap();
        assert_eq!(f.stats, Some(Stats::of(&p)));
        let s = f.source.unwrap();
        assert_eq!(s.generator.as_deref(), Some("hand"));
        assert_eq!(s.dtype_bytes, Some(2));
        assert_eq!(s.extra.get("date"), Some(&Value::from("today")));
        let e = parse_err(&text.replacen("\"ops\": 2", "\"ops\": -2", 1));
        assert_eq!(
            e,
            "my.json: stats.ops: expected a non-negative integer, got -2"
        );
    }
}
