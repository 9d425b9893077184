//! What decides an EGRL run ([`EgrlConfig`], with its [`Variant`]): reading it from JSON
//! with errors that name the field, and the checks that keep a run within memory.

use crate::evolve::EvolutionConfig;
use crate::features::feature_width;
use crate::gnn::GnnShape;
use crate::learner::LearnerConfig;
use serde::{Deserialize, Serialize};

/// Which system runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Variant {
    /// Population and learner (`egrl`).
    #[serde(rename = "egrl")]
    Egrl,
    /// The population alone (`egrl-ea`).
    #[serde(rename = "egrl-ea")]
    Ea,
    /// The learner alone (`egrl-pg`).
    #[serde(rename = "egrl-pg")]
    Pg,
}

impl Variant {
    /// The variant's solver name (`egrl`, `egrl-ea`, `egrl-pg`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::Egrl => "egrl",
            Variant::Ea => "egrl-ea",
            Variant::Pg => "egrl-pg",
        }
    }
    pub(crate) fn evolves(self) -> bool {
        self != Variant::Pg
    }
    pub(crate) fn learns(self) -> bool {
        self != Variant::Ea
    }
}

/// Everything that decides a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EgrlConfig {
    /// Which system runs: population and learner, or one of them alone.
    pub variant: Variant,
    /// The seed of every random draw: a run with the same seed and config repeats exactly.
    pub seed: u64,
    /// GNN policies in the population.
    pub gnn_members: usize,
    /// Boltzmann chromosomes in the population.
    pub boltzmann_members: usize,
    /// Width of the GNN's hidden features.
    pub hidden: usize,
    /// Message-passing rounds.
    pub rounds: usize,
    /// How the population breeds.
    pub evolution: EvolutionConfig,
    /// The soft actor-critic learner's knobs.
    pub learner: LearnerConfig,
    /// Generations between migrations of the learner's actor into the population.
    pub migrate_every: u64,
    /// Assignments the shared replay buffer keeps for the learner.
    pub replay_capacity: usize,
    /// The weight of the violation in the fitness (see [`crate::problem`]).
    pub violation_penalty: f64,
    /// Worker threads (0: one per core).
    pub threads: usize,
}

impl Default for EgrlConfig {
    fn default() -> Self {
        EgrlConfig {
            variant: Variant::Egrl,
            seed: 0,
            gnn_members: 10,
            boltzmann_members: 20,
            hidden: 32,
            rounds: 3,
            evolution: EvolutionConfig::default(),
            learner: LearnerConfig::default(),
            migrate_every: 5,
            replay_capacity: 20_000,
            violation_penalty: 0.1,
            threads: 0,
        }
    }
}

/// The most scalars a search may hold in its networks and chromosomes: the population's,
/// and the learner's actor and critic with their Adam moments. Breeding holds two
/// generations and a checkpoint a copy and its bytes, so the peak is about four times this
/// as f32: 2 GiB.
pub const MAX_PARAMETERS: u64 = 1 << 27;

/// The most bytes the replay buffer may hold when full (a checkpoint writes all of it).
pub const MAX_REPLAY_BYTES: u64 = 1 << 30;

impl EgrlConfig {
    /// Reads a config file's text: a JSON object of `EgrlConfig`'s fields (absent ones keep
    /// their defaults), its nested configs objects too.
    ///
    /// Why the shape is checked first: serde reads a struct from a JSON array by position,
    /// so `["egrl-pg", 7]` would set the variant and the seed, and `[]` would be the
    /// defaults, without a word.
    pub fn from_json(text: &str) -> Result<EgrlConfig, String> {
        EgrlConfig::from_json_with_fields(text).map(|(config, _)| config)
    }

    /// [`EgrlConfig::from_json`], with the top-level fields the text sets (sorted), so
    /// that a front end can tell a field the file set from one it left at its default.
    pub fn from_json_with_fields(text: &str) -> Result<(EgrlConfig, Vec<String>), String> {
        let value: serde_json::Value = accel_sim::parse_json(text)?;
        let defaults = serde_json::to_value(EgrlConfig::default()).map_err(|e| e.to_string())?;
        accel_sim::objects_where_objects(&value, &defaults, "EgrlConfig")?;
        // From the text, not the value: a repeated field is an error there, while the value
        // would keep the last one.
        let config = serde_json::from_str(text).map_err(|e| {
            match field_at_fault(&value, &defaults, &[]) {
                Some(field) => format!("{field}: {e}"),
                None => e.to_string(),
            }
        })?;
        let mut fields: Vec<String> = value
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        // Sorted here, not by the map: serde_json keeps insertion order when a dependency
        // turns on its `preserve_order` feature.
        fields.sort();
        Ok((config, fields))
    }

