//! Reading a user's text file (program, hardware, mapping, config) with the checks every
//! reader needs: a size cap, so a link to `/dev/zero` or a huge file is refused instead of
//! filling memory; a UTF-8 byte-order mark accepted (editors on Windows write one, and
//! serde_json would report it as "expected value at line 1 column 1"); invalid UTF-8 named.

use std::io::Read;
use std::path::Path;

/// The largest text file the workspace reads: far above any real program (the 200k-buffer
/// stress program is about 40 MiB of JSON), far below the machine's memory.
pub const MAX_TEXT_BYTES: u64 = 512 << 20;

/// Why a text file could not be read; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum TextFileError {
    /// Opening or reading the file failed.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is past [`MAX_TEXT_BYTES`].
    #[error("{path}: larger than the {limit_mib} MiB limit on input files")]
    TooLarge {
        /// The file.
        path: String,
        /// The limit, in MiB.
        limit_mib: u64,
    },
    /// The file is not UTF-8 text.
    #[error("{path}: not UTF-8 text (byte {offset} is invalid)")]
    NotUtf8 {
        /// The file.
        path: String,
        /// The first invalid byte.
        offset: usize,
    },
}

/// Checks a config file's JSON `value` against its type's `defaults` (the defaults as JSON):
/// wherever the defaults have an object, the file must have one too. serde would otherwise
/// read a struct from an array by position (`["egrl-pg", 7]` setting the second field) or
/// take `[]` as all defaults. `type_name` names the config at the top level.
pub fn objects_where_objects(
    value: &serde_json::Value,
    defaults: &serde_json::Value,
    type_name: &str,
) -> Result<(), String> {
    objects_at(value, defaults, "", type_name)
}

fn objects_at(
    value: &serde_json::Value,
    defaults: &serde_json::Value,
    path: &str,
    type_name: &str,
) -> Result<(), String> {
    let Some(fields) = defaults.as_object() else {
        return Ok(());
    };
    let Some(given) = value.as_object() else {
        let what = match value {
            serde_json::Value::Null => "null",
            serde_json::Value::Bool(_) => "a boolean",
            serde_json::Value::Number(_) => "a number",
            serde_json::Value::String(_) => "a string",
            serde_json::Value::Array(_) => "an array",
            serde_json::Value::Object(_) => "an object",
        };
        return Err(if path.is_empty() {
            format!("must be a JSON object of {type_name}'s fields by name, not {what}")
        } else {
            format!("{path}: must be a JSON object of its fields by name, not {what}")
        });
    };
    for (name, v) in given {
        if let Some(d) = fields.get(name) {
            let inner = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            objects_at(v, d, &inner, type_name)?;
        }
    }
    Ok(())
}

/// Where two JSON values (two configs, two settings) differ: each leaf that differs as its
/// dotted path (`learner.learning_rate`; `prefix` first, if any) and both values, objects
/// walked field by field in name order, anything else compared whole.
pub fn json_differences(
    a: &serde_json::Value,
    b: &serde_json::Value,
    prefix: &str,
) -> Vec<(String, serde_json::Value, serde_json::Value)> {
    fn walk(
        a: &serde_json::Value,
        b: &serde_json::Value,
        at: &str,
        out: &mut Vec<(String, serde_json::Value, serde_json::Value)>,
    ) {
        if a == b {
            return;
        }
        let (Some(x), Some(y)) = (a.as_object(), b.as_object()) else {
            out.push((at.to_string(), a.clone(), b.clone()));
            return;
        };
        let mut names: Vec<&String> = x.keys().chain(y.keys()).collect();
        names.sort();
        names.dedup();
        let null = serde_json::Value::Null;
        for name in names {
            let path = if at.is_empty() {
                name.clone()
            } else {
                format!("{at}.{name}")
            };
            walk(
                x.get(name).unwrap_or(&null),
                y.get(name).unwrap_or(&null),
                &path,
                out,
            );
        }
    }
    let mut out = Vec::new();
    walk(a, b, prefix, &mut out);
    out
}

/// Parses JSON `text` as a `T`; the error names the field where parsing stopped
/// (`buffers[3].allocations[0].offset`) and, where the text holds no JSON value there
/// (`NaN`, `Infinity`, a cut-off file), the text it found. serde_json alone says only
/// "expected value at line 1 column 797", or "number out of range" without the number.
pub fn parse_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let said = |path: String, e: serde_json::Error| {
        let found = found_at(text, e.line(), e.column(), e.classify());
        let at = match path.as_str() {
            "." | "" => String::new(),
            p => format!("field `{p}`: "),
        };
        format!("{at}{e}{found}")
    };
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        said(path, e.into_inner())
    })?;
    de.end().map_err(|e| said(String::new(), e))?;
    Ok(value)
}

