//! Self-play away from the learner: a worker built from the run's description alone plays
//! the trainer's orders, and the trainer absorbs the batches as iterations of the same run
//! folder (metrics, checkpoints, best mapping), which then resumes as a plain run. Batches
//! that do not fit the run are refused.

use accel_sim::Hardware;
use malloc_game::{GameOptions, GameSetup};
use malloc_muzero::fixtures::{demonstrations, small_config};
use malloc_muzero::train::{Limits, SelfPlayWorker, TrainConfig, TrainError, Trainer};
use std::sync::Arc;

fn tiny(capacity: u64) -> Arc<GameSetup> {
    let p = accel_sim::fixtures::three_ops("tiny", 1 << 20, 1e6);
    let hw = Hardware::tpu_v4i_like().with_capacity(1, capacity).unwrap();
    let options = GameOptions {
        slots: 2,
        ..GameOptions::default()
    };
    GameSetup::new(Arc::new(p), hw, options).unwrap()
}

fn config(setup: &GameSetup) -> TrainConfig {
    TrainConfig {
        checkpoint_every: 2,
        ..small_config(setup)
    }
}

#[test]
fn a_remote_worker_feeds_the_run_folder_that_then_resumes() {
    let dir = malloc_muzero::fixtures::temp("remote-run");
    let setup = tiny(3 << 20);
    let mut trainer = Trainer::start(
        Arc::clone(&setup),
        "tiny",
        config(&setup),
        &dir,
        &demonstrations(),
    )
    .unwrap();
    let limits = Limits::default();
    trainer.pretrain(&limits).unwrap();
    let mut worker = SelfPlayWorker::new(&trainer.describe().unwrap(), 1).unwrap();
    assert_eq!(worker.weights_version(), None);
    let order = trainer.order().unwrap();
    let early = worker.play(&order).unwrap_err();
    assert!(
        early.to_string().contains("before it was sent weights"),
        "{early}"
    );
    let games = config(&setup).games_per_iteration;
    for version in 0..4u64 {
        worker
            .load_weights(version, &trainer.weights().unwrap())
            .unwrap();
        let batch = worker.play(&trainer.order().unwrap()).unwrap();
        let positions_before = trainer.positions();
        let (info, progress) = trainer.absorb_batch(&batch, &limits).unwrap();
        assert_eq!(info.weights_version, version);
        assert!(info.games >= games, "{info:?}");
        assert_eq!(progress.iteration, version);
        assert_eq!(
            trainer.positions(),
            positions_before + info.positions as u64
        );
        assert!(
            progress.train_steps >= trainer.positions() / 20,
            "{progress:?}"
        );
    }
    assert!(trainer.best_latency_s().is_finite());
    let summary = trainer.finish(false).unwrap();
    assert_eq!(summary.iterations, 4);
    let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.lines().count(), 4);
    assert!(dir.join("best/game.game").exists());
    // The folder is an ordinary run: it resumes from the remote iterations' checkpoint,
    // once the trainer that holds it is gone (one writer per folder).
    let positions = trainer.positions();
    drop(trainer);
    let resumed = Trainer::resume(&dir, None, &demonstrations()).unwrap();
    assert_eq!(resumed.iterations(), 4);
    assert_eq!(resumed.positions(), positions);
}

#[test]
fn a_batch_of_another_game_or_damaged_is_refused() {
    let (a, b) = (tiny(3 << 20), tiny(1 << 20));
    let dir_a = malloc_muzero::fixtures::temp("remote-a");
    let dir_b = malloc_muzero::fixtures::temp("remote-b");
    let mut ta =
        Trainer::start(Arc::clone(&a), "a", config(&a), &dir_a, &demonstrations()).unwrap();
    let mut tb =
        Trainer::start(Arc::clone(&b), "b", config(&b), &dir_b, &demonstrations()).unwrap();
    let mut worker = SelfPlayWorker::new(&tb.describe().unwrap(), 1).unwrap();
    worker.load_weights(0, &tb.weights().unwrap()).unwrap();
    let limits = Limits::default();
    // Games of b's smaller fast memory may not replay on a, or their rewards differ.
    let mut refused = false;
    for _ in 0..4 {
        let batch = worker.play(&tb.order().unwrap()).unwrap();
        match ta.absorb_batch(&batch, &limits) {
            Err(TrainError::Remote(m)) => {
                assert!(m.contains("self-play batch") || m.contains("batch"), "{m}");
                refused = true;
                break;
            }
            Err(e) => panic!("{e}"),
            Ok(_) => {}
        }
    }
    assert!(refused, "no batch of the other game was refused");
    let mut batch = worker.play(&tb.order().unwrap()).unwrap();
    let mid = batch.len() / 2;
    batch[mid] ^= 0x55;
    let e = tb.absorb_batch(&batch, &limits).unwrap_err();
    assert!(e.to_string().contains("self-play batch"), "{e}");
    assert!(SelfPlayWorker::new(b"{}", 1).is_err());
    assert!(worker.play(b"not json").is_err());
}
