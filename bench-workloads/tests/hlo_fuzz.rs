//! The HLO loader against mutated real HLO: the bundled JAX programs and the cross-check
//! programs, each cut, doubled, swapped, renumbered and garbled by seeded mutations.
//! Every load gives a program or one error naming the file and a line; never a panic (the
//! seed is printed), and never past the op budget set for the run.
//!
//! Stable Rust has no cargo-fuzz, so this is a fixed number of seeded mutations, quick
//! enough for every CI run (`cargo test --release -p bench-workloads --test hlo_fuzz`).
//! `HLO_FUZZ_ITERATIONS=N` runs more; `HLO_FUZZ_SEED=S` replays one seed and prints its
//! text's first difference from the original.

use bench_workloads::hlo::{parse_program_with, Options};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// Mutated loads in a run: 3.5-4.5 s in release mode on a shared 2-core machine.
const ITERATIONS: u64 = 4_000;

/// The op budget of a mutated load: the largest program here inlines to a few thousand
/// instructions, so a mutation that makes a loop or a call big meets the bound quickly.
const MAX_OPS: u64 = 200_000;

/// A seeded xorshift generator: the same seed, the same mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn seeds() -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["data/jax", "tests/data/hlo"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".hlo.txt"))
            .collect();
        paths.sort();
        for p in paths {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            files.push((name, std::fs::read_to_string(&p).unwrap()));
        }
    }
    assert!(files.len() >= 10, "{} HLO files", files.len());
    files
}

/// Numbers a mutation puts in: edges of every integer type the loader reads.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "255",
    "65536",
    "2147483648",
    "4294967296",
    "99999999999",
    "4611686018427387904",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
];

/// Text a mutation inserts: the format's own punctuation and keywords.
const PIECES: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    "=",
    "%",
    "\"",
    "/*",
    "*/",
    " ",
    "ROOT ",
    "ENTRY ",
    "()",
    "(f32[], s32[])",
    "token[]",
    "f32[]",
    "tuple",
    "while",
    "call",
    "fusion",
];

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

