//! The race's agent and its demonstrations: the heuristics' games enter the learner's
//! demonstrations buffer with their true returns, and a short race's agent finds the
//! optimum of a small game with its own games; what the agent's saved result is matched
//! on leaves out what does not decide it.

use accel_sim::Hardware;
use harness::race::{race_case, RaceConfig};
use harness::registry::demonstrations;
use harness::Case;
use malloc_game::players::{BeamPlayer, Player, XlaPlayer};
use malloc_game::{GameOptions, GameSetup};
use malloc_muzero::fixtures::small_config;
use malloc_muzero::train::{TrainConfig, Trainer};
use std::sync::Arc;

fn options() -> GameOptions {
    GameOptions {
        slots: 2,
        ..GameOptions::default()
    }
}

/// A game of a handful of turns, small enough to solve by enumeration.
fn tiny_case() -> Case {
    let p = accel_sim::fixtures::three_ops("tiny", 1 << 20, 1e6);
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 3 << 20).unwrap();
    Case::new(p, hw).unwrap()
}

fn setup(case: &Case) -> Arc<GameSetup> {
    GameSetup::new(Arc::clone(&case.program), case.hw.clone(), options()).unwrap()
}

fn temp(name: &str) -> std::path::PathBuf {
    malloc_muzero::fixtures::temp(&format!("race-{name}"))
}

