//! The HLO text format, read into computations of instructions.
//!
//! One instruction a line: `[ROOT] %name = SHAPE opcode(operands), attr=value, ...`, inside
//! computations `[ENTRY] %name [(signature) -> shape] {` ... `}`. Both printings XLA makes
//! are read: the scheduled module (`compiled.as_text()`: `%`-prefixed names, operands with
//! their shapes, `is_scheduled=true` in the header) and the module before optimization
//! (`lowered.as_text(dialect="hlo")`: bare names). `/*index=5*/` comments are dropped, and
//! the debug tables newer XLA prints between the header and the computations (`FileNames`,
//! `FunctionNames`, `FileLocations`, `StackFrames`) are skipped.

use super::arity;
use super::graph;
use super::shape::{self, matching, snippet, Shape};
use std::collections::HashMap;

/// A problem at a line of the text, with the instruction it is in when there is one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TextError {
    /// 1-based line number.
    pub line: usize,
    pub instruction: Option<String>,
    pub msg: String,
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.instruction {
            Some(name) => write!(f, "line {} (`%{name}`): {}", self.line, self.msg),
            None => write!(f, "line {}: {}", self.line, self.msg),
        }
    }
}

pub(crate) fn at(line: usize, instruction: Option<&str>, msg: impl Into<String>) -> TextError {
    TextError {
        line,
        instruction: instruction.map(str::to_string),
        msg: msg.into(),
    }
}

/// One HLO instruction.
#[derive(Clone, Debug)]
pub(crate) struct Instruction {
    pub name: String,
    pub line: usize,
    pub shape: Shape,
    pub opcode: String,
    /// Operands as indices of instructions of the same computation.
    pub operands: Vec<usize>,
    /// The text between the parentheses of `constant(...)` and `parameter(...)`.
    pub literal: String,
    /// `key=value` attributes in order, values as written.
    pub attrs: Vec<(String, String)>,
    /// `parameter(k)`'s `k`, `get-tuple-element`'s `index=k`: read once, where parsed.
    pub number: Option<usize>,
    /// Per attribute naming a computation (`to_apply=`, `body=`, ...), the one it names
    /// (`None`: a list of them), resolved once where parsed ([`graph::calls`]).
    pub callees: Vec<(&'static str, Option<usize>)>,
}

impl Instruction {
    pub(crate) fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A `{1,2}`-style list attribute as numbers (empty when absent).
    pub(crate) fn dims_attr(&self, key: &str) -> Result<Vec<usize>, TextError> {
        let Some(v) = self.attr(key) else {
            return Ok(Vec::new());
        };
        let inner = v.trim().trim_start_matches('{').trim_end_matches('}');
        inner
            .split(',')
            .filter(|d| !d.trim().is_empty())
            .map(|d| {
                d.trim()
                    .parse()
                    .map_err(|_| self.error(format!("{key}={v}: `{d}` is not a dimension number")))
            })
            .collect()
    }

