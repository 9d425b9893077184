//! The networks' inference on the CPU, on plain slices: what the search calls hundreds of
//! times a second.
//!
//! Why not candle here: at search batch sizes (256 rows, 256-wide layers) candle's CPU
//! backend spends about as long around each op (a fresh tensor per op, a pass per bias add
//! and per ReLU) as in the matmuls, and its matmul splits each product over threads, which
//! gains nothing at this size. Here each group of [`ROWS_PER_TASK`] rows runs the whole
//! network as one task (the bias rides in the matmul's destination, ReLU and layer norm
//! are one pass each), and the groups run in parallel on scoped threads, the caller's
//! included. Not rayon's pool: its idle workers spin, and on 2 shared cores that spinning
//! took time from the search thread (measured: medians 110k vs 160k simulations/s).
//!
//! The weights are the candle Vars' own storage, read in place for each call, so every
//! optimizer update is seen and nothing is cached. The results agree with the candle path
//! to float rounding (a test holds them to it), and do not depend on the number of threads:
//! the rows are grouped the same way whatever the machine.

/// Rows per parallel task. Fixed, so that results never depend on the number of threads.
/// 128: smaller groups repeat gemm's packing of each weight matrix once per group, which
/// measured slower on one thread (64 rows: 63k vs 85k simulations/s on the bench shape).
pub(crate) const ROWS_PER_TASK: usize = 128;

/// One task's rows of the outputs: hidden, heads, reward logits.
type Part<'a> = ((&'a mut [f32], &'a mut [f32]), &'a mut [f32]);

/// A dense layer `x W + b`, `W` stored `[input, output]` row-major.
pub(crate) struct Dense<'a> {
    pub w: &'a [f32],
    pub b: &'a [f32],
    pub input: usize,
    pub output: usize,
}

/// A pre-norm residual block `x + fc2(relu(fc1(LN(x))))`.
pub(crate) struct Block<'a> {
    pub gamma: &'a [f32],
    pub beta: &'a [f32],
    pub fc1: Dense<'a>,
    pub fc2: Dense<'a>,
}

/// Borrowed weights of the three networks, laid out as in `network/model.rs`.
pub(crate) struct Weights<'a> {
    pub hidden: usize,
    pub repr: Vec<Dense<'a>>,
    pub repr_blocks: Vec<Block<'a>>,
    /// The dynamics trunk then `dyn.out` (columns `[hidden | reward bins]`); the first
    /// layer's input is `[hidden, one_hot(action)]`.
    pub dyn_layers: Vec<Dense<'a>>,
    pub dyn_blocks: Vec<Block<'a>>,
    /// The prediction trunk then `pred.heads` (columns `[policy | value bins]`).
    pub pred: Vec<Dense<'a>>,
    pub ln_eps: f32,
    pub min_max_eps: f32,
}

/// The outputs for a batch: scaled hidden states `[B, H]`, reward logits `[B, bins]`
/// (empty for initial inference) and prediction heads `[B, A + value bins]`.
pub(crate) struct Outputs {
    pub hidden: Vec<f32>,
    pub reward_logits: Vec<f32>,
    pub heads: Vec<f32>,
}

/// The inputs of one call: observations for h, or hidden states and actions for g.
pub(crate) enum Input<'a> {
    Observations(&'a [f32]),
    Transitions {
        hidden: &'a [f32],
        actions: &'a [usize],
    },
}

