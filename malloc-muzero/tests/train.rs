//! End-to-end tests of training: a tiny run reaches the optimum of a small mallocGame; a
//! resumed run continues its counters and metrics; an interrupted or killed session loses
//! neither its best mapping nor the order of its metrics; run folders in every state a
//! kill can leave resume; a file-loaded program resumes from the run folder alone; a
//! damaged checkpoint is refused.

use accel_sim::Hardware;
use malloc_game::record::GameRecord;
use malloc_game::{Game, GameOptions, GameSetup};
use malloc_muzero::fixtures::{demonstrations, small_config};
use malloc_muzero::train::{self, Limits, TrainConfig, TrainError, TrainSummary, Trainer};
use malloc_muzero::SearchModel;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// x -> op0 -> a -> op1 -> b -> op2 -> y, with a weight read by op0 and op2: a game of 5
/// turns small enough to solve by enumerating every action sequence.
fn tiny() -> Arc<GameSetup> {
    let p = accel_sim::fixtures::three_ops("tiny", 1 << 20, 1e6);
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 3 << 20).unwrap();
    let options = GameOptions {
        slots: 2,
        ..GameOptions::default()
    };
    GameSetup::new(Arc::new(p), hw, options).unwrap()
}

/// The best return over every action sequence.
fn optimum(g: Game) -> f64 {
    malloc_muzero::fixtures::optimal_game(g).total_return()
}

fn config(setup: &GameSetup) -> TrainConfig {
    TrainConfig {
        checkpoint_every: 3,
        ..small_config(setup)
    }
}

/// A run of the tiny game under [`config`] in `dir`, with every demonstration known.
fn start_tiny(setup: &Arc<GameSetup>, dir: &Path) -> Result<Trainer, TrainError> {
    Trainer::start(
        Arc::clone(setup),
        "tiny",
        config(setup),
        dir,
        &demonstrations(),
    )
}

fn temp(name: &str) -> std::path::PathBuf {
    malloc_muzero::fixtures::temp(&format!("train-{name}"))
}

/// The run (self-play with search, plus its evaluation games) finds the optimal mapping of
/// a small game within a minute, from each of three seeds. The optimum opens with a move
/// worth nothing now (0.071 less than the greedy one), so only a run that explores finds
/// it: without `explore_epsilon` 2 of 5 seeds did. What the noise-free agent plays at the
/// end is printed, not asserted: after 3,000 steps it had not yet learned the optimum on
/// its own (0.185 against 0.255), which is what a longer run is for.
#[test]
fn a_tiny_run_finds_the_optimum_within_a_minute() {
    let setup = tiny();
    let best = optimum(setup.start());
    for seed in 0..3 {
        let dir = temp(&format!("tiny-{seed}"));
        let t0 = std::time::Instant::now();
        let config = TrainConfig {
            seed,
            ..config(&setup)
        };
        let mut t =
            Trainer::start(Arc::clone(&setup), "tiny", config, &dir, &demonstrations()).unwrap();
        let limits = Limits {
            minutes: Some(0.75),
            steps: Some(3000),
            deadline: None,
        };
        let s = t
            .run(&limits, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        println!("seed {seed}: {s:?} in {:.1} s", t0.elapsed().as_secs_f64());
        assert!(t0.elapsed().as_secs_f64() < 60.0);
        assert!(
            (s.best_return.unwrap() - best).abs() < 1e-9,
            "seed {seed}: best found {:?} vs optimum {best}",
            s.best_return
        );
        if seed == 0 {
            check_saved_best(&setup, &dir, best);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The saved best game replays to the optimum, with its search statistics, and the saved
/// network plays.
fn check_saved_best(setup: &Arc<GameSetup>, dir: &Path, best: f64) {
    assert!((saved_best_return(dir) - best).abs() < 1e-9);
    let record = GameRecord::load(&dir.join("best").join("game.game")).unwrap();
    let replay = record.replay(setup.program_arc().clone()).unwrap();
    assert!(record
        .search
        .as_ref()
        .is_some_and(|s| s.len() == replay.turns.len()));
    let net = train::load_network(dir).unwrap();
    let c = config(setup);
    let g = train::play_greedy(&net, setup, (&c.search, c.search_model), 0).unwrap();
    println!(
        "noise-free agent: return {:.4} (optimum {best:.4})",
        g.game.total_return()
    );
}

/// Runs `t` until it has made `steps` training steps in all.
fn run_to(t: &mut Trainer, steps: u64) -> TrainSummary {
    let limits = Limits {
        minutes: None,
        steps: Some(steps),
        deadline: None,
    };
    t.run(&limits, &AtomicBool::new(false), &mut |_| {})
        .unwrap()
}

/// The iteration numbers of `metrics.jsonl`, each line parsed whole.
fn metric_iterations(dir: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["iteration"].as_u64().unwrap()
        })
        .collect()
}

/// The return of the saved best game, replayed (what a kill cannot have half-written).
fn saved_best_return(dir: &Path) -> f64 {
    let record = GameRecord::load(&dir.join("best").join("game.game")).unwrap();
    let found: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("best/found.json")).unwrap())
            .unwrap();
    let ret: f64 = record.rewards.iter().sum();
    assert!((found["return"].as_f64().unwrap() - ret).abs() < 1e-12);
    ret
}