/// The byte offsets of maximal runs of ASCII digits in `s`.
fn numbers(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let j = (i..b.len())
                .find(|&j| !b[j].is_ascii_digit())
                .unwrap_or(b.len());
            out.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The identifiers (`%name`, `name=`, bare words) of a line, as byte ranges.
fn words(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'-';
    let mut i = 0;
    while i < b.len() {
        if word(b[i]) {
            let j = (i..b.len()).find(|&j| !word(b[j])).unwrap_or(b.len());
            out.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// One mutation of `text`.
fn mutate(text: &mut Vec<String>, rng: &mut Rng) {
    if text.is_empty() {
        let piece = PIECES[rng.below(PIECES.len())];
        text.push(piece.to_string());
        return;
    }
    let n = text.len();
    let at = rng.below(n);
    match rng.below(10) {
        0 => {
            text.remove(at);
        }
        1 => {
            let line = text[at].clone();
            text.insert(rng.below(n + 1), line);
        }
        2 => text.swap(at, rng.below(n)),
        3 | 4 => {
            // A number changed to an edge value.
            let nums = numbers(&text[at]);
            if !nums.is_empty() {
                let (a, b) = *rng.pick(&nums);
                let number = NUMBERS[rng.below(NUMBERS.len())];
                text[at].replace_range(a..b, number);
            }
        }
        5 => {
            // A word replaced by a word of another line: operands, callees, opcodes and
            // shapes mixed up (cycles, forward uses, wrong arities).
            let from = rng.below(n);
            let (src, dst) = (words(&text[from]), words(&text[at]));
            if !src.is_empty() && !dst.is_empty() {
                let (a, b) = *rng.pick(&src);
                let w = text[from][a..b].to_string();
                let (c, d) = *rng.pick(&dst);
                text[at].replace_range(c..d, &w);
            }
        }
        6 => {
            // A word deleted.
            let ws = words(&text[at]);
            if !ws.is_empty() {
                let (a, b) = *rng.pick(&ws);
                text[at].replace_range(a..b, "");
            }
        }
        7 => {
            // Punctuation or a keyword inserted.
            let piece = PIECES[rng.below(PIECES.len())];
            let line = &mut text[at];
            let k = (0..=line.len())
                .filter(|&k| line.is_char_boundary(k))
                .nth(rng.below(line.len() + 1))
                .unwrap_or(0);
            line.insert_str(k, piece);
        }
        8 => {
            // The text cut, in a line's middle or at its end.
            text.truncate(at + 1);
            let line = &mut text[at];
            let k = rng.below(line.len() + 1);
            if line.is_char_boundary(k) {
                line.truncate(k);
            }
        }
        _ => {
            // A run of lines doubled (a computation twice, a block of parameters twice).
            let len = 1 + rng.below(8);
            let block: Vec<String> = text[at..(at + len).min(n)].to_vec();
            let to = rng.below(n + 1);
            for (k, l) in block.into_iter().enumerate() {
                text.insert(to + k, l);
            }
        }
    }
}

/// The mutated text of `seed`: its file and its text.
fn case(files: &[(String, String)], seed: u64) -> (String, String) {
    let mut rng = Rng::new(seed);
    let (name, text) = rng.pick(files);
    let mut t = lines(text);
    for _ in 0..1 + rng.below(3) {
        mutate(&mut t, &mut rng);
    }
    let mut out = t.join("\n");
    // Most files end in a newline; some mutated ones do not (a cut).
    if rng.below(8) != 0 {
        out.push('\n');
    }
    (name.clone(), out)
}

/// Loads one mutated text: whether it loaded, or how the loader failed the contract.
fn check(name: &str, text: &str) -> Result<bool, String> {
    let options = Options {
        max_ops: Some(MAX_OPS),
        ..Options::default()
    };
    let loaded = catch_unwind(AssertUnwindSafe(|| {
        parse_program_with(text, name, &options)
    }));
    match loaded {
        Err(_) => Err("panicked".into()),
        Ok(Ok(_)) => Ok(true),
        Ok(Err(e)) => {
            let e = e.to_string();
            let line = e
                .strip_prefix(&format!("{name}: line "))
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
            if line && !e.contains('\n') {
                Ok(false)
            } else {
                Err(format!(
                    "an error without `{name}: line N` on one line: {e}"
                ))
            }
        }
    }
}

fn first_difference(a: &str, b: &str) -> String {
    let (a, b) = (lines(a), lines(b));
    for k in 0..a.len().max(b.len()) {
        if a.get(k) != b.get(k) {
            return format!(
                "line {}: `{}` became `{}`",
                k + 1,
                a.get(k).map_or("", |s| s.as_str()),
                b.get(k).map_or("", |s| s.as_str())
            );
        }
    }
    "no difference".into()
}

#[test]
fn mutated_hlo_loads_or_names_a_line_never_panics() {
    let files = seeds();
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let seeds: Vec<u64> = match env("HLO_FUZZ_SEED") {
        Some(s) => vec![s],
        None => (0..env("HLO_FUZZ_ITERATIONS").unwrap_or(ITERATIONS)).collect(),
    };
    let replay = seeds.len() == 1;
    let started = std::time::Instant::now();
    let (mut loaded, mut refused, mut slowest) = (0, 0, (std::time::Duration::ZERO, 0));
    let mut failures = Vec::new();
    for &seed in &seeds {
        let (name, text) = case(&files, seed);
        if replay {
            let original = &files.iter().find(|(n, _)| *n == name).unwrap().1;
            eprintln!("seed {seed}: {name}, {}", first_difference(original, &text));
        }
        let t = std::time::Instant::now();
        let outcome = check(&name, &text);
        slowest = slowest.max((t.elapsed(), seed));
        match outcome {
            Ok(true) => loaded += 1,
            Ok(false) => refused += 1,
            Err(why) => failures.push(format!("seed {seed} ({name}): {why}")),
        }
    }
    eprintln!(
        "{} mutated loads in {:.1?}: {loaded} loaded, {refused} refused naming a line; slowest {:.1?} (seed {})",
        seeds.len(),
        started.elapsed(),
        slowest.0,
        slowest.1
    );
    assert!(
        failures.is_empty(),
        "{} of {} failed (replay one with HLO_FUZZ_SEED=S):\n{}",
        failures.len(),
        seeds.len(),
        failures.join("\n")
    );
    if !replay {
        // The mutations reach both outcomes.
        assert!(
            loaded > 0 && refused > 0,
            "{loaded} loaded, {refused} refused"
        );
    }
}

#[test]
fn every_seed_file_loads_unmutated() {
    for (name, text) in seeds() {
        parse_program_with(text.as_str(), &name, &Options::default())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/jax")
        .is_dir());
}
