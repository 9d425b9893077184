//! HLO shapes: arrays (`f32[8,16]{1,0}`), tuples (`(f32[], s32[2]{0})`) and tokens, with
//! their sizes in bytes.
//!
//! Layouts (`{1,0}`, `{1,0:T(8,128)}`) are read past: the IR keeps sizes, not layouts.
//! Dynamic dimensions (`<=8`) count at their bound, as XLA allocates them.
//!
//! A parsed shape's element count and byte size fit in `u64` (one that does not is refused
//! where it is written), and tuples nest at most [`MAX_TUPLE_DEPTH`] deep, so nothing that
//! walks a shape overflows or recurses deeper than that.

/// The deepest tuple nesting a shape may have. XLA's programs nest a few levels (a loop's
/// state, a multi-output fusion's result); the bound keeps recursion over shapes shallow.
pub(crate) const MAX_TUPLE_DEPTH: usize = 64;

/// The shape of an HLO value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An array of `dims` elements of `dtype` (a scalar has no dims), of `bytes` bytes
    /// (computed once: lowering asks on every visit of an instruction).
    Array {
        dtype: String,
        dims: Vec<u64>,
        bytes: u64,
    },
    /// A tuple of shapes (a token is an array of dtype `token` with no bytes).
    Tuple(Vec<Shape>),
}

impl Shape {
    /// Number of elements (1 for a scalar; tuples: 0).
    pub(crate) fn elements(&self) -> u64 {
        match self {
            Shape::Array { dims, .. } => dims.iter().fold(1, |n, &d| n.saturating_mul(d)),
            Shape::Tuple(_) => 0,
        }
    }

    /// Bytes of an array (the sum of its leaves for a tuple). Sub-byte types (`s4`, `u4`,
    /// `f4e2m1fn`) take a byte per element, as XLA stores them unpacked by default.
    /// (A tuple's sum saturates only for safety: a parsed shape's fits.)
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Shape::Array { bytes, .. } => *bytes,
            Shape::Tuple(parts) => parts.iter().fold(0, |n, p| n.saturating_add(p.bytes())),
        }
    }

    pub(crate) fn dims(&self) -> &[u64] {
        match self {
            Shape::Array { dims, .. } => dims,
            Shape::Tuple(_) => &[],
        }
    }

    /// The leaves (arrays) in order, flattened through nested tuples.
    pub(crate) fn leaves(&self) -> Vec<&Shape> {
        match self {
            Shape::Array { .. } => vec![self],
            Shape::Tuple(parts) => parts.iter().flat_map(Shape::leaves).collect(),
        }
    }
}

/// Bytes per element of an HLO primitive type; `None` for a name that is not one.
pub(crate) fn element_bytes(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "token" | "opaque" => 0,
        "pred" | "s8" | "u8" | "s4" | "u4" | "s2" | "u2" | "s1" | "u1" => 1,
        "s16" | "u16" | "f16" | "bf16" => 2,
        "s32" | "u32" | "f32" => 4,
        "s64" | "u64" | "f64" | "c64" => 8,
        "c128" => 16,
        t if t.starts_with("f8") || t.starts_with("f4") || t.starts_with("f6") => 1,
        _ => return None,
    })
}

/// Parses a shape at the start of `s`; returns it and the rest of `s` after it.
pub(crate) fn parse_prefix(s: &str) -> Result<(Shape, &str), String> {
    let (shape, rest) = parse_nested(s, 0)?;
    if let Shape::Tuple(_) = shape {
        // Each array's size is checked where it is read; a tuple's sum is checked here.
        shape
            .leaves()
            .iter()
            .try_fold(0u64, |n, l| n.checked_add(l.bytes()))
            .ok_or_else(|| {
                "its arrays add up to 2^64 bytes or more: no memory holds that".to_string()
            })?;
    }
    Ok((shape, rest))
}

