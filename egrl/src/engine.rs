//! The EGRL loop, one generation at a time:
//! 1. every member of the population acts (a GNN greedily, a Boltzmann chromosome by
//!    sampling) and the learner's actor plays its rollouts (sampled from its policy);
//! 2. every action is decoded and simulated, on the thread pool, while the learner takes
//!    its gradient steps on the replay buffer as it stood before this generation;
//! 3. every scored action enters the shared replay buffer; the best mapping is kept;
//! 4. the population breeds the next generation (elite, tournament, crossover, mutation);
//! 5. every `migrate_every` generations the learner's actor joins the population, as a
//!    GNN policy and as a Boltzmann chromosome with its logits as the prior.
//!
//! The variants: [`Variant::Egrl`] all of it, [`Variant::Ea`] without the learner,
//! [`Variant::Pg`] without the population (its actor plays as many games per generation as
//! the population would). Every random draw comes from the seed, the generation and the
//! member, so a run is reproducible for any thread count and resumes exactly.
//!
//! What decides a run, and its checks, is [`crate::EgrlConfig`] (`config.rs`).

use crate::boltzmann::Boltzmann;
use crate::config::{shown, EgrlConfig, Variant};
use crate::evolve::{next_generation, Member};
use crate::features::{feature_width, OpGraph};
use crate::gnn::{argmax_levels, forward, GnnShape, GraphTensors};
use crate::learner::{Learner, LearnerConfig, LearnerState, StepStats};
use crate::problem::{Assignment, Problem, Scored};
use crate::replay::Replay;
use crate::EgrlError;
// A seed for one purpose of one generation.
use accel_sim::seed_for as mix;
use candle_core::Device;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The best mapping found so far, as the assignment that gave it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Found {
    /// The level of each decision.
    pub assignment: Assignment,
    /// Its repaired mapping's simulated latency, seconds.
    pub latency_s: f64,
    /// Its fitness: the speedup over the all-slow mapping less the violation's penalty.
    pub fitness: f64,
    /// How far the repair moved it from what was asked (0 to 1).
    pub violation: f64,
    /// The generation it was found in.
    pub generation: u64,
    /// Assignments scored by then.
    pub evaluations: u64,
    /// Seconds of search by then, in every session.
    pub elapsed_s: f64,
    /// Who played it: `gnn`, `boltzmann` or `actor`.
    pub by: String,
}

/// A point of the improvement curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Seconds of search, in every session.
    pub elapsed_s: f64,
    /// Assignments scored by then.
    pub evaluations: u64,
    /// The best latency so far, seconds.
    pub latency_s: f64,
}

/// What one generation did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenerationMetrics {
    /// The generation's number.
    pub generation: u64,
    /// Assignments scored so far.
    pub evaluations: u64,
    /// Seconds of search so far.
    pub elapsed_s: f64,
    /// The best latency so far, seconds.
    pub best_latency_s: f64,
    /// This generation's best fitness.
    pub top_fitness: f64,
    /// This generation's mean fitness.
    pub mean_fitness: f64,
    /// Who played this generation's best.
    pub top_by: String,
    /// The learner's gradient steps so far.
    pub learner_steps: u64,
    /// The learner's last critic loss (none without a learner).
    #[serde(default)]
    pub critic_loss: Option<f64>,
    /// The actor's mean entropy per decision.
    #[serde(default)]
    pub entropy: Option<f64>,
    /// The entropy's weight in the actor's objective (SAC's temperature).
    #[serde(default)]
    pub alpha: Option<f64>,
}

/// Everything a checkpoint holds: with the problem, the run continues exactly.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EgrlState {
    /// The run's config.
    pub config: EgrlConfig,
    /// Generations completed.
    pub generation: u64,
    /// Assignments scored.
    pub evaluations: u64,
    /// Seconds of search, in every session.
    pub elapsed_s: f64,
    /// The GNN policies and Boltzmann chromosomes.
    pub population: Vec<Member>,
    /// Scored assignments the learner samples from.
    pub replay: Replay,
    /// The learner's networks and optimizer (none for `egrl-ea`).
    pub learner: Option<LearnerState>,
    /// The best assignment found.
    pub best: Option<Found>,
    /// Each improvement.
    pub curve: Vec<CurvePoint>,
    /// Each generation's figures.
    pub metrics: Vec<GenerationMetrics>,
}

