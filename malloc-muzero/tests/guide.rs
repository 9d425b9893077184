//! The guided local search (issue 43): the uniform guide is the local search, a guided run
//! repeats exactly per seed on two threads, and the bundled network loads and guides every
//! held-out program. Counted runs (`LocalSearchConfig::moves`): a deadline would make the
//! number of moves, and so the result, depend on the machine's speed.

mod common;

use accel_sim::{Hardware, Program, Simulator};
use common::{counted, limit};
use malloc_game::anytime::Incumbent;
use malloc_game::GameOptions;
use malloc_muzero::{GuideKind, GuidedSearch, OnlineConfig};
use muzero::Model;
use std::sync::Arc;
use std::time::Instant;

fn alexnet() -> (Arc<Program>, Hardware) {
    let program = Arc::new(bench_workloads::load("alexnet").unwrap());
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 16 << 20).unwrap();
    (program, hw)
}

/// The best game's actions and latency, the moves and the network calls of one run.
fn run(
    search: &GuidedSearch,
    program: &Arc<Program>,
    hw: &Hardware,
    seed: u64,
    threads: usize,
) -> (Vec<usize>, f64, u64, u64) {
    // The race's rules: every fast level of the hardware.
    let options = GameOptions {
        fast_levels: hw.levels.len() - 1,
        ..GameOptions::default()
    };
    let setup = search.setup(program, hw, &options).unwrap();
    assert_eq!(
        setup.options(),
        &options,
        "the guide plays the race's rules"
    );
    let incumbent = Incumbent::new(Instant::now());
    let calls = search
        .run(&setup, &[], seed, &limit(threads), &incumbent)
        .unwrap()
        .network_calls;
    let best = incumbent.best().unwrap();
    let mapping = best.mapping();
    mapping.validate(program, hw).unwrap();
    let latency = Simulator::new(program, hw).run(&mapping, false).latency_s;
    assert_eq!(Some(latency), best.final_latency());
    (best.actions(), latency, incumbent.moves(), calls)
}

#[test]
fn the_uniform_guide_plays_the_local_searchs_moves() {
    let (program, hw) = alexnet();
    let mut guided = GuidedSearch::new(GuideKind::Uniform, 0).unwrap();
    guided.search = counted(60);
    // On one fast level the guide's rules (the generalist's) are the race's defaults.
    assert_eq!(guided.options(), &GameOptions::default());
    let got = run(&guided, &program, &hw, 5, 2);
    let setup =
        malloc_game::GameSetup::new(Arc::clone(&program), hw.clone(), GameOptions::default())
            .unwrap();
    let incumbent = Incumbent::new(Instant::now());
    counted(60).run_from(&setup, &[], 5, &limit(2), &incumbent);
    let best = incumbent.best().unwrap();
    assert_eq!(got.0, best.actions());
    assert_eq!(Some(got.1), best.final_latency());
    assert_eq!((got.2, got.3), (incumbent.moves(), 0));
}

/// On two fast levels the bundled network reads each pass as one level: the guided search
/// plays the race's rules, and the uniform guide is the local search there too.
#[test]
fn on_two_fast_levels_the_guides_play_the_races_rules() {
    let program = Arc::new(bench_workloads::load("alexnet").unwrap());
    let hw = Hardware::nnp_i_like();
    let options = GameOptions {
        fast_levels: 2,
        ..GameOptions::default()
    };
    let bundled = GuidedSearch::new(GuideKind::Bundled, 0).unwrap();
    assert_eq!(
        bundled.rules_for(&options),
        (options.clone(), malloc_muzero::GuideView::Pass)
    );
    // Rules the network cannot read (another K): it plays its own.
    let other = GameOptions {
        slots: 8,
        ..options.clone()
    };
    assert_eq!(bundled.rules_for(&other).0, *bundled.options());
    let mut guided = GuidedSearch::new(GuideKind::Bundled, 0).unwrap();
    guided.search = counted(24);
    let first = run(&guided, &program, &hw, 2, 2);
    assert!(first.3 >= 24, "{} network calls", first.3);
    assert_eq!(first, run(&guided, &program, &hw, 2, 2));
    let mut uniform = GuidedSearch::new(GuideKind::Uniform, 0).unwrap();
    uniform.search = counted(24);
    let got = run(&uniform, &program, &hw, 2, 2);
    let setup = malloc_game::GameSetup::new(Arc::clone(&program), hw.clone(), options).unwrap();
    let incumbent = Incumbent::new(Instant::now());
    counted(24).run_from(&setup, &[], 2, &limit(2), &incumbent);
    assert_eq!(got.0, incumbent.best().unwrap().actions());
}

