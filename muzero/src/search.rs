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
//! pUCT (MuZero's pseudocode): `score = Q_norm + P * sqrt(N) * (c1 + ln((N + c2 + 1) / c2))
//! / (1 + n)`, with `Q_norm` min-max normalised over all Q values seen in this root's tree
//! and 0 for unexpanded children; Dirichlet noise mixed into the root priors (over legal
//! actions). The action is the most visited one, or sampled from `n^(1/T)`.
//!
//! Gumbel: Gumbel top-k at the root among legal actions with sequential halving of the
//! budget, completed Q values (unvisited children take the mixed value), `sigma(q) =
//! (c_visit + max_b n(b)) * c_scale * q` of min-max rescaled completed Q, the deterministic
//! "improved policy minus visits" selection inside the tree, the policy target
//! `softmax(logits + sigma(q))` and the action `argmax(g + logits + sigma(q))` among the
//! most visited considered actions.

use rand::Rng;

use crate::model::{Model, ModelError, ModelOutput};

/// No child / no parent.
const NONE: u32 = u32::MAX;
/// Node indices are `u32`; this keeps `simulations + 1` and the considered-visit table far
/// from overflow while allowing any budget anyone would run.
pub const MAX_SIMULATIONS: usize = 1 << 24;
/// mctx's `score_considered` floor: keeps `-inf` logits comparable.
pub(crate) const LOW_LOGIT: f32 = -1e9;

/// Gumbel MuZero's root parameters (defaults from the paper).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GumbelConfig {
    /// Actions sampled without replacement at the root (Gumbel top-k), then halved.
    pub max_considered: usize,
    /// `c_visit` of `sigma(q) = (c_visit + max visits) * c_scale * q`.
    pub c_visit: f32,
    /// `c_scale` of `sigma`. The paper uses 1.0; mctx's default `value_scale` is 0.1.
    pub c_scale: f32,
    /// Scale of the root Gumbel noise; 0 makes the search deterministic (evaluation).
    pub gumbel_scale: f32,
}

impl Default for GumbelConfig {
    fn default() -> Self {
        Self {
            max_considered: 16,
            c_visit: 50.0,
            c_scale: 1.0,
            gumbel_scale: 1.0,
        }
    }
}

/// What a search does. `check` before use; [`search`] checks it too.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Simulations per root (one model call each, over all roots): at least 1.
    pub simulations: usize,
    /// Discount of rewards and values inside the tree; 1.0 for the finite game.
    pub discount: f32,
    /// pUCT's `c1`.
    pub pb_c_init: f32,
    /// pUCT's `c2`.
    pub pb_c_base: f32,
    /// Concentration of the root Dirichlet noise (pUCT only).
    pub dirichlet_alpha: f32,
    /// Weight of the root Dirichlet noise in the priors (pUCT only); 0 turns it off.
    pub dirichlet_fraction: f32,
    /// pUCT action choice: 0 plays the most visited action, `T > 0` samples from
    /// `visits^(1/T)`. Gumbel ignores it (its root noise already explores).
    pub temperature: f32,
    /// `Some` runs Gumbel MuZero's root instead of pUCT's.
    pub gumbel: Option<GumbelConfig>,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            simulations: 32,
            discount: 1.0,
            pb_c_init: 1.25,
            pb_c_base: 19652.0,
            dirichlet_alpha: 0.3,
            dirichlet_fraction: 0.25,
            temperature: 0.0,
            gumbel: None,
        }
    }
}

impl SearchConfig {
    /// This config with every source of randomness off, for evaluation games: no Dirichlet
    /// noise, greedy action choice, no Gumbel noise.
    pub fn deterministic(&self) -> Self {
        let mut c = self.clone();
        c.dirichlet_fraction = 0.0;
        c.temperature = 0.0;
        if let Some(g) = &mut c.gumbel {
            g.gumbel_scale = 0.0;
        }
        c
    }

