//! Batched Monte-Carlo tree search over a [`Model`]: MuZero's pUCT search (Schrittwieser et
//! al. 2020) and Gumbel MuZero (Danihelka et al. 2022, as mctx's `gumbel_muzero_policy`).
//!
//! Many roots are searched in lockstep, as mctx does: one `initial_inference` call for all
//! roots, then per simulation ONE `recurrent_inference` call that expands one leaf in every
//! tree. The trees live in flat struct-of-arrays buffers sized for `simulations + 1` nodes
//! per root; a [`Searcher`] keeps them between searches, so a search allocates nothing per
//! node. Hidden states are never copied into the tree: node `n` of every root is row `b`
//! of model call `n`'s output, and the tree keeps those contiguous outputs.
//!
//! Conventions shared by both policies (mctx's):
//! - a node counts as visited once expanded: its visit count starts at 1 and its value at
//!   the model's value; every return backed up through it is averaged in;
//! - `Q(s, a) = r(s, a) + discount * V(child)` for an expanded child;
//! - the root's legal mask holds at the root only; inside the tree every action is allowed
//!   (MuZero: the model has no notion of legality and learns what illegal moves lead to).
//!
//! The files, by idea (mctx's split): `config` (what a search does), `tree` (the flat
//! trees, expansion, backup and min-max statistics), `puct` (MuZero's selection and
//! action choice), `gumbel` (Gumbel MuZero's root with sequential halving and its in-tree
//! selection), `samplers` (the noise draws). This file runs the lockstep loop and reads
//! each root's result.

use rand::Rng;

use crate::model::{Model, ModelError, ModelOutput};

mod config;
mod gumbel;
mod puct;
mod samplers;
mod tree;

pub use config::{GumbelConfig, SearchConfig, MAX_SIMULATIONS};
pub(crate) use gumbel::LOW_LOGIT;
pub use puct::select_by_visits;

use gumbel::considered_visit_table;
use tree::{grow, softmax, Tree};

/// The result of one root's search.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchOutput {
    /// The action to play (always legal at the root).
    pub action: usize,
    /// Visits per root action; they sum to the simulations; 0 for illegal actions.
    pub visit_counts: Vec<u32>,
    /// The policy to train on: pUCT the visit distribution; Gumbel the improved policy
    /// `softmax(logits + sigma(completed q))` over legal actions. Sums to 1; 0 if illegal.
    pub policy_target: Vec<f32>,
    /// The root's search value: the mean of its model value and every backed-up return.
    pub root_value: f32,
    /// Deepest expansion (edges from the root) over the simulations.
    pub max_depth: u32,
    /// Mean expansion depth over the simulations.
    pub mean_depth: f32,
}

/// Bad input to a search, as a value (boxed into [`ModelError`] by [`search`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchError {
    /// A search config value out of range.
    #[error("invalid search config: {0}")]
    Config(String),
    /// An input of the wrong shape (observations, masks, roots).
    #[error("search input: {0}")]
    Input(String),
    /// A root with no legal action: there is nothing to search.
    #[error("search input: root {root} has no legal action")]
    NoLegalAction {
        /// The root's index in the batch.
        root: usize,
    },
    /// The model returned outputs of the wrong shape or non-finite values.
    #[error("model {call} returned {detail}")]
    ModelOutput {
        /// `initial_inference` or `recurrent_inference`.
        call: &'static str,
        /// What was wrong.
        detail: String,
    },
}

/// Searches `batch` roots in lockstep with a fresh [`Searcher`]. `observations` is `[batch,
/// observation_len]`, `legal` is `[batch, action_count]` (every root needs a legal action).
/// Makes one `initial_inference` call, then one `recurrent_inference` call per simulation,
/// each over all roots. Reuse a [`Searcher`] to keep its buffers between searches.
pub fn search<M: Model + ?Sized, R: Rng + ?Sized>(
    model: &M,
    observations: &[f32],
    legal: &[bool],
    batch: usize,
    config: &SearchConfig,
    rng: &mut R,
) -> Result<Vec<SearchOutput>, ModelError> {
    Searcher::new().search(model, observations, legal, batch, config, rng)
}

/// Reusable buffers for batched searches. Buffers grow to the largest search seen and are
/// never shrunk; each node's arrays are written when the node is expanded, so starting a
/// search costs nothing proportional to the capacity.
#[derive(Default)]
pub struct Searcher {
    tree: Tree,
    scratch: Scratch,
}

#[derive(Default)]
struct Scratch {
    gather: Vec<f32>,
    actions: Vec<usize>,
    leaf_parent: Vec<u32>,
    sigma: Vec<f32>,
    probs: Vec<f32>,
    noise: Vec<f64>,
    /// Gumbel's considered-visit table `[m][simulation]` for `m` in `0..=max m`.
    table: Vec<u32>,
}