    /// Rejects settings that cannot run, naming the field.
    pub fn check(&self) -> Result<(), String> {
        self.check_counts()?;
        self.check_floats()?;
        // The networks alone, before the problem is known (at its fewest levels and without
        // the chromosomes): [`EgrlConfig::check_for`] counts all of it.
        self.check_parameters(0, 2, "at least ")
    }

    /// The counts: at least 1 where 0 cannot run, and bounded.
    fn check_counts(&self) -> Result<(), String> {
        let positive = [
            ("hidden", self.hidden),
            ("learner.batch", self.learner.batch),
            ("replay_capacity", self.replay_capacity),
            ("evolution.tournament", self.evolution.tournament),
        ];
        for (field, v) in positive {
            if v == 0 {
                return Err(format!("{field} is 0, must be at least 1"));
            }
        }
        // Bounds that keep a typo from asking for terabytes.
        let at_most = [
            ("hidden", self.hidden, 4096),
            ("rounds", self.rounds, 64),
            ("gnn_members", self.gnn_members, 100_000),
            ("boltzmann_members", self.boltzmann_members, 100_000),
            ("replay_capacity", self.replay_capacity, 10_000_000),
            ("learner.batch", self.learner.batch, 1 << 16),
            (
                "learner.steps_per_generation",
                self.learner.steps_per_generation,
                1 << 16,
            ),
            (
                "learner.rollouts_per_generation",
                self.learner.rollouts_per_generation,
                100_000,
            ),
            ("evolution.tournament", self.evolution.tournament, 100_000),
            ("threads", self.threads, 256),
        ];
        for (field, v, max) in at_most {
            if v > max {
                return Err(format!("{field} is {v}, must be at most {max}"));
            }
        }
        if self.variant.evolves() && self.gnn_members + self.boltzmann_members == 0 {
            return Err("gnn_members + boltzmann_members is 0: the population is empty".into());
        }
        if self.variant == Variant::Egrl && self.migrate_every == 0 {
            return Err("migrate_every is 0, must be at least 1".into());
        }
        Ok(())
    }

    /// The floats: finite, and in a range where the search still means something.
    fn check_floats(&self) -> Result<(), String> {
        let ranges = self.float_ranges();
        for (field, v, min, max) in ranges {
            if !(v.is_finite() && (min..=max).contains(&v)) {
                return Err(format!(
                    "{field} is {}, must be in [{min}, {max}]",
                    shown(v)
                ));
            }
        }
        if self.learner.learning_rate == 0.0 {
            return Err(
                "learner.learning_rate is 0, must be > 0 (for no learner, use the egrl-ea variant)"
                    .into(),
            );
        }
        Ok(())
    }

