//! The exact solver as `evaluate` and the race run it: the MIP first, for its bound and the
//! fastest simulated mapping it built or was given; then, under the simulated objective,
//! where the whole model did not finish, windows (docs/exact.md, "Windows"): the MIP
//! repairs a window of ops of the mapping at a time, each repair kept when it simulates
//! faster; then the local search for the rest of the budget, started from that mapping
//! (played as the game's nearest line) and the heuristics' games. The MIP's model ranks
//! mappings by a relaxation; the local search ranks them by the simulator itself, so what
//! it adds is what the relaxation cannot see (queued copies, stalls).
//!
//! The bound is the whole model's, or, where the whole model proved none (past its reach,
//! or stopped before its first relaxation was solved), the higher of the bound by prices
//! ([`exact::price_bound`]) and the bound by blocks ([`exact::block_bound`]): always one
//! proven over the whole program, never a window's.
//!
//! Under `--exact-objective proxy` the answer is the cost model's optimum, as named: no
//! windows, no local search, and the MIP has the whole budget.

use crate::evaluate::{BoundBy, Case, EvalError, Proof};
use crate::injection::Injected;
use accel_sim::{Mapping, Simulator};
use malloc_game::anytime::{Incumbent, Limit, LocalSearch, Start};
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The share of the budget the MIP gets under the simulated objective; the local search
/// has the rest and whatever the MIP leaves. microlp proves a suite case within a second
/// or not within a minute, and HiGHS proves each within 3 s (docs/exact.md), so a longer
/// MIP share buys little.
pub const MIP_SHARE: f64 = 0.5;

/// The MIP's share where windows may follow (`--exact-windows auto` or `on`): the bound
/// by blocks and the windows make better use of the rest than a longer branch and bound
/// (docs/exact.md, "Windows").
pub const WINDOWED_MIP_SHARE: f64 = 0.25;

/// Where the whole model did not finish, the share of the budget the whole-program bounds
/// get: the bounds by prices and by blocks side by side on two threads, or half of it
/// each on one.
pub const BOUND_SHARE: f64 = 0.15;

/// The share of the time left after the MIP (and the bounds) the windows get; the local
/// search has the rest.
pub const WINDOW_SHARE: f64 = 0.6;

/// Under `auto`, a proven whole model's mapping this far above its bound in simulation
/// still gets windows.
pub const WINDOWS_GAP: f64 = 0.01;

/// Whole-game replays the local search makes before its first move, counted in the time
/// one replay of the MIP's mapping took.
const REPLAYS_BEFORE_A_MOVE: u32 = 8;

/// How the local search after the MIP runs.
#[derive(Clone, Debug)]
pub struct Polish {
    /// The game's rules for the local search's lines.
    pub options: GameOptions,
    /// The local search's seed.
    pub seed: u64,
    /// Local-search chains (at least 1).
    pub threads: usize,
}

/// What the run found.
#[derive(Clone, Debug)]
pub struct ExactRun {
    /// The MIP's answer, with `mapping` and `simulated_s` the fastest of everything
    /// found (the MIP's or the local search's).
    pub solution: exact::ExactSolution,
    /// What was proven, and whether the local search bettered the MIP's mapping.
    pub proof: Proof,
    /// `(elapsed_s, simulated latency)` at each improvement: under the simulated
    /// objective the fastest starting mapping first, then the MIP's mapping when the MIP
    /// ends, then the local search's.
    pub curve: Vec<(f64, f64)>,
    /// The line the local search after the MIP started from (`mip`, or a heuristic's
    /// that was faster), when it ran.
    pub start: Option<String>,
}