/// When [`Egrl::run`] stops (besides its stop flag).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunLimits {
    /// When to stop, by the clock.
    pub deadline: Option<Instant>,
    /// Total generations (counting those before a resume).
    pub generations: Option<u64>,
    /// Total evaluations.
    pub evaluations: Option<u64>,
}

/// A running EGRL search over one problem.
pub struct Egrl {
    problem: Arc<Problem>,
    shape: GnnShape,
    graph: Arc<GraphTensors>,
    learner: Option<Learner>,
    state: EgrlState,
    pool: rayon::ThreadPool,
}

/// One action to score, and who played it.
struct Action {
    assignment: Assignment,
    /// The member's index, or `None` for the actor's rollouts.
    member: Option<usize>,
    by: &'static str,
}

const LEARNER_PURPOSE: u64 = 1 << 40;
const BREEDING_PURPOSE: u64 = 1 << 41;
const ROLLOUT_PURPOSE: u64 = 1 << 42;
const INIT_PURPOSE: u64 = 1 << 43;

impl Egrl {
    /// A fresh run on `problem`.
    pub fn new(problem: Arc<Problem>, config: EgrlConfig) -> Result<Egrl, EgrlError> {
        config
            .check_for(problem.decisions().len(), problem.levels())
            .map_err(EgrlError::Config)?;
        let shape = shape_of(&problem, &config);
        let d = problem.decisions().len();
        let levels = problem.levels();
        let mut population = Vec::new();
        if config.variant.evolves() {
            for i in 0..config.gnn_members {
                let mut rng = StdRng::seed_from_u64(mix(config.seed, 0, INIT_PURPOSE + i as u64));
                population.push(Member::Gnn(shape.init(&mut rng)));
            }
            for i in 0..config.boltzmann_members {
                let purpose = INIT_PURPOSE + (config.gnn_members + i) as u64;
                let mut rng = StdRng::seed_from_u64(mix(config.seed, 0, purpose));
                population.push(Member::Boltzmann(Boltzmann::random(
                    d, levels, 1.0, &mut rng,
                )));
            }
        }
        let learner = if config.variant.learns() {
            let mut rng = StdRng::seed_from_u64(mix(config.seed, 0, LEARNER_PURPOSE));
            Some(LearnerState::fresh(shape, &config.learner, &mut rng))
        } else {
            None
        };
        let state = EgrlState {
            replay: Replay::new(config.replay_capacity),
            config,
            generation: 0,
            evaluations: 0,
            elapsed_s: 0.0,
            population,
            learner,
            best: None,
            curve: Vec::new(),
            metrics: Vec::new(),
        };
        Egrl::from_state(problem, state)
    }

