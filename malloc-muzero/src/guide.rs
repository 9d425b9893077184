//! The network as the local search's guide (issue 43): the local search's machinery
//! (lines, snapshots, repair, annealing, a chain per thread: [`malloc_game::anytime`])
//! with the action of each re-decided turn drawn from the network's policy instead of
//! uniformly.
//!
//! At a re-decided turn the guide plays the policy of the game's observation, masked to
//! the legal actions other than the line's own there (at the move's first turn the line's
//! action, at the later ones the line's repair), sampled at a temperature. The turns a move
//! re-decides are the local search's ([`uniform_span`]). The network's cost per move is
//! kept small by a cache of the policy of each turn of the chain's line: a move's first
//! turn is a state of the line, so its policy is computed once per line and kept until a
//! move accepted from an earlier turn changes it; the later re-decided turns follow a
//! changed action, so they are inferred afresh (one observation, one row).
//!
//! [`GuideKind`] picks the guide, for the ablation of issue 43: `uniform` (the local
//! search's own draws: no network), `untrained` (a network of the bundled generalist's
//! shape with random weights), `bundled` (the bundled generalist), `tuned` (the bundled
//! generalist with its policy fitted to the local search's move outcomes:
//! [`crate::train_on_outcomes`]), or a run folder's newest checkpoint; `bundled+online` is the bundled generalist learning, each chain on
//! its own copy, from the outcomes of its chain's moves ([`crate::online`]).
//!
//! The rules: a guided search plays the case's own rules wherever its network can read
//! them ([`GuidedSearch::rules_for`]): directly when they are the rules it learned, and one
//! pass at a time ([`malloc_game::observation::encode_pass_view`]) when they differ only in fast levels and it learned
//! one. Elsewhere it plays its network's rules. `uniform` and `untrained` decide as the
//! bundled network does, so the guides of the ablation play the same game and differ only
//! in the guide; on the race's rules, `uniform` is the `local-search` solver, move for move.

use crate::generalist;
use crate::online::{OnlineConfig, OnlineLearner};
use crate::train::{self, TrainError};
use crate::view::GuideView;
use crate::AgentError;
use accel_sim::{Hardware, Program};
use malloc_game::anytime::{
    uniform_span, Incumbent, Limit, Line, LocalSearch, MoveGuide, Span, Start, UniformGuide,
};
use malloc_game::observation::observation_len;
use malloc_game::{Game, GameOptions, GameSetup};
use muzero::{device, Model, MuZeroNet, NetworkConfig};
use rand::rngs::StdRng;
use rand::Rng;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Which guide chooses the guided search's moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuideKind {
    /// The local search's uniform draws (no network).
    Uniform,
    /// A network of the bundled generalist's shape, random weights from the seed.
    Untrained,
    /// The bundled generalist.
    Bundled,
    /// The bundled guide: the generalist with its policy fitted to the local search's move
    /// outcomes ([`generalist::guide_network`]).
    Tuned,
    /// The newest checkpoint of a run folder.
    Run(PathBuf),
    /// A network guide (not uniform, not itself learning) learning during the search
    /// from its chain's moves, with the default [`OnlineConfig`].
    Online(Box<GuideKind>),
}

impl GuideKind {
    /// The names of the guides that need no folder, as the race's `guided-*` solvers end
    /// (feature `fixtures`: the registry's test checks each is registered).
    #[cfg(feature = "fixtures")]
    pub const NAMES: &'static [&'static str] =
        &["uniform", "untrained", "bundled", "tuned", "bundled+online"];

    /// Where its network comes from, as messages name it: the run folder, else the
    /// bundled generalist's origin.
    fn origin(&self) -> String {
        match self {
            GuideKind::Run(dir) => dir.display().to_string(),
            GuideKind::Online(net) => net.origin(),
            GuideKind::Tuned => generalist::GUIDE_ORIGIN.to_string(),
            _ => generalist::ORIGIN.to_string(),
        }
    }
}

