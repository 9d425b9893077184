//! minimalloc-style lifetime CSVs: one buffer per row, columns `id,lower,upper,size`
//! (any order, header row first), optionally `offset` (a placement found by some allocator,
//! as in idealloc's files); other columns are ignored. A buffer lives in the half-open
//! interval `[lower, upper)`.
//!
//! As a program: every buffer is an activation written by the op at time `lower` and read
//! by the op at time `upper - 1` (not read at all when `upper - 1 == lower`: its live range
//! is then `[lower, lower]`). Ops have no FLOPs. Two buffers overlap in time in the program
//! exactly when their intervals overlap in the file.
//!
//! By default ([`TimeAxis::Compressed`]) only the times at which some buffer starts or is
//! last read become ops: minimalloc's benchmarks span 1,048,576 time steps with fewer than
//! 250 distinct event times, and the empty steps would only add empty ops (and per-op
//! overheads in the simulator). Compressing keeps the order of every pair of endpoints, so
//! it keeps which buffers overlap; [`CsvInstance::times`] maps each op back to its time in
//! the file. [`TimeAxis::Original`] keeps one op per time step `0..max(upper)`.

use crate::WorkloadError;
use accel_sim::{Buffer, BufferKind, Op, Program};
use std::collections::HashMap;
use std::path::Path;

/// How file times become ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TimeAxis {
    /// One op per distinct event time (a `lower` or an `upper - 1`), in order.
    #[default]
    Compressed,
    /// One op per time step `0..max(upper)`.
    Original,
}

/// A CSV instance as a program, with the capacity in its file name if any.
#[derive(Clone, Debug)]
pub struct CsvInstance {
    /// Buffers in file order, named by their `id`.
    pub program: Program,
    /// The number in the file name `<name>.<capacity>.csv`, if there is one.
    pub capacity: Option<u64>,
    /// The `offset` column, in file order, when the file has one.
    pub offsets: Option<Vec<u64>>,
    /// The file time of each op (`times[t]` for op `t`); `0..max(upper)` for
    /// [`TimeAxis::Original`].
    pub times: Vec<u64>,
}

/// Loads a CSV with compressed times (see the module docs).
pub fn load_file(path: &Path) -> Result<CsvInstance, WorkloadError> {
    load_file_with(path, TimeAxis::Compressed)
}

/// Loads a CSV with the given time axis.
pub fn load_file_with(path: &Path, axis: TimeAxis) -> Result<CsvInstance, WorkloadError> {
    let shown = path.display().to_string();
    let text = accel_sim::read_text(path)?;
    parse_str(&text, &shown, axis)
}

/// Parses CSV text; `origin` is the file name (or path): errors name it, the program is
/// named after its stem, and a stem ending in `.<digits>` gives the capacity.
pub fn parse_str(text: &str, origin: &str, axis: TimeAxis) -> Result<CsvInstance, WorkloadError> {
    let path = Path::new(origin);
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(origin)
        .to_string();
    let capacity = stem
        .rsplit_once('.')
        .and_then(|(_, digits)| digits.parse::<u64>().ok());
    let err = |msg: String| WorkloadError::Parse {
        origin: origin.to_string(),
        msg,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let Some((header_line, header)) = lines.next() else {
        return Err(err(
            "empty file (expected a header `id,lower,upper,size`)".into()
        ));
    };
    let columns = Columns::of(header_line, header).map_err(err)?;
    let (rows, offsets) = rows(lines, &columns).map_err(err)?;
    let times = op_times(&rows, axis).map_err(err)?;
    let description = format!(
        "{} buffer lifetimes from {}{}",
        rows.len(),
        path.file_name().and_then(|s| s.to_str()).unwrap_or(origin),
        capacity.map_or(String::new(), |c| format!(" (capacity {c} bytes)"))
    );
    let (buffers, ops) = buffers_and_ops(&rows, &times);
    let program =
        Program::new(stem, description, buffers, ops).map_err(|source| WorkloadError::Program {
            origin: origin.to_string(),
            source,
        })?;
    Ok(CsvInstance {
        program,
        capacity,
        offsets,
        times,
    })
}

/// The header's columns: where each of `id,lower,upper,size` is, and `offset` if present.
struct Columns<'a> {
    names: Vec<&'a str>,
    id: usize,
    lower: usize,
    upper: usize,
    size: usize,
    offset: Option<usize>,
}