    /// A run continued from `state` (a checkpoint of a run on the same problem).
    pub fn from_state(problem: Arc<Problem>, state: EgrlState) -> Result<Egrl, EgrlError> {
        state
            .config
            .check_for(problem.decisions().len(), problem.levels())
            .map_err(EgrlError::Config)?;
        let shape = shape_of(&problem, &state.config);
        let graph = graph_of(&problem)?;
        let d = problem.decisions().len();
        for m in &state.population {
            let fits = match m {
                Member::Gnn(p) => shape.fits(p),
                Member::Boltzmann(b) => b.levels == problem.levels() && b.decisions() == d,
            };
            if !fits {
                return Err(EgrlError::Config(
                    "the checkpoint's population was made for another program or hardware".into(),
                ));
            }
        }
        let learner = match &state.learner {
            Some(s) => Some(Learner::restore(
                shape,
                Arc::clone(&graph),
                state.config.learner.clone(),
                s,
            )?),
            None => None,
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(state.config.resolved_threads())
            .build()
            .map_err(|e| EgrlError::Config(format!("thread pool: {e}")))?;
        Ok(Egrl {
            problem,
            shape,
            graph,
            learner,
            state,
            pool,
        })
    }

    /// A snapshot for a checkpoint.
    pub fn state(&self) -> Result<EgrlState, EgrlError> {
        let mut s = self.state.clone();
        s.learner = match &self.learner {
            Some(l) => Some(l.state()?),
            None => None,
        };
        Ok(s)
    }

    /// The problem searched.
    pub fn problem(&self) -> &Arc<Problem> {
        &self.problem
    }
    /// The run's config.
    pub fn config(&self) -> &EgrlConfig {
        &self.state.config
    }
    /// The best assignment found so far.
    pub fn best(&self) -> Option<&Found> {
        self.state.best.as_ref()
    }
    /// Each improvement so far.
    pub fn curve(&self) -> &[CurvePoint] {
        &self.state.curve
    }
    /// Each generation's figures so far.
    pub fn metrics(&self) -> &[GenerationMetrics] {
        &self.state.metrics
    }
    /// Generations completed.
    pub fn generation(&self) -> u64 {
        self.state.generation
    }
    /// Assignments scored so far.
    pub fn evaluations(&self) -> u64 {
        self.state.evaluations
    }

    /// Runs generations until a limit or `stop`; `on_generation` hears of each (and may
    /// checkpoint). Returns the generations run.
    pub fn run(
        &mut self,
        limits: &RunLimits,
        stop: &AtomicBool,
        on_generation: &mut dyn FnMut(&Egrl, &GenerationMetrics) -> Result<(), EgrlError>,
    ) -> Result<u64, EgrlError> {
        let _matmuls = crate::gnn::SingleThreadedMatmuls::new();
        let start = Instant::now();
        let base = self.state.elapsed_s;
        let mut ran = 0;
        loop {
            let done = limits.deadline.is_some_and(|d| Instant::now() >= d)
                || limits
                    .generations
                    .is_some_and(|g| self.state.generation >= g)
                || limits
                    .evaluations
                    .is_some_and(|e| self.state.evaluations >= e)
                || stop.load(Ordering::SeqCst);
            if done {
                return Ok(ran);
            }
            let metrics = self.step(base, start)?;
            ran += 1;
            on_generation(self, &metrics)?;
        }
    }

    /// One generation (see the module docs).
    fn step(&mut self, base_s: f64, start: Instant) -> Result<GenerationMetrics, EgrlError> {
        let config = self.state.config.clone();
        let generation = self.state.generation;
        let mut actions = self.member_actions()?;
        actions.extend(self.rollouts()?);
        let problem = Arc::clone(&self.problem);
        let replay = &self.state.replay;
        let learner = &mut self.learner;
        let mut learner_rng = StdRng::seed_from_u64(mix(config.seed, generation, LEARNER_PURPOSE));
        let (scores, stats) = self.pool.install(|| {
            rayon::join(
                || score_all(&problem, &actions),
                || learn(learner.as_mut(), replay, &config.learner, &mut learner_rng),
            )
        });
        let stats = stats?;
        if let Some(s) = stats {
            finite_stats(&s, generation, &config.learner)?;
        }
        let elapsed_s = base_s + start.elapsed().as_secs_f64();
        let member_fitness = self.record(&actions, &scores, elapsed_s);
        if config.variant.evolves() {
            let mut rng = StdRng::seed_from_u64(mix(config.seed, generation, BREEDING_PURPOSE));
            let next = next_generation(
                &self.state.population,
                &member_fitness,
                &config.evolution,
                &mut rng,
            );
            self.state.population = next;
            if config.variant == Variant::Egrl && (generation + 1) % config.migrate_every == 0 {
                self.migrate()?;
            }
        }
        self.state.generation += 1;
        self.state.elapsed_s = base_s + start.elapsed().as_secs_f64();
        let metrics = self.metrics_of(&actions, &scores, stats);
        self.state.metrics.push(metrics.clone());
        Ok(metrics)
    }

    /// Each member's action this generation.
    fn member_actions(&self) -> Result<Vec<Action>, EgrlError> {
        let generation = self.state.generation;
        let seed = self.state.config.seed;
        let device = Device::Cpu;
        let out: Vec<Result<Action, EgrlError>> = self.pool.install(|| {
            self.state
                .population
                .par_iter()
                // One task per member: the GNNs (slow) come first and would all land on
                // one thread under the default split.
                .with_max_len(1)
                .enumerate()
                .map(|(i, m)| {
                    let (assignment, by) = match m {
                        Member::Gnn(p) => {
                            let t = p.tensors(&self.shape, &device)?;
                            let out = forward(&self.shape, &t, &self.graph)?;

                            (Assignment(argmax_levels(&out)?), "gnn")
                        }
                        Member::Boltzmann(b) => {
                            let mut rng = StdRng::seed_from_u64(mix(seed, generation, i as u64));
                            (b.sample(&mut rng), "boltzmann")
                        }
                    };
                    Ok(Action {
                        assignment,
                        member: Some(i),
                        by,
                    })
                })
                .collect()
        });
        out.into_iter().collect()
    }

    /// The actor's games this generation, sampled from its policy.
    fn rollouts(&self) -> Result<Vec<Action>, EgrlError> {
        let Some(learner) = &self.learner else {
            return Ok(Vec::new());
        };
        let config = &self.state.config;
        let count = match config.variant {
            Variant::Pg => config.gnn_members + config.boltzmann_members,
            _ => config.learner.rollouts_per_generation,
        }
        .max(1);
        let policy = Boltzmann::from_logits(learner.actor_logits()?, self.problem.levels());
        let generation = self.state.generation;
        Ok((0..count)
            .map(|r| {
                let purpose = ROLLOUT_PURPOSE + r as u64;
                let mut rng = StdRng::seed_from_u64(mix(config.seed, generation, purpose));
                Action {
                    assignment: policy.sample(&mut rng),
                    member: None,
                    by: "actor",
                }
            })
            .collect())
    }

    /// Enters every scored action into the replay buffer and the best; returns each
    /// member's fitness.
    fn record(&mut self, actions: &[Action], scores: &[Scored], elapsed_s: f64) -> Vec<f64> {
        let mut member_fitness = vec![f64::NEG_INFINITY; self.state.population.len()];
        for (a, s) in actions.iter().zip(scores) {
            self.state.evaluations += 1;
            if let Some(i) = a.member {
                member_fitness[i] = s.fitness;
            }
            self.state.replay.push(a.assignment.clone(), s.fitness);
            let better = self
                .state
                .best
                .as_ref()
                .is_none_or(|b| s.latency_s < b.latency_s);
            if better {
                self.state.best = Some(Found {
                    assignment: a.assignment.clone(),
                    latency_s: s.latency_s,
                    fitness: s.fitness,
                    violation: s.violation,
                    generation: self.state.generation,
                    evaluations: self.state.evaluations,
                    elapsed_s,
                    by: a.by.to_string(),
                });
                self.state.curve.push(CurvePoint {
                    elapsed_s,
                    evaluations: self.state.evaluations,
                    latency_s: s.latency_s,
                });
            }
        }
        member_fitness
    }

    /// The actor joins the population in place of its two last children: as a GNN
    /// policy, and as a Boltzmann chromosome whose prior is its logits.
    fn migrate(&mut self) -> Result<(), EgrlError> {
        let Some(learner) = &self.learner else {
            return Ok(());
        };
        let n = self.state.population.len();
        let elite = ((n as f64 * self.state.config.evolution.elite_fraction).ceil() as usize)
            .clamp(1, n.max(1));
        if n > elite {
            self.state.population[n - 1] = Member::Gnn(learner.actor_params()?);
        }
        if n > elite + 1 {
            let logits = learner.actor_logits()?;
            self.state.population[n - 2] =
                Member::Boltzmann(Boltzmann::from_logits(logits, self.problem.levels()));
        }
        Ok(())
    }

    fn metrics_of(
        &self,
        actions: &[Action],
        scores: &[Scored],
        stats: Option<StepStats>,
    ) -> GenerationMetrics {
        let top = scores
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.fitness.total_cmp(&b.1.fitness).then(b.0.cmp(&a.0)));
        let mean = scores.iter().map(|s| s.fitness).sum::<f64>() / scores.len().max(1) as f64;
        GenerationMetrics {
            generation: self.state.generation,
            evaluations: self.state.evaluations,
            elapsed_s: self.state.elapsed_s,
            best_latency_s: self.state.best.as_ref().map_or(f64::NAN, |b| b.latency_s),
            top_fitness: top.map_or(f64::NAN, |t| t.1.fitness),
            mean_fitness: mean,
            top_by: top.map_or(String::new(), |t| actions[t.0].by.to_string()),
            learner_steps: self.learner.as_ref().map_or(0, Learner::steps),
            critic_loss: stats.map(|s| s.critic_loss),
            entropy: stats.map(|s| s.entropy),
            alpha: stats.map(|s| s.alpha),
        }
    }
}