/// Runs the exact solver on `case` for `config.seconds` in all, telling `on_best` of each
/// improvement as it happens.
pub fn run_exact(
    case: &Case,
    config: &exact::ExactConfig,
    polish: &Polish,
    on_best: &mut dyn FnMut(f64, f64),
) -> Result<ExactRun, EvalError> {
    let t0 = Instant::now();
    let polishes = config.objective == exact::Objective::Simulated;
    let mut told = Told {
        t0,
        curve: Vec::new(),
        on_best,
    };
    // Under the simulated objective the MIP's starting mappings are its answer from the
    // moment they exist: the curve (and the race's primal integral) counts them then, not
    // when the MIP ends. Under proxy the answer is the model's best, whatever it simulates.
    let starts = exact::Exact::starts(&case.program, &case.hw);
    let mut sim = Simulator::new(&case.program, &case.hw);
    if polishes {
        let fastest = starts
            .iter()
            .filter_map(|m| simulated(&mut sim, case, m).ok());
        if let Some(l) = fastest.min_by(f64::total_cmp) {
            told.tell(l);
        }
    }
    let solution = exact::solve(&case.program, &case.hw, &mip_config(config), &starts)?;
    let mut answer = Answer {
        proof: Proof::of(&solution),
        solution,
    };
    told.tell(answer.solution.simulated_s);
    let deadline = t0 + Duration::from_secs_f64(config.seconds);
    if polishes && windows_wanted(config.windows, &answer.solution) {
        bound_and_repair(case, config, polish, deadline, &mut answer, &mut told)?;
    }
    let start = if polishes && Instant::now() < deadline {
        polished(case, polish, deadline, &mut answer, &mut told, &mut sim)?
    } else {
        None
    };
    Ok(ExactRun {
        solution: answer.solution,
        proof: answer.proof,
        curve: told.curve,
        start,
    })
}

/// The whole model's config: under the simulated objective its share of the budget, its
/// windows mode as given; under proxy all of the budget, the whole model whatever its size.
fn mip_config(config: &exact::ExactConfig) -> exact::ExactConfig {
    let polishes = config.objective == exact::Objective::Simulated;
    exact::ExactConfig {
        seconds: if polishes {
            config.seconds * mip_share(config.windows)
        } else {
            config.seconds
        },
        windows: if polishes {
            config.windows
        } else {
            exact::Windows::Off
        },
        ..config.clone()
    }
}

/// The answer so far and what is proven of it.
struct Answer {
    solution: exact::ExactSolution,
    proof: Proof,
}

/// The curve of improvements, each told to `on_best` as it is found.
struct Told<'a> {
    t0: Instant,
    curve: Vec<(f64, f64)>,
    on_best: &'a mut dyn FnMut(f64, f64),
}

impl Told<'_> {
    /// Notes latency `l` now where it improves on the curve.
    fn tell(&mut self, l: f64) {
        if self.curve.last().is_none_or(|&(_, best)| l < best) {
            self.note(self.t0.elapsed().as_secs_f64(), l);
        }
    }

    /// Notes latency `l` found at `t` seconds.
    fn note(&mut self, t: f64, l: f64) {
        self.curve.push((t, l));
        (self.on_best)(t, l);
    }
}

/// Where the whole model did not finish, the bounds by prices and by blocks; then the
/// windows repairing its answer until the deadline.
fn bound_and_repair(
    case: &Case,
    config: &exact::ExactConfig,
    polish: &Polish,
    deadline: Instant,
    answer: &mut Answer,
    told: &mut Told<'_>,
) -> Result<(), EvalError> {
    let Answer { solution, proof } = answer;
    if solution.status == exact::Status::TimeLimit {
        let left = deadline.saturating_duration_since(Instant::now());
        let seconds = (config.seconds * BOUND_SHARE).min(left.as_secs_f64());
        let target = solution.latency_s;
        let bounds = program_bounds(case, config.objective, seconds, target, polish.threads)?;
        for (bound, by) in bounds {
            raise(solution, proof, bound, by);
        }
    }
    windows(case, polish.seed, deadline, solution, proof, &mut |l| {
        told.tell(l)
    })
}