/// A guide by its name ([`GuideKind::NAMES`]), for this crate's tests and examples (feature
/// `fixtures`): the front ends build the guided solvers through `harness::registry`, whose
/// entries name the kinds by type. No saved file holds a guide's name to be read back.
#[cfg(feature = "fixtures")]
impl std::str::FromStr for GuideKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let unknown = || {
            format!(
                "`{s}`: expected a guide, one of {}",
                GuideKind::NAMES.join(", ")
            )
        };
        if let Some(net) = s.strip_suffix("+online") {
            return match net {
                "untrained" | "bundled" | "tuned" => Ok(GuideKind::Online(Box::new(net.parse()?))),
                _ => Err(unknown()),
            };
        }
        match s {
            "uniform" => Ok(GuideKind::Uniform),
            "untrained" => Ok(GuideKind::Untrained),
            "bundled" => Ok(GuideKind::Bundled),
            "tuned" => Ok(GuideKind::Tuned),
            _ => Err(unknown()),
        }
    }
}

/// The temperature of the guide's sampling unless told otherwise: the policy as it is.
pub const DEFAULT_GUIDE_TEMPERATURE: f32 = 1.0;

/// What a guided run's guides did, over all its chains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuideStats {
    /// Network calls (one row each; 0 for the uniform guide).
    pub network_calls: u64,
    /// Learning steps of the chains' networks ([`GuidedSearch::online`]).
    pub learning_steps: u64,
}

/// The local search with its moves chosen by a [`GuideKind`].
pub struct GuidedSearch {
    kind: GuideKind,
    /// The guide's network (`None` for the uniform guide).
    net: Option<MuZeroNet>,
    /// The game's rules the network (the bundled one's for `uniform`) was trained under.
    options: GameOptions,
    /// Its observation length and action count (the bundled one's for `uniform`).
    network: NetworkConfig,
    /// The local search it runs (its settings are the `local-search` solver's).
    pub search: LocalSearch,
    /// The temperature of the policy's sampling (> 0).
    pub temperature: f32,
    /// The share of moves whose first turn the network chooses ([`NetGuide::span`]); the
    /// others' is uniform, as the local search's. 0 (the default): every move's.
    pub focus: f64,
    /// How each chain's network learns from its moves; `None`: it does not (set by
    /// [`GuideKind::Online`]; ignored by the uniform guide).
    pub online: Option<OnlineConfig>,
}

impl GuidedSearch {
    /// The guided search of `kind`; `seed` draws an untrained network's weights.
    pub fn new(kind: GuideKind, seed: u64) -> Result<GuidedSearch, AgentError> {
        if let GuideKind::Online(net) = &kind {
            if matches!(**net, GuideKind::Uniform | GuideKind::Online(_)) {
                return Err(TrainError::Config(format!(
                    "guide {kind:?}: only a network guide learns online"
                ))
                .into());
            }
            let mut search = GuidedSearch::new((**net).clone(), seed)?;
            search.kind = kind;
            search.online = Some(OnlineConfig::default());
            return Ok(search);
        }
        let (net, info) = match &kind {
            GuideKind::Uniform => (None, generalist::info()?),
            GuideKind::Untrained => {
                let info = generalist::info()?;
                let net =
                    MuZeroNet::new(&info.network, seed, &device()).map_err(TrainError::from)?;
                (Some(net), info)
            }
            GuideKind::Bundled => (Some(generalist::network()?), generalist::info()?),
            GuideKind::Tuned => (Some(generalist::guide_network()?), generalist::info()?),
            GuideKind::Run(dir) => (Some(train::load_network(dir)?), train::read_run_info(dir)?),
            GuideKind::Online(_) => unreachable!("handled above"),
        };
        Ok(GuidedSearch {
            kind,
            net,
            options: info.options,
            network: info.network,
            search: LocalSearch::default(),
            temperature: DEFAULT_GUIDE_TEMPERATURE,
            focus: 0.0,
            online: None,
        })
    }

