//! What a guided race solver starts from besides the heuristics' lines (issue 59.2): the
//! learned start as the literature injects a prediction (Neural Diving, Nair et al. 2020;
//! Predict-and-Search, Han et al. 2023), and its control.
//!
//! - [`Injection::Learned`]: the bundled predictor's guess of which uses a best mapping
//!   holds fast. Its own line is one more start of the search and of the MIP, and the MIP
//!   is kept within a trust region around it ([`exact::TrustRegion`], [`region_delta`]
//!   flips).
//! - [`Injection::HeuristicRegion`]: the same trust region around the fast uses of the
//!   fastest heuristic's mapping (xla, xla-repack, greedy-size, by simulation).
//! - [`Injection::None`]: neither: the MIP over the whole space (the `muzero` solver).
//!
//! Everything here runs inside the solver's budget: the prediction, its line and the
//! heuristics' mappings are counted in it.

use accel_sim::{Mapping, Simulator};
use exact::TrustRegion;
use malloc_game::anytime::{Limit, Start};
use malloc_game::GameSetup;
use malloc_muzero::start::{learned_line, Prediction, StartError};
use std::sync::Arc;

/// The trust region's flips: this fraction (1 / it) of its centre's fast uses...
pub const REGION_DELTA_DIVISOR: usize = 5;
/// ... and at least this many.
pub const MIN_REGION_DELTA: usize = 16;

/// A region of this many flips around a centre of `centre` fast uses.
pub fn region_delta(centre: usize) -> usize {
    (centre / REGION_DELTA_DIVISOR).max(MIN_REGION_DELTA)
}

/// What a guided race solver starts from besides the heuristics' lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injection {
    /// Nothing more: the MIP over the whole space.
    None,
    /// The learned start: its line, and the MIP in a region around its prediction.
    Learned,
    /// The control: the MIP in a region around the fastest heuristic's fast uses.
    HeuristicRegion,
}

impl Injection {
    /// How a result's settings name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Injection::None => "none",
            Injection::Learned => "learned",
            Injection::HeuristicRegion => "heuristic-region",
        }
    }
}

/// An injection made for one case.
#[derive(Default)]
pub(crate) struct Injected {
    /// The MIP's trust region.
    pub region: Option<TrustRegion>,
    /// Mappings the MIP starts from besides the heuristics'.
    pub known: Vec<Mapping>,
    /// Lines the search starts from besides the heuristics'.
    pub starts: Vec<Start>,
}

/// `injection` made for the case of `setup` within `limit`: nothing where the limit runs
/// out first.
pub(crate) fn inject(
    injection: Injection,
    setup: &Arc<GameSetup>,
    limit: &Limit,
) -> Result<Injected, StartError> {
    let (program, hw) = (setup.program(), setup.hardware());
    match injection {
        Injection::None => Ok(Injected::default()),
        Injection::Learned => {
            let predictor = malloc_muzero::start::bundled()?;
            let prediction = Prediction::of(&predictor, program, hw);
            let centre = prediction.fast_set();
            let delta = region_delta(centre.len());
            let Some(line) = learned_line(setup, &prediction, limit) else {
                return Ok(Injected::default());
            };
            Ok(Injected {
                region: Some(TrustRegion { centre, delta }),
                known: vec![line.mapping()],
                starts: vec![Start::new("learned", line)],
            })
        }
        Injection::HeuristicRegion => {
            let mut sim = Simulator::new(program, hw);
            let fastest = exact::Exact::starts(program, hw)
                .into_iter()
                .map(|m| (sim.run(&m, false).latency_s, m))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            Ok(Injected {
                region: fastest.map(|(_, m)| {
                    let centre = m.fast_uses(program);
                    let delta = region_delta(centre.len());
                    TrustRegion { centre, delta }
                }),
                ..Injected::default()
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_sim::Hardware;
    use malloc_game::GameOptions;

    fn setup(workload: &str) -> Arc<GameSetup> {
        let program = Arc::new(bench_workloads::load(workload).unwrap());
        let hw = Hardware::preset("tpu-v4i-like").unwrap();
        GameSetup::new(program, hw, GameOptions::default()).unwrap()
    }

    /// The learned start's region is a valid one around the prediction, its line a valid
    /// mapping and a start; the control's region is centred on a heuristic's fast uses.
    #[test]
    fn each_injection_makes_a_valid_region() {
        let setup = setup("googlenet");
        let (program, hw) = (setup.program(), setup.hardware());
        let limit = Limit::from_now(600.0, 1);
        let none = inject(Injection::None, &setup, &limit).unwrap();
        assert!(none.region.is_none() && none.known.is_empty() && none.starts.is_empty());
        let learned = inject(Injection::Learned, &setup, &limit).unwrap();
        let region = learned.region.unwrap();
        region.check(program, hw).unwrap();
        assert_eq!(region.delta, region_delta(region.centre.len()));
        learned.known[0].validate(program, hw).unwrap();
        assert_eq!(learned.starts[0].name, "learned");
        let control = inject(Injection::HeuristicRegion, &setup, &limit).unwrap();
        let region = control.region.unwrap();
        region.check(program, hw).unwrap();
        let heuristics: Vec<_> = exact::Exact::starts(program, hw)
            .iter()
            .map(|m| m.fast_uses(program))
            .collect();
        assert!(heuristics.contains(&region.centre));
        assert!(control.known.is_empty() && control.starts.is_empty());
    }
}