fn parse_nested(s: &str, depth: usize) -> Result<(Shape, &str), String> {
    let s = s.trim_start();
    if let Some(mut rest) = s.strip_prefix('(') {
        if depth >= MAX_TUPLE_DEPTH {
            return Err(format!(
                "tuples nested more than {MAX_TUPLE_DEPTH} deep: past what this loader reads"
            ));
        }
        let mut parts = Vec::new();
        loop {
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix(')') {
                return Ok((Shape::Tuple(parts), r));
            }
            let (part, r) = parse_nested(rest, depth + 1)?;
            parts.push(part);
            rest = r.trim_start();
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
            } else if !rest.starts_with(')') {
                return Err(format!(
                    "a tuple shape needs `,` or `)` after an element, found `{}`",
                    snippet(rest)
                ));
            }
        }
    }
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    let dtype = &s[..end];
    if dtype.is_empty() || element_bytes(dtype).is_none() {
        return Err(format!("`{}` is not an element type", snippet(s)));
    }
    let rest = s[end..]
        .strip_prefix('[')
        .ok_or_else(|| format!("element type `{dtype}` needs `[dims]` after it"))?;
    let close = rest
        .find(']')
        .ok_or_else(|| format!("`{dtype}[` has no closing `]`"))?;
    let mut dims = Vec::new();
    let mut elements: Option<u64> = Some(1);
    for d in rest[..close].split(',').filter(|d| !d.trim().is_empty()) {
        let d = d.trim();
        let n = d.strip_prefix("<=").unwrap_or(d);
        let n: u64 = n
            .parse()
            .map_err(|_| format!("dimension `{d}` of `{dtype}[...]` is not a whole number"))?;
        elements = elements.and_then(|e| e.checked_mul(n));
        dims.push(n);
    }
    let too_many = |what: &str| {
        format!(
            "`{}` has 2^64 {what} or more: no memory holds that",
            snippet(&s[..end + 1 + close + 1])
        )
    };
    let elements = elements.ok_or_else(|| too_many("elements"))?;
    let bytes = element_bytes(dtype)
        .and_then(|b| b.checked_mul(elements))
        .ok_or_else(|| too_many("bytes"))?;
    let mut rest = &rest[close + 1..];
    if rest.starts_with('{') {
        let n = matching(rest, '{', '}').ok_or("a layout `{...` has no closing `}`")?;
        rest = &rest[n + 1..];
    }
    Ok((
        Shape::Array {
            dtype: dtype.to_string(),
            dims,
            bytes,
        },
        rest,
    ))
}

/// A whole string as one shape (nothing after it but spaces).
#[cfg(test)]
pub(crate) fn parse(s: &str) -> Result<Shape, String> {
    let (shape, rest) = parse_prefix(s)?;
    if !rest.trim().is_empty() {
        return Err(format!("unexpected `{}` after the shape", snippet(rest)));
    }
    Ok(shape)
}

/// The index in `s` of the bracket closing the one `s` opens with (`s` starts with `open`),
/// skipping quoted strings.
pub(crate) fn matching(s: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if quoted {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
            continue;
        }
        if c == '"' {
            quoted = true;
        } else if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The first 40 characters of `s`, for messages.
pub(crate) fn snippet(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_tuples_and_layouts_parse_with_their_sizes() {
        let s = parse("f32[8,16]{1,0}").unwrap();
        assert_eq!(s.bytes(), 512);
        assert_eq!(s.elements(), 128);
        assert_eq!(parse("pred[]").unwrap().bytes(), 1);
        assert_eq!(parse("bf16[4,<=8]{1,0:T(8,128)(2,1)}").unwrap().bytes(), 64);
        let t = parse("(s32[], (f32[2]{0}, token[]), f16[3])").unwrap();
        assert_eq!(t.bytes(), 4 + 8 + 6);
        assert_eq!(t.leaves().len(), 4);
        let (s, rest) = parse_prefix("f32[2] %x").unwrap();
        assert_eq!((s.bytes(), rest), (8, " %x"));
    }

    #[test]
    fn bad_shapes_say_what_is_wrong() {
        for (bad, says) in [
            ("f33[2]", "not an element type"),
            ("f32[2,x]", "not a whole number"),
            ("f32[2", "no closing `]`"),
            ("f32", "needs `[dims]`"),
            ("(f32[] s32[])", "needs `,` or `)`"),
            ("f32[2]{1,0", "no closing `}`"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