#[test]
fn demonstrations_enter_the_buffer_with_their_true_returns() {
    let case = Case::named(Some("diamond"), None, Some("4MiB")).unwrap();
    let s = setup(&case);
    let dir = temp("demos");
    let t = Trainer::start(
        Arc::clone(&s),
        "diamond",
        small_config(&s),
        &dir,
        &demonstrations(),
    )
    .unwrap();
    let demos = t.demonstrations();
    let mut stored: Vec<f64> = demos
        .iter_games()
        .map(|(_, h)| h.rewards.iter().map(|&r| r as f64).sum())
        .collect();
    // xla, greedy-size (its nearest game) and beam, then the best of them again as the
    // one line the policy imitates.
    assert_eq!(stored.len(), 4);
    let xla = XlaPlayer.play(&s, 0).total_return();
    let beam = BeamPlayer::new(8).play(&s, 0).total_return();
    for want in [xla, beam] {
        let i = stored
            .iter()
            .position(|&r| (r - want).abs() < 1e-5)
            .unwrap_or_else(|| panic!("no stored game returns {want}: {stored:?}"));
        stored.remove(i);
    }
    // Only the imitated line carries policy targets: one-hot on the moves it played.
    let with_targets: Vec<_> = demos
        .iter_games()
        .filter(|(_, h)| h.policies.iter().any(|&p| p > 0.0))
        .collect();
    assert_eq!(with_targets.len(), 1);
    let (_, h) = with_targets[0];
    for (t, &a) in h.actions.iter().enumerate() {
        assert_eq!(h.policy(t)[a], 1.0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tiny_race_agent_finds_the_optimum_with_its_own_games() {
    let case = tiny_case();
    let s = setup(&case);
    let best = malloc_muzero::fixtures::optimal_game(s.start())
        .final_latency()
        .unwrap();
    let dir = temp("tiny");
    let config = RaceConfig {
        seconds: 20.0,
        threads: 2,
        seed: 1,
        options: options(),
        // No demonstrations: what the agent finds, it finds by its own play.
        train: TrainConfig {
            demonstrations: Vec::new(),
            ..small_config(&s)
        },
        checkpoint: None,
        agent_dir: Some(dir.clone()),
        egrl: egrl::EgrlConfig::default(),
        exact_objective: exact::Objective::default(),
        mip_share: None,
    };
    let t0 = std::time::Instant::now();
    let r = race_case(&case, "muzero-train", &config, &mut |_, _| {}).unwrap();
    assert!(t0.elapsed().as_secs_f64() < 20.0 + 10.0);
    assert!(r.valid);
    let found = r.best_latency_s.unwrap();
    assert!(
        (found - best).abs() <= 1e-12 * best,
        "found {found}, optimum {best}"
    );
    assert!(r.curve.iter().all(|&(t, _)| t <= 20.0 + 5.0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A demonstration the registry does not know is refused by the race's check, before any
/// budget is spent, naming the ones it knows.
#[test]
fn an_unknown_demonstration_is_refused_before_the_race() {
    let case = tiny_case();
    let s = setup(&case);
    let config = RaceConfig {
        seconds: 1.0,
        threads: 1,
        seed: 0,
        options: options(),
        train: TrainConfig {
            demonstrations: vec!["xla".into(), "local-search".into()],
            ..small_config(&s)
        },
        checkpoint: None,
        agent_dir: None,
        egrl: egrl::EgrlConfig::default(),
        exact_objective: exact::Objective::default(),
        mip_share: None,
    };
    let names = ["muzero-train".to_string()];
    let err = harness::race::check_config(&case, &names, &config).unwrap_err();
    let unknown = "demonstrations: unknown `local-search` (known: xla, greedy-size, beam, greedy)";
    assert!(err.to_string().contains(unknown), "{err}");
}

/// A saved agent result stays this race's whatever `keep_checkpoints` says: it decides
/// what stays on disk, not the result (and results saved before it existed lack it).
#[test]
fn keeping_checkpoints_is_not_a_setting_of_the_agents_result() {
    let case = tiny_case();
    let s = setup(&case);
    let config = |keep| RaceConfig {
        seconds: 1.0,
        threads: 1,
        seed: 0,
        options: options(),
        train: TrainConfig {
            keep_checkpoints: keep,
            ..small_config(&s)
        },
        checkpoint: None,
        agent_dir: None,
        egrl: egrl::EgrlConfig::default(),
        exact_objective: exact::Objective::default(),
        mip_share: None,
    };
    let kept = harness::race::settings_of(&case, "muzero-train", &config(true));
    let not = harness::race::settings_of(&case, "muzero-train", &config(false));
    assert!(harness::race::settings_differ(&kept, &not).is_empty());
    assert!(kept["train"].get("keep_checkpoints").is_none(), "{kept}");
    // What does decide it still counts.
    let other = RaceConfig {
        train: TrainConfig {
            batch_size: 64,
            ..config(false).train
        },
        ..config(false)
    };
    let other = harness::race::settings_of(&case, "muzero-train", &other);
    assert_eq!(
        harness::race::settings_differ(&not, &other),
        ["train.batch_size"]
    );
}

/// The guided searches race like the local search: a valid best mapping, a curve ending
/// at it, their moves counted; their settings name the guide; a guide that is not one is
/// an unknown solver.
#[test]
fn the_guided_searches_race_and_count_their_moves() {
    let case = Case::named(Some("diamond"), None, Some("4MiB")).unwrap();
    let config = RaceConfig {
        seconds: 0.3,
        threads: 2,
        seed: 0,
        options: GameOptions::default(),
        train: TrainConfig::default(),
        checkpoint: None,
        agent_dir: None,
        egrl: egrl::EgrlConfig::default(),
        exact_objective: exact::Objective::default(),
        // The moves are the point here: no MIP start to take the budget's first half.
        mip_share: Some(0.0),
    };
    for name in [
        "guided-uniform",
        "guided-untrained",
        "guided-bundled",
        "guided-tuned",
    ] {
        let r = race_case(&case, name, &config, &mut |_, _| {}).unwrap();
        assert!(r.valid, "{name}");
        assert_eq!(r.curve.last().map(|p| p.1), r.best_latency_s, "{name}");
        assert!(r.moves.is_some_and(|n| n > 0), "{name}: {:?}", r.moves);
        let guide = name.trim_start_matches("guided-");
        assert_eq!(r.settings.unwrap()["guide"], guide, "{name}");
    }
    assert!(harness::race::check_solvers(&["guided-nope".to_string()]).is_err());
}

/// The agent's race is the local search guided by its network, the bundled generalist
/// unless `--checkpoint` names a run: on two fast levels it plays the race's rules (the
/// network reads one pass at a time), counts its moves, records the MIP beside it and
/// keeps no run folder.
#[test]
fn the_agents_race_is_the_search_guided_by_the_bundled_network() {
    let case = Case::named(Some("alexnet"), Some("nnp-i-like"), None).unwrap();
    let config = RaceConfig {
        seconds: 2.0,
        threads: 2,
        seed: 0,
        options: GameOptions {
            fast_levels: 2,
            ..GameOptions::default()
        },
        train: TrainConfig::default(),
        checkpoint: None,
        agent_dir: None,
        egrl: egrl::EgrlConfig::default(),
        exact_objective: exact::Objective::default(),
        mip_share: None,
    };
    harness::race::check_config(&case, &["muzero".to_string()], &config).unwrap();
    let r = race_case(&case, "muzero", &config, &mut |_, _| {}).unwrap();
    assert!(r.valid && r.run_dir.is_none());
    assert!(r.moves.unwrap() > 0);
    let settings = r.settings.unwrap();
    assert_eq!(settings["guide"], "bundled");
    assert_eq!(settings["options"]["fast_levels"], 2);
    // The MIP beside it is recorded: the line it returned, never slower than its own
    // mapping, and a line the search took up only where windows ran.
    let mip = r
        .mip_beside
        .as_ref()
        .expect("the MIP beside the search is recorded");
    assert!(mip.returned_s <= mip.mip_s && mip.returned_s >= r.best_latency_s.unwrap());
    assert!(mip.line == "mip" || mip.windows.as_ref().is_some_and(|w| w.adopted > 0));
    let xla = race_case(&case, "xla", &config, &mut |_, _| {}).unwrap();
    assert!(r.best_latency_s.unwrap() <= xla.best_latency_s.unwrap() * (1.0 + 1e-12));
}