    /// Each float with the range it must lie in.
    fn float_ranges(&self) -> [(&'static str, f64, f64, f64); 11] {
        // Every float is finite and in a range where the search still means something: a
        // learning rate of 1e300 passed "finite and >= 0" and turned the learner's loss into
        // NaN. Each upper bound is far beyond any useful value.
        [
            ("violation_penalty", self.violation_penalty, 0.0, 1e3),
            // Open at 0: a learner that cannot move is the egrl-ea variant, said plainly.
            (
                "learner.learning_rate",
                self.learner.learning_rate,
                0.0,
                1.0,
            ),
            // The learner keeps ln(alpha) in [-30, 5].
            (
                "learner.initial_alpha",
                self.learner.initial_alpha,
                0.0,
                100.0,
            ),
            // A share of the uniform policy's entropy.
            (
                "learner.target_entropy",
                self.learner.target_entropy,
                0.0,
                1.0,
            ),
            (
                "learner.alpha_learning_rate",
                self.learner.alpha_learning_rate,
                0.0,
                10.0,
            ),
            (
                "evolution.elite_fraction",
                self.evolution.elite_fraction,
                0.0,
                1.0,
            ),
            (
                "evolution.crossover_probability",
                self.evolution.crossover_probability,
                0.0,
                1.0,
            ),
            (
                "evolution.gnn_mutation_rate",
                self.evolution.gnn_mutation_rate,
                0.0,
                1.0,
            ),
            (
                "evolution.boltzmann_mutation_rate",
                self.evolution.boltzmann_mutation_rate,
                0.0,
                1.0,
            ),
            // The GNN's initial weights are below 1 and the chromosomes' logits are kept in
            // [-4, 4]: larger steps only saturate them.
            (
                "evolution.gnn_mutation_sigma",
                f64::from(self.evolution.gnn_mutation_sigma),
                0.0,
                10.0,
            ),
            (
                "evolution.boltzmann_mutation_sigma",
                f64::from(self.evolution.boltzmann_mutation_sigma),
                0.0,
                100.0,
            ),
        ]
    }

    /// [`EgrlConfig::check`], and the bounds that depend on the problem's size: what the
    /// population, the learner and the replay buffer would hold.
    pub fn check_for(&self, decisions: usize, levels: usize) -> Result<(), String> {
        self.check()?;
        self.check_parameters(decisions, levels, "")?;
        let replay = (self.replay_capacity as u64).saturating_mul(replay_item_bytes(decisions));
        if replay > MAX_REPLAY_BYTES {
            return Err(format!(
                "replay_capacity is {}: full, the replay buffer would hold {replay} bytes ({decisions} decisions each), more than the {MAX_REPLAY_BYTES} allowed",
                self.replay_capacity
            ));
        }
        let batch = (self.learner.batch as u64)
            .saturating_mul(decisions as u64)
            .saturating_mul(levels as u64);
        if self.variant.learns() && batch > MAX_PARAMETERS {
            return Err(format!(
                "learner.batch is {}: a batch would be {batch} numbers ({decisions} decisions x {levels} levels each), more than the {MAX_PARAMETERS} allowed",
                self.learner.batch
            ));
        }
        Ok(())
    }

    fn check_parameters(&self, decisions: usize, levels: usize, bound: &str) -> Result<(), String> {
        let total = self.parameter_count(decisions, levels);
        if total <= MAX_PARAMETERS {
            return Ok(());
        }
        let per_gnn = gnn_parameters(self.hidden, self.rounds, levels);
        Err(format!(
            "the {} would hold {bound}{total} parameters ({per_gnn} per GNN of hidden {}, rounds {}; gnn_members {}, boltzmann_members {}), more than the {MAX_PARAMETERS} allowed (about {} GiB at the peak): lower hidden, rounds, gnn_members or boltzmann_members",
            match (self.variant.evolves(), self.variant.learns()) {
                (true, true) => "population and learner",
                (true, false) => "population",
                _ => "learner",
            },
            self.hidden,
            self.rounds,
            self.gnn_members,
            self.boltzmann_members,
            // Four copies of 4-byte floats (see [`MAX_PARAMETERS`]).
            (MAX_PARAMETERS * 4 * 4) >> 30
        ))
    }

    /// The scalars held in networks and chromosomes on a problem of `decisions` decisions
    /// over `levels` levels: each GNN member, each chromosome, and the learner's actor and
    /// critic with Adam's two moments each (saturating).
    pub fn parameter_count(&self, decisions: usize, levels: usize) -> u64 {
        let per_gnn = gnn_parameters(self.hidden, self.rounds, levels);
        let mut total = 0u64;
        if self.variant.evolves() {
            let chromosome = (decisions as u64).saturating_mul(levels as u64);
            total = total
                .saturating_add(per_gnn.saturating_mul(self.gnn_members as u64))
                .saturating_add(chromosome.saturating_mul(self.boltzmann_members as u64));
        }
        if self.variant.learns() {
            total = total.saturating_add(per_gnn.saturating_mul(6));
        }
        total
    }

    pub(crate) fn resolved_threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }
}

