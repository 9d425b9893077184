//! A large matrix product computed block-wise by an AlphaTensor algorithm: the "AlphaTensor
//! model" of the mallocMuZero paper's last experiment.
//!
//! The algorithm is AlphaTensor's (4,4,4) rank-49 factorization in standard arithmetic, from
//! github.com/google-deepmind/alphatensor (commit 1949163d, `algorithms/factorizations_r.npz`),
//! embedded as text in `data/alphatensor_444_rank49.txt`. Licence of that data: CC BY 4.0,
//! "Copyright 2022 DeepMind Technologies Limited".
//!
//! A factorization of the `(n, m, p)` matmul tensor is three integer matrices U (`n*m x R`),
//! V (`m*p x R`), W (`n*p x R`): for `C = A B` with A `n x m` and B `m x p`,
//! `m_r = (sum_i U[i,r] a_i) (sum_j V[j,r] b_j)` and `c_k = sum_r W[k,r] m_r`.
//! The flattening order, verified by rebuilding the matmul tensor from every factorization in
//! the bundled data file (`data/alphatensor/`, see the tests): `a` is A row-major, `b` is B row-major, and `c` is
//! **C transposed**, row-major: `c_k = C[k % n][k / n]` (AlphaTensor's tensors produce `C^T`).
//!
//! The workload `alphatensor-4x4`: `C = A B` with A and B 8192x8192 bf16, each split into
//! 4x4 blocks of 2048x2048. For each `r` in schedule order: the A-combination, the
//! B-combination, the block product `m_r`, then `m_r` is accumulated into the partial sums of
//! the C blocks it contributes to, as a block-wise implementation would do.

use crate::WorkloadError;
use accel_sim::{Buffer, BufferId, BufferKind, Op, Program};

/// Built-in workloads of this module.
pub const NAMES: [&str; 1] = ["alphatensor-4x4"];

/// Side of the square matrices of the built-in workload.
pub const BUILTIN_N: usize = 8192;

/// bf16.
const BYTES_PER_ELEMENT: u64 = 2;

const EMBEDDED_444: &str = include_str!("../data/alphatensor_444_rank49.txt");
const EMBEDDED_ORIGIN: &str = "alphatensor_444_rank49.txt";

const ATTRIBUTION: &str = "AlphaTensor algorithm from github.com/google-deepmind/alphatensor, \
     CC BY 4.0, Copyright 2022 DeepMind Technologies Limited";

/// A built-in workload by name: `Some` if the name is one of [`NAMES`].
pub fn builtin(name: &str) -> Option<Result<Program, WorkloadError>> {
    match name {
        "alphatensor-4x4" => Some(factorization_444().and_then(|f| matmul_program(BUILTIN_N, &f))),
        _ => None,
    }
}

/// An algorithm for the `(n, m, p)` matrix product with `rank` multiplications.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Factorization {
    n: usize,
    m: usize,
    p: usize,
    rank: usize,
    /// Row-major `n*m x rank`.
    u: Vec<i32>,
    /// Row-major `m*p x rank`.
    v: Vec<i32>,
    /// Row-major `n*p x rank`.
    w: Vec<i32>,
}

impl Factorization {
    /// `(n, m, p)`: A is `n x m`, B is `m x p`.
    pub fn shape(&self) -> (usize, usize, usize) {
        (self.n, self.m, self.p)
    }
    /// Number of multiplications.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// Coefficient of `a_i` (A row-major) in the A-combination of product `r`.
    pub fn u(&self, i: usize, r: usize) -> i32 {
        self.u[i * self.rank + r]
    }
    /// Coefficient of `b_j` (B row-major) in the B-combination of product `r`.
    pub fn v(&self, j: usize, r: usize) -> i32 {
        self.v[j * self.rank + r]
    }
    /// Coefficient of product `r` in `c_k` (C transposed, row-major: see the module docs).
    pub fn w(&self, k: usize, r: usize) -> i32 {
        self.w[k * self.rank + r]
    }

    /// Index into `c` (the W rows) of the entry `C[x][z]`.
    pub fn c_index(&self, x: usize, z: usize) -> usize {
        z * self.n + x
    }