/// The learner's steps of one generation, on batches from `replay` (none while it is
/// empty); the last step's statistics.
fn learn(
    learner: Option<&mut Learner>,
    replay: &Replay,
    config: &LearnerConfig,
    rng: &mut StdRng,
) -> Result<Option<StepStats>, EgrlError> {
    let Some(learner) = learner else {
        return Ok(None);
    };
    if replay.is_empty() {
        return Ok(None);
    }
    let mut last = None;
    for _ in 0..config.steps_per_generation {
        let batch = replay.sample(config.batch, rng);
        last = Some(learner.train_step(&batch)?);
    }
    Ok(last)
}

/// Refuses a learner step whose statistics are not finite: the learner has diverged, and
/// every later step (and the actor's games, and its migrants) would carry NaN while the
/// metrics wrote `null`. The run stops before this generation is recorded, so the last
/// checkpoint holds the learner as it was before.
fn finite_stats(s: &StepStats, generation: u64, config: &LearnerConfig) -> Result<(), EgrlError> {
    let bad: Vec<String> = [
        ("critic loss", s.critic_loss),
        ("entropy", s.entropy),
        ("alpha", s.alpha),
    ]
    .iter()
    .filter(|(_, v)| !v.is_finite())
    .map(|(name, v)| format!("its {name} is {}", shown(*v)))
    .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(EgrlError::Diverged(format!(
        "generation {generation}: {} (learner.learning_rate {}, learner.alpha_learning_rate {}): start a new run with lower rates",
        bad.join(", "),
        config.learning_rate,
        config.alpha_learning_rate
    )))
}