impl<'a> Columns<'a> {
    /// The header on line `line`.
    fn of(line: usize, header: &'a str) -> Result<Columns<'a>, String> {
        let names: Vec<&str> = header.split(',').map(str::trim).collect();
        let column = |want: &str| -> Result<Option<usize>, String> {
            let mut found = names.iter().enumerate().filter(|(_, n)| **n == want);
            let first = found.next().map(|(i, _)| i);
            if found.next().is_some() {
                return Err(format!("line {line}: column `{want}` appears twice"));
            }
            Ok(first)
        };
        let required = |want: &str| -> Result<usize, String> {
            column(want)?.ok_or_else(|| {
                format!(
                    "line {line}: missing column `{want}` (header is `{header}`; \
                     expected `id,lower,upper,size`)"
                )
            })
        };
        let (id, lower, upper, size) = (
            required("id")?,
            required("lower")?,
            required("upper")?,
            required("size")?,
        );
        let offset = column("offset")?;
        Ok(Columns {
            names,
            id,
            lower,
            upper,
            size,
            offset,
        })
    }
}

/// One buffer's row.
struct Row<'a> {
    id: &'a str,
    lower: u64,
    upper: u64,
    size: u64,
}

/// The rows after the header (numbered lines), checked, and the `offset` column's values
/// where there is one.
fn rows<'a>(
    lines: impl Iterator<Item = (usize, &'a str)>,
    c: &Columns<'_>,
) -> Result<(Vec<Row<'a>>, Option<Vec<u64>>), String> {
    let names = &c.names;
    let mut rows: Vec<Row> = Vec::new();
    let mut offsets: Option<Vec<u64>> = c.offset.map(|_| Vec::new());
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut fields: Vec<&str> = Vec::with_capacity(names.len());
    for (line, l) in lines {
        fields.clear();
        fields.extend(l.split(',').map(str::trim));
        if fields.len() != names.len() {
            return Err(format!(
                "line {line}: expected {} fields (as the header), got {}",
                names.len(),
                fields.len()
            ));
        }
        let num = |col: usize| -> Result<u64, String> {
            fields[col].parse::<u64>().map_err(|_| {
                format!(
                    "line {line}, column `{}`: expected a non-negative integer, got `{}`",
                    names[col], fields[col]
                )
            })
        };
        let id = fields[c.id];
        if id.is_empty() {
            return Err(format!("line {line}, column `id`: empty"));
        }
        let (lower, upper, size) = (num(c.lower)?, num(c.upper)?, num(c.size)?);
        if size == 0 {
            return Err(format!("line {line}, column `size`: must be > 0, got 0"));
        }
        if lower >= upper {
            return Err(format!("line {line}: lower {lower} >= upper {upper}"));
        }
        if let Some(first) = seen.insert(id, line) {
            return Err(format!(
                "line {line}: duplicate id `{id}` (first on line {first})"
            ));
        }
        if let (Some(col), Some(v)) = (c.offset, offsets.as_mut()) {
            v.push(num(col)?);
        }
        rows.push(Row {
            id,
            lower,
            upper,
            size,
        });
    }
    if rows.is_empty() {
        return Err("no buffers (only a header)".into());
    }
    Ok((rows, offsets))
}