#[test]
fn a_guided_run_on_two_threads_repeats_exactly_per_seed() {
    let (program, hw) = alexnet();
    for kind in [GuideKind::Bundled, GuideKind::Tuned, GuideKind::Untrained] {
        let mut guided = GuidedSearch::new(kind.clone(), 0).unwrap();
        guided.search = counted(48);
        let first = run(&guided, &program, &hw, 11, 2);
        assert_eq!(first.2, 96, "{kind:?}");
        assert!(first.3 >= 48, "{kind:?}: {} network calls", first.3);
        assert_eq!(first, run(&guided, &program, &hw, 11, 2), "{kind:?}");
    }
    // Choosing turns by the policy's disagreement with the line repeats as well.
    let mut focused = GuidedSearch::new(GuideKind::Bundled, 0).unwrap();
    focused.search = counted(48);
    focused.focus = 0.5;
    let first = run(&focused, &program, &hw, 11, 2);
    assert_eq!(first, run(&focused, &program, &hw, 11, 2));
}

#[test]
fn a_guide_learning_online_learns_and_repeats_exactly_per_seed() {
    let (program, hw) = alexnet();
    let mut online = GuidedSearch::new("bundled+online".parse().unwrap(), 0).unwrap();
    online.search = counted(48);
    online.online = Some(OnlineConfig {
        learn_every: 8,
        batch: 16,
        ..OnlineConfig::default()
    });
    let first = run(&online, &program, &hw, 5, 2);
    assert_eq!(first, run(&online, &program, &hw, 5, 2));
    let setup = online
        .setup(&program, &hw, &GameOptions::default())
        .unwrap();
    let incumbent = Incumbent::new(Instant::now());
    let stats = online.run(&setup, &[], 5, &limit(2), &incumbent).unwrap();
    // 48 moves a chain, a step every 8 unless none of the last 16 changed latency.
    assert!(
        (1..=12).contains(&stats.learning_steps),
        "{} learning steps",
        stats.learning_steps
    );
    // The network it learns on is each chain's own: the bundled guide's is untouched.
    let mut bundled = GuidedSearch::new(GuideKind::Bundled, 0).unwrap();
    bundled.search = counted(48);
    let plain = bundled
        .run(&setup, &[], 5, &limit(2), &Incumbent::new(Instant::now()))
        .unwrap();
    assert_eq!(plain.learning_steps, 0);
}

/// As `evaluate --solver muzero` plays them (held_out.rs): tpu-v4i-like at 8 MiB; both
/// bundled networks.
#[test]
fn the_bundled_networks_load_and_guide_every_held_out_program() {
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 8 << 20).unwrap();
    for kind in [GuideKind::Bundled, GuideKind::Tuned] {
        let mut guided = GuidedSearch::new(kind.clone(), 0).unwrap();
        guided.search = counted(6);
        for program in common::held_out_programs() {
            let name = program.name().to_string();
            let (_, _, moves, calls) = run(&guided, &Arc::new(program), &hw, 0, 1);
            assert_eq!(moves, 6, "{kind:?} {name}");
            assert!(calls >= 6, "{kind:?} {name}: {calls} network calls");
        }
    }
}

/// The two bundled networks differ only where the move outcomes moved the policy: the
/// tuned guide is the generalist's shape and rules, with other weights.
#[test]
fn the_tuned_guide_is_the_generalist_with_another_policy() {
    let bundled = GuidedSearch::new(GuideKind::Bundled, 0).unwrap();
    let tuned = GuidedSearch::new(GuideKind::Tuned, 0).unwrap();
    assert_eq!(bundled.options(), tuned.options());
    let (a, b) = (bundled.network().unwrap(), tuned.network().unwrap());
    assert_eq!(a.config(), b.config());
    let obs = vec![0.1f32; a.config().observation_len];
    let (pa, pb) = (
        a.initial_inference(&obs, 1).unwrap().policy_logits,
        b.initial_inference(&obs, 1).unwrap().policy_logits,
    );
    assert_ne!(pa, pb);
}

#[test]
fn guides_parse_by_name() {
    assert_eq!("bundled".parse(), Ok(GuideKind::Bundled));
    assert_eq!("untrained".parse(), Ok(GuideKind::Untrained));
    assert_eq!("uniform".parse(), Ok(GuideKind::Uniform));
    assert_eq!("tuned".parse(), Ok(GuideKind::Tuned));
    assert_eq!(
        "bundled+online".parse(),
        Ok(GuideKind::Online(Box::new(GuideKind::Bundled)))
    );
    assert!("uniform+online".parse::<GuideKind>().is_err());
    let err = "learned".parse::<GuideKind>().unwrap_err();
    assert!(err.contains("uniform, untrained, bundled"), "{err}");
}