    /// Checks that the factorization rebuilds the matmul tensor exactly, under the
    /// flattening of the module docs. Returns the first wrong entry as an error message.
    pub fn verify(&self) -> Result<(), String> {
        let (n, m, p) = (self.n, self.m, self.p);
        for i in 0..n * m {
            for j in 0..m * p {
                for k in 0..n * p {
                    let got: i64 = (0..self.rank)
                        .map(|r| self.u(i, r) as i64 * self.v(j, r) as i64 * self.w(k, r) as i64)
                        .sum();
                    // T[i,j,k] = 1 iff a_i = A[x][y], b_j = B[y][z], c_k = C[x][z].
                    let (x, y) = (i / m, i % m);
                    let (y2, z) = (j / p, j % p);
                    let want = i64::from(y == y2 && self.c_index(x, z) == k);
                    if got != want {
                        return Err(format!(
                            "({n},{m},{p}) rank {}: sum_r U[{i},r] V[{j},r] W[{k},r] = {got}, \
                             but the matmul tensor has {want} there",
                            self.rank
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs the algorithm on scalars: `a` is `n x m` and `b` is `m x p`, both row-major;
    /// returns `C = a b`, `n x p` row-major. `None` if a slice has the wrong length.
    pub fn multiply(&self, a: &[f64], b: &[f64]) -> Option<Vec<f64>> {
        let (n, m, p) = (self.n, self.m, self.p);
        if a.len() != n * m || b.len() != m * p {
            return None;
        }
        let mut c = vec![0.0; n * p];
        for r in 0..self.rank {
            let sa: f64 = (0..n * m).map(|i| self.u(i, r) as f64 * a[i]).sum();
            let sb: f64 = (0..m * p).map(|j| self.v(j, r) as f64 * b[j]).sum();
            let prod = sa * sb;
            for x in 0..n {
                for z in 0..p {
                    c[x * p + z] += self.w(self.c_index(x, z), r) as f64 * prod;
                }
            }
        }
        Some(c)
    }
}

/// The embedded (4,4,4) rank-49 algorithm.
pub fn factorization_444() -> Result<Factorization, WorkloadError> {
    let mut all = parse_factorizations(EMBEDDED_444, EMBEDDED_ORIGIN)?;
    match all.pop() {
        Some(f) if all.is_empty() && f.shape() == (4, 4, 4) && f.rank == 49 => Ok(f),
        _ => Err(parse_err(
            EMBEDDED_ORIGIN,
            0,
            "expected exactly one factorization, (4,4,4) rank 49".into(),
        )),
    }
}

fn parse_err(origin: &str, line: usize, msg: String) -> WorkloadError {
    WorkloadError::Parse {
        origin: origin.into(),
        msg: if line == 0 {
            msg
        } else {
            format!("line {line}: {msg}")
        },
    }
}

/// Parses the text format of `data/alphatensor/` (see its README.md): a header
/// `# n m p rank R U a x R V b x R W c x R`, then the rows of U, V and W, each prefixed by its
/// letter. Other lines starting with `#` are comments. `origin` names the text in errors.
pub fn parse_factorizations(text: &str, origin: &str) -> Result<Vec<Factorization>, WorkloadError> {
    let mut out = Vec::new();
    // The factorization being read and the rows still expected for it.
    let mut cur: Option<(Factorization, usize)> = None;
    let mut finish = |cur: Option<(Factorization, usize)>, line: usize| match cur {
        Some((f, 0)) => {
            out.push(f);
            Ok(())
        }
        Some((f, left)) => Err(parse_err(
            origin,
            line,
            format!(
                "({},{},{}) rank {}: {left} rows of U, V, W missing",
                f.n, f.m, f.p, f.rank
            ),
        )),
        None => Ok(()),
    };
    let mut last_line = 0;
    for (idx, raw) in text.lines().enumerate() {
        let line = idx + 1;
        last_line = line;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(rest) = l.strip_prefix('#') {
            if let Some(f) = header(rest, origin, line) {
                // The factorization before is complete before this header is read.
                finish(cur.take(), line)?;
                let f = f?;
                let rows = f.n * f.m + f.m * f.p + f.n * f.p;
                cur = Some((f, rows));
            }
            continue;
        }
        let Some((f, left)) = cur.as_mut() else {
            return Err(parse_err(
                origin,
                line,
                "matrix row before any `# n m p rank R` header".into(),
            ));
        };
        if *left == 0 {
            return Err(parse_err(
                origin,
                line,
                "more rows than the header announces".into(),
            ));
        }
        push_row(f, l, origin, line)?;
        *left -= 1;
    }
    finish(cur.take(), last_line)?;
    Ok(out)
}

/// The factorization a `# n m p rank R` header opens, its rows still to read (`None`: the
/// line is a comment).
fn header(rest: &str, origin: &str, line: usize) -> Option<Result<Factorization, WorkloadError>> {
    let toks: Vec<&str> = rest.split_whitespace().collect();
    let nums: Option<Vec<usize>> = toks.iter().take(3).map(|t| t.parse().ok()).collect();
    let is_header = toks.get(3) == Some(&"rank") && nums.as_ref().is_some_and(|v| v.len() == 3);
    if !is_header {
        return None;
    }
    let nums = nums.unwrap_or_default();
    let (n, m, p) = (nums[0], nums[1], nums[2]);
    let Some(rank) = toks.get(4).and_then(|t| t.parse().ok()).filter(|&r| r > 0) else {
        return Some(Err(parse_err(
            origin,
            line,
            "header: rank must be a number > 0".into(),
        )));
    };
    if n == 0 || m == 0 || p == 0 {
        return Some(Err(parse_err(
            origin,
            line,
            format!("header: shape ({n},{m},{p}) has a zero"),
        )));
    }
    Some(Ok(Factorization {
        n,
        m,
        p,
        rank,
        u: Vec::with_capacity(n * m * rank),
        v: Vec::with_capacity(m * p * rank),
        w: Vec::with_capacity(n * p * rank),
    }))
}

/// Reads one row (`U 0 1 -1 ...`) into `f`, checking its letter and its length.
fn push_row(
    f: &mut Factorization,
    l: &str,
    origin: &str,
    line: usize,
) -> Result<(), WorkloadError> {
    let mut toks = l.split_whitespace();
    let letter = toks.next().unwrap_or_default();
    // Rows come in the order U, V, W; which one is due follows from how many are read.
    let (want, dst) = if f.u.len() < f.n * f.m * f.rank {
        ("U", &mut f.u)
    } else if f.v.len() < f.m * f.p * f.rank {
        ("V", &mut f.v)
    } else {
        ("W", &mut f.w)
    };
    if letter != want {
        return Err(parse_err(
            origin,
            line,
            format!("expected a row of {want}, got `{letter}`"),
        ));
    }
    let before = dst.len();
    for t in toks {
        let c: i32 = t
            .parse()
            .map_err(|_| parse_err(origin, line, format!("{want}: `{t}` is not an integer")))?;
        dst.push(c);
    }
    let got = dst.len() - before;
    if got != f.rank {
        return Err(parse_err(
            origin,
            line,
            format!("{want}: row has {got} entries, the rank is {}", f.rank),
        ));
    }
    Ok(())
}

/// `C = A B` for `N x N` bf16 matrices (`N = size`), computed block-wise by `f`: A is split
/// into `n x m` blocks, B into `m x p`, C into `n x p` (see the module docs for the
/// schedule). The program is named `alphatensor-KxK` for a square `(K,K,K)` algorithm,
/// `alphatensor-NxMxP` otherwise.
///
/// Fails if `f` does not compute the matrix product or `size` is not a positive multiple
/// of `n`, `m` and `p`.
pub fn matmul_program(size: usize, f: &Factorization) -> Result<Program, WorkloadError> {
    let (n, m, p) = f.shape();
    let name = if n == m && m == p {
        format!("alphatensor-{n}x{n}")
    } else {
        format!("alphatensor-{n}x{m}x{p}")
    };
    let err = |msg: String| WorkloadError::Parse {
        origin: name.clone(),
        msg,
    };
    f.verify().map_err(err)?;
    if size == 0 || [n, m, p].iter().any(|&d| size / d * d != size) {
        return Err(err(format!(
            "matrix size {size} must be a positive multiple of the block grid ({n},{m},{p})"
        )));
    }
    let (bn, bm, bp) = ((size / n) as u64, (size / m) as u64, (size / p) as u64);
    let mut g = Graph {
        buffers: Vec::new(),
        ops: Vec::new(),
        elems: (bn * bm, bm * bp, bn * bp),
    };
    let a_blocks = g.input_blocks('A', (n, m), g.elems.0);
    let b_blocks = g.input_blocks('B', (m, p), g.elems.1);
    // The last product contributing to each C entry, so its accumulation writes the output.
    let last_r: Vec<Option<usize>> = (0..n * p)
        .map(|k| {
            (0..f.rank())
                .rev()
                .find(|&r| f.w(k, r) != 0 && nonzero(f, r))
        })
        .collect();
    if let Some(k) = last_r.iter().position(|l| l.is_none()) {
        return Err(err(format!(
            "no nonzero product adds into W row {k}: that C entry is never computed"
        )));
    }
    let mut c = Accumulators {
        last_r,
        partial: vec![None; n * p],
        pending: vec![Vec::new(); n * p],
    };
    for r in (0..f.rank()).filter(|&r| nonzero(f, r)) {
        let a_terms: Vec<(i32, BufferId)> = (0..n * m)
            .filter(|&i| f.u(i, r) != 0)
            .map(|i| (f.u(i, r), a_blocks[i]))
            .collect();
        let b_terms: Vec<(i32, BufferId)> = (0..m * p)
            .filter(|&j| f.v(j, r) != 0)
            .map(|j| (f.v(j, r), b_blocks[j]))
            .collect();
        let sa = g.combination(a_terms, format!("a{r}"), g.elems.0);
        let sb = g.combination(b_terms, format!("b{r}"), g.elems.1);
        let prod = g.buffer(format!("m{r}"), g.elems.2, BufferKind::Activation);
        g.ops.push(Op {
            name: format!("m{r} = {} . {}", g.buffers[sa].name, g.buffers[sb].name),
            kind: "matmul".into(),
            flops: 2.0 * (bn * bm * bp) as f64,
            reads: vec![sa, sb],
            writes: vec![prod],
        });
        c.add_product(&mut g, f, r, prod);
    }
    let description = format!(
        "C = A.B, A {size}x{size} and B {size}x{size} bf16, computed block-wise by AlphaTensor's \
         ({n},{m},{p}) rank-{} algorithm: A in {n}x{m} blocks of {bn}x{bm}, B in {m}x{p} blocks of \
         {bm}x{bp}, {} block products instead of {}. {ATTRIBUTION}.",
        f.rank(),
        f.rank(),
        n * m * p
    );
    Program::new(name.clone(), description, g.buffers, g.ops).map_err(|source| {
        WorkloadError::Program {
            origin: name.clone(),
            source,
        }
    })
}

/// Whether product `r` adds anything: a zero U or V column makes a zero product.
fn nonzero(f: &Factorization, r: usize) -> bool {
    let (n, m, p) = f.shape();
    (0..n * m).any(|i| f.u(i, r) != 0) && (0..m * p).any(|j| f.v(j, r) != 0)
}

/// The program under construction, and the elements of an A, a B and a C block.
struct Graph {
    buffers: Vec<Buffer>,
    ops: Vec<Op>,
    elems: (u64, u64, u64),
}

impl Graph {
    fn buffer(&mut self, name: String, elems: u64, kind: BufferKind) -> BufferId {
        self.buffers.push(Buffer {
            name,
            size: elems * BYTES_PER_ELEMENT,
            kind,
        });
        self.buffers.len() - 1
    }

    /// The input matrix `letter`'s blocks, a `rows x cols` grid in row-major order, each of
    /// `elems` elements.
    fn input_blocks(
        &mut self,
        letter: char,
        (rows, cols): (usize, usize),
        elems: u64,
    ) -> Vec<BufferId> {
        (0..rows * cols)
            .map(|i| {
                self.buffer(
                    format!("{letter}[{}][{}]", i / cols, i % cols),
                    elems,
                    BufferKind::Input,
                )
            })
            .collect()
    }

    /// An element-wise op writing `out` (of `elems` elements) from `terms`: one FLOP per
    /// element per added operand (`k` operands take `k - 1` additions, and a lone operand
    /// with a coefficient other than 1 one scaling).
    fn add(&mut self, terms: &[(i32, BufferId)], out: BufferId, out_name: &str, elems: u64) {
        self.ops.push(Op {
            name: format!("{out_name} = {}", describe(terms, &self.buffers)),
            kind: "add".into(),
            flops: (terms.len().max(2) - 1) as f64 * elems as f64,
            reads: terms.iter().map(|&(_, b)| b).collect(),
            writes: vec![out],
        });
    }

    /// A linear combination of blocks; no op when it is one block with coefficient 1.
    fn combination(
        &mut self,
        terms: Vec<(i32, BufferId)>,
        out_name: String,
        elems: u64,
    ) -> BufferId {
        if let [(1, b)] = terms[..] {
            return b;
        }
        let out = self.buffer(out_name.clone(), elems, BufferKind::Activation);
        self.add(&terms, out, &out_name, elems);
        out
    }
}

/// Per C entry: the last product adding into it, its materialised partial sum, and the
/// terms not yet added into it. A first term waits for the second so that `C = m_r` costs
/// no copy (as a block-wise implementation aliases it).
struct Accumulators {
    last_r: Vec<Option<usize>>,
    partial: Vec<Option<BufferId>>,
    pending: Vec<Vec<(i32, BufferId)>>,
}

impl Accumulators {
    /// Adds product `r` (buffer `prod`) into the C entries whose W row uses it, in C's
    /// natural (row-major) order, which is not the W row order.
    fn add_product(&mut self, g: &mut Graph, f: &Factorization, r: usize, prod: BufferId) {
        let (n, _, p) = f.shape();
        for x in 0..n {
            for z in 0..p {
                let k = f.c_index(x, z);
                let coef = f.w(k, r);
                if coef == 0 {
                    continue;
                }
                self.pending[k].push((coef, prod));
                let is_last = self.last_r[k] == Some(r);
                if !is_last && self.partial[k].is_none() && self.pending[k].len() < 2 {
                    continue;
                }
                let mut terms: Vec<(i32, BufferId)> =
                    self.partial[k].map(|b| (1, b)).into_iter().collect();
                terms.append(&mut self.pending[k]);
                let (out_name, kind) = if is_last {
                    (format!("C[{x}][{z}]"), BufferKind::Output)
                } else {
                    (format!("C[{x}][{z}]@{r}"), BufferKind::Activation)
                };
                let out = g.buffer(out_name.clone(), g.elems.2, kind);
                g.add(&terms, out, &out_name, g.elems.2);
                self.partial[k] = Some(out);
            }
        }
    }
}

/// `a - b + c` style text for op names.
fn describe(terms: &[(i32, BufferId)], buffers: &[Buffer]) -> String {
    let mut s = String::new();
    for (idx, &(c, b)) in terms.iter().enumerate() {
        let name = &buffers[b].name;
        match (idx, c) {
            (0, 1) => s.push_str(name),
            (0, -1) => s.push_str(&format!("-{name}")),
            (0, c) => s.push_str(&format!("{c}*{name}")),
            (_, 1) => s.push_str(&format!(" + {name}")),
            (_, -1) => s.push_str(&format!(" - {name}")),
            (_, c) if c < 0 => s.push_str(&format!(" - {}*{name}", -c)),
            (_, c) => s.push_str(&format!(" + {c}*{name}")),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_UPTO5: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/alphatensor/factorizations_r_upto5.txt"
    );

    /// splitmix64, for reproducible random matrices without a dependency.
    fn rng(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    #[test]
    fn embedded_444_rebuilds_the_matmul_tensor_with_c_transposed() {
        let f = factorization_444().unwrap();
        assert_eq!(f.shape(), (4, 4, 4));
        assert_eq!(f.rank(), 49);
        f.verify().unwrap();
        // The other natural order, C row-major, is wrong: the product for C[0][1] lands in
        // W row 4 (C^T row-major), not row 1. Rebuild T[a=A[0][0], b=B[0][1], k] for both.
        let t = |k: usize| -> i32 { (0..49).map(|r| f.u(0, r) * f.v(1, r) * f.w(k, r)).sum() };
        assert_eq!(t(4), 1, "c is C transposed: c_4 = C[0][1]");
        assert_eq!(t(1), 0, "c_1 is C[1][0], which a_0 b_1 does not touch");
    }

    #[test]
    fn every_bundled_factorization_rebuilds_its_tensor() {
        let text = std::fs::read_to_string(ALL_UPTO5).unwrap();
        let all = parse_factorizations(&text, "factorizations_r_upto5.txt").unwrap();
        assert_eq!(all.len(), 20, "the file has 20 shapes with max(n,m,p) <= 5");
        assert!(
            all.iter().any(|f| f.shape() == (2, 4, 5)),
            "non-square shapes too"
        );
        for f in &all {
            f.verify().unwrap();
            // 60 is a multiple of every block grid side (2..=5); each builds a valid program.
            let prog = matmul_program(60, f).unwrap();
            let matmuls = prog.ops().iter().filter(|o| o.kind == "matmul").count();
            assert_eq!(matmuls, f.rank(), "{}", prog.name());
        }
        let embedded = factorization_444().unwrap();
        assert!(
            all.contains(&embedded),
            "the embedded block is a faithful copy"
        );
    }

    #[test]
    fn multiplies_random_4x4_matrices() {
        let f = factorization_444().unwrap();
        let mut seed = 7;
        let a: Vec<f64> = (0..16).map(|_| rng(&mut seed)).collect();
        let b: Vec<f64> = (0..16).map(|_| rng(&mut seed)).collect();
        let c = f.multiply(&a, &b).unwrap();
        for x in 0..4 {
            for z in 0..4 {
                let want: f64 = (0..4).map(|y| a[x * 4 + y] * b[y * 4 + z]).sum();
                assert!(
                    (c[x * 4 + z] - want).abs() < 1e-12,
                    "C[{x}][{z}] {} != {want}",
                    c[x * 4 + z]
                );
            }
        }
        assert!(f.multiply(&a[..15], &b).is_none());
    }

    #[test]
    fn multiplies_non_square_shapes() {
        let text = std::fs::read_to_string(ALL_UPTO5).unwrap();
        let all = parse_factorizations(&text, "factorizations_r_upto5.txt").unwrap();
        let f = all.iter().find(|f| f.shape() == (2, 3, 5)).unwrap();
        let mut seed = 11;
        let a: Vec<f64> = (0..6).map(|_| rng(&mut seed)).collect();
        let b: Vec<f64> = (0..15).map(|_| rng(&mut seed)).collect();
        let c = f.multiply(&a, &b).unwrap();
        for x in 0..2 {
            for z in 0..5 {
                let want: f64 = (0..3).map(|y| a[x * 3 + y] * b[y * 5 + z]).sum();
                assert!((c[x * 5 + z] - want).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn builtin_program_has_the_expected_shape() {
        let p = builtin("alphatensor-4x4").unwrap().unwrap();
        assert_eq!(p.name(), "alphatensor-4x4");
        assert!(p.description().contains("DeepMind") && p.description().contains("bf16"));
        let block = 2048 * 2048 * 2;
        assert!(p.buffers().iter().all(|b| b.size == block));
        let count = |k: BufferKind| p.buffers().iter().filter(|b| b.kind == k).count();
        assert_eq!(count(BufferKind::Input), 32);
        assert_eq!(count(BufferKind::Output), 16);
        let matmuls: Vec<_> = p.ops().iter().filter(|o| o.kind == "matmul").collect();
        assert_eq!(matmuls.len(), 49);
        assert!(matmuls.iter().all(|o| o.flops == 2.0 * 2048f64.powi(3)));
        // Combination ops: one per U/V column that is not a single block with coefficient 1.
        let f = factorization_444().unwrap();
        let trivial = |col: &dyn Fn(usize) -> i32| {
            let nz: Vec<i32> = (0..16).map(col).filter(|&c| c != 0).collect();
            nz == [1]
        };
        let combos: usize = (0..49)
            .map(|r| usize::from(!trivial(&|i| f.u(i, r))) + usize::from(!trivial(&|j| f.v(j, r))))
            .sum();
        // Each nonzero of W is added once; a C entry's first term needs no op of its own.
        let w_nonzero = (0..16 * 49).filter(|&i| f.w[i] != 0).count();
        let adds = p.ops().iter().filter(|o| o.kind == "add").count();
        assert_eq!(adds, combos + w_nonzero - 16);
        assert_eq!(p.len(), combos + 49 + w_nonzero - 16);
        // Accumulation is eager: a product that adds into some C entry already started is
        // read by the op right after it; one that only starts C entries waits for their
        // second term.
        let mut r = 0;
        for (t, op) in p.ops().iter().enumerate() {
            if op.kind == "matmul" {
                let adds_now = (0..16).any(|k| f.w(k, r) != 0 && (0..r).any(|q| f.w(k, q) != 0));
                let first_use = p.uses(op.writes[0])[0];
                assert_eq!(
                    first_use == t + 1,
                    adds_now,
                    "{} first read at {first_use}",
                    op.name
                );
                r += 1;
            }
        }
        assert_eq!(r, 49);
    }

    #[test]
    fn the_program_computes_the_product() {
        // Run the program's data flow on 1x1 "blocks": each add op's coefficients come from
        // its name, so this checks the wiring of reads, writes and signs, not the algorithm.
        let f = factorization_444().unwrap();
        let p = matmul_program(8, &f).unwrap();
        let mut seed = 3;
        let mut val: Vec<f64> = vec![f64::NAN; p.buffers().len()];
        let (mut a, mut b) = (vec![0.0; 16], vec![0.0; 16]);
        for (i, buf) in p.buffers().iter().enumerate().take(32) {
            val[i] = rng(&mut seed);
            if i < 16 {
                a[i] = val[i];
            } else {
                b[i - 16] = val[i];
            }
            assert_eq!(buf.kind, BufferKind::Input);
        }
        for op in p.ops() {
            let out = op.writes[0];
            val[out] = if op.kind == "matmul" {
                val[op.reads[0]] * val[op.reads[1]]
            } else {
                eval_sum(&op.name, op, &p, &val)
            };
        }
        let want = f.multiply(&a, &b).unwrap();
        for x in 0..4 {
            for z in 0..4 {
                let c = p
                    .buffers()
                    .iter()
                    .position(|bf| bf.name == format!("C[{x}][{z}]"))
                    .unwrap();
                let direct: f64 = (0..4).map(|y| a[x * 4 + y] * b[y * 4 + z]).sum();
                assert!((val[c] - want[x * 4 + z]).abs() < 1e-12);
                assert!((val[c] - direct).abs() < 1e-12);
            }
        }
    }

    /// Evaluates an add op from the signs and coefficients printed in its name.
    fn eval_sum(name: &str, op: &Op, p: &Program, val: &[f64]) -> f64 {
        let rhs = name.split(" = ").nth(1).unwrap();
        let mut total = 0.0;
        let mut sign = 1.0;
        let mut read = op.reads.iter();
        for tok in rhs.split(' ') {
            match tok {
                "+" => sign = 1.0,
                "-" => sign = -1.0,
                t => {
                    let (neg, t) = t.strip_prefix('-').map_or((false, t), |r| (true, r));
                    let (coef, bname) = match t.split_once('*') {
                        Some((c, n)) => (c.parse::<f64>().unwrap(), n),
                        None => (1.0, t),
                    };
                    let b = *read.next().unwrap();
                    assert_eq!(p.buffer(b).name, bname);
                    total += sign * if neg { -coef } else { coef } * val[b];
                    sign = 1.0;
                }
            }
        }
        assert!(read.next().is_none());
        total
    }

    #[test]
    fn rejects_bad_text_and_sizes() {
        let e = parse_factorizations("U 1 0\n", "x.txt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.txt: line 1") && e.contains("header"), "{e}");
        let e = parse_factorizations("# 1 1 1 rank 1 U 1x1\nU 1\nV z\n", "x.txt")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3") && e.contains("`z` is not an integer"),
            "{e}"
        );
        let e = parse_factorizations("# 1 1 1 rank 2\nU 1 1\nV 1\n", "x.txt")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3") && e.contains("row has 1 entries, the rank is 2"),
            "{e}"
        );
        let e = parse_factorizations("# 1 1 1 rank 1\nU 1\nV 1\n", "x.txt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 rows of U, V, W missing"), "{e}");
        let e = parse_factorizations("# 1 1 1 rank 1\nU 1\nW 1\n", "x.txt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a row of V, got `W`"), "{e}");
        let ok = parse_factorizations("# a comment\n# 1 1 1 rank 1\nU 1\nV 1\nW 1\n", "x").unwrap();
        assert_eq!(ok.len(), 1);
        ok[0].verify().unwrap();
        // A wrong algorithm is refused before any program is built.
        let bad = parse_factorizations("# 1 1 1 rank 1\nU 1\nV 1\nW -1\n", "x").unwrap();
        assert!(bad[0].verify().is_err());
        let e = matmul_program(8, &bad[0]).unwrap_err().to_string();
        assert!(e.contains("matmul tensor"), "{e}");
        let f = factorization_444().unwrap();
        let e = matmul_program(10, &f).unwrap_err().to_string();
        assert!(e.contains("multiple"), "{e}");
        assert!(builtin("nope").is_none());
    }
}