    /// This search guided by `net` (of the shape of its own network) instead of its own,
    /// e.g. a network trained on move outcomes ([`crate::train_on_outcomes`]).
    pub fn with_network(mut self, net: MuZeroNet) -> Result<GuidedSearch, AgentError> {
        let c = net.config();
        if self.net.is_none()
            || (c.observation_len, c.action_count)
                != (self.network.observation_len, self.network.action_count)
        {
            return Err(TrainError::Config(format!(
                "guide {:?}: a network of {} observations and {} actions cannot replace its own",
                self.kind, c.observation_len, c.action_count
            ))
            .into());
        }
        self.net = Some(net);
        Ok(self)
    }

    /// Its network (`None` for the uniform guide).
    pub fn network(&self) -> Option<&MuZeroNet> {
        self.net.as_ref()
    }

    /// The guide.
    pub fn kind(&self) -> &GuideKind {
        &self.kind
    }

    /// The game's rules its network was trained under.
    pub fn options(&self) -> &GameOptions {
        &self.options
    }

    /// The rules it plays where a case's are `wanted`, and how its network reads them:
    /// `wanted` itself where the network reads it (see the module's doc), else the
    /// network's own rules.
    pub fn rules_for(&self, wanted: &GameOptions) -> (GameOptions, GuideView) {
        // The buffers' order changes whose turn comes next, not what an observation holds.
        let layout = |o: &GameOptions| GameOptions {
            fast_levels: 1,
            order: malloc_game::Order::Xla,
            ..o.clone()
        };
        let sizes_fit = |o: &GameOptions| {
            observation_len(o) == self.network.observation_len
                && o.action_count() == self.network.action_count
        };
        if layout(wanted) == layout(&self.options) {
            if wanted.fast_levels == self.options.fast_levels && sizes_fit(wanted) {
                return (wanted.clone(), GuideView::Direct);
            }
            if self.options.fast_levels == 1 && sizes_fit(&layout(wanted)) {
                return (wanted.clone(), GuideView::Pass);
            }
        }
        (self.options.clone(), GuideView::Direct)
    }

    /// The game of `program` on `hw` under the rules it plays where `wanted` are the
    /// case's ([`GuidedSearch::rules_for`]), or why the guide cannot play it.
    pub fn setup(
        &self,
        program: &Arc<Program>,
        hw: &Hardware,
        wanted: &GameOptions,
    ) -> Result<Arc<GameSetup>, AgentError> {
        let incompatible = |msg: String| AgentError::Incompatible {
            dir: self.kind.origin(),
            program: program.name().to_string(),
            hardware: hw.name.clone(),
            msg,
        };
        let (options, _) = self.rules_for(wanted);
        let setup = GameSetup::new(Arc::clone(program), hw.clone(), options)
            .map_err(|e| incompatible(e.to_string()))?;
        if let Some(net) = &self.net {
            let c = net.config();
            if (c.observation_len, c.action_count)
                != (self.network.observation_len, self.network.action_count)
            {
                return Err(incompatible(format!(
                    "its network takes observations of {} and {} actions; its run.json says {} and {}",
                    c.observation_len,
                    c.action_count,
                    self.network.observation_len,
                    self.network.action_count
                )));
            }
        }
        Ok(setup)
    }

    /// Searches `setup` (made by [`GuidedSearch::setup`]) until `limit`, as
    /// [`LocalSearch::run_from`] does, each chain with its own guide (learning, with
    /// [`GuidedSearch::online`], on its own copy of the network). The chains start from
    /// the fastest of the heuristics' lines, `given` (the MIP's line, say) and the
    /// network's own game ([`GuidedSearch::own_game`]). Returns what the guides did;
    /// fails, before any move, if a chain's copy cannot be made.
    pub fn run(
        &self,
        setup: &Arc<GameSetup>,
        given: &[Start],
        seed: u64,
        limit: &Limit,
        incumbent: &Incumbent,
    ) -> Result<GuideStats, AgentError> {
        let mut starts = given.to_vec();
        starts.extend(
            self.own_game(setup, limit)
                .map(|g| Start::new("network", g)),
        );
        let run = Chains {
            search: &self.search,
            seed,
            limit,
            incumbent,
        };
        self.chains(setup, &starts, &run)
    }