impl Weights<'_> {
    fn reward_bins(&self) -> usize {
        self.dyn_layers.last().map_or(0, |l| l.output) - self.hidden
    }

    fn head_width(&self) -> usize {
        self.pred.last().map_or(0, |l| l.output)
    }

    /// Runs the networks on `batch` rows of `input` (lengths checked by the caller), on up
    /// to `threads` threads.
    pub(crate) fn run(&self, input: Input<'_>, batch: usize, threads: usize) -> Outputs {
        let (h, rb, hw) = (self.hidden, self.reward_bins(), self.head_width());
        let reward_width = match input {
            Input::Observations(_) => 0,
            Input::Transitions { .. } => rb,
        };
        let mut out = Outputs {
            hidden: vec![0.0; batch * h],
            reward_logits: vec![0.0; batch * reward_width],
            heads: vec![0.0; batch * hw],
        };
        let tasks = batch.div_ceil(ROWS_PER_TASK);
        let run_task = |t: usize, hid: &mut [f32], rew: &mut [f32], heads: &mut [f32]| {
            let rows = t * ROWS_PER_TASK..((t + 1) * ROWS_PER_TASK).min(batch);
            match input {
                Input::Observations(obs) => {
                    let o = self.repr.first().map_or(0, |l| l.input);
                    self.represent(&obs[rows.start * o..rows.end * o], rows.len(), hid);
                }
                Input::Transitions { hidden, actions } => self.dynamics(
                    &hidden[rows.start * h..rows.end * h],
                    &actions[rows.clone()],
                    hid,
                    rew,
                ),
            }
            min_max_rows(hid, h, self.min_max_eps);
            let mut scratch = Vec::new();
            mlp(&self.pred, hid, rows.len(), &mut scratch, heads);
        };
        if tasks <= 1 {
            run_task(0, &mut out.hidden, &mut out.reward_logits, &mut out.heads);
            return out;
        }
        // Split the outputs into each task's rows (initial inference has no reward).
        let mut rewards: Vec<&mut [f32]> = if reward_width > 0 {
            out.reward_logits
                .chunks_mut(ROWS_PER_TASK * reward_width)
                .collect()
        } else {
            (0..tasks).map(|_| <&mut [f32]>::default()).collect()
        };
        let parts: Vec<_> = out
            .hidden
            .chunks_mut(ROWS_PER_TASK * h)
            .zip(out.heads.chunks_mut(ROWS_PER_TASK * hw))
            .zip(rewards.drain(..))
            .collect();
        // Groups go to at most `threads` threads, each taking a contiguous run of them:
        // the calling thread does the first run, so a 2-core machine starts one thread.
        let per_thread = parts.len().div_ceil(threads.max(1));
        let mut runs: Vec<Vec<_>> = Vec::new();
        for (t, part) in parts.into_iter().enumerate() {
            if t % per_thread == 0 {
                runs.push(Vec::with_capacity(per_thread));
            }
            if let Some(run) = runs.last_mut() {
                run.push((t, part));
            }
        }
        let do_run = |run: Vec<(usize, Part<'_>)>| {
            for (t, ((hid, heads), rew)) in run {
                run_task(t, hid, rew, heads);
            }
        };
        std::thread::scope(|scope| {
            let mut runs = runs.into_iter();
            let first = runs.next();
            for run in runs {
                scope.spawn(|| do_run(run));
            }
            if let Some(run) = first {
                do_run(run);
            }
        });
        out
    }

    /// h before the scaling: the representation MLP then the residual blocks.
    fn represent(&self, obs: &[f32], rows: usize, hidden: &mut [f32]) {
        let mut scratch = Vec::new();
        mlp(&self.repr, obs, rows, &mut scratch, hidden);
        blocks(&self.repr_blocks, hidden, rows, self.ln_eps);
    }

    /// g before the scaling: next hidden states into `next`, reward logits into `reward`.
    fn dynamics(&self, hidden: &[f32], actions: &[usize], next: &mut [f32], reward: &mut [f32]) {
        let (h, rows) = (self.hidden, actions.len());
        let first = &self.dyn_layers[0];
        let n = first.output;
        // `[hidden, one_hot(action)] W` is `hidden W[..h] + W[h + action]`: the action's row
        // joins the bias in the destination before the product.
        let mut x = vec![0.0f32; rows * n];
        for (row, &a) in x.chunks_exact_mut(n).zip(actions) {
            let w_row = &first.w[(h + a) * n..(h + a + 1) * n];
            for ((d, &b), &w) in row.iter_mut().zip(first.b).zip(w_row) {
                *d = b + w;
            }
        }
        matmul_acc(hidden, rows, h, &first.w[..h * n], n, &mut x);
        let mut y = Vec::new();
        for layer in &self.dyn_layers[1..] {
            relu(&mut x);
            dense(layer, &x, rows, &mut y);
            std::mem::swap(&mut x, &mut y);
        }
        let width = self.dyn_layers[self.dyn_layers.len() - 1].output;
        for ((src, nh), rw) in x
            .chunks_exact(width)
            .zip(next.chunks_exact_mut(h))
            .zip(reward.chunks_exact_mut(width - h))
        {
            nh.copy_from_slice(&src[..h]);
            rw.copy_from_slice(&src[h..]);
        }
        blocks(&self.dyn_blocks, next, rows, self.ln_eps);
    }
}