/// The token at a JSON error's line and column, for errors about a value that is not one.
fn found_at(text: &str, line: usize, column: usize, class: serde_json::error::Category) -> String {
    if class != serde_json::error::Category::Syntax || line == 0 {
        return String::new();
    }
    let Some(row) = text.lines().nth(line - 1) else {
        return String::new();
    };
    // serde_json's column is 1-based and points into or just past the offending token:
    // widen from there both ways over the characters a number or a bare word has.
    let chars: Vec<char> = row.chars().collect();
    let in_token = |c: char| c.is_alphanumeric() || matches!(c, '+' | '-' | '.' | '_');
    let mut at = column.saturating_sub(1).min(chars.len().saturating_sub(1));
    if chars.get(at).is_some_and(|&c| !in_token(c)) && at > 0 && in_token(chars[at - 1]) {
        at -= 1;
    }
    if !chars.get(at).is_some_and(|&c| in_token(c)) {
        return String::new();
    }
    let mut start = at;
    while start > 0 && in_token(chars[start - 1]) {
        start -= 1;
    }
    let end = (at..chars.len())
        .find(|&k| !in_token(chars[k]))
        .unwrap_or(chars.len());
    let token: String = chars[start..end].iter().take(24).collect();
    match token.as_str() {
        "NaN" | "Infinity" | "-Infinity" | "inf" | "nan" => {
            format!(" (found `{token}`: JSON has no NaN or infinite numbers)")
        }
        t => format!(" (found `{t}`)"),
    }
}

/// Reads `path` as UTF-8 text of at most [`MAX_TEXT_BYTES`], without a leading byte-order
/// mark.
pub fn read_text(path: &Path) -> Result<String, TextFileError> {
    read_text_capped(path, MAX_TEXT_BYTES)
}

/// [`read_text`] with another cap.
pub fn read_text_capped(path: &Path, limit: u64) -> Result<String, TextFileError> {
    let shown = || path.display().to_string();
    let io = |source| TextFileError::Io {
        path: shown(),
        source,
    };
    let too_large = || TextFileError::TooLarge {
        path: shown(),
        limit_mib: limit >> 20,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    if let Ok(meta) = file.metadata() {
        if meta.is_dir() {
            return Err(io(std::io::Error::other("it is a folder")));
        }
        if meta.is_file() && meta.len() > limit {
            return Err(too_large());
        }
    }
    // What has no length (a pipe, a device) is read up to one byte past the cap.
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    match std::str::from_utf8(body) {
        Ok(s) => Ok(s.to_string()),
        Err(e) => Err(TextFileError::NotUtf8 {
            path: shown(),
            offset: e.valid_up_to(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("textfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Hold {
        offset: u64,
        scale: f64,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Holds {
        holds: Vec<Hold>,
    }

    #[test]
    fn json_errors_name_the_field_and_the_value() {
        let ok: Holds = parse_json(r#"{"holds": [{"offset": 1, "scale": 0.5}]}"#).unwrap();
        assert_eq!(ok.holds.len(), 1);
        let e = parse_json::<Holds>(r#"{"holds": [{"offset": 1, "scale": NaN}]}"#).unwrap_err();
        assert!(e.contains("holds[0].scale") && e.contains("`NaN`"), "{e}");
        let e =
            parse_json::<Holds>(r#"{"holds": [{"offset": Infinity, "scale": 1}]}"#).unwrap_err();
        assert!(
            e.contains("holds[0].offset") && e.contains("`Infinity`"),
            "{e}"
        );
        let e = parse_json::<Holds>(r#"{"holds": [{"offset": 1, "scale": 1e400}]}"#).unwrap_err();
        assert!(e.contains("holds[0].scale") && e.contains("`1e400`"), "{e}");
        let e = parse_json::<Holds>(r#"{"holds": [{"offset": 1, "scale": 1, "sclae": 2}]}"#)
            .unwrap_err();
        assert!(e.contains("holds[0]") && e.contains("sclae"), "{e}");
        let e = parse_json::<Holds>(r#"{"holds": []} x"#).unwrap_err();
        assert!(e.contains("trailing"), "{e}");
    }

    #[test]
    fn a_byte_order_mark_is_dropped() {
        let p = temp("bom.json", b"\xEF\xBB\xBF{\"a\": 1}");
        assert_eq!(read_text(&p).unwrap(), "{\"a\": 1}");
    }

    #[test]
    fn too_large_and_not_utf8_are_named() {
        let p = temp("big.txt", &[b'x'; 2048]);
        let e = read_text_capped(&p, 1024).unwrap_err();
        assert!(matches!(e, TextFileError::TooLarge { .. }), "{e}");
        assert!(e.to_string().contains("big.txt"), "{e}");
        let p = temp("latin1.txt", b"ok \xE9t\xE9");
        let e = read_text(&p).unwrap_err().to_string();
        assert!(e.contains("not UTF-8 text (byte 3"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn an_endless_device_is_refused_at_the_cap() {
        let e = read_text_capped(Path::new("/dev/zero"), 1 << 16).unwrap_err();
        assert!(matches!(e, TextFileError::TooLarge { .. }), "{e}");
    }

    #[test]
    fn json_differences_are_leaf_paths_in_name_order() {
        let a = serde_json::json!({"b": 1, "a": {"x": [1, 2], "y": "s"}, "gone": true});
        let b = serde_json::json!({"b": 1, "a": {"x": [1, 3], "y": "s"}, "new": 0});
        let d = json_differences(&a, &b, "config");
        let paths: Vec<&str> = d.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(paths, ["config.a.x", "config.gone", "config.new"]);
        assert_eq!(d[1].2, serde_json::Value::Null);
        assert!(json_differences(&a, &a, "").is_empty());
        assert_eq!(json_differences(&a, &b, "")[0].0, "a.x");
    }
}