    /// `run.search`'s chains from `starts`, each with its own guide (and learning copy).
    pub(crate) fn chains(
        &self,
        setup: &Arc<GameSetup>,
        starts: &[Start],
        run: &Chains<'_>,
    ) -> Result<GuideStats, AgentError> {
        let (temperature, focus, limit) = (self.temperature, self.focus, run.limit);
        let net = self.net.as_ref();
        let (_, view) = self.rules_for(setup.options());
        // The learning chains' copies are made here, so that a run named as learning
        // either learns on every chain or does not start.
        let mut copies = Vec::new();
        if let (Some(net), Some(config)) = (net, &self.online) {
            for _ in 0..limit.threads {
                let guide = NetGuide::learning(net, view, temperature, config.clone())?;
                copies.push(Mutex::new(Some(guide)));
            }
        }
        let (calls, steps) = (AtomicU64::new(0), AtomicU64::new(0));
        let guides = |k: usize| -> Box<dyn MoveGuide + '_> {
            let Some(net) = net else {
                return Box::new(UniformGuide);
            };
            let copy = copies.get(k).and_then(|c| c.lock().ok()?.take());
            let guide = copy.unwrap_or_else(|| NetGuide::new(net, view, temperature));
            Box::new(guide.focused(focus).counting(&calls, &steps))
        };
        run.search
            .run_guided(setup, starts, run.seed, limit, run.incumbent, &guides);
        Ok(GuideStats {
            network_calls: calls.load(Ordering::Relaxed),
            learning_steps: steps.load(Ordering::Relaxed),
        })
    }
}

/// One run of a guided search's chains: the local search they run and its settings.
pub(crate) struct Chains<'r> {
    pub search: &'r LocalSearch,
    pub seed: u64,
    pub limit: &'r Limit,
    pub incumbent: &'r Incumbent,
}

impl GuidedSearch {
    /// The network's own game on `setup`: at each turn the legal action its policy rates
    /// highest (no search), so one inference a turn; `None` without a network, or where
    /// `limit` runs out first (checked every 64 turns). A start for the search: the game
    /// the network would play, beside the heuristics'.
    pub fn own_game(&self, setup: &Arc<GameSetup>, limit: &Limit) -> Option<Game> {
        let net = self.net.as_ref()?;
        let (_, view) = self.rules_for(setup.options());
        let mut guide = NetGuide::new(net, view, self.temperature);
        let mut game = setup.start();
        let mut mask = vec![false; setup.action_count()];
        while !game.is_terminal() {
            if game.turn() % 64 == 0 && limit.expired() {
                return None;
            }
            let logits = guide.infer(&game)?;
            game.legal_mask(&mut mask);
            let best = (0..mask.len())
                .filter(|&a| mask[a])
                .max_by(|&a, &b| logits[a].total_cmp(&logits[b]).then(b.cmp(&a)))
                .unwrap_or(0);
            game.apply_action(best).ok()?;
        }
        Some(game)
    }
}

/// A guide's network: shared by the chains, or the chain's own copy that it trains.
enum NetRef<'n> {
    Shared(&'n MuZeroNet),
    Own(Box<MuZeroNet>),
}

impl NetRef<'_> {
    fn get(&self) -> &MuZeroNet {
        match self {
            NetRef::Shared(net) => net,
            NetRef::Own(net) => net,
        }
    }
}

/// A chain's network guide: the policy at each re-decided turn, the line's turns cached.
pub struct NetGuide<'n> {
    net: NetRef<'n>,
    /// Where the chain's copy learns from its moves ([`NetGuide::learning`]).
    learner: Option<OnlineLearner>,
    view: GuideView,
    temperature: f32,
    /// The share of moves whose first turn it chooses by disagreement.
    focus: f64,
    /// The policy logits of the line's turns computed so far, by turn, each with the
    /// probability the policy gives the actions other than the line's there.
    cache: Vec<Option<(Box<[f32]>, f32)>>,
    obs: Vec<f32>,
    /// The game's own observation, where the network reads a view of it.
    full: Vec<f32>,
    mask: Vec<bool>,
    weights: Vec<f64>,
    inferences: u64,
    /// Where its network calls and learning steps are added when it is dropped.
    totals: Option<(&'n AtomicU64, &'n AtomicU64)>,
}