/// The local search from the answer's line until the deadline, its mapping taken where
/// faster; the line it started from, where it ran. A program the game cannot be set up
/// on keeps the answer.
fn polished(
    case: &Case,
    polish: &Polish,
    deadline: Instant,
    answer: &mut Answer,
    told: &mut Told<'_>,
    sim: &mut Simulator,
) -> Result<Option<String>, EvalError> {
    let Ok(setup) = GameSetup::new(
        Arc::clone(&case.program),
        case.hw.clone(),
        polish.options.clone(),
    ) else {
        return Ok(None);
    };
    let setup = Arc::new(setup);
    let incumbent = Incumbent::new(told.t0);
    let limit = Limit {
        deadline,
        threads: polish.threads.max(1),
        stop: None,
    };
    let replay = Instant::now();
    let from_mip = setup.nearest_trajectory(&answer.solution.mapping);
    // Before its first move the local search plays its starting games and replays the
    // best into a line with snapshots: about eight whole games (measured on a 300k-op
    // program: 6.5 s a game, 52 s before the first move). Where the budget left cannot
    // pay for them it would only run past the budget.
    let left = deadline.saturating_duration_since(Instant::now());
    if left < replay.elapsed() * REPLAYS_BEFORE_A_MOVE {
        return Ok(None);
    }
    let mut best = answer.solution.simulated_s;
    let mut improved = |t: f64, l: f64| {
        if l < best {
            best = l;
            told.note(t, l);
        }
    };
    crate::race_runs::watch(&incumbent, &limit, &mut improved, || {
        let mip = Start::new("mip", from_mip);
        LocalSearch::default().run_from(&setup, &[mip], polish.seed, &limit, &incumbent)
    });
    let Answer { solution, proof } = answer;
    if let Some(found) = faster_than(&incumbent, solution.simulated_s) {
        let mapping = found.mapping();
        // The game's mappings are valid by construction; the simulator re-scores what is
        // returned, as for every other solver.
        let latency = simulated(sim, case, &mapping)?;
        if latency < solution.simulated_s {
            solution.mapping = mapping;
            solution.simulated_s = latency;
            proof.polished = true;
            proof.polished_from = incumbent.start();
        }
    }
    Ok(incumbent.start())
}

/// Whether windows follow the whole model: under `auto` where it did not finish, or where
/// its fastest mapping simulates more than [`WINDOWS_GAP`] above its bound (the model's
/// optimum is the relaxation's, and the windows' models see the copies' contention the
/// whole one does not); always under `on`.
fn windows_wanted(mode: exact::Windows, solution: &exact::ExactSolution) -> bool {
    match mode {
        exact::Windows::Off => false,
        exact::Windows::On => true,
        exact::Windows::Auto => {
            solution.status == exact::Status::TimeLimit
                || solution.simulated_s > solution.lower_bound_s * (1.0 + WINDOWS_GAP)
        }
    }
}

/// Windows from the fastest mapping so far for their share of the time left; `solution`
/// and `proof` take what they find, and `tell` each faster mapping.
fn windows(
    case: &Case,
    seed: u64,
    deadline: Instant,
    solution: &mut exact::ExactSolution,
    proof: &mut Proof,
    tell: &mut dyn FnMut(f64),
) -> Result<(), EvalError> {
    let left = |now: Instant| deadline.saturating_duration_since(now).as_secs_f64();
    let window_config = exact::WindowConfig {
        seconds: left(Instant::now()) * WINDOW_SHARE,
        seed,
    };
    let found = exact::improve(
        &case.program,
        &case.hw,
        &solution.mapping,
        &window_config,
        &mut |_, l| tell(l),
    )?;
    if found.simulated_s < solution.simulated_s {
        solution.mapping = found.mapping;
        solution.simulated_s = found.simulated_s;
    }
    proof.windows = Some(found.stats);
    Ok(())
}

