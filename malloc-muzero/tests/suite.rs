//! Multi-program training: one network over several cases, every case played once per
//! epoch, one policy-target line per case, a resumed run that repeats the uninterrupted
//! one, an agent that knows which programs it has seen, and a run of one case that is
//! the run of one program.

use accel_sim::Hardware;
use malloc_game::{observation, GameOptions, GameSetup};
use malloc_muzero::fixtures::{demonstrations, small_config};
use malloc_muzero::train::{Limits, Progress, TrainCase, TrainConfig, TrainError, Trainer};
use malloc_muzero::Agent;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// Three small programs of different sizes and compute, each at its own capacity.
fn cases() -> Vec<TrainCase> {
    [(1u64, 3u64, 1e6), (2, 5, 4e6), (1, 2, 2e7)]
        .iter()
        .enumerate()
        .map(|(k, &(unit_mib, cap_mib, flops))| {
            let name = format!("three-ops-{k}");
            let p = accel_sim::fixtures::three_ops(&name, unit_mib << 20, flops);
            let hw = Hardware::tpu_v4i_like()
                .with_capacity(1, cap_mib << 20)
                .unwrap();
            let options = GameOptions {
                slots: 2,
                ..GameOptions::default()
            };
            TrainCase {
                name: name.clone(),
                workload: name,
                setup: GameSetup::new(Arc::new(p), hw, options).unwrap(),
            }
        })
        .collect()
}

fn config() -> TrainConfig {
    let cases = cases();
    TrainConfig {
        threads: 1,
        checkpoint_every: 3,
        ..small_config(&cases[0].setup)
    }
}

fn temp(name: &str) -> std::path::PathBuf {
    malloc_muzero::fixtures::temp(&format!("suite-{name}"))
}

fn steps(t: &mut Trainer, n: usize) -> Vec<Progress> {
    (0..n)
        .map(|_| t.step_iteration(&Limits::default()).unwrap().unwrap())
        .collect()
}

/// Progress lines without their clocks, to compare two runs.
fn timeless(lines: &[Progress]) -> Vec<Progress> {
    lines
        .iter()
        .map(|p| Progress {
            elapsed_s: 0.0,
            ..p.clone()
        })
        .collect()
}