impl<'n> NetGuide<'n> {
    /// The guide of `net`, reading games through `view`.
    pub fn new(net: &'n MuZeroNet, view: GuideView, temperature: f32) -> NetGuide<'n> {
        let c = net.config();
        NetGuide {
            net: NetRef::Shared(net),
            learner: None,
            view,
            temperature: temperature.max(1e-6),
            focus: 0.0,
            cache: Vec::new(),
            obs: vec![0.0; c.observation_len],
            full: Vec::new(),
            mask: vec![false; c.action_count],
            weights: vec![0.0; c.action_count],
            inferences: 0,
            totals: None,
        }
    }

    /// The guide of a copy of `net` that learns from the outcomes of the chain's moves
    /// (`crate::online`); fails if the copy cannot be made.
    pub fn learning(
        net: &'n MuZeroNet,
        view: GuideView,
        temperature: f32,
        config: OnlineConfig,
    ) -> Result<NetGuide<'n>, AgentError> {
        let own = net.snapshot().map_err(TrainError::from)?;
        let learner = OnlineLearner::new(&own, config)?;
        let mut guide = NetGuide::new(net, view, temperature);
        guide.net = NetRef::Own(Box::new(own));
        guide.learner = Some(learner);
        Ok(guide)
    }

    /// Learning steps taken ([`NetGuide::learning`]; 0 for a guide that does not learn).
    pub fn learning_steps(&self) -> u64 {
        self.learner.as_ref().map_or(0, OnlineLearner::steps)
    }

    /// This guide choosing the first turn of a share `focus` of its moves by disagreement
    /// ([`NetGuide::span`]).
    pub fn focused(mut self, focus: f64) -> NetGuide<'n> {
        self.focus = focus.clamp(0.0, 1.0);
        self
    }

    /// This guide adding its network calls to `calls` and its learning steps to `steps`
    /// when it is dropped.
    pub fn counting(mut self, calls: &'n AtomicU64, steps: &'n AtomicU64) -> NetGuide<'n> {
        self.totals = Some((calls, steps));
        self
    }

    /// Network calls so far (one row each).
    pub fn inferences(&self) -> u64 {
        self.inferences
    }

    /// The policy logits of `game`'s state; `None` if the network failed (it cannot, on a
    /// game whose sizes [`GuidedSearch::setup`] checked).
    fn infer(&mut self, game: &Game) -> Option<Box<[f32]>> {
        self.observe(game);
        self.inferences += 1;
        let out = self.net.get().initial_inference(&self.obs, 1).ok()?;
        Some(out.policy_logits.into_boxed_slice())
    }

    /// `game`'s state as the network reads it, into `self.obs`.
    fn observe(&mut self, game: &Game) {
        self.view.encode(game, &mut self.full, &mut self.obs);
    }

    /// The policy at turn `t` of the line (`game` its state before `t`, `own` the line's
    /// action there), from the cache.
    fn line_policy(&mut self, t: usize, game: &Game, own: Option<usize>) -> Option<Box<[f32]>> {
        if let Some(Some((p, _))) = self.cache.get(t) {
            return Some(p.clone());
        }
        let p = self.infer(game)?;
        if self.cache.len() <= t {
            self.cache.resize(t + 1, None);
        }
        self.cache[t] = Some((p.clone(), disagreement(&p, own)));
        Some(p)
    }
}

impl Drop for NetGuide<'_> {
    fn drop(&mut self) {
        if let Some((calls, steps)) = self.totals {
            calls.fetch_add(self.inferences, Ordering::Relaxed);
            steps.fetch_add(self.learning_steps(), Ordering::Relaxed);
        }
    }
}

/// The probability `logits`' policy gives the actions other than `own`.
fn disagreement(logits: &[f32], own: Option<usize>) -> f32 {
    let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let total: f32 = logits.iter().map(|&l| (l - top).exp()).sum();
    match own.and_then(|a| logits.get(a)) {
        Some(&l) if total > 0.0 => 1.0 - (l - top).exp() / total,
        _ => 1.0,
    }
}