/// `dst += lhs · rhs` for `lhs` `[m, k]` and `rhs` `[k, n]`, both row-major, on this thread.
fn matmul_acc(lhs: &[f32], m: usize, k: usize, rhs: &[f32], n: usize, dst: &mut [f32]) {
    debug_assert!(lhs.len() >= m * k && rhs.len() >= k * n && dst.len() >= m * n);
    // SAFETY: the three slices hold at least m x k, k x n and m x n elements, row-major
    // with the strides given, and `dst` does not alias the inputs (it is `&mut`).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            true,
            lhs.as_ptr(),
            1,
            k as isize,
            rhs.as_ptr(),
            1,
            n as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// `out = x W + b` over `rows` rows.
fn dense(layer: &Dense<'_>, x: &[f32], rows: usize, out: &mut Vec<f32>) {
    out.clear();
    for _ in 0..rows {
        out.extend_from_slice(layer.b);
    }
    matmul_acc(x, rows, layer.input, layer.w, layer.output, out);
}

fn relu(x: &mut [f32]) {
    for v in x {
        *v = v.max(0.0);
    }
}

/// `layers` with ReLU between them, none after the last; the result goes to `out`.
fn mlp(layers: &[Dense<'_>], x: &[f32], rows: usize, scratch: &mut Vec<f32>, out: &mut [f32]) {
    let mut cur = x.to_vec();
    for (i, layer) in layers.iter().enumerate() {
        dense(layer, &cur, rows, scratch);
        std::mem::swap(&mut cur, scratch);
        if i + 1 < layers.len() {
            relu(&mut cur);
        }
    }
    out.copy_from_slice(&cur[..out.len()]);
}

/// Residual blocks in place on `x` (`rows` rows of the blocks' width).
fn blocks(blocks: &[Block<'_>], x: &mut [f32], rows: usize, eps: f32) {
    let (mut y, mut z) = (Vec::new(), Vec::new());
    for b in blocks {
        let width = b.fc1.input;
        y.clear();
        y.extend_from_slice(x);
        for row in y.chunks_exact_mut(width) {
            layer_norm_row(row, b.gamma, b.beta, eps);
        }
        dense(&b.fc1, &y, rows, &mut z);
        relu(&mut z);
        // x + (z W + b), candle's order; inside, z W + b rounds differently from candle's
        // (here the bias is gemm's starting value), hence agreement to rounding only.
        dense(&b.fc2, &z, rows, &mut y);
        for (a, &d) in x.iter_mut().zip(&y) {
            *a += d;
        }
    }
}

/// Layer norm of one row, in the same order of operations as `network::layers::layer_norm`.
fn layer_norm_row(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    for v in row.iter_mut() {
        *v -= mean;
    }
    let var = row.iter().map(|v| v * v).sum::<f32>() / n;
    let sd = (var + eps).sqrt();
    for ((v, &g), &b) in row.iter_mut().zip(gamma).zip(beta) {
        *v = *v / sd * g + b;
    }
}

/// MuZero's hidden-state scaling of each row to `[0, 1]` (see `network::layers::min_max_rows`).
pub(crate) fn min_max_rows(data: &mut [f32], width: usize, eps: f32) {
    for row in data.chunks_exact_mut(width) {
        let (mut min, mut max) = (f32::INFINITY, f32::NEG_INFINITY);
        for &x in row.iter() {
            min = min.min(x);
            max = max.max(x);
        }
        let range = (max - min) + eps;
        for x in row.iter_mut() {
            *x = (*x - min) / range;
        }
    }
}