/// The bounds by prices and by blocks within `seconds`: side by side where `threads`
/// allows two (the MIPs and the bounds run on one thread, so the second would idle), else
/// one after the other, half of the time each. `target_s`: a latency in the objective
/// the model reaches, which sizes the prices' steps.
fn program_bounds(
    case: &Case,
    objective: exact::Objective,
    seconds: f64,
    target_s: f64,
    threads: usize,
) -> Result<[(f64, BoundBy); 2], EvalError> {
    let (program, hw) = (&case.program, &case.hw);
    let prices = |s: f64| exact::price_bound(program, hw, objective, s, Some(target_s));
    let blocks = |s: f64| exact::block_bound(program, hw, objective, s);
    let (p, b) = if threads >= 2 {
        std::thread::scope(|scope| {
            let p = scope.spawn(|| prices(seconds));
            let b = blocks(seconds);
            let p = p.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            (p, b)
        })
    } else {
        let t0 = Instant::now();
        let p = prices(seconds / 2.0);
        (p, blocks((seconds - t0.elapsed().as_secs_f64()).max(0.0)))
    };
    Ok([
        (p?.lower_bound_s, BoundBy::Prices),
        (b?.lower_bound_s, BoundBy::Blocks),
    ])
}

/// Takes `bound` (proven by `by`) for `solution` and `proof` where it is higher.
fn raise(solution: &mut exact::ExactSolution, proof: &mut Proof, bound: f64, by: BoundBy) {
    if bound > solution.lower_bound_s {
        solution.lower_bound_s = bound;
        solution.gap = ((solution.latency_s - bound) / solution.latency_s).max(0.0);
        proof.lower_bound_s = bound;
        proof.gap = solution.gap;
        proof.bound_by = by;
    }
}

/// The incumbent's best game if it simulates faster than `latency`.
fn faster_than(incumbent: &Incumbent, latency: f64) -> Option<malloc_game::Game> {
    incumbent
        .best()
        .filter(|g| g.final_latency().is_some_and(|l| l < latency))
}

/// `mapping`'s simulated latency, once the validator passes it.
fn simulated(sim: &mut Simulator, case: &Case, mapping: &Mapping) -> Result<f64, EvalError> {
    mapping
        .validate(&case.program, &case.hw)
        .map_err(|e| exact::ExactError::Invalid(e.to_string()))?;
    Ok(sim.run(mapping, false).latency_s)
}

/// What the MIP beside a search did ([`mip_mapping`]), recorded in the search's result so
/// that which line its windows repaired, and how often, can be read without its curve.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MipBeside {
    /// The line it returned: `mip`, or the search's start's name with `+search+windows`
    /// where its windows took up the search's best and repaired it (`+search` where they
    /// took it up and kept none of their repairs of it).
    pub line: String,
    /// How the MIP itself ended, before any window.
    pub status: exact::Status,
    /// The MIP's own mapping's simulated latency, seconds.
    pub mip_s: f64,
    /// The returned line's simulated latency, seconds.
    pub returned_s: f64,
    /// What the windows did, where they ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<exact::WindowStats>,
}

/// The exact solver's mapping for a search beside it, and what it did ([`MipBeside`]),
/// within `seconds`: the MIP for half of them (its whole model where the backend
/// can build it), then, where it did not finish or its mapping simulates far from its
/// bound, windows for the rest ([`windows_beside`]), as in the exact pipeline (no bound
/// by blocks: a start needs no bound). `None` where `seconds` is 0 or the MIP gives
/// nothing.
/// With `injected`'s trust region the MIP stays inside it ([`exact::solve_in_region`]) and
/// `injected`'s mappings join its starts; the windows after it range freely.
pub(crate) fn mip_mapping(
    case: &Case,
    seconds: f64,
    seed: u64,
    injected: &Injected,
    beside: &Incumbent,
) -> Option<(Mapping, MipBeside)> {
    if seconds <= 0.0 {
        return None;
    }
    let t0 = Instant::now();
    let mip = exact::ExactConfig {
        seconds: seconds * 0.5,
        relative_gap: 0.0,
        objective: exact::Objective::Simulated,
        // Past the backend's reach the whole model would not finish its first relaxation.
        windows: exact::Windows::Auto,
    };
    let mut starts = exact::Exact::starts(&case.program, &case.hw);
    starts.extend(injected.known.iter().cloned());
    let solution = match &injected.region {
        Some(region) => exact::solve_in_region(&case.program, &case.hw, &mip, &starts, region),
        None => exact::solve(&case.program, &case.hw, &mip, &starts),
    }
    .ok()?;
    let mut report = MipBeside {
        line: "mip".to_string(),
        status: solution.status,
        mip_s: solution.simulated_s,
        returned_s: solution.simulated_s,
        windows: None,
    };
    let left = seconds - t0.elapsed().as_secs_f64();
    if left <= 0.0 || !windows_wanted(exact::Windows::Auto, &solution) {
        return Some((solution.mapping, report));
    }
    let config = exact::WindowConfig {
        seconds: left,
        seed,
    };
    let mapping = windows_beside(case, solution, &config, beside, &mut report);
    Some((mapping, report))
}