impl MoveGuide for NetGuide<'_> {
    /// The uniform span; with probability `focus`, its first turn instead drawn among the
    /// line's turns whose policy is cached, in proportion to how much the policy prefers
    /// other actions there than the line's (the turns the network would play otherwise).
    fn span(&mut self, line: &Line, mean_changed: f64, rng: &mut StdRng) -> Span {
        let uniform = uniform_span(line, mean_changed, rng);
        if self.focus <= 0.0 || !rng.random_bool(self.focus) {
            return uniform;
        }
        let weight = |e: &Option<(Box<[f32]>, f32)>| e.as_ref().map_or(0.0, |(_, d)| *d as f64);
        let total: f64 = self.cache.iter().take(line.len()).map(weight).sum();
        if total <= 0.0 {
            return uniform;
        }
        let mut x = rng.random::<f64>() * total;
        for (t, e) in self.cache.iter().enumerate().take(line.len()) {
            let w = weight(e);
            if w > 0.0 && x < w {
                return Span {
                    first: t,
                    ..uniform
                };
            }
            x -= w;
        }
        uniform
    }

    fn action(&mut self, line: &Line, game: &Game, i: usize, rng: &mut StdRng) -> usize {
        // At a move's first turn a cached policy leaves `self.obs` stale; a policy
        // inferred there left this very state's observation in it.
        let cached = i == 0 && matches!(self.cache.get(game.turn()), Some(Some(_)));
        let a = self.policy_action(line, game, i, rng);
        if i == 0 && self.learner.is_some() {
            if cached {
                self.observe(game);
            }
            if let Some(learner) = &mut self.learner {
                learner.played(&self.obs, a);
            }
        }
        a
    }

    fn line_changed(&mut self, from: usize) {
        self.cache.truncate(from);
    }

    fn judged(&mut self, change: f64, _accepted: bool) {
        if let Some(learner) = &mut self.learner {
            if learner.judged(self.net.get(), change) {
                // The policies cached were the network's before it learned.
                self.cache.clear();
            }
        }
    }
}

impl NetGuide<'_> {
    /// The action of the `i`-th re-decided turn drawn from the policy (see
    /// [`MoveGuide::action`]).
    fn policy_action(&mut self, line: &Line, game: &Game, i: usize, rng: &mut StdRng) -> usize {
        let t = game.turn();
        let (logits, own) = if i == 0 {
            (
                self.line_policy(t, game, line.action_at(t)),
                line.action_at(t),
            )
        } else {
            (self.infer(game), line.repair(game).action())
        };
        let Some(logits) = logits else {
            return UniformGuide.action(line, game, i, rng);
        };
        game.legal_mask(&mut self.mask);
        if let Some(a) = own.filter(|&a| a < self.mask.len()) {
            self.mask[a] = false;
        }
        // Softmax at the temperature over the allowed actions, its maximum subtracted.
        let tau = self.temperature as f64;
        let top = logits
            .iter()
            .zip(&self.mask)
            .filter(|(_, &ok)| ok)
            .map(|(&l, _)| l as f64)
            .fold(f64::NEG_INFINITY, f64::max);
        if top == f64::NEG_INFINITY {
            // No other legal action: the line's own (legal at turn 0 of a move, and the
            // repair is legal by construction), as the uniform guide plays.
            return own.unwrap_or(0);
        }
        let mut total = 0.0;
        for ((w, &l), &ok) in self.weights.iter_mut().zip(logits.iter()).zip(&self.mask) {
            *w = if ok {
                ((l as f64 - top) / tau).exp()
            } else {
                0.0
            };
            total += *w;
        }
        let mut x = rng.random::<f64>() * total;
        let mut last = 0;
        for (a, &w) in self.weights.iter().enumerate() {
            if w > 0.0 {
                last = a;
                if x < w {
                    return a;
                }
                x -= w;
            }
        }
        last
    }
}