/// Decodes and simulates every action, a simulator per worker thread.
fn score_all(problem: &Problem, actions: &[Action]) -> Vec<Scored> {
    actions
        .par_iter()
        .map_init(
            || problem.simulator(),
            |sim, a| problem.score(sim, &a.assignment).1,
        )
        .collect()
}

pub(crate) fn shape_of(problem: &Problem, config: &EgrlConfig) -> GnnShape {
    GnnShape {
        features: feature_width(problem.levels()),
        hidden: config.hidden,
        rounds: config.rounds,
        levels: problem.levels(),
    }
}

fn graph_of(problem: &Problem) -> Result<Arc<GraphTensors>, EgrlError> {
    Ok(Arc::new(GraphTensors::new(
        &OpGraph::of(problem),
        &Device::Cpu,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::fixtures::three_ops;
    use accel_sim::Hardware;

    fn problem() -> Arc<Problem> {
        let p = three_ops("t", 1 << 20, 1e6);
        Arc::new(Problem::new(Arc::new(p), Hardware::nnp_i_like(), 0.1).unwrap())
    }

    /// A learner whose numbers are no longer finite stops the run with an error, before
    /// the generation is recorded (its metrics wrote null and the run went on).
    #[test]
    fn a_diverged_learner_stops_the_run() {
        let pr = problem();
        let config = EgrlConfig {
            variant: Variant::Pg,
            threads: 1,
            ..EgrlConfig::default()
        };
        let mut state = Egrl::new(Arc::clone(&pr), config).unwrap().state().unwrap();
        state.learner.as_mut().unwrap().log_alpha = f64::NAN;
        let mut egrl = Egrl::from_state(pr, state).unwrap();
        let limits = RunLimits {
            generations: Some(3),
            ..RunLimits::default()
        };
        let e = egrl
            .run(&limits, &AtomicBool::new(false), &mut |_, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("diverged") && e.contains("learner.learning_rate"),
            "{e}"
        );
        assert!(egrl
            .metrics()
            .iter()
            .all(|m| m.alpha.is_none_or(f64::is_finite)));
    }
}