/// Windows from `solution`'s mapping beside a search whose best is in `beside`: they
/// repair the fastest mapping known, the MIP's or the search's best whenever that is
/// faster ([`exact::improve_beside`]). The name is `mip`, or the search's start's with
/// `+search+windows` (`starts+windows` where the search's chains had not begun), written
/// into `report` with the windows' stats and the returned line's latency.
fn windows_beside(
    case: &Case,
    solution: exact::ExactSolution,
    config: &exact::WindowConfig,
    beside: &Incumbent,
    report: &mut MipBeside,
) -> Mapping {
    // The search's best is taken once per improvement: taking it replays its game.
    let mut tried = f64::INFINITY;
    let mut from = None;
    let mut offered = |latency: f64| {
        let l = beside.best_latency().filter(|&l| l < latency.min(tried))?;
        tried = l;
        from = beside.start();
        beside.best().map(|g| g.mapping())
    };
    let found = exact::improve_beside(
        &case.program,
        &case.hw,
        &solution.mapping,
        config,
        &mut |_, _| {},
        &mut offered,
    );
    match found {
        Ok(found) if found.simulated_s < solution.simulated_s => {
            // The search's best, repaired or not since it was taken up; before its chains
            // began (their starts still playing), the fastest of the starts played.
            let from = from.map_or("starts".to_string(), |f| format!("{f}+search"));
            report.line = if found.stats.adopted == 0 {
                "mip".to_string()
            } else if found.simulated_s < tried {
                format!("{from}+windows")
            } else {
                from
            };
            report.returned_s = found.simulated_s;
            report.windows = Some(found.stats);
            found.mapping
        }
        Ok(found) => {
            report.windows = Some(found.stats);
            solution.mapping
        }
        Err(_) => solution.mapping,
    }
}

