//! Learning from the local search's move outcomes offline (`collect_outcomes`,
//! `train_on_outcomes`): recording leaves the search's moves alone, keeps only moves that
//! made a line faster, and the fit moves the policy toward the actions kept.

use accel_sim::Hardware;
use malloc_game::anytime::{Incumbent, Limit, LocalSearch, LocalSearchConfig};
use malloc_game::{GameOptions, GameSetup};
use malloc_muzero::{
    collect_outcomes, train_on_outcomes, GuideView, Outcome, OutcomeTraining, OutcomeWeight,
};
use muzero::{device, Model, MuZeroNet, NetworkConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn recording_keeps_the_local_searchs_moves_and_only_the_moves_that_made_a_line_faster() {
    let program = Arc::new(bench_workloads::load("alexnet").unwrap());
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 4 << 20).unwrap();
    let setup = Arc::new(GameSetup::new(program, hw, GameOptions::default()).unwrap());
    let recorded = Incumbent::new(Instant::now());
    let outcomes = collect_outcomes(&setup, GuideView::Direct, 5, 80, 2, &recorded);
    let plain = Incumbent::new(Instant::now());
    let search = LocalSearch {
        config: LocalSearchConfig {
            moves: Some(80),
            ..LocalSearchConfig::default()
        },
    };
    let limit = Limit {
        deadline: Instant::now() + Duration::from_secs(3600),
        threads: 2,
        stop: None,
    };
    search.run_from(&setup, &[], 5, &limit, &plain);
    assert_eq!(
        recorded.best().unwrap().actions(),
        plain.best().unwrap().actions()
    );
    assert_eq!(recorded.moves(), plain.moves());
    assert!(
        !outcomes.is_empty(),
        "80 moves a chain from a heuristic's line"
    );
    let len = malloc_game::observation::observation_len(setup.options());
    let actions = setup.options().action_count();
    for o in &outcomes {
        assert!(o.change < 0.0, "{}", o.change);
        assert_eq!(o.observation.len(), len);
        assert!(o.action < actions);
    }
    // Per seed and thread count, the same outcomes.
    let again = collect_outcomes(
        &setup,
        GuideView::Direct,
        5,
        80,
        2,
        &Incumbent::new(Instant::now()),
    );
    assert_eq!(outcomes, again);
}

fn policy(net: &MuZeroNet, obs: &[f32]) -> Vec<f32> {
    let logits = net.initial_inference(obs, 1).unwrap().policy_logits;
    let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = logits.iter().map(|l| (l - top).exp()).collect();
    let total: f32 = e.iter().sum();
    e.into_iter().map(|x| x / total).collect()
}

#[test]
fn the_fit_raises_the_actions_that_made_lines_faster_the_larger_gains_more_under_gain() {
    let net = MuZeroNet::new(&NetworkConfig::small(6, 4), 3, &device()).unwrap();
    let obs: Box<[f32]> = vec![0.5, -0.25, 1.0, 0.0, 0.75, -1.0].into_boxed_slice();
    let outcome = |action, change| Outcome {
        observation: obs.clone(),
        action,
        change,
    };
    // Action 1 made lines faster three times by a little; action 2 once by a lot.
    let outcomes = vec![
        outcome(1, -0.001),
        outcome(1, -0.001),
        outcome(1, -0.001),
        outcome(2, -0.03),
    ];
    let fit = |weight| {
        let copy = net.snapshot().unwrap();
        let config = OutcomeTraining {
            epochs: 200,
            batch: 4,
            learning_rate: 1e-2,
            weight,
            clip: 100.0,
        };
        let losses = train_on_outcomes(&copy, &outcomes, &config, 0).unwrap();
        assert!(losses.last() < losses.first(), "{losses:?}");
        policy(&copy, &obs)
    };
    let before = policy(&net, &obs);
    let each = fit(OutcomeWeight::Each);
    assert!(
        each[1] > before[1] && each[1] > each[2],
        "{before:?} -> {each:?}"
    );
    let gain = fit(OutcomeWeight::Gain);
    assert!(gain[2] > gain[1], "{before:?} -> {gain:?}");
}

#[test]
fn outcomes_of_another_shape_and_impossible_settings_are_refused() {
    let net = MuZeroNet::new(&NetworkConfig::small(6, 4), 3, &device()).unwrap();
    let wrong = Outcome {
        observation: vec![0.0; 5].into_boxed_slice(),
        action: 0,
        change: -0.1,
    };
    let err = train_on_outcomes(&net, &[wrong], &OutcomeTraining::default(), 0).unwrap_err();
    assert!(err.to_string().contains("observation of 5"), "{err}");
    let bad = OutcomeTraining {
        epochs: 0,
        ..OutcomeTraining::default()
    };
    assert!(bad.check().unwrap_err().contains("epochs"));
}