/// The op times: every event time, or every time step.
fn op_times(rows: &[Row<'_>], axis: TimeAxis) -> Result<Vec<u64>, String> {
    Ok(match axis {
        TimeAxis::Compressed => {
            let mut t: Vec<u64> = rows.iter().flat_map(|r| [r.lower, r.upper - 1]).collect();
            t.sort_unstable();
            t.dedup();
            t
        }
        TimeAxis::Original => {
            let end = rows.iter().map(|r| r.upper).max().unwrap_or(0);
            // A time axis this long would not fit in memory; say so rather than abort.
            if end > 50_000_000 {
                return Err(format!(
                    "max upper {end} is too many time steps for one op each; \
                     load with compressed times"
                ));
            }
            (0..end).collect()
        }
    })
}

/// An activation per row, written by the op at its `lower` and read by the op at its
/// `upper - 1`, over an op per time of `times`.
fn buffers_and_ops(rows: &[Row<'_>], times: &[u64]) -> (Vec<Buffer>, Vec<Op>) {
    let op_of = |time: u64| times.binary_search(&time).unwrap_or(0);
    let mut ops: Vec<Op> = times
        .iter()
        .map(|t| Op {
            name: format!("t{t}"),
            kind: "event".into(),
            flops: 0.0,
            reads: Vec::new(),
            writes: Vec::new(),
        })
        .collect();
    let mut buffers = Vec::with_capacity(rows.len());
    for (b, r) in rows.iter().enumerate() {
        buffers.push(Buffer {
            name: r.id.to_string(),
            size: r.size,
            kind: BufferKind::Activation,
        });
        let (def, last) = (op_of(r.lower), op_of(r.upper - 1));
        ops[def].writes.push(b);
        if last != def {
            ops[last].reads.push(b);
        }
    }
    (buffers, ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The third-party instances committed with the crate (see `data/*/README.md`).
    const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data");

    fn data_files(dir: &str) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(format!("{DATA}/{dir}"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            .collect();
        v.sort();
        v
    }

    /// The intervals of a file, straight from its text, for cross-checking.
    fn intervals(path: &Path) -> Vec<(u64, u64, u64)> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let f: Vec<u64> = l
                    .split(',')
                    .skip(1)
                    .take(3)
                    .map(|x| x.trim().parse().unwrap())
                    .collect();
                (f[0], f[1], f[2])
            })
            .collect()
    }

    #[test]
    fn input_12_keeps_its_live_ranges() {
        let path = PathBuf::from(format!("{DATA}/minimalloc/input.12.csv"));
        let c = load_file_with(&path, TimeAxis::Original).unwrap();
        let p = &c.program;
        assert_eq!(c.capacity, Some(12));
        assert_eq!(p.name(), "input.12");
        assert_eq!(p.buffers().len(), 5);
        assert_eq!(p.len(), 21);
        assert!(c.offsets.is_none());
        let want = [(0, 2), (3, 8), (0, 8), (9, 20), (0, 20)];
        for (b, &w) in want.iter().enumerate() {
            assert_eq!(p.live_range(b), w, "{}", p.buffer(b).name);
            assert_eq!(p.buffer(b).size, 4);
        }
        assert_eq!(p.buffer(1).name, "b2");
        assert_eq!(p.peak_live_bytes(), 12, "tight: peak equals the capacity");
        // Compressed: the same live ranges through `times`, and fewer ops.
        let c2 = load_file(&path).unwrap();
        assert_eq!(c2.times, vec![0, 2, 3, 8, 9, 20]);
        for (b, &(s, e)) in want.iter().enumerate() {
            let (cs, ce) = c2.program.live_range(b);
            assert_eq!((c2.times[cs], c2.times[ce]), (s as u64, e as u64));
        }
        assert_eq!(c2.program.peak_live_bytes(), 12);
    }

    #[test]
    fn every_bundled_file_loads_with_its_overlaps() {
        let files: Vec<PathBuf> = data_files("minimalloc")
            .into_iter()
            .chain(data_files("idealloc"))
            .collect();
        assert!(files.len() >= 14, "{files:?}");
        for f in &files {
            let start = std::time::Instant::now();
            let c = load_file(f).unwrap_or_else(|e| panic!("{e}"));
            let secs = start.elapsed().as_secs_f64();
            assert!(secs < 1.0, "{}: {secs} s", f.display());
            let iv = intervals(f);
            let p = &c.program;
            assert_eq!(p.buffers().len(), iv.len());
            // Live ranges map back to [lower, upper - 1] exactly.
            for (b, &(lo, up, size)) in iv.iter().enumerate() {
                let (s, e) = p.live_range(b);
                assert_eq!(
                    (c.times[s], c.times[e], p.buffer(b).size),
                    (lo, up - 1, size)
                );
            }
            // The peak of the file's intervals is the program's peak.
            let mut ev: Vec<(u64, i128)> = iv
                .iter()
                .flat_map(|&(lo, up, s)| [(lo, s as i128), (up, -(s as i128))])
                .collect();
            ev.sort_by_key(|&(t, d)| (t, d));
            let (mut cur, mut peak) = (0i128, 0i128);
            for (_, d) in ev {
                cur += d;
                peak = peak.max(cur);
            }
            assert_eq!(p.peak_live_bytes() as i128, peak, "{}", f.display());
        }
        let mb = load_file(&PathBuf::from(format!(
            "{DATA}/idealloc/iree_mobilebert.csv"
        )))
        .unwrap();
        assert_eq!(mb.offsets.as_ref().map(Vec::len), Some(316));
        assert_eq!(mb.capacity, None);
        let a = load_file(&PathBuf::from(format!("{DATA}/minimalloc/A.1048576.csv"))).unwrap();
        assert_eq!(a.capacity, Some(1_048_576));
        assert!(a.program.len() <= 2 * 154, "compressed to its event times");
    }

    fn bad(name: &str, text: &str) -> String {
        let dir = std::env::temp_dir().join(format!("bench-workloads-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let e = load_file(&path).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        e
    }

    #[test]
    fn bad_files_name_the_file_line_and_column() {
        let h = "id,lower,upper,size\n";
        let e = bad(
            "A.csv",
            &format!("{h}a,0,1,4\nb,0,1,4\nc,0,1,4\nd,0,1,4\ne,0,1,4\nf,1,2,0\n"),
        );
        assert!(
            e.ends_with("A.csv: line 7, column `size`: must be > 0, got 0"),
            "{e}"
        );
        let e = bad("B.csv", &format!("{h}a,0,1,4\nb,10,5,4\n"));
        assert!(e.ends_with("B.csv: line 3: lower 10 >= upper 5"), "{e}");
        let e = bad("C.csv", "id,lower,size\na,0,4\n");
        assert!(e.contains("C.csv: line 1: missing column `upper`"), "{e}");
        let e = bad("D.csv", &format!("{h}a,0,x1,4\n"));
        assert!(
            e.contains("D.csv: line 2, column `upper`: expected a non-negative integer, got `x1`"),
            "{e}"
        );
        let e = bad("E.csv", &format!("{h}a,-1,3,4\n"));
        assert!(
            e.contains("line 2, column `lower`") && e.contains("`-1`"),
            "{e}"
        );
        let e = bad("F.csv", &format!("{h}a,0,1,4\nb,0,1,4\na,2,3,4\n"));
        assert!(
            e.contains("F.csv: line 4: duplicate id `a` (first on line 2)"),
            "{e}"
        );
        let e = bad("G.csv", &format!("{h}a,0,1\n"));
        assert!(e.contains("line 2: expected 4 fields"), "{e}");
        let e = bad("H.csv", "");
        assert!(e.contains("H.csv: empty file"), "{e}");
        let e = bad("I.csv", h);
        assert!(e.contains("I.csv: no buffers"), "{e}");
        let e = bad("J.csv", "id,lower,upper,size,size\n");
        assert!(e.contains("column `size` appears twice"), "{e}");
        // Only this test writes there; the files are gone, so the directory is empty.
        let dir = std::env::temp_dir().join(format!("bench-workloads-csv-{}", std::process::id()));
        std::fs::remove_dir(dir).unwrap();
        let e = load_file(Path::new("/nonexistent/x.csv"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/nonexistent/x.csv:"), "{e}");
    }

    #[test]
    fn columns_in_any_order_and_single_step_buffers() {
        let c = parse_str(
            "size,upper,lower,id,offset,note\n4,1,0,x,8,hi\r\n2,3,1,y,0,\n",
            "dir/t.7.csv",
            TimeAxis::Original,
        )
        .unwrap();
        assert_eq!(c.capacity, Some(7));
        assert_eq!(c.program.name(), "t.7");
        assert_eq!(c.offsets, Some(vec![8, 0]));
        // x lives in [0, 1): written at 0 and never read.
        assert_eq!(c.program.live_range(0), (0, 0));
        assert!(c.program.uses(0).is_empty());
        assert_eq!(c.program.live_range(1), (1, 2));
        assert_eq!(c.program.len(), 3);
        let n = parse_str(
            "id,lower,upper,size\na,0,2,1\n",
            "plain.csv",
            TimeAxis::Compressed,
        )
        .unwrap();
        assert_eq!(n.capacity, None);
        assert_eq!(n.program.name(), "plain");
    }
}