impl Searcher {
    /// A searcher with no scratch space yet; it grows to the first search's size and is
    /// reused.
    pub fn new() -> Self {
        Self::default()
    }

    /// As [`search`], reusing this searcher's buffers.
    pub fn search<M: Model + ?Sized, R: Rng + ?Sized>(
        &mut self,
        model: &M,
        observations: &[f32],
        legal: &[bool],
        batch: usize,
        config: &SearchConfig,
        rng: &mut R,
    ) -> Result<Vec<SearchOutput>, ModelError> {
        config.check().map_err(SearchError::Config)?;
        let (a, h, o) = (
            model.action_count(),
            model.hidden_len(),
            model.observation_len(),
        );
        check_input(observations, legal, batch, a, o)?;
        let sims = config.simulations;
        self.tree.prepare(batch, sims + 1, a);
        let s = &mut self.scratch;
        grow(&mut s.gather, batch * h);
        grow(&mut s.actions, batch);
        grow(&mut s.leaf_parent, batch);
        grow(&mut s.sigma, a);
        grow(&mut s.probs, a);

        self.tree.release_hidden(0);
        let out = model.initial_inference(observations, batch)?;
        check_output(&out, "initial_inference", batch, h, a)?;
        for b in 0..batch {
            self.tree
                .expand_root(b, &out, legal, config, rng, &mut s.noise);
        }
        self.tree.keep_hidden(0, out.hidden);
        if let Some(g) = &config.gumbel {
            considered_visit_table(g.max_considered.min(a), sims, &mut s.table);
        }

        for sim in 0..sims {
            for b in 0..batch {
                let (node, action) = match &config.gumbel {
                    None => self.tree.select_puct(b, config, &mut s.sigma[..a]),
                    Some(g) => self.tree.select_gumbel(b, sim, sims, config.discount, g, s),
                };
                let src = &self.tree.hidden[node][b * h..(b + 1) * h];
                s.gather[b * h..(b + 1) * h].copy_from_slice(src);
                s.actions[b] = action;
                s.leaf_parent[b] = node as u32;
            }
            self.tree.release_hidden(sim + 1);
            let out =
                model.recurrent_inference(&s.gather[..batch * h], &s.actions[..batch], batch)?;
            check_output(&out, "recurrent_inference", batch, h, a)?;
            for b in 0..batch {
                let parent = s.leaf_parent[b] as usize;
                self.tree
                    .expand_child(b, sim + 1, parent, s.actions[b], &out, b);
                self.tree.backup(b, sim + 1, config.discount);
            }
            self.tree.keep_hidden(sim + 1, out.hidden);
        }

        Ok((0..batch)
            .map(|b| self.tree.output(b, sims, config, rng, s))
            .collect())
    }
}

fn check_input(
    observations: &[f32],
    legal: &[bool],
    batch: usize,
    actions: usize,
    obs_len: usize,
) -> Result<(), SearchError> {
    if batch == 0 {
        return Err(SearchError::Input("batch = 0: must be at least 1".into()));
    }
    if actions == 0 {
        return Err(SearchError::Input(
            "model action_count = 0: must be at least 1".into(),
        ));
    }
    if observations.len() != batch * obs_len {
        return Err(SearchError::Input(format!(
            "observations has {} values, expected batch {batch} x observation_len {obs_len} = {}",
            observations.len(),
            batch * obs_len
        )));
    }
    if legal.len() != batch * actions {
        return Err(SearchError::Input(format!(
            "legal mask has {} entries, expected batch {batch} x action_count {actions} = {}",
            legal.len(),
            batch * actions
        )));
    }
    if let Some(root) = legal.chunks_exact(actions).position(|m| !m.contains(&true)) {
        return Err(SearchError::NoLegalAction { root });
    }
    Ok(())
}

/// Shapes must match and scalars must be finite: one NaN would poison a whole tree's
/// min-max statistics. Logits may be `-inf` (a model masking actions) but not NaN/`+inf`.
fn check_output(
    out: &ModelOutput,
    call: &'static str,
    batch: usize,
    hidden_len: usize,
    actions: usize,
) -> Result<(), SearchError> {
    let bad = |detail: String| SearchError::ModelOutput { call, detail };
    for (name, len, want) in [
        ("hidden", out.hidden.len(), batch * hidden_len),
        ("reward", out.reward.len(), batch),
        ("policy_logits", out.policy_logits.len(), batch * actions),
        ("value", out.value.len(), batch),
    ] {
        if len != want {
            return Err(bad(format!("{name} of length {len}, expected {want}")));
        }
    }
    for (name, v) in [("value", &out.value), ("reward", &out.reward)] {
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(bad(format!("{name}[{i}] = {}, not finite", v[i])));
        }
    }
    if let Some(i) = out
        .policy_logits
        .iter()
        .position(|x| x.is_nan() || *x == f32::INFINITY)
    {
        let (row, col) = (i / actions, i % actions);
        return Err(bad(format!(
            "policy_logits[{row}][{col}] = {}",
            out.policy_logits[i]
        )));
    }
    Ok(())
}