fn assert_iterations_once_each(dir: &Path, count: u64) {
    let its = metric_iterations(dir);
    assert_eq!(
        its,
        (0..count).collect::<Vec<_>>(),
        "one metrics line per iteration"
    );
}

#[test]
fn resume_continues_the_step_counter_and_the_metrics() {
    let setup = tiny();
    let dir = temp("resume");
    let mut t = start_tiny(&setup, &dir).unwrap();
    let first = run_to(&mut t, 40);
    drop(t);
    assert_eq!(first.train_steps, 40);
    assert!(!first.interrupted);
    let lines = |d: &Path| {
        std::fs::read_to_string(d.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    let before = lines(&dir);
    assert_eq!(before.len() as u64, first.iterations);
    // A new run in a folder whose run has a checkpoint is refused.
    let err = start_tiny(&setup, &dir).err().unwrap();
    assert!(matches!(err, TrainError::RunExists { .. }), "{err}");
    let mut t = Trainer::resume(&dir, None, &demonstrations()).unwrap();
    assert_eq!(t.iterations(), first.iterations);
    let second = run_to(&mut t, 80);
    assert_eq!(second.train_steps, 80);
    assert!(second.iterations > first.iterations);
    assert!(second.positions > first.positions);
    assert!(second.best_return.unwrap() >= first.best_return.unwrap());
    let after = lines(&dir);
    assert_eq!(after[..before.len()], before[..]);
    assert_iterations_once_each(&dir, second.iterations);
    assert!(after.last().unwrap()["train_steps"].as_u64().unwrap() == 80);
    assert!(
        after.last().unwrap()["elapsed_s"].as_f64().unwrap()
            >= before.last().unwrap()["elapsed_s"].as_f64().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The stop flag (what Ctrl-C raises) ends the session after the current iteration with a
/// checkpoint of it; the resumed run keeps the best and lists each iteration once.
#[test]
fn an_interrupted_run_keeps_its_best_and_lists_each_iteration_once() {
    let setup = tiny();
    let dir = temp("interrupt");
    let mut t = start_tiny(&setup, &dir).unwrap();
    let stop = AtomicBool::new(false);
    let limits = Limits {
        minutes: None,
        steps: Some(200),
        deadline: None,
    };
    // Iteration 3 is not one a checkpoint is due after (every 3: after 2, 5, ...).
    let s = t
        .run(&limits, &stop, &mut |p| {
            if p.iteration == 3 {
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        })
        .unwrap();
    drop(t);
    assert!(s.interrupted);
    assert_eq!(s.iterations, 4);
    let latest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("checkpoints/latest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(latest["iteration"], 3, "the interrupted iteration is saved");
    assert_eq!(Some(saved_best_return(&dir)), s.best_return);
    let mut t = Trainer::resume(&dir, None, &demonstrations()).unwrap();
    assert_eq!(t.iterations(), 4);
    assert_eq!(Some(t.best_return()), s.best_return);
    let end = run_to(&mut t, 60);
    assert!(end.best_return.unwrap() >= s.best_return.unwrap());
    assert_iterations_once_each(&dir, end.iterations);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session killed between checkpoints (the trainer dropped without `finish`, and a
/// metrics line cut short): the resume reads the best back from `best/game.game` (there is
/// no `summary.json`), cuts the metrics back to the checkpoint, and never writes a worse
/// best over the one found before the kill.
#[test]
fn a_killed_session_loses_neither_the_best_nor_the_order_of_the_metrics() {
    let setup = tiny();
    let dir = temp("kill");
    let mut t = start_tiny(&setup, &dir).unwrap();
    let limits = Limits::default();
    for _ in 0..5 {
        t.step_iteration(&limits).unwrap();
    }
    let best = t.best_return();
    drop(t);
    assert!(!dir.join("best/summary.json").exists());
    assert_eq!(saved_best_return(&dir), best);
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("metrics.jsonl"))
            .unwrap();
        f.write_all(b"{\"iteration\": 5, \"elapsed_s\": 1.2")
            .unwrap();
    }
    let mut t = Trainer::resume(&dir, None, &demonstrations()).unwrap();
    assert_eq!(t.iterations(), 3, "the checkpoint after iteration 2");
    assert_eq!(t.best_return(), best, "the best is read back");
    assert_iterations_once_each(&dir, 3);
    t.step_iteration(&limits).unwrap();
    assert!(saved_best_return(&dir) >= best);
    let end = run_to(&mut t, 60);
    assert!(end.best_return.unwrap() >= best);
    assert_iterations_once_each(&dir, end.iterations);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The checkpoint folders under `checkpoints/`, sorted.
fn checkpoint_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

/// Checkpoints are written by a thread of their own while the next iteration runs: a
/// trainer dropped right after queueing one still leaves it whole. By default only the
/// newest stays; `keep_checkpoints` keeps each one, which loads, and a resume removes
/// only a folder past the newest (one a kill left half-written).
#[test]
fn kept_checkpoints_stay_and_each_one_loads() {
    let setup = tiny();
    let limits = Limits::default();
    for keep in [false, true] {
        let dir = temp(&format!("keep-{keep}"));
        let config = TrainConfig {
            checkpoint_every: 1,
            keep_checkpoints: keep,
            ..config(&setup)
        };
        let mut t =
            Trainer::start(Arc::clone(&setup), "tiny", config, &dir, &demonstrations()).unwrap();
        for _ in 0..3 {
            t.step_iteration(&limits).unwrap();
        }
        drop(t);
        let all = ["iter-000000", "iter-000001", "iter-000002"].map(String::from);
        let want = if keep { &all[..] } else { &all[2..] };
        assert_eq!(checkpoint_dirs(&dir), want, "keep_checkpoints {keep}");
        std::fs::create_dir_all(dir.join("checkpoints/iter-000007")).unwrap();
        let t = Trainer::resume(&dir, None, &demonstrations()).unwrap();
        assert_eq!(t.iterations(), 3);
        drop(t);
        assert_eq!(checkpoint_dirs(&dir), want, "the half-written folder goes");
        for name in want {
            let weights = dir
                .join("checkpoints")
                .join(name)
                .join("weights.safetensors");
            let net = muzero::MuZeroNet::read_config(&weights).unwrap();
            assert!(net.observation_len > 0, "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A checkpoint the writer thread fails to write stops the run with the error that
/// names the path, at the next checkpoint or at once for an explicit one.
#[test]
fn a_checkpoint_that_cannot_be_written_is_an_error_naming_the_path() {
    let setup = tiny();
    let dir = temp("unwritable");
    let mut t = start_tiny(&setup, &dir).unwrap();
    t.step_iteration(&Limits::default()).unwrap();
    // A file where the checkpoint's folder goes.
    std::fs::write(dir.join("checkpoints/iter-000000"), b"in the way").unwrap();
    let err = t.checkpoint().expect_err("the write failed");
    assert!(err.to_string().contains("iter-000000"), "{err}");
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run of 0 steps would leave a folder with nothing to continue from: it is refused.
#[test]
fn zero_steps_is_an_error() {
    let zero = Limits {
        minutes: None,
        steps: Some(0),
        deadline: None,
    };
    assert!(zero.check().unwrap_err().to_string().contains("steps"));
    let setup = tiny();
    let dir = temp("zero");
    let mut t = start_tiny(&setup, &dir).unwrap();
    let err = t
        .run(&zero, &AtomicBool::new(false), &mut |_| {})
        .unwrap_err();
    assert!(err.to_string().contains("steps: must be >= 1"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run killed before its first checkpoint leaves `run.json` and no
/// `checkpoints/latest.json`: resuming it starts it afresh (keeping the best it found), and
/// so does starting it again.
#[test]
fn a_run_without_a_checkpoint_resumes_afresh_or_starts_again() {
    let setup = tiny();
    let dir = temp("no-checkpoint");
    // Killed at once: run.json only.
    drop(start_tiny(&setup, &dir).unwrap());
    assert!(dir.join("run.json").exists());
    // Killed after one iteration: a metrics line and a best, no checkpoint.
    let mut t = Trainer::resume(&dir, None, &demonstrations()).unwrap();
    assert_eq!(t.iterations(), 0);
    t.step_iteration(&Limits::default()).unwrap();
    let best = t.best_return();
    drop(t);
    assert!(!dir.join("checkpoints/latest.json").exists());
    assert_iterations_once_each(&dir, 1);
    let mut t = start_tiny(&setup, &dir).unwrap();
    assert_eq!(t.best_return(), best, "the same game's best is kept");
    assert_iterations_once_each(&dir, 0);
    t.step_iteration(&Limits::default()).unwrap();
    // The restarted run branches from the best it kept, so it may improve on it.
    let best = t.best_return().max(best);
    drop(t);
    let mut t = Trainer::resume(&dir, None, &demonstrations()).unwrap();
    assert_eq!(t.iterations(), 0);
    assert_eq!(t.best_return(), best);
    let end = run_to(&mut t, 20);
    assert!(dir.join("checkpoints/latest.json").exists());
    assert_iterations_once_each(&dir, end.iterations);
    // Another game is not started over this run (with or without a checkpoint).
    drop(t);
    let hw = setup.hardware().clone().with_capacity(1, 2 << 20).unwrap();
    let other = GameSetup::new(setup.program_arc().clone(), hw, setup.options().clone()).unwrap();
    let refused = |setup: &Arc<GameSetup>| {
        let err = Trainer::start(
            Arc::clone(setup),
            "tiny",
            config(setup),
            &dir,
            &demonstrations(),
        )
        .err()
        .unwrap();
        assert!(matches!(err, TrainError::RunExists { .. }), "{err}");
    };
    refused(&other);
    std::fs::remove_file(dir.join("checkpoints/latest.json")).unwrap();
    refused(&other);
    assert_eq!(Some(saved_best_return(&dir)), end.best_return);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The temporary files of atomic writes a kill interrupted, and a checkpoint folder it
/// left half-written, are removed when the run resumes.
#[test]
fn leftover_temporary_files_are_removed() {
    let setup = tiny();
    let dir = temp("tmp-files");
    let mut t = start_tiny(&setup, &dir).unwrap();
    let s = run_to(&mut t, 20);
    drop(t);
    let latest = format!("iter-{:06}", s.iterations - 1);
    let leftovers: Vec<PathBuf> = [
        "checkpoints/.latest.json.tmp.4242.0".to_string(),
        format!("checkpoints/{latest}/.replay.bin.tmp.4242.1"),
        "best/.mapping.json.tmp.4242.2".into(),
        "games/.eval-000001.game.tmp.4242.3".into(),
        ".run.json.tmp.4242.4".into(),
        "checkpoints/iter-999999/.weights.safetensors.tmp.4242.5".into(),
    ]
    .iter()
    .map(|p| dir.join(p))
    .collect();
    for p in &leftovers {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"half").unwrap();
    }
    let mut t = Trainer::resume(&dir, None, &demonstrations()).unwrap();
    for p in &leftovers {
        assert!(!p.exists(), "{} is left", p.display());
    }
    assert!(!dir.join("checkpoints/iter-999999").exists());
    assert!(dir.join("checkpoints").join(&latest).exists());
    run_to(&mut t, 30);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program loaded from a file: the run records its absolute path and keeps a copy, so
/// it resumes (and its best game replays) from the folder alone, after the file moved; a
/// changed file is refused, naming it. A `run.json` from before the path was recorded
/// still reads.
#[test]
fn a_file_loaded_program_resumes_from_the_folder_alone() {
    let setup = tiny();
    let dir = temp("file-program");
    let files = temp("file-program-src");
    std::fs::create_dir_all(&files).unwrap();
    let file = files.join("tiny.json");
    std::fs::write(&file, bench_workloads::json::to_json(setup.program(), None)).unwrap();
    let spec = file.display().to_string();
    let program = Arc::new(bench_workloads::load(&spec).unwrap());
    let hw = setup.hardware().clone();
    let from_file = GameSetup::new(program, hw, setup.options().clone()).unwrap();
    let mut t = Trainer::start(from_file, &spec, config(&setup), &dir, &demonstrations()).unwrap();
    let first = run_to(&mut t, 20);
    drop(t);
    let info = train::read_run_info(&dir).unwrap();
    let recorded = info.workload_path.clone().unwrap();
    assert!(Path::new(&recorded).is_absolute());
    assert_eq!(Path::new(&recorded), std::fs::canonicalize(&file).unwrap());
    assert!(dir.join("program.json").exists());
    let mut t = Trainer::resume(&dir, None, &demonstrations()).unwrap();
    run_to(&mut t, 30);
    drop(t);
    // The file moves away: the run's copy serves, for the run and for its saved games.
    let moved = files.join("elsewhere.json");
    std::fs::rename(&file, &moved).unwrap();
    let mut t = Trainer::resume(&dir, None, &demonstrations()).unwrap();
    let end = run_to(&mut t, 40);
    drop(t);
    assert!(end.iterations > first.iterations);
    let copy = bench_workloads::load(&dir.join("program.json").display().to_string()).unwrap();
    let record = GameRecord::load(&dir.join("best/game.game")).unwrap();
    record.replay(Arc::new(copy)).unwrap();
    // A different program at the recorded path is refused, naming the file.
    let text = std::fs::read_to_string(&moved).unwrap();
    std::fs::write(&file, text.replacen("1048576", "1048577", 1)).unwrap();
    let err = Trainer::resume(&dir, None, &demonstrations())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains(&recorded) && err.contains("changed"), "{err}");
    std::fs::remove_file(&file).unwrap();
    // A run.json written before `workload_path` existed reads (the copy serves).
    let path = dir.join("run.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("workload_path");
    std::fs::write(&path, v.to_string()).unwrap();
    assert_eq!(train::read_run_info(&dir).unwrap().workload_path, None);
    Trainer::resume(&dir, None, &demonstrations()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&files);
}

/// A checkpoint file damaged after it was written (one byte flipped) is refused on resume,
/// naming the file, rather than resumed from.
#[test]
fn a_damaged_checkpoint_is_refused_naming_the_file() {
    let setup = tiny();
    let dir = temp("damaged");
    let mut t = start_tiny(&setup, &dir).unwrap();
    let s = run_to(&mut t, 20);
    drop(t);
    let here = dir
        .join("checkpoints")
        .join(format!("iter-{:06}", s.iterations - 1));
    for name in ["replay.bin", "optimizer.bin", "weights.safetensors"] {
        let path = here.join(name);
        let good = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        let at = bad.len() / 2;
        bad[at] ^= 0x5a;
        std::fs::write(&path, &bad).unwrap();
        let err = Trainer::resume(&dir, None, &demonstrations())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(&path.display().to_string()), "{name}: {err}");
        std::fs::write(&path, &good).unwrap();
    }
    Trainer::resume(&dir, None, &demonstrations()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A demonstration the front end's list does not hold is refused, on a start or on a
/// resume with a new config, before anything is written.
#[test]
fn an_unknown_demonstration_is_refused_before_anything_is_written() {
    let setup = tiny();
    let dir = temp("unknown-demo");
    let mut c = config(&setup);
    c.demonstrations.push("beam:4".into());
    let err = Trainer::start(
        Arc::clone(&setup),
        "tiny",
        c.clone(),
        &dir,
        &demonstrations(),
    )
    .err()
    .unwrap();
    let unknown = "demonstrations: unknown `beam:4` (known: xla, greedy-size, beam, greedy)";
    assert!(matches!(err, TrainError::Config(_)), "{err}");
    assert!(err.to_string().contains(unknown), "{err}");
    assert!(!dir.exists());
    // A run whose config names only what it knows, resumed with one that does not.
    drop(start_tiny(&setup, &dir).unwrap());
    let run_json = std::fs::read_to_string(dir.join("run.json")).unwrap();
    let err = Trainer::resume(&dir, Some(c), &demonstrations())
        .err()
        .unwrap();
    assert!(err.to_string().contains(unknown), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("run.json")).unwrap(),
        run_json
    );
}

#[test]
fn impossible_configs_name_the_field() {
    let setup = tiny();
    let mut c = config(&setup);
    c.batch_size = 0;
    assert!(c.check().unwrap_err().to_string().contains("batch_size"));
    // Careless sizes are errors, not allocations that abort the process.
    let mut c = config(&setup);
    c.batch_size = 1 << 40;
    assert!(c.check().unwrap_err().to_string().contains("batch_size"));
    let mut c = config(&setup);
    c.train_steps_per_position = 1e300;
    assert!(c
        .check()
        .unwrap_err()
        .to_string()
        .contains("train_steps_per_position"));
    let mut c = config(&setup);
    c.games_per_iteration = usize::MAX;
    assert!(c
        .check()
        .unwrap_err()
        .to_string()
        .contains("games_per_iteration"));
    let mut c = config(&setup);
    if let Some(n) = c.network.as_mut() {
        n.hidden = 1 << 30;
    }
    assert!(c.check().unwrap_err().to_string().contains("network"));
    let mut c = config(&setup);
    c.search.simulations = 0;
    assert!(c.check().unwrap_err().to_string().contains("simulations"));
    let mut c = config(&setup);
    c.replay.unroll = 0;
    assert!(c.check().unwrap_err().to_string().contains("unroll"));
    let mut c = config(&setup);
    c.explore_epsilon = 1.5;
    assert!(c
        .check()
        .unwrap_err()
        .to_string()
        .contains("explore_epsilon"));
    let mut c = config(&setup);
    c.network.as_mut().unwrap().observation_len += 1;
    assert!(c
        .network_for(&setup)
        .unwrap_err()
        .to_string()
        .contains("observation_len"));
}

/// Reanalyse rebuilds each position's legal mask by replaying the game and re-searches all
/// positions in one batch: with the same network and a noise-free search it gives back
/// what noise-free self-play stored, after those targets were wiped, through either
/// search model.
#[test]
fn reanalyse_restores_the_search_targets_of_a_stored_game() {
    reanalyse_restores_the_search_targets(SearchModel::Learned);
    reanalyse_restores_the_search_targets(SearchModel::Game);
}

fn reanalyse_restores_the_search_targets(model: SearchModel) {
    use muzero::MuZeroNet;
    use muzero::{ReplayBuffer, ReplayConfig};
    let setup = tiny();
    let c = config(&setup);
    let net_config = c.network_for(&setup).unwrap();
    let net = MuZeroNet::new(&net_config, 5, &muzero::device()).unwrap();
    let search = c.search.deterministic();
    let played = train::play_games(&net, &setup, 1, (&search, model), 0.0, 7)
        .unwrap()
        .pop()
        .unwrap();
    let original = played.history.clone();
    let mut wiped = played.history;
    let a = setup.action_count();
    wiped.policies.iter_mut().for_each(|p| *p = 1.0 / a as f32);
    wiped.root_values.iter_mut().for_each(|v| *v = 0.0);
    // Two-step targets, so that they bootstrap from the root values reanalyse replaces.
    let replay_config = ReplayConfig {
        td_steps: 2,
        ..ReplayConfig::default()
    };
    let mut replay = ReplayBuffer::new(replay_config, wiped.observation_len, a).unwrap();
    replay.push(wiped).unwrap();
    let id = replay.iter_games().next().unwrap().0;
    let wiped_target = replay.value_target(id, 0).unwrap();
    let with = (&c.search, model);
    assert!(train::reanalyse_game(&net, &setup, &mut replay, with, id, 0).unwrap());
    let again = replay.game(id).unwrap();
    let close = |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(p, q)| (p - q).abs() < 1e-4);
    assert!(
        close(&again.policies, &original.policies),
        "policies restored"
    );
    assert!(
        close(&again.root_values, &original.root_values),
        "root values restored"
    );
    assert_ne!(again.policies, vec![1.0 / a as f32; again.policies.len()]);
    assert_ne!(replay.value_target(id, 0).unwrap(), wiped_target);
}

/// A run with reanalyse on reports it in its metrics.
#[test]
fn a_run_with_reanalyse_records_it_per_iteration() {
    let setup = tiny();
    let dir = temp("reanalyse");
    let config = TrainConfig {
        reanalyse_games_per_iteration: 2,
        ..config(&setup)
    };
    let mut t =
        Trainer::start(Arc::clone(&setup), "tiny", config, &dir, &demonstrations()).unwrap();
    run_to(&mut t, 60);
    let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    let counts: Vec<u64> = metrics
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["reanalysed_games"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        counts[0], 0,
        "nothing stored before the first iteration's games"
    );
    assert!(counts[1..].iter().all(|&n| n >= 1), "{counts:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_checkpoint_refuses_what_it_cannot_play_and_warns_on_what_differs() {
    use malloc_muzero::{Agent, AgentError};
    // Trained on nnp-i-like's two fast levels: its network's actions cover both.
    let p = Arc::new(accel_sim::fixtures::three_ops("tiny", 1 << 20, 1e6));
    let nnp = Hardware::nnp_i_like();
    let options = GameOptions {
        slots: 2,
        fast_levels: 2,
        ..GameOptions::default()
    };
    let setup = GameSetup::new(Arc::clone(&p), nnp.clone(), options).unwrap();
    let dir = temp("agent-compat");
    let mut t = start_tiny(&setup, &dir).unwrap();
    run_to(&mut t, 2);
    let agent = Agent::load(&dir, None).unwrap();
    // The same case: plays, no warning.
    assert!(agent.warnings(&p, &nnp).is_empty());
    agent.play(&p, &nnp).unwrap().validate(&p, &nnp).unwrap();
    // One fast level: the run's rules do not fit, refused with the reason.
    let tpu = Hardware::tpu_v4i_like().with_capacity(1, 3 << 20).unwrap();
    let e = agent.play(&p, &tpu).unwrap_err();
    assert!(matches!(e, AgentError::Incompatible { .. }), "{e}");
    assert!(e.to_string().contains("cannot play"), "{e}");
    // Another program on other capacities: played zero-shot, with a warning for each.
    let other = bench_workloads::load("diamond").unwrap();
    let bigger = nnp.clone().with_capacity(1, 8 << 20).unwrap();
    let w = agent.warnings(&other, &bigger);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].contains("zero-shot") && w[1].contains("hardware"),
        "{w:?}"
    );
    agent
        .play(&other, &bigger)
        .unwrap()
        .validate(&other, &bigger)
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_stopped_before_any_game_writes_a_summary_that_reads_back() {
    let setup = tiny();
    let dir = temp("stopped-early");
    let mut t = start_tiny(&setup, &dir).unwrap();
    let limits = Limits {
        minutes: None,
        steps: Some(100),
        deadline: None,
    };
    // The stop flag is up before the first iteration: no game is played.
    let s = t.run(&limits, &AtomicBool::new(true), &mut |_| {}).unwrap();
    assert!(s.interrupted);
    assert_eq!(s.best_latency_s, None);
    let text = std::fs::read_to_string(dir.join("best").join("summary.json")).unwrap();
    let back: TrainSummary = serde_json::from_str(&text).unwrap();
    assert_eq!(back.best_return, None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_made_under_rules_v1_is_refused_naming_the_rules() {
    let setup = tiny();
    let dir = temp("rules-v1");
    let mut t = start_tiny(&setup, &dir).unwrap();
    run_to(&mut t, 10);
    drop(t);
    // A v1 run.json: no `rules` field (and v1's modes).
    let path = dir.join("run.json");
    let mut info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(info["rules"], malloc_game::RULES_VERSION);
    let o = info.as_object_mut().unwrap();
    o.remove("rules");
    o["options"]["modes"] = serde_json::json!(["resident", "prefetch"]);
    std::fs::write(&path, serde_json::to_string(&info).unwrap()).unwrap();
    let err = Trainer::resume(&dir, None, &demonstrations())
        .err()
        .unwrap();
    let msg = err.to_string();
    assert!(matches!(err, TrainError::Rules { .. }), "{msg}");
    assert!(
        msg.contains("run.json") && msg.contains("rules v1"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fine-tuning: a run started with `init` begins from the other run's newest network (not
/// random weights); a game whose observation or actions differ cannot take it, and a
/// folder without a run is a config error naming `init`.
#[test]
fn a_run_with_init_starts_from_the_other_runs_network() {
    let setup = tiny();
    let a = temp("init-a");
    let mut first = Trainer::start(
        Arc::clone(&setup),
        "tiny",
        config(&setup),
        &a,
        &demonstrations(),
    )
    .unwrap();
    let limits = Limits {
        steps: Some(30),
        ..Limits::default()
    };
    first
        .run(&limits, &AtomicBool::new(false), &mut |_| {})
        .unwrap();
    let trained = train::load_network(&a).unwrap().to_bytes().unwrap();
    let from_a = TrainConfig {
        init: Some(a.display().to_string()),
        seed: 7,
        ..config(&setup)
    };
    let b = temp("init-b");
    let second = Trainer::start(
        Arc::clone(&setup),
        "tiny",
        from_a.clone(),
        &b,
        &demonstrations(),
    )
    .unwrap();
    assert_eq!(second.weights().unwrap(), trained);
    let fresh = Trainer::start(
        Arc::clone(&setup),
        "tiny",
        TrainConfig {
            seed: 7,
            ..config(&setup)
        },
        &temp("init-fresh"),
        &demonstrations(),
    )
    .unwrap();
    assert_ne!(fresh.weights().unwrap(), trained);

    let p = accel_sim::fixtures::three_ops("tiny", 1 << 20, 1e6);
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 3 << 20).unwrap();
    let options = GameOptions {
        slots: 3,
        ..GameOptions::default()
    };
    let other = GameSetup::new(Arc::new(p), hw, options).unwrap();
    let no_network = TrainConfig {
        network: None,
        ..from_a.clone()
    };
    match Trainer::start(
        other,
        "tiny",
        no_network,
        &temp("init-other"),
        &demonstrations(),
    ) {
        // Other game options are named before the sizes they change.
        Err(TrainError::Config(m)) => assert!(m.contains("init") && m.contains("slots"), "{m}"),
        other => panic!("expected a config error, got {:?}", other.err()),
    }
    let missing = TrainConfig {
        init: Some(temp("init-missing").display().to_string()),
        ..config(&setup)
    };
    match Trainer::start(
        Arc::clone(&setup),
        "tiny",
        missing,
        &temp("init-m"),
        &demonstrations(),
    ) {
        Err(TrainError::Config(m)) => assert!(m.starts_with("init:"), "{m}"),
        other => panic!("expected a config error, got {:?}", other.err()),
    }
}

/// On two threads (self-play split between them, each learner batch too), a run repeats
/// exactly for the same seed: every iteration's losses, returns and latencies, and the
/// network it ends with, searching the game or the learned model.
#[test]
fn a_run_on_two_threads_repeats_exactly() {
    let setup = tiny();
    for model in [SearchModel::Game, SearchModel::Learned] {
        let run = |name: &str| {
            let dir = temp(&format!("{name}-{model}"));
            let c = TrainConfig {
                threads: 2,
                search_model: model,
                ..config(&setup)
            };
            let mut t =
                Trainer::start(Arc::clone(&setup), "tiny", c, &dir, &demonstrations()).unwrap();
            let limits = Limits {
                minutes: None,
                steps: Some(80),
                deadline: None,
            };
            let mut lines = Vec::new();
            let summary = t
                .run(&limits, &AtomicBool::new(false), &mut |p| {
                    lines.push(train::Progress {
                        elapsed_s: 0.0,
                        ..p.clone()
                    })
                })
                .unwrap();
            let net = train::load_network(&dir).unwrap().to_bytes().unwrap();
            let _ = std::fs::remove_dir_all(&dir);
            (lines, summary.train_steps, summary.positions, net)
        };
        let (first, again) = (run("twice-a"), run("twice-b"));
        assert!(first.0.len() >= 2, "{model}: {} iterations", first.0.len());
        assert_eq!(first.0, again.0, "{model}");
        assert_eq!((first.1, first.2), (again.1, again.2), "{model}");
        assert!(first.3 == again.3, "{model}: the networks differ");
    }
}

/// Self-play searching the game, with the simulated latency's rewards: each game's
/// rewards, as the learner stores them, add up to its return, which is the fraction of
/// the starting latency its mapping saves.
#[test]
fn self_play_on_the_game_stores_rewards_that_add_up_to_the_return() {
    use muzero::MuZeroNet;
    let setup = tiny();
    let c = config(&setup);
    let net = MuZeroNet::new(&c.network_for(&setup).unwrap(), 9, &muzero::device()).unwrap();
    let played =
        train::play_games(&net, &setup, 3, (&c.search, SearchModel::Game), 0.3, 4).unwrap();
    let s0 = setup.start().simulated_latency();
    for g in &played {
        let stored: f64 = g.history.rewards.iter().map(|&r| r as f64).sum();
        let ret = g.game.total_return();
        assert!((stored - ret).abs() < 1e-5, "{stored} vs {ret}");
        let end = g.game.final_latency().unwrap();
        assert!(
            (ret - (s0 - end) / s0).abs() < 1e-7,
            "{ret} vs {}",
            (s0 - end) / s0
        );
    }
}