/// A float as a person reads it: 1e300, not three hundred digits.
pub(crate) fn shown(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// The parameters of one GNN of [`GnnShape`] on `levels` levels (saturating).
fn gnn_parameters(hidden: usize, rounds: usize, levels: usize) -> u64 {
    let shape = GnnShape {
        features: feature_width(levels.max(2)),
        hidden,
        rounds,
        levels,
    };
    shape.dims().iter().fold(0u64, |acc, d| {
        let n = d.iter().fold(1u64, |n, &x| n.saturating_mul(x as u64));
        acc.saturating_add(n)
    })
}

/// What one replayed assignment takes: a byte per decision, its fitness and the vector's
/// header.
fn replay_item_bytes(decisions: usize) -> u64 {
    decisions as u64 + 32
}

/// The path of the first field of `value` (a config's JSON, at `path` in it) that a config
/// does not take on its own: serde's message says what was wrong, and where in the text,
/// but not in which field.
fn field_at_fault(
    value: &serde_json::Value,
    defaults: &serde_json::Value,
    path: &[&str],
) -> Option<String> {
    for (name, v) in value.as_object()? {
        let mut inner = path.to_vec();
        inner.push(name);
        let nested = defaults
            .get(name)
            .filter(|d| d.is_object() && v.is_object());
        if let Some(d) = nested {
            if let Some(found) = field_at_fault(v, d, &inner) {
                return Some(found);
            }
            continue;
        }
        let alone = inner
            .iter()
            .rev()
            .fold(v.clone(), |acc, n| serde_json::json!({ *n: acc }));
        // As text: from a value, serde_json takes 1e39 as an f32 (infinity) without a word.
        if serde_json::from_str::<EgrlConfig>(&alone.to_string()).is_err() {
            return Some(inner.join("."));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{shape_of, Egrl};
    use crate::problem::Problem;
    use accel_sim::fixtures::three_ops;
    use accel_sim::Hardware;
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use std::sync::Arc;

    fn problem() -> Arc<Problem> {
        let p = three_ops("t", 1 << 20, 1e6);
        Arc::new(Problem::new(Arc::new(p), Hardware::nnp_i_like(), 0.1).unwrap())
    }

    #[test]
    fn a_config_is_an_object_at_every_level() {
        for (text, says) in [
            ("[]", "must be a JSON object"),
            (r#"["egrl-pg", 7]"#, "must be a JSON object"),
            ("null", "not null"),
            (r#"{"learner": [0.5]}"#, "learner: must be a JSON object"),
            (r#"{"evolution": 3}"#, "evolution: must be a JSON object"),
        ] {
            let e = EgrlConfig::from_json(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        let c =
            EgrlConfig::from_json(r#"{"variant": "egrl-pg", "seed": 7, "learner": {}}"#).unwrap();
        assert_eq!((c.variant, c.seed), (Variant::Pg, 7));
        for (text, field) in [
            (
                r#"{"evolution": {"boltzmann_mutation_sigma": 1e39}}"#,
                "evolution.boltzmann_mutation_sigma: ",
            ),
            (
                r#"{"seed": 1, "learner": {"batch": "64"}}"#,
                "learner.batch: ",
            ),
            (r#"{"learner": {"lr": 0.1}}"#, "learner.lr: "),
            (r#"{"variant": "egrl-xx"}"#, "variant: "),
        ] {
            // 1e39 overflows an f32: serde_json refuses it or reads it as infinity depending
            // on its features (the workspace's builds unify `float_roundtrip` in), and then
            // the check refuses it; either way the error names the field.
            let e = EgrlConfig::from_json(text)
                .and_then(|c| c.check())
                .unwrap_err();
            let named = e.starts_with(field) || e.starts_with(&field.replace(": ", " is "));
            assert!(named, "{text}: {e}");
        }
        let e = EgrlConfig::from_json(r#"{"seed": 1, "seed": 2}"#).unwrap_err();
        assert!(e.contains("duplicate field `seed`"), "{e}");
    }

    #[test]
    fn a_config_names_the_fields_its_text_sets() {
        let text = r#"{"variant": "egrl-pg", "seed": 7, "learner": {}}"#;
        let (c, fields) = EgrlConfig::from_json_with_fields(text).unwrap();
        assert_eq!((c.variant, c.seed), (Variant::Pg, 7));
        assert_eq!(fields, ["learner", "seed", "variant"]);
        let (_, none) = EgrlConfig::from_json_with_fields("{}").unwrap();
        assert!(none.is_empty());
        let e = EgrlConfig::from_json_with_fields("[]").unwrap_err();
        assert!(e.contains("must be a JSON object"), "{e}");
    }

    #[test]
    fn every_float_setting_is_bounded_and_named_by_its_path() {
        type Set = fn(&mut EgrlConfig, f64);
        let fields: [(&str, Set); 11] = [
            ("violation_penalty", |c, v| c.violation_penalty = v),
            ("learner.learning_rate", |c, v| c.learner.learning_rate = v),
            ("learner.initial_alpha", |c, v| c.learner.initial_alpha = v),
            ("learner.target_entropy", |c, v| {
                c.learner.target_entropy = v
            }),
            ("learner.alpha_learning_rate", |c, v| {
                c.learner.alpha_learning_rate = v
            }),
            ("evolution.elite_fraction", |c, v| {
                c.evolution.elite_fraction = v
            }),
            ("evolution.crossover_probability", |c, v| {
                c.evolution.crossover_probability = v
            }),
            ("evolution.gnn_mutation_rate", |c, v| {
                c.evolution.gnn_mutation_rate = v
            }),
            ("evolution.boltzmann_mutation_rate", |c, v| {
                c.evolution.boltzmann_mutation_rate = v
            }),
            ("evolution.gnn_mutation_sigma", |c, v| {
                c.evolution.gnn_mutation_sigma = v as f32
            }),
            ("evolution.boltzmann_mutation_sigma", |c, v| {
                c.evolution.boltzmann_mutation_sigma = v as f32
            }),
        ];
        for (field, set) in fields {
            for bad in [1e300, f64::INFINITY, f64::NAN, -1e-9] {
                let mut c = EgrlConfig::default();
                set(&mut c, bad);
                let e = c.check().unwrap_err();
                assert!(e.starts_with(field), "{field} = {bad}: {e}");
            }
        }
        let mut c = EgrlConfig::default();
        c.learner.learning_rate = 0.0;
        assert!(c.check().unwrap_err().contains("learner.learning_rate"));
    }

    #[test]
    fn the_parameter_count_is_what_the_networks_hold() {
        let pr = problem();
        let c = EgrlConfig {
            hidden: 7,
            rounds: 2,
            gnn_members: 3,
            boltzmann_members: 5,
            ..EgrlConfig::default()
        };
        let shape = shape_of(&pr, &c);
        let per_gnn = shape.init(&mut StdRng::seed_from_u64(0)).len() as u64;
        let (d, l) = (pr.decisions().len(), pr.levels());
        assert_eq!(gnn_parameters(7, 2, l), per_gnn);
        let chromosomes = 5 * (d * l) as u64;
        assert_eq!(
            c.parameter_count(d, l),
            3 * per_gnn + chromosomes + 6 * per_gnn
        );
        let ea = EgrlConfig {
            variant: Variant::Ea,
            ..c.clone()
        };
        assert_eq!(ea.parameter_count(d, l), 3 * per_gnn + chromosomes);
        let pg = EgrlConfig {
            variant: Variant::Pg,
            ..c
        };
        assert_eq!(pg.parameter_count(d, l), 6 * per_gnn);
    }

    /// Each size passes its own bound; together they do not fit in memory.
    #[test]
    fn a_population_beyond_memory_is_refused_before_it_is_made() {
        let c = EgrlConfig {
            hidden: 4096,
            gnn_members: 1000,
            ..EgrlConfig::default()
        };
        let e = c.check().unwrap_err();
        assert!(e.contains("parameters") && e.contains("gnn_members"), "{e}");
        let e = Egrl::new(problem(), c).err().unwrap().to_string();
        assert!(e.contains("parameters"), "{e}");
        // Chromosomes scale with the program: only the problem can tell.
        let c = EgrlConfig {
            boltzmann_members: 100_000,
            ..EgrlConfig::default()
        };
        c.check().unwrap();
        let e = c.check_for(2_000, 3).unwrap_err();
        assert!(e.contains("boltzmann_members"), "{e}");
        let c = EgrlConfig {
            replay_capacity: 10_000_000,
            ..EgrlConfig::default()
        };
        c.check().unwrap();
        let e = c.check_for(2_000, 3).unwrap_err();
        assert!(e.starts_with("replay_capacity"), "{e}");
        EgrlConfig::default().check_for(2_000, 3).unwrap();
    }
}