#[test]
fn every_case_is_played_once_per_epoch_and_a_resumed_run_repeats() {
    let dir = temp("epochs");
    let mut t = Trainer::start_cases(cases(), config(), &dir, &demonstrations()).unwrap();
    let first = steps(&mut t, 6);
    for epoch in first.chunks(3) {
        let seen: BTreeSet<_> = epoch.iter().map(|p| p.case.clone().unwrap()).collect();
        assert_eq!(seen.len(), 3, "{seen:?}");
    }
    // Each line reports its own case's baseline.
    let xla: BTreeSet<_> = first.iter().map(|p| p.xla_latency_s.to_bits()).collect();
    assert_eq!(xla.len(), 3);
    t.finish(false).unwrap();
    // The folder's lock goes with the trainer: a resume while it is held is refused.
    drop(t);
    for k in 0..3 {
        let best = dir.join("best").join(format!("{k:03}")).join("game.game");
        assert!(best.exists(), "{}", best.display());
        assert!(dir.join("programs").join(format!("{k:03}.json")).exists());
    }
    let more = {
        let mut r = Trainer::resume(&dir, None, &demonstrations()).unwrap();
        assert_eq!(r.iterations(), 6);
        steps(&mut r, 3)
    };

    let straight_dir = temp("straight");
    let mut s = Trainer::start_cases(cases(), config(), &straight_dir, &demonstrations()).unwrap();
    let straight = steps(&mut s, 9);
    let resumed: Vec<Progress> = first.into_iter().chain(more).collect();
    assert_eq!(timeless(&straight), timeless(&resumed));
    for d in [dir, straight_dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn each_case_keeps_one_policy_target_line() {
    let dir = temp("targets");
    let t = Trainer::start_cases(cases(), config(), &dir, &demonstrations()).unwrap();
    for case in cases() {
        let obs_len = observation::observation_len(case.setup.options());
        let mut start = vec![0f32; obs_len];
        observation::encode(&case.setup.start(), &mut start);
        let (mut games, mut lines) = (0, 0);
        for (_, h) in t.demonstrations().iter_games() {
            if h.observations[..obs_len] != start[..] {
                continue;
            }
            games += 1;
            if h.policies.iter().any(|&p| p > 0.0) {
                lines += 1;
            }
        }
        assert!(games >= 2, "{}: {games} demonstrations", case.name);
        assert_eq!(lines, 1, "{}", case.name);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_agent_of_a_suite_run_knows_its_programs() {
    let dir = temp("agent");
    let mut t = Trainer::start_cases(cases(), config(), &dir, &demonstrations()).unwrap();
    steps(&mut t, 1);
    t.finish(false).unwrap();
    let agent = Agent::load(&dir, None).unwrap();
    let seen = cases().remove(1).setup;
    assert!(agent.warnings(seen.program(), seen.hardware()).is_empty());
    let other = accel_sim::fixtures::three_ops("other", 3 << 20, 1e6);
    let w = agent.warnings(&other, seen.hardware());
    assert!(w.len() == 1 && w[0].contains("zero-shot"), "{w:?}");
    let mapping = agent.play(&other, &Hardware::tpu_v4i_like()).unwrap();
    mapping.validate(&other, &Hardware::tpu_v4i_like()).unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn what_a_suite_run_cannot_do_is_refused() {
    let refused = |cases: Vec<TrainCase>, config: TrainConfig, what: &str| {
        let dir = temp(what);
        match Trainer::start_cases(cases, config, &dir, &demonstrations()) {
            Err(TrainError::Config(m)) => assert!(m.contains(what), "{m}"),
            other => panic!("{what}: {:?}", other.err()),
        }
        assert!(!dir.join("run.json").exists());
    };
    refused(Vec::new(), config(), "cases");
    let mut mixed = cases();
    let s = &mixed[2].setup;
    let options = GameOptions {
        slots: 3,
        ..s.options().clone()
    };
    mixed[2].setup =
        GameSetup::new(Arc::clone(s.program_arc()), s.hardware().clone(), options).unwrap();
    refused(mixed, config(), "three-ops-2");
    let reanalyse = TrainConfig {
        reanalyse_games_per_iteration: 1,
        ..config()
    };
    refused(cases(), reanalyse.clone(), "reanalyse");
    // One trainer resumes either kind of run folder: this one as the run of cases it is,
    // refusing a config it cannot run.
    let suite = temp("kind");
    Trainer::start_cases(cases(), config(), &suite, &demonstrations()).unwrap();
    let resumed = Trainer::resume(&suite, None, &demonstrations()).unwrap();
    assert_eq!(resumed.case_names().len(), 3);
    // Remote self-play ships one game to its workers: a run of one program's.
    assert!(matches!(resumed.describe(), Err(TrainError::Remote(_))));
    drop(resumed);
    match Trainer::resume(&suite, Some(reanalyse), &demonstrations()) {
        Err(TrainError::Config(m)) => assert!(m.contains("reanalyse"), "{m}"),
        other => panic!("{:?}", other.err()),
    }
    let _ = std::fs::remove_dir_all(&suite);
    assert!(Trainer::resume(Path::new("/nonexistent/run"), None, &demonstrations()).is_err());
}

#[test]
fn a_run_of_one_case_is_a_run_of_one_program() {
    let (a, b) = (temp("one-a"), temp("one-b"));
    let one = cases().remove(0);
    let setup = Arc::clone(&one.setup);
    let mut t = Trainer::start_cases(vec![one], config(), &a, &demonstrations()).unwrap();
    assert!(!t.is_multi());
    let from_cases = steps(&mut t, 4);
    t.finish(false).unwrap();
    let mut s = Trainer::start(setup, "three-ops-0", config(), &b, &demonstrations()).unwrap();
    let from_program = steps(&mut s, 4);
    assert_eq!(timeless(&from_cases), timeless(&from_program));
    assert!(from_cases.iter().all(|p| p.case.is_none()));
    // The folder of a run of one program: its program and best mapping at the top.
    assert!(a.join("program.json").exists() && a.join("best/game.game").exists());
    assert!(!a.join("programs").exists() && !a.join("best/000").exists());
    for d in [a, b] {
        let _ = std::fs::remove_dir_all(d);
    }
}