    /// Checks every field; the error names the first bad one and its value.
    pub fn check(&self) -> Result<(), String> {
        if self.simulations == 0 || self.simulations > MAX_SIMULATIONS {
            return Err(format!(
                "search.simulations = {}: must be in 1..={MAX_SIMULATIONS}",
                self.simulations
            ));
        }
        // Written as negated ranges so NaN fails every check.
        if !(self.discount > 0.0 && self.discount <= 1.0) {
            return Err(format!(
                "search.discount = {}: must be in (0, 1]",
                self.discount
            ));
        }
        if !(self.pb_c_init >= 0.0 && self.pb_c_init.is_finite()) {
            return Err(format!(
                "search.pb_c_init = {}: must be finite and >= 0",
                self.pb_c_init
            ));
        }
        if !(self.pb_c_base > 0.0 && self.pb_c_base.is_finite()) {
            return Err(format!(
                "search.pb_c_base = {}: must be finite and > 0",
                self.pb_c_base
            ));
        }
        if !(self.dirichlet_fraction >= 0.0 && self.dirichlet_fraction <= 1.0) {
            return Err(format!(
                "search.dirichlet_fraction = {}: must be in [0, 1]",
                self.dirichlet_fraction
            ));
        }
        let alpha_ok = self.dirichlet_alpha > 0.0 && self.dirichlet_alpha.is_finite();
        if self.dirichlet_fraction > 0.0 && !alpha_ok {
            return Err(format!(
                "search.dirichlet_alpha = {}: must be finite and > 0 when dirichlet_fraction > 0",
                self.dirichlet_alpha
            ));
        }
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return Err(format!(
                "search.temperature = {}: must be finite and >= 0",
                self.temperature
            ));
        }
        if let Some(g) = &self.gumbel {
            if g.max_considered == 0 {
                return Err("search.gumbel.max_considered = 0: must be at least 1".into());
            }
            for (name, v) in [
                ("c_visit", g.c_visit),
                ("c_scale", g.c_scale),
                ("gumbel_scale", g.gumbel_scale),
            ] {
                if !(v >= 0.0 && v.is_finite()) {
                    return Err(format!(
                        "search.gumbel.{name} = {v}: must be finite and >= 0"
                    ));
                }
            }
        }
        Ok(())
    }
}

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
    #[error("invalid search config: {0}")]
    Config(String),
    #[error("search input: {0}")]
    Input(String),
    #[error("search input: root {root} has no legal action")]
    NoLegalAction { root: usize },
    #[error("model {call} returned {detail}")]
    ModelOutput { call: &'static str, detail: String },
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

/// Plays `argmax` of the visits (first on ties) at `temperature` 0, else samples an action
/// with probability proportional to `visits^(1/temperature)`, so unvisited actions
/// (illegal ones included) are never sampled. With no visits at all: action 0.
pub fn select_by_visits<R: Rng + ?Sized>(visits: &[u32], temperature: f32, rng: &mut R) -> usize {
    let (best, max) = argmax_u32(visits);
    if temperature <= 0.0 || max == 0 {
        return best;
    }
    // Relative to the max so large counts and small temperatures cannot overflow.
    let inv_t = 1.0 / temperature as f64;
    let weight = |v: u32| (v as f64 / max as f64).powf(inv_t);
    let total: f64 = visits.iter().map(|&v| weight(v)).sum();
    let mut r = rng.random::<f64>() * total;
    for (a, &v) in visits.iter().enumerate() {
        let w = weight(v);
        if v > 0 && r < w {
            return a;
        }
        r -= w;
    }
    best
}

/// Reusable buffers for batched searches. Buffers grow to the largest search seen and are
/// never shrunk; each node's arrays are written when the node is expanded, so starting a
/// search costs nothing proportional to the capacity.
#[derive(Default)]
pub struct Searcher {
    tree: Tree,
    scratch: Scratch,
}

/// The trees of all roots, struct-of-arrays. Node `n` of root `b` is `b * cap + n`; its
/// edge to action `a` is `(b * cap + n) * actions + a`.
#[derive(Default)]
struct Tree {
    cap: usize,
    actions: usize,
    node_visits: Vec<u32>,
    node_value: Vec<f32>,
    raw_value: Vec<f32>,
    parent: Vec<u32>,
    parent_action: Vec<u32>,
    depth: Vec<u32>,
    child: Vec<u32>,
    edge_visits: Vec<u32>,
    edge_reward: Vec<f32>,
    /// Value of the child node, mirrored on the edge so a selection reads one cache line.
    edge_value: Vec<f32>,
    prior: Vec<f32>,
    logits: Vec<f32>,
    /// Hidden states by creation step: node `n` of every root was made by model call `n`
    /// (0: `initial_inference`), so its state is row `b` of that call's output. Keeping
    /// the outputs (moved, not copied) saves copying each state into the tree. Slot `n`
    /// of the previous search is dropped just before call `n`, so the model's allocation
    /// can reuse that memory instead of faulting in fresh pages.
    hidden: Vec<Vec<f32>>,
    /// Per root: the legal mask `[batch, actions]`, legal-action count, Gumbel noise
    /// `[batch, actions]`, min-max stats, depth stats.
    legal: Vec<bool>,
    legal_count: Vec<u32>,
    gumbel: Vec<f32>,
    minmax: Vec<MinMaxStats>,
    depth_sum: Vec<u64>,
    depth_max: Vec<u32>,
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

fn grow<T: Clone + Default>(v: &mut Vec<T>, n: usize) {
    if v.len() < n {
        v.resize(n, T::default());
    }
}

impl Searcher {
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

/// MuZero's `MinMaxStats`: the range of Q values seen in one tree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MinMaxStats {
    min: f32,
    max: f32,
}

impl Default for MinMaxStats {
    fn default() -> Self {
        Self {
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
        }
    }
}

impl MinMaxStats {
    fn update(&mut self, v: f32) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// MuZero's `normalize` as `(v - lo) * scale`: into [0, 1] once the tree has seen two
    /// distinct values, the identity before.
    fn affine(&self) -> (f32, f32) {
        if self.max > self.min {
            (self.min, 1.0 / (self.max - self.min))
        } else {
            (0.0, 1.0)
        }
    }
}

impl Tree {
    fn prepare(&mut self, batch: usize, cap: usize, actions: usize) {
        self.cap = cap;
        self.actions = actions;
        let (nodes, edges) = (batch * cap, batch * cap * actions);
        grow(&mut self.node_visits, nodes);
        grow(&mut self.node_value, nodes);
        grow(&mut self.raw_value, nodes);
        grow(&mut self.parent, nodes);
        grow(&mut self.parent_action, nodes);
        grow(&mut self.depth, nodes);
        grow(&mut self.child, edges);
        grow(&mut self.edge_visits, edges);
        grow(&mut self.edge_reward, edges);
        grow(&mut self.edge_value, edges);
        grow(&mut self.prior, edges);
        grow(&mut self.logits, edges);
        self.hidden.truncate(cap);
        grow(&mut self.legal, batch * actions);
        grow(&mut self.legal_count, batch);
        grow(&mut self.gumbel, batch * actions);
        grow(&mut self.minmax, batch);
        grow(&mut self.depth_sum, batch);
        grow(&mut self.depth_max, batch);
    }

    fn release_hidden(&mut self, step: usize) {
        if let Some(v) = self.hidden.get_mut(step) {
            *v = Vec::new();
        }
    }

    fn keep_hidden(&mut self, step: usize, hidden: Vec<f32>) {
        if step < self.hidden.len() {
            self.hidden[step] = hidden;
        } else {
            self.hidden.push(hidden);
        }
    }

    /// Writes node `n` of root `b` from row `row` of `out` with unmasked softmax priors.
    fn set_node(
        &mut self,
        b: usize,
        n: usize,
        link: (u32, u32, u32),
        out: &ModelOutput,
        row: usize,
    ) {
        let a = self.actions;
        let i = b * self.cap + n;
        let value = out.value[row];
        self.node_visits[i] = 1;
        self.node_value[i] = value;
        self.raw_value[i] = value;
        (self.parent[i], self.parent_action[i], self.depth[i]) = link;
        let e = i * a..(i + 1) * a;
        self.child[e.clone()].fill(NONE);
        self.edge_visits[e.clone()].fill(0);
        self.edge_reward[e.clone()].fill(0.0);
        self.edge_value[e.clone()].fill(0.0);
        let logits = &out.policy_logits[row * a..(row + 1) * a];
        self.logits[e.clone()].copy_from_slice(logits);
        softmax(logits, None, &mut self.prior[e]);
    }

    fn expand_root<R: Rng + ?Sized>(
        &mut self,
        b: usize,
        out: &ModelOutput,
        legal: &[bool],
        config: &SearchConfig,
        rng: &mut R,
        noise: &mut Vec<f64>,
    ) {
        let a = self.actions;
        self.set_node(b, 0, (NONE, NONE, 0), out, b);
        let mask = &legal[b * a..(b + 1) * a];
        self.legal[b * a..(b + 1) * a].copy_from_slice(mask);
        self.legal_count[b] = mask.iter().filter(|&&l| l).count() as u32;
        let e0 = b * self.cap * a;
        // MuZero expands the root over legal actions only: priors renormalised over them.
        softmax(
            &out.policy_logits[b * a..(b + 1) * a],
            Some(mask),
            &mut self.prior[e0..e0 + a],
        );
        if let Some(g) = &config.gumbel {
            for (act, &l) in mask.iter().enumerate() {
                // Drawn for legal actions only: the stream depends on the mask, not on A.
                self.gumbel[b * a + act] = if l {
                    g.gumbel_scale * sample_gumbel(rng)
                } else {
                    0.0
                };
            }
        } else if config.dirichlet_fraction > 0.0 {
            noise.clear();
            let alpha = config.dirichlet_alpha as f64;
            noise.extend(
                mask.iter()
                    .filter(|&&l| l)
                    .map(|_| sample_gamma(alpha, rng)),
            );
            let total: f64 = noise.iter().sum();
            let frac = config.dirichlet_fraction;
            let mut k = 0;
            for (act, &l) in mask.iter().enumerate() {
                if l {
                    // A tiny alpha can underflow every gamma draw: fall back to uniform.
                    let d = if total > 0.0 {
                        noise[k] / total
                    } else {
                        1.0 / noise.len() as f64
                    };
                    let p = &mut self.prior[e0 + act];
                    *p = (1.0 - frac) * *p + frac * d as f32;
                    k += 1;
                }
            }
        }
        self.minmax[b] = MinMaxStats::default();
        self.depth_sum[b] = 0;
        self.depth_max[b] = 0;
    }

    fn expand_child(
        &mut self,
        b: usize,
        n: usize,
        parent: usize,
        action: usize,
        out: &ModelOutput,
        row: usize,
    ) {
        let base = b * self.cap;
        let depth = self.depth[base + parent] + 1;
        self.set_node(b, n, (parent as u32, action as u32, depth), out, row);
        let e = (base + parent) * self.actions + action;
        self.child[e] = n as u32;
        self.edge_reward[e] = out.reward[row];
        self.depth_sum[b] += depth as u64;
        self.depth_max[b] = self.depth_max[b].max(depth);
    }

    /// Backs the leaf's model value up to the root (MuZero's `backpropagate`, with mctx's
    /// visit convention), updating the tree's min-max stats with every node's Q on the path.
    fn backup(&mut self, b: usize, leaf: usize, discount: f32) {
        let base = b * self.cap;
        let a = self.actions;
        let mm = &mut self.minmax[b];
        let mut node = leaf;
        let mut value = self.raw_value[base + leaf];
        loop {
            let p = self.parent[base + node];
            if p == NONE {
                break;
            }
            let p = p as usize;
            let e = (base + p) * a + self.parent_action[base + node] as usize;
            let r = self.edge_reward[e];
            let v_node = self.node_value[base + node];
            self.edge_value[e] = v_node;
            self.edge_visits[e] += 1;
            mm.update(r + discount * v_node);
            value = r + discount * value;
            let pi = base + p;
            let n = self.node_visits[pi] as f32;
            self.node_value[pi] = (self.node_value[pi] * n + value) / (n + 1.0);
            self.node_visits[pi] += 1;
            node = p;
        }
        // The pseudocode also records the root (reward 0).
        mm.update(discount * self.node_value[base]);
    }

    /// Walks down by pUCT to an unexpanded edge: (node, action).
    fn select_puct(&self, b: usize, config: &SearchConfig, scores: &mut [f32]) -> (usize, usize) {
        let (a, base) = (self.actions, b * self.cap);
        let (c_base, discount) = (config.pb_c_base, config.discount);
        let root_legal = &self.legal[b * a..(b + 1) * a];
        // Normalisation as an affine map keeps the scoring loop branch-free (it vectorises).
        let (lo, scale) = self.minmax[b].affine();
        let mut node = 0;
        loop {
            let i = base + node;
            let n = self.node_visits[i] as f32;
            let pb_c = (config.pb_c_init + ((n + c_base + 1.0) / c_base).ln()) * n.sqrt();
            let e = i * a..(i + 1) * a;
            let edges = self.edge_visits[e.clone()]
                .iter()
                .zip(&self.prior[e.clone()])
                .zip(
                    self.edge_reward[e.clone()]
                        .iter()
                        .zip(&self.edge_value[e.clone()]),
                );
            for (sc, ((&visits, &p), (&r, &v))) in scores.iter_mut().zip(edges) {
                // Visited edges are exactly the expanded ones (visits >= 1 on expansion).
                let q = if visits > 0 {
                    (r + discount * v - lo) * scale
                } else {
                    0.0
                };
                *sc = pb_c * p / (visits as f32 + 1.0) + q;
            }
            let mut best_a = usize::MAX;
            let mut best = f32::NEG_INFINITY;
            for (act, &sc) in scores[..a].iter().enumerate() {
                if node == 0 && !root_legal[act] {
                    continue;
                }
                // `best_a == MAX` takes the first allowed action even if every score is NaN.
                if sc > best || best_a == usize::MAX {
                    best = sc;
                    best_a = act;
                }
            }
            match self.child[e.start + best_a] {
                NONE => return (node, best_a),
                c => node = c as usize,
            }
        }
    }

    /// Walks down by Gumbel MuZero's rules to an unexpanded edge: (node, action).
    fn select_gumbel(
        &self,
        b: usize,
        sim: usize,
        sims: usize,
        discount: f32,
        g: &GumbelConfig,
        s: &mut Scratch,
    ) -> (usize, usize) {
        let (a, base) = (self.actions, b * self.cap);
        let root_legal = &self.legal[b * a..(b + 1) * a];
        // Root: sequential halving. Considered actions are those whose visits equal the
        // table's count for this simulation; among them the best `g + logits + sigma(q)`.
        let m = (g.max_considered.min(self.legal_count[b] as usize)).max(1);
        let considered = s.table[m * sims + sim];
        let sigma = &mut s.sigma[..a];
        self.sigma_completed_q(base, Some(root_legal), discount, g, sigma);
        let e0 = base * a;
        let score = |act: usize| {
            (self.gumbel[b * a + act] + self.logits[e0 + act] + sigma[act]).max(LOW_LOGIT)
        };
        let pick = |need: Option<u32>| {
            (0..a)
                .filter(|&act| {
                    root_legal[act] && need.is_none_or(|c| self.edge_visits[e0 + act] == c)
                })
                .fold(None, |best: Option<(usize, f32)>, act| {
                    let sc = score(act);
                    match best {
                        Some((_, bs)) if bs >= sc => best,
                        _ => Some((act, sc)),
                    }
                })
                .map(|(act, _)| act)
        };
        // The table guarantees a match; the fallback only guards against a bug there.
        let act = pick(Some(considered)).or_else(|| pick(None)).unwrap_or(0);
        let mut node = match self.child[e0 + act] {
            NONE => return (0, act),
            c => c as usize,
        };
        loop {
            let i = base + node;
            let e0 = i * a;
            let sigma = &mut s.sigma[..a];
            self.sigma_completed_q(i, None, discount, g, sigma);
            for (act, z) in sigma.iter_mut().enumerate() {
                *z += self.logits[e0 + act];
            }
            let probs = &mut s.probs[..a];
            softmax(sigma, None, probs);
            let visits = &self.edge_visits[e0..e0 + a];
            let total = 1.0 + visits.iter().sum::<u32>() as f32;
            let mut best_a = 0;
            let mut best = f32::NEG_INFINITY;
            for act in 0..a {
                let sc = probs[act] - visits[act] as f32 / total;
                if sc > best {
                    best = sc;
                    best_a = act;
                }
            }
            match self.child[e0 + best_a] {
                NONE => return (node, best_a),
                c => node = c as usize,
            }
        }
    }

    /// `sigma(completed q)` of node `i`'s children (mctx's `qtransform_completed_by_mix_value`):
    /// visited children keep `r + discount * v`, unvisited ones take the mixed value
    /// `(v_raw + sum_n * sum_visited(p q) / sum_visited(p)) / (1 + sum_n)`; the completed
    /// values are min-max rescaled over the allowed actions (all inside the tree, the legal
    /// ones at the root: illegal ones would only drag the range toward the mixed value)
    /// and scaled by `(c_visit + max n) * c_scale`.
    fn sigma_completed_q(
        &self,
        i: usize,
        mask: Option<&[bool]>,
        discount: f32,
        g: &GumbelConfig,
        out: &mut [f32],
    ) {
        let a = self.actions;
        let e0 = i * a;
        let visits = &self.edge_visits[e0..e0 + a];
        let mut sum_n = 0u32;
        let mut max_n = 0u32;
        let mut sum_p = 0.0f32;
        let mut sum_pq = 0.0f32;
        for act in 0..a {
            let n = visits[act];
            if n > 0 {
                let q = self.edge_reward[e0 + act] + discount * self.edge_value[e0 + act];
                out[act] = q;
                // mctx floors priors so a visited zero-prior action still counts.
                let p = self.prior[e0 + act].max(f32::MIN_POSITIVE);
                sum_p += p;
                sum_pq += p * q;
                sum_n += n;
                max_n = max_n.max(n);
            }
        }
        let raw = self.raw_value[i];
        let mixed = if sum_n > 0 {
            (raw + sum_n as f32 * (sum_pq / sum_p)) / (sum_n as f32 + 1.0)
        } else {
            raw
        };
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for act in 0..a {
            if visits[act] == 0 {
                out[act] = mixed;
            }
            if mask.is_none_or(|m| m[act]) {
                lo = lo.min(out[act]);
                hi = hi.max(out[act]);
            }
        }
        let scale = (g.c_visit + max_n as f32) * g.c_scale / (hi - lo).max(1e-8);
        for q in out.iter_mut() {
            *q = (*q - lo) * scale;
        }
    }

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

/// `softmax(z)` over the allowed entries into `out` (0 elsewhere). If no allowed entry is
/// finite (all `-inf`), uniform over the allowed ones.
fn softmax(z: &[f32], mask: Option<&[bool]>, out: &mut [f32]) {
    let allowed = |i: usize| mask.is_none_or(|m| m[i]);
    let mut max = f32::NEG_INFINITY;
    let mut count = 0usize;
    for (i, &v) in z.iter().enumerate() {
        if allowed(i) {
            max = max.max(v);
            count += 1;
        }
    }
    if max == f32::NEG_INFINITY {
        for (i, o) in out.iter_mut().enumerate() {
            *o = if allowed(i) { 1.0 / count as f32 } else { 0.0 };
        }
        return;
    }
    let mut sum = 0.0;
    for (i, (o, &v)) in out.iter_mut().zip(z).enumerate() {
        *o = if allowed(i) { (v - max).exp() } else { 0.0 };
        sum += *o;
    }
    let inv = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= inv;
    }
}

fn argmax_u32(v: &[u32]) -> (usize, u32) {
    let mut best = (0, 0);
    for (i, &x) in v.iter().enumerate() {
        if x > best.1 {
            best = (i, x);
        }
    }
    best
}

/// mctx's `get_sequence_of_considered_visits`: for each simulation, the visit count an
/// action must have at the root to be considered (sequential halving over `m` actions).
fn considered_visit_sequence(m: usize, sims: usize, out: &mut Vec<u32>) {
    let start = out.len();
    if m <= 1 {
        out.extend(0..sims as u32);
        return;
    }
    // ceil(log2(m)) for m >= 2.
    let log2max = (usize::BITS - (m - 1).leading_zeros()) as usize;
    let mut visits = vec![0u32; m];
    let mut considered = m;
    while out.len() - start < sims {
        let extra = (sims / (log2max * considered)).max(1);
        for _ in 0..extra {
            out.extend_from_slice(&visits[..considered]);
            for v in &mut visits[..considered] {
                *v += 1;
            }
        }
        considered = (considered / 2).max(2);
    }
    out.truncate(start + sims);
}

/// mctx's `get_table_of_considered_visits`: rows `m` in `0..=max_m`, `sims` entries each.
fn considered_visit_table(max_m: usize, sims: usize, out: &mut Vec<u32>) {
    out.clear();
    for m in 0..=max_m {
        considered_visit_sequence(m, sims, out);
    }
}

/// A uniform draw in the open interval (0, 1): 53 random bits, offset by half a step.
fn open_unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    ((rng.random::<u64>() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// A standard Gumbel(0, 1) draw.
fn sample_gumbel<R: Rng + ?Sized>(rng: &mut R) -> f32 {
    -(-open_unit(rng).ln()).ln() as f32
}

/// A standard normal draw (Box-Muller).
fn sample_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let (u1, u2) = (open_unit(rng), open_unit(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A Gamma(alpha, 1) draw (Marsaglia and Tsang; alpha < 1 by the `U^(1/alpha)` boost).
fn sample_gamma<R: Rng + ?Sized>(alpha: f64, rng: &mut R) -> f64 {
    if alpha < 1.0 {
        let u = open_unit(rng);
        return sample_gamma(alpha + 1.0, rng) * u.powf(1.0 / alpha);
    }
    let d = alpha - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = sample_normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = open_unit(rng);
        if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use std::collections::HashMap;

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 1e-4 * (1.0 + b.abs())
    }

    /// A model whose hidden state is a path code (`child = 4 * parent + action + 1`, root 0)
    /// with scripted (reward, value) per node; unscripted nodes give (0, 0). Logits 0.
    struct Scripted {
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

    fn scripted() -> Scripted {
        // Node 1 = root -> a0, node 2 = root -> a1, node 5 = node 1 -> a0.
        let nodes = HashMap::from([(1, (1.0, 2.0)), (2, (0.0, 0.5)), (5, (0.5, -1.0))]);
        Scripted {
            actions: 2,
            nodes,
            root_value: 0.0,
        }
    }

    #[test]
    fn puct_on_a_hand_built_tree_matches_hand_computed_numbers() {
        let config = SearchConfig {
            simulations: 3,
            dirichlet_fraction: 0.0,
            ..Default::default()
        };
        let out = search(
            &scripted(),
            &[0.0],
            &[true, true],
            1,
            &config,
            &mut StdRng::seed_from_u64(0),
        )
        .unwrap();
        let o = &out[0];
        // Sim 1: tie -> a0, Q = 1 + 2 = 3; root value (0 + 3) / 2 = 1.5.
        // Sim 2: a0 scores 0.442 + norm(3) = 1.442 over a1's 0.884: down a0, then a0 again
        //   (node 5, Q = -0.5); node 1 value (2 - 0.5) / 2 = 0.75; root (3 + 0.5) / 3.
        // Sim 3: min-max range [-0.5, 3], so a0 scores 0.3609 + (1.75 + 0.5) / 3.5 = 1.0038
        //   and a1 scores 1.0827: a1 (without normalisation a0 would win with 2.11).
        assert_eq!(o.visit_counts, vec![2, 1]);
        assert!(close(o.root_value, 1.0), "{}", o.root_value);
        assert!(close(o.policy_target[0], 2.0 / 3.0) && close(o.policy_target[1], 1.0 / 3.0));
        assert_eq!(o.action, 0);
        assert_eq!(o.max_depth, 2);
        assert!(close(o.mean_depth, 4.0 / 3.0));
    }

    #[test]
    fn gumbel_on_a_hand_built_tree_matches_hand_computed_numbers() {
        let g = GumbelConfig {
            c_scale: 0.02,
            gumbel_scale: 0.0,
            ..Default::default()
        };
        let config = SearchConfig {
            simulations: 3,
            gumbel: Some(g),
            ..Default::default()
        };
        let out = search(
            &scripted(),
            &[0.0],
            &[true, true],
            1,
            &config,
            &mut StdRng::seed_from_u64(0),
        )
        .unwrap();
        let o = &out[0];
        // Halving table for m = 2, 3 sims: [0, 0, 1]: a0, a1, then the better of the two
        // (sigma = 1.02 * [1, 0]): a0, whose child picks a0 (all-equal completed Q).
        // Final: Q = [1 + 0.75, 0.5] -> rescaled [1, 0] -> sigma = (50 + 2) * 0.02 * [1, 0].
        assert_eq!(o.visit_counts, vec![2, 1]);
        let p0 = 1.04f32.exp() / (1.04f32.exp() + 1.0);
        assert!(
            close(o.policy_target[0], p0) && close(o.policy_target[1], 1.0 - p0),
            "{:?}",
            o.policy_target
        );
        assert!(close(p0, 0.738850));
        assert!(close(o.root_value, 1.0), "{}", o.root_value);
        assert_eq!(o.action, 0);
        assert_eq!((o.max_depth, o.mean_depth), (2, 4.0 / 3.0));
    }

    /// One node, three actions: visits [2, 1, 0], priors [0.5, 0.3, 0.2], raw value 0.4,
    /// Q = [0.1 + 0.9 * 0.5, 0.9 * 0.2] = [0.55, 0.18] (discount 0.9).
    fn one_node_tree() -> Tree {
        let mut t = Tree::default();
        t.prepare(1, 1, 3);
        t.raw_value[0] = 0.4;
        t.edge_visits[..3].copy_from_slice(&[2, 1, 0]);
        t.prior[..3].copy_from_slice(&[0.5, 0.3, 0.2]);
        t.edge_reward[..3].copy_from_slice(&[0.1, 0.0, 0.0]);
        t.edge_value[..3].copy_from_slice(&[0.5, 0.2, 0.0]);
        t
    }

    #[test]
    fn completed_q_and_sigma_match_hand_computed_numbers() {
        let t = one_node_tree();
        let g = GumbelConfig::default();
        let mut s = [0.0; 3];
        t.sigma_completed_q(0, None, 0.9, &g, &mut s);
        // Mixed value: (0.4 + 3 * (0.5 * 0.55 + 0.3 * 0.18) / 0.8) / 4 = 0.4084375, the
        // completed Q of the unvisited a2; rescaled over [0.18, 0.55]; times 50 + max n 2.
        let expect = [52.0, 0.0, 52.0 * (0.4084375 - 0.18) / 0.37];
        for (x, e) in s.iter().zip(expect) {
            assert!(close(*x, e), "{s:?} vs {expect:?}");
        }
        assert!(close(expect[2], 32.104_73));
        // c_scale multiplies; a root mask narrows the rescaling range to the legal actions.
        let g = GumbelConfig {
            c_scale: 0.1,
            ..Default::default()
        };
        t.sigma_completed_q(0, Some(&[true, false, true]), 0.9, &g, &mut s);
        assert!(close(s[0], 5.2) && close(s[2], 0.0), "{s:?}");
        // Nothing visited: every Q is the raw value, so sigma is 0 everywhere.
        let mut t = one_node_tree();
        t.edge_visits[..3].fill(0);
        t.sigma_completed_q(0, None, 0.9, &GumbelConfig::default(), &mut s);
        assert_eq!(s, [0.0; 3]);
    }

    #[test]
    fn min_max_stats_normalise_once_two_values_are_seen() {
        let mut mm = MinMaxStats::default();
        let norm = |mm: &MinMaxStats, v: f32| {
            let (lo, scale) = mm.affine();
            (v - lo) * scale
        };
        assert_eq!(norm(&mm, 0.7), 0.7);
        mm.update(2.0);
        assert_eq!(norm(&mm, 0.7), 0.7);
        mm.update(-2.0);
        mm.update(1.0);
        assert_eq!(norm(&mm, -2.0), 0.0);
        assert_eq!(norm(&mm, 1.0), 0.75);
        assert_eq!(norm(&mm, 2.0), 1.0);
    }

    #[test]
    fn considered_visit_sequences_match_mctx() {
        let seq = |m, n| {
            let mut v = Vec::new();
            considered_visit_sequence(m, n, &mut v);
            v
        };
        assert_eq!(seq(4, 8), [0, 0, 0, 0, 1, 1, 2, 2]);
        // mctx's "minimum simulations" case: 8 actions, 8 * log2(8) simulations.
        let mut want = vec![0; 8];
        want.extend([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]);
        assert_eq!(seq(8, 24), want);
        assert_eq!(seq(1, 4), [0, 1, 2, 3]);
        let s3 = seq(3, 32);
        assert_eq!(s3.len(), 32);
        assert_eq!(&s3[..6], [0, 0, 0, 1, 1, 1]);
        assert_eq!(&s3[15..19], [5, 5, 6, 6]);
        let mut table = Vec::new();
        considered_visit_table(2, 5, &mut table);
        assert_eq!(table, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 0, 1, 1, 2]);
    }

    #[test]
    fn check_names_the_bad_field() {
        let ok = SearchConfig::default();
        assert_eq!(ok.check(), Ok(()));
        let cases: Vec<(SearchConfig, &str)> = vec![
            (
                SearchConfig {
                    simulations: 0,
                    ..ok.clone()
                },
                "search.simulations = 0",
            ),
            (
                SearchConfig {
                    discount: 0.0,
                    ..ok.clone()
                },
                "search.discount = 0",
            ),
            (
                SearchConfig {
                    discount: f32::NAN,
                    ..ok.clone()
                },
                "search.discount = NaN",
            ),
            (
                SearchConfig {
                    pb_c_base: -1.0,
                    ..ok.clone()
                },
                "search.pb_c_base = -1",
            ),
            (
                SearchConfig {
                    dirichlet_fraction: 1.5,
                    ..ok.clone()
                },
                "search.dirichlet_fraction = 1.5",
            ),
            (
                SearchConfig {
                    dirichlet_alpha: 0.0,
                    ..ok.clone()
                },
                "search.dirichlet_alpha = 0",
            ),
            (
                SearchConfig {
                    temperature: -1.0,
                    ..ok.clone()
                },
                "search.temperature = -1",
            ),
            (
                SearchConfig {
                    gumbel: Some(GumbelConfig {
                        max_considered: 0,
                        ..Default::default()
                    }),
                    ..ok.clone()
                },
                "search.gumbel.max_considered = 0",
            ),
            (
                SearchConfig {
                    gumbel: Some(GumbelConfig {
                        c_visit: f32::INFINITY,
                        ..Default::default()
                    }),
                    ..ok.clone()
                },
                "search.gumbel.c_visit = inf",
            ),
        ];
        for (c, want) in cases {
            let e = c.check().unwrap_err();
            assert!(e.starts_with(want), "{e:?} should start with {want:?}");
        }
        // Alpha does not matter with the noise off.
        assert_eq!(
            SearchConfig {
                dirichlet_alpha: 0.0,
                dirichlet_fraction: 0.0,
                ..ok.clone()
            }
            .check(),
            Ok(())
        );
        let d = SearchConfig {
            gumbel: Some(GumbelConfig::default()),
            temperature: 1.0,
            ..ok
        }
        .deterministic();
        assert_eq!(
            (
                d.dirichlet_fraction,
                d.temperature,
                d.gumbel.unwrap().gumbel_scale
            ),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn config_json_fills_defaults_and_rejects_unknown_fields() {
        let c: SearchConfig =
            serde_json::from_str(r#"{"simulations": 8, "gumbel": {"c_scale": 0.1}}"#).unwrap();
        assert_eq!(c.simulations, 8);
        assert_eq!(
            c.gumbel,
            Some(GumbelConfig {
                c_scale: 0.1,
                ..Default::default()
            })
        );
        assert_eq!(c.pb_c_base, 19652.0);
        assert!(serde_json::from_str::<SearchConfig>(r#"{"simulation": 8}"#).is_err());
    }

    #[test]
    fn softmax_respects_the_mask_and_survives_all_negative_infinity() {
        let mut out = [0.0; 3];
        softmax(
            &[0.0, 5.0, (2.0f32).ln()],
            Some(&[true, false, true]),
            &mut out,
        );
        assert!(
            close(out[0], 1.0 / 3.0) && out[1] == 0.0 && close(out[2], 2.0 / 3.0),
            "{out:?}"
        );
        softmax(
            &[f32::NEG_INFINITY, 1.0, f32::NEG_INFINITY],
            Some(&[true, false, true]),
            &mut out,
        );
        assert_eq!(out, [0.5, 0.0, 0.5]);
    }

    #[test]
    fn visit_sampling_follows_the_temperature() {
        let mut rng = StdRng::seed_from_u64(1);
        let visits = [3, 0, 1, 0];
        assert_eq!(select_by_visits(&visits, 0.0, &mut rng), 0);
        let mut counts = [0u32; 4];
        for _ in 0..4000 {
            counts[select_by_visits(&visits, 1.0, &mut rng)] += 1;
        }
        // T = 1: 3:1 odds between a0 and a2; unvisited actions never.
        assert_eq!((counts[1], counts[3]), (0, 0));
        let ratio = counts[0] as f32 / counts[2] as f32;
        assert!((2.6..3.4).contains(&ratio), "{counts:?}");
        // T -> small: effectively the argmax.
        assert!((0..100).all(|_| select_by_visits(&visits, 0.05, &mut rng) == 0));
    }

    #[test]
    fn noise_samplers_have_the_right_means() {
        let mut rng = StdRng::seed_from_u64(7);
        let n = 40_000;
        let gumbel: f64 = (0..n).map(|_| sample_gumbel(&mut rng) as f64).sum::<f64>() / n as f64;
        assert!((gumbel - 0.5772).abs() < 0.03, "Gumbel mean {gumbel}");
        for alpha in [0.3, 1.0, 2.5] {
            let mean: f64 = (0..n).map(|_| sample_gamma(alpha, &mut rng)).sum::<f64>() / n as f64;
            assert!(
                (mean - alpha).abs() < 0.04 * alpha.max(1.0),
                "Gamma({alpha}) mean {mean}"
            );
        }
    }
}