impl Tree {
    fn output<R: Rng + ?Sized>(
        &self,
        b: usize,
        sims: usize,
        config: &SearchConfig,
        rng: &mut R,
        s: &mut Scratch,
    ) -> SearchOutput {
        let a = self.actions;
        let base = b * self.cap;
        let e0 = base * a;
        let visit_counts = self.edge_visits[e0..e0 + a].to_vec();
        let root_legal = &self.legal[b * a..(b + 1) * a];
        let mut policy_target = vec![0.0; a];
        let action = match &config.gumbel {
            None => {
                let total = visit_counts.iter().sum::<u32>() as f32;
                for (p, &n) in policy_target.iter_mut().zip(&visit_counts) {
                    *p = n as f32 / total;
                }
                select_by_visits(&visit_counts, config.temperature, rng)
            }
            Some(g) => {
                let sigma = &mut s.sigma[..a];
                self.sigma_completed_q(base, Some(root_legal), config.discount, g, sigma);
                let z = &mut s.probs[..a];
                for act in 0..a {
                    z[act] = self.logits[e0 + act] + sigma[act];
                }
                softmax(z, Some(root_legal), &mut policy_target);
                let most = (0..a)
                    .filter(|&act| root_legal[act])
                    .map(|act| visit_counts[act])
                    .max()
                    .unwrap_or(0);
                let mut best_a = usize::MAX;
                let mut best = f32::NEG_INFINITY;
                for act in 0..a {
                    if root_legal[act] && visit_counts[act] == most {
                        let sc = (self.gumbel[b * a + act] + z[act]).max(LOW_LOGIT);
                        if sc > best || best_a == usize::MAX {
                            best = sc;
                            best_a = act;
                        }
                    }
                }
                best_a
            }
        };
        SearchOutput {
            action,
            visit_counts,
            policy_target,
            root_value: self.node_value[base],
            max_depth: self.depth_max[b],
            mean_depth: self.depth_sum[b] as f32 / sims as f32,
        }
    }
}

#[cfg(test)]
mod fixtures {
    //! What the files' tests share: a model with a hand-scripted tree.
    use super::*;
    use std::collections::HashMap;

    pub(super) fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 1e-4 * (1.0 + b.abs())
    }

    /// A model whose hidden state is a path code (`child = 4 * parent + action + 1`, root 0)
    /// with scripted (reward, value) per node; unscripted nodes give (0, 0). Logits 0.
    pub(super) struct Scripted {
        actions: usize,
        nodes: HashMap<u32, (f32, f32)>,
        root_value: f32,
    }

    impl Model for Scripted {
        fn observation_len(&self) -> usize {
            1
        }
        fn hidden_len(&self) -> usize {
            1
        }
        fn action_count(&self) -> usize {
            self.actions
        }
        fn initial_inference(&self, _: &[f32], batch: usize) -> Result<ModelOutput, ModelError> {
            Ok(ModelOutput {
                hidden: vec![0.0; batch],
                reward: vec![0.0; batch],
                policy_logits: vec![0.0; batch * self.actions],
                value: vec![self.root_value; batch],
            })
        }
        fn recurrent_inference(
            &self,
            hidden: &[f32],
            actions: &[usize],
            batch: usize,
        ) -> Result<ModelOutput, ModelError> {
            let mut out = ModelOutput {
                policy_logits: vec![0.0; batch * self.actions],
                ..Default::default()
            };
            for (&h, &a) in hidden.iter().zip(actions) {
                let id = 4 * h as u32 + a as u32 + 1;
                let (r, v) = self.nodes.get(&id).copied().unwrap_or((0.0, 0.0));
                out.hidden.push(id as f32);
                out.reward.push(r);
                out.value.push(v);
            }
            Ok(out)
        }
    }

    pub(super) fn scripted() -> Scripted {
        // Node 1 = root -> a0, node 2 = root -> a1, node 5 = node 1 -> a0.
        let nodes = HashMap::from([(1, (1.0, 2.0)), (2, (0.0, 0.5)), (5, (0.5, -1.0))]);
        Scripted {
            actions: 2,
            nodes,
            root_value: 0.0,
        }
    }
}