/// The MIP's share of the budget under the simulated objective.
pub fn mip_share(windows: exact::Windows) -> f64 {
    match windows {
        exact::Windows::Off => MIP_SHARE,
        exact::Windows::Auto | exact::Windows::On => WINDOWED_MIP_SHARE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The curve is what `on_best` was told, improves step by step in time order and
    /// ends at the answer.
    fn assert_curve(run: &ExactRun, told: &[(f64, f64)]) {
        assert_eq!(run.curve, told);
        assert!(run
            .curve
            .windows(2)
            .all(|w| w[1].1 < w[0].1 && w[1].0 >= w[0].0));
        assert_eq!(run.curve.last().unwrap().1, run.solution.simulated_s);
    }

    fn polish() -> Polish {
        Polish {
            options: GameOptions::default(),
            seed: 7,
            threads: 1,
        }
    }

    /// Under the simulated objective (without windows) the local search takes the budget
    /// the MIP leaves, and what it returns is valid, no slower than the MIP's mapping, and
    /// what the curve ends at; the bound is the MIP's.
    #[test]
    fn the_local_search_only_ever_improves_the_mips_mapping() {
        let case = Case::named(Some("random-dag"), None, None).unwrap();
        let config = exact::ExactConfig {
            seconds: 1.0,
            windows: exact::Windows::Off,
            ..Default::default()
        };
        let mip = exact::Exact {
            config: exact::ExactConfig {
                seconds: config.seconds * mip_share(config.windows),
                ..config.clone()
            },
        }
        .solve_proven(&case.program, &case.hw)
        .unwrap();
        let mut told = Vec::new();
        let t0 = Instant::now();
        let run = run_exact(&case, &config, &polish(), &mut |t, l| told.push((t, l))).unwrap();
        assert!(t0.elapsed().as_secs_f64() >= config.seconds * 0.9);
        assert_curve(&run, &told);
        let mut sim = Simulator::new(&case.program, &case.hw);
        // The curve starts at the fastest of the MIP's starting mappings.
        let starts = exact::Exact::starts(&case.program, &case.hw);
        let fastest = starts
            .iter()
            .map(|m| simulated(&mut sim, &case, m).unwrap())
            .fold(f64::INFINITY, f64::min);
        assert_eq!(run.curve[0].1, fastest);
        assert_eq!(
            simulated(&mut sim, &case, &run.solution.mapping).unwrap(),
            run.solution.simulated_s
        );
        assert!(run.solution.simulated_s <= mip.simulated_s);
        assert_eq!(
            run.proof.polished,
            run.solution.simulated_s < mip.simulated_s
        );
        assert_eq!(run.proof.lower_bound_s, mip.lower_bound_s);
        assert!(run.proof.lower_bound_s <= run.solution.simulated_s);
    }

    /// With windows after the whole model, the answer is valid and no slower than the
    /// MIP's, the curve tells each improvement in order and ends at it, and the bound is
    /// a whole-program one (the model's, or the blocks' where higher) below the answer;
    /// the pipeline keeps to its budget.
    #[test]
    fn windows_only_ever_improve_and_the_bound_stays_the_whole_programs() {
        // resnet50 on nnp-i-like: microlp proves no optimum within seconds, HiGHS does.
        for (workload, hardware, seconds) in [
            ("random-dag", None, 2.0),
            ("resnet50", Some("nnp-i-like"), 6.0),
        ] {
            let case = Case::named(Some(workload), hardware, None).unwrap();
            let config = exact::ExactConfig {
                seconds,
                windows: exact::Windows::On,
                ..Default::default()
            };
            let mut told = Vec::new();
            let t0 = Instant::now();
            let run = run_exact(&case, &config, &polish(), &mut |t, l| told.push((t, l))).unwrap();
            let took = t0.elapsed().as_secs_f64();
            assert!(
                took >= seconds * 0.9 && took <= seconds + 2.0,
                "{workload}: {took}"
            );
            assert_curve(&run, &told);
            let mut sim = Simulator::new(&case.program, &case.hw);
            assert_eq!(
                simulated(&mut sim, &case, &run.solution.mapping).unwrap(),
                run.solution.simulated_s
            );
            // Never slower than the fastest mapping the MIP starts from.
            assert!(run.solution.simulated_s <= run.curve[0].1, "{workload}");
            let stats = run.proof.windows.as_ref().expect("windows ran");
            assert_eq!(stats.invalid, 0);
            assert!(stats.repairs > 0, "{workload}");
            let physical = xla_msa::bound_latency(&case.program, &case.hw);
            assert!(run.proof.lower_bound_s > physical, "{workload}");
            if run.proof.optimal {
                assert_eq!(run.proof.bound_by, crate::evaluate::BoundBy::Model);
            }
            assert!(run.proof.lower_bound_s > 0.0);
            assert!(
                run.proof.lower_bound_s <= run.solution.simulated_s,
                "{workload}"
            );
        }
    }

    /// Under the proxy objective the answer is the cost model's optimum as the MIP gives
    /// it: no local search.
    #[test]
    fn the_proxy_objective_is_the_mip_alone() {
        let case = Case::named(Some("diamond"), None, Some("4MiB")).unwrap();
        let config = exact::ExactConfig {
            seconds: 30.0,
            objective: exact::Objective::Proxy,
            ..Default::default()
        };
        let t0 = Instant::now();
        let run = run_exact(&case, &config, &polish(), &mut |_, _| {}).unwrap();
        assert!(t0.elapsed().as_secs_f64() < 10.0, "the proof is instant");
        assert!(run.proof.optimal && !run.proof.polished);
        assert_eq!(run.curve.len(), 1);
        let mip = exact::Exact { config }
            .solve_proven(&case.program, &case.hw)
            .unwrap();
        assert_eq!(run.solution.mapping, mip.mapping);
    }
}