    pub(crate) fn error(&self, msg: impl Into<String>) -> TextError {
        at(self.line, Some(&self.name), msg)
    }
}

/// A computation: its instructions in the order written (the schedule, in a scheduled
/// module) and the one marked `ROOT`.
#[derive(Clone, Debug)]
pub(crate) struct Computation {
    pub name: String,
    /// The line of its `name {`.
    pub line: usize,
    pub instructions: Vec<Instruction>,
    pub root: usize,
}

/// A whole module.
#[derive(Clone, Debug)]
pub(crate) struct Module {
    pub name: String,
    pub scheduled: bool,
    pub computations: Vec<Computation>,
    pub entry: usize,
    /// Every computation, each after those it calls ([`graph::callees_first`]): the call
    /// graph has no cycle.
    pub callees_first: Vec<usize>,
}

impl Module {
    /// The computation an attribute of `inst` names (`calls=%fused_computation`).
    pub(crate) fn called(&self, inst: &Instruction, key: &str) -> Result<usize, TextError> {
        match inst.callees.iter().find(|(k, _)| *k == key) {
            Some((_, Some(c))) => Ok(*c),
            Some((_, None)) => Err(inst.error(format!(
                "{key}= names a list of computations where it takes one"
            ))),
            None => Err(inst.error(format!("{} has no `{key}=`", inst.opcode))),
        }
    }
}

/// Skips the debug tables between the module header and the computations.
fn is_table_line(t: &str) -> bool {
    matches!(
        t,
        "FileNames" | "FunctionNames" | "FileLocations" | "StackFrames"
    ) || t.starts_with(|c: char| c.is_ascii_digit())
}

/// `text` without `/* ... */` comments.
fn strip_comments(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        match rest[i..].find("*/") {
            Some(j) => rest = &rest[i + j + 2..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Parses a module's text. An error on a last line that ends without a newline says the
/// text looks truncated, since a cut file fails there in whatever way the cut falls.
pub(crate) fn parse_module(text: &str) -> Result<Module, TextError> {
    parse_whole(text).map_err(|mut e| {
        let last = text.trim_end_matches('\n').lines().count();
        if e.line == last && !text.ends_with('\n') && !e.msg.starts_with("truncated") {
            e.msg = format!(
                "truncated text (the last line ends without a newline): {}",
                e.msg
            );
        }
        e
    })
}

fn parse_whole(text: &str) -> Result<Module, TextError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, strip_comments(l)));
    let (first, header) = loop {
        match lines.next() {
            Some((_, l)) if l.trim().is_empty() => continue,
            Some((n, l)) => break (n, l),
            None => return Err(at(1, None, "empty text: expected `HloModule name, ...`")),
        }
    };
    let (name, scheduled) = module_header(first, &header)?;
    let mut computations: Vec<Computation> = Vec::new();
    let mut entry = None;
    let mut open: Option<(usize, String, bool, Vec<Raw>)> = None;
    let mut last_line = first;
    for (n, line) in lines {
        last_line = n;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        match &mut open {
            None => {
                if let Some(head) = t.strip_suffix('{') {
                    let (cname, is_entry) = computation_head(n, head)?;
                    open = Some((n, cname, is_entry, Vec::new()));
                } else if !is_table_line(t) {
                    return Err(at(
                        n,
                        None,
                        format!("expected a computation (`name {{`), found `{}`", snippet(t)),
                    ));
                }
            }
            Some((start, cname, is_entry, insts)) => {
                if t == "}" {
                    let comp = finish(*start, cname, std::mem::take(insts))?;
                    if *is_entry {
                        if entry.is_some() {
                            return Err(at(*start, None, "a second ENTRY computation"));
                        }
                        entry = Some(computations.len());
                    }
                    computations.push(comp);
                    open = None;
                } else {
                    insts.push(parse_instruction(n, t)?);
                }
            }
        }
    }
    if let Some((start, cname, _, _)) = open {
        return Err(at(
            last_line,
            None,
            format!(
                "truncated text: computation `{cname}` opened at line {start} has no closing `}}`"
            ),
        ));
    }
    let entry = entry.ok_or_else(|| at(last_line, None, "no ENTRY computation"))?;
    let by_name = by_name(&computations)?;
    let calls = graph::calls(&mut computations, &by_name)?;
    let callees_first = graph::callees_first(&computations, &calls)?;
    Ok(Module {
        name,
        scheduled,
        computations,
        entry,
        callees_first,
    })
}

/// The module's name and whether it is scheduled, from its `HloModule name, ...` line.
fn module_header(line: usize, header: &str) -> Result<(String, bool), TextError> {
    let header = header.trim();
    let Some(rest) = header.strip_prefix("HloModule ") else {
        return Err(at(
            line,
            None,
            format!(
                "expected `HloModule name, ...` (HLO text), found `{}`",
                snippet(header)
            ),
        ));
    };
    let name = rest
        .split([',', ' '])
        .next()
        .unwrap_or_default()
        .to_string();
    Ok((name, rest.contains("is_scheduled=true")))
}

/// A computation's name and whether it is the entry, from the line that opens it (its `{`
/// taken off).
fn computation_head(line: usize, head: &str) -> Result<(String, bool), TextError> {
    let (is_entry, head) = match head.trim().strip_prefix("ENTRY ") {
        Some(h) => (true, h.trim()),
        None => (false, head.trim()),
    };
    let name = head
        .split([' ', '('])
        .next()
        .unwrap_or_default()
        .trim_start_matches('%');
    if name.is_empty() {
        return Err(at(line, None, "a computation needs a name before `{`"));
    }
    Ok((name.to_string(), is_entry))
}

/// The computations by name, each name once.
fn by_name(computations: &[Computation]) -> Result<HashMap<String, usize>, TextError> {
    let mut by_name = HashMap::new();
    for (i, c) in computations.iter().enumerate() {
        if let Some(first) = by_name.insert(c.name.clone(), i) {
            return Err(at(
                c.line,
                None,
                format!(
                    "a second computation named `{}` (the first at line {})",
                    c.name, computations[first].line
                ),
            ));
        }
    }
    Ok(by_name)
}

/// A raw instruction: operand names not yet resolved.
struct Raw {
    inst: Instruction,
    operand_names: Vec<String>,
    is_root: bool,
}

/// Resolves operand names within the computation and finds its root. An operand is an
/// instruction on an earlier line (XLA prints them so), so following operands always
/// ends; parameters are numbered `0..n` once each.
fn finish(start: usize, name: &str, raws: Vec<Raw>) -> Result<Computation, TextError> {
    let mut index = HashMap::new();
    for (i, r) in raws.iter().enumerate() {
        if index.insert(r.inst.name.as_str(), i).is_some() {
            return Err(r.inst.error("a second instruction of this name"));
        }
    }
    let mut root = None;
    let mut operands = Vec::with_capacity(raws.len());
    for (i, r) in raws.iter().enumerate() {
        let inst = &r.inst;
        let mut ops = Vec::with_capacity(r.operand_names.len());
        for op in &r.operand_names {
            let j = *index.get(op.as_str()).ok_or_else(|| {
                inst.error(format!(
                    "operand `%{op}` is not an instruction of computation `{name}`"
                ))
            })?;
            if j == i {
                return Err(inst.error(format!("`%{op}` names itself as its operand")));
            }
            if j > i {
                return Err(inst.error(format!(
                    "operand `%{op}` is used before the line that defines it"
                )));
            }
            ops.push(j);
        }
        if r.is_root {
            root = Some(i);
        }
        operands.push(ops);
    }
    let mut instructions: Vec<Instruction> = raws.into_iter().map(|r| r.inst).collect();
    for (inst, ops) in instructions.iter_mut().zip(operands) {
        inst.operands = ops;
        arity::check(inst)?;
        inst.number = match inst.opcode.as_str() {
            "parameter" => inst.literal.trim().parse().ok(),
            "get-tuple-element" => inst.attr("index").and_then(|v| v.parse().ok()),
            _ => None,
        };
    }
    check_parameters(&instructions, name)?;
    // A computation without a `ROOT` mark returns its last instruction, as XLA reads it.
    let root = match root.or(instructions.len().checked_sub(1)) {
        Some(r) => r,
        None => return Err(at(start, None, format!("computation `{name}` is empty"))),
    };
    Ok(Computation {
        name: name.to_string(),
        line: start,
        instructions,
        root,
    })
}

/// Each `parameter(k)` of a computation of `n` parameters has a `k` below `n`, once.
fn check_parameters(instructions: &[Instruction], name: &str) -> Result<(), TextError> {
    let params: Vec<&Instruction> = instructions
        .iter()
        .filter(|i| i.opcode == "parameter")
        .collect();
    let mut seen: Vec<Option<usize>> = vec![None; params.len()];
    for p in &params {
        let k = parameter_number(p)?;
        let slot = seen.get_mut(k).ok_or_else(|| {
            p.error(format!(
                "parameter({k}), but computation `{name}` has {} parameter(s), numbered from 0",
                params.len()
            ))
        })?;
        if let Some(first) = slot.replace(p.line) {
            return Err(p.error(format!(
                "a second parameter({k}) (the first at line {first})"
            )));
        }
    }
    Ok(())
}

/// The `k` of `parameter(k)`.
pub(crate) fn parameter_number(inst: &Instruction) -> Result<usize, TextError> {
    inst.number.ok_or_else(|| {
        inst.error(format!(
            "parameter({}): not a parameter number",
            snippet(&inst.literal)
        ))
    })
}

/// Splits `s` at commas outside brackets and quotes.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quoted, mut escaped, mut start) = (0i32, false, false, 0);
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
        match c {
            '"' => quoted = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

fn parse_instruction(line: usize, t: &str) -> Result<Raw, TextError> {
    let (is_root, t) = match t.strip_prefix("ROOT ") {
        Some(r) => (true, r.trim_start()),
        None => (false, t),
    };
    let Some((lhs, rhs)) = t.split_once(" = ") else {
        return Err(at(
            line,
            None,
            format!(
                "expected an instruction `%name = shape opcode(...)` or `}}`, found `{}`",
                snippet(t)
            ),
        ));
    };
    let name = lhs.trim().trim_start_matches('%').to_string();
    let bad = |msg: String| at(line, Some(&name), msg);
    let (shape, rest) = shape::parse_prefix(rhs)
        .map_err(|e| bad(format!("shape `{}` does not parse: {e}", snippet(rhs))))?;
    let rest = rest.trim_start();
    let open = rest.find('(').ok_or_else(|| {
        bad(format!(
            "expected `opcode(operands)` after the shape, found `{}`",
            snippet(rest)
        ))
    })?;
    let opcode = rest[..open].trim().to_string();
    if opcode.is_empty()
        || !opcode
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(bad(format!(
            "`{}` is not an opcode",
            snippet(&rest[..open])
        )));
    }
    let close = matching(&rest[open..], '(', ')').ok_or_else(|| {
        bad(format!(
            "the operands of `{opcode}(` have no closing `)` (truncated line?)"
        ))
    })? + open;
    let inside = &rest[open + 1..close];
    let (literal, operand_names) = if opcode == "constant" || opcode == "parameter" {
        (inside.trim().to_string(), Vec::new())
    } else {
        (String::new(), operand_names(inside))
    };
    let attrs = attributes(rest[close + 1..].trim()).map_err(bad)?;
    Ok(Raw {
        inst: Instruction {
            name,
            line,
            shape,
            opcode,
            operands: Vec::new(),
            literal,
            attrs,
            number: None,
            callees: Vec::new(),
        },
        operand_names,
        is_root,
    })
}

/// The names of the operands between an instruction's parentheses.
fn operand_names(inside: &str) -> Vec<String> {
    split_top(inside)
        .into_iter()
        .map(|op| {
            let op = op.trim();
            // `f32[8,16]{1,0} %x` in scheduled modules, `x` or `%x` before optimization.
            let last = op.rsplit(' ').next().unwrap_or(op);
            last.trim_start_matches('%').to_string()
        })
        .collect()
}

/// The `, key=value, ...` after an instruction's operands (empty: none).
fn attributes(after: &str) -> Result<Vec<(String, String)>, String> {
    if after.is_empty() {
        return Ok(Vec::new());
    }
    let Some(list) = after.strip_prefix(',') else {
        return Err(format!(
            "expected `, attr=value` after the operands, found `{}`",
            snippet(after)
        ));
    };
    split_top(list)
        .into_iter()
        .map(|a| {
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| format!("attribute `{}` is not `key=value`", snippet(a)))?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "HloModule m, is_scheduled=true

FileNames
1 \"x.py\"

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4,8]) -> (f32[4], f32[4,8]) {
  %x = f32[4,8]{1,0} parameter(0), metadata={op_name=\"x\"}
  %zero = f32[] constant(0)
  %r = f32[4]{0} reduce(f32[4,8]{1,0} %x, f32[] %zero), dimensions={1}, to_apply=%add
  ROOT %t = (f32[4]{0}, /*index=1*/f32[4,8]{1,0}) tuple(%r, %x)
}
";

    #[test]
    fn a_scheduled_module_parses() {
        let m = parse_module(SMALL).unwrap();
        assert!(m.scheduled);
        assert_eq!(m.computations.len(), 2);
        let main = &m.computations[m.entry];
        assert_eq!(main.name, "main");
        assert_eq!(main.root, 3);
        let r = &main.instructions[2];
        assert_eq!(
            (r.opcode.as_str(), r.operands.clone()),
            ("reduce", vec![0, 1])
        );
        assert_eq!(r.dims_attr("dimensions").unwrap(), vec![1]);
        assert_eq!(m.called(r, "to_apply").unwrap(), 0);
        assert_eq!(r.line, 15);
        assert_eq!(main.instructions[1].literal, "0");
        assert_eq!(
            main.instructions[0].attr("metadata"),
            Some("{op_name=\"x\"}")
        );
    }

    fn err(text: &str) -> String {
        parse_module(text).unwrap_err().to_string()
    }

    #[test]
    fn bad_text_names_the_line() {
        let truncated = &SMALL[..SMALL.find("ROOT %t").unwrap()];
        assert!(err(truncated).contains("truncated text: computation `main` opened at line 12"));
        let cut_line = &SMALL[..SMALL.find("dimensions={1}").unwrap()];
        assert!(err(cut_line).contains("truncated"), "{}", err(cut_line));
        let e = err(&SMALL.replace("f32[4]{0} reduce", "f32[4}{0} reduce"));
        assert!(e.starts_with("line 15 (`%r`): shape `f32[4}{0}"), "{e}");
        let e = err(&SMALL.replace("%b)", "%c)"));
        assert!(
            e.starts_with("line 9 (`%s`): operand `%c` is not an instruction"),
            "{e}"
        );
        let e = err(&SMALL.replace("to_apply=%add", "to_apply=%mul"));
        assert!(
            e.contains("line 15 (`%r`): to_apply=%mul: no computation"),
            "{e}"
        );
        assert!(err("").contains("empty text"));
        assert!(err("{\"format\": 1}").contains("expected `HloModule"));
        let e = err(&SMALL.replace(
            "  %zero = f32[] constant(0)\n",
            "  zero f32[] constant(0)\n",
        ));
        assert!(e.starts_with("line 14: expected an instruction"), "{e}");
    }
}
