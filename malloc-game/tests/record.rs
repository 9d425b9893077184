//! Saved games: play, save, load, replay, and every way a saved game can go wrong.

use accel_sim::{Hardware, Program};
use bench_workloads::synthetic::{chain, random_dag};
use binio::BinError;
use malloc_game::record::{
    GameRecord, RecordError, ReplayError, SearchStats, GAME_FORMAT_VERSION, GAME_MAGIC,
};
use malloc_game::{Game, GameOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;
use std::sync::Arc;

fn hw() -> Hardware {
    Hardware::tpu_v4i_like().with_capacity(1, 16 << 20).unwrap()
}

/// A random policy that places most buffers (action 0 one time in four), so the games
/// exercise every mode and fill the fast level.
fn play(program: Arc<Program>, seed: u64) -> Game {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut g = Game::new(program, hw(), GameOptions::default()).unwrap();
    while !g.is_terminal() {
        let legal = g.legal_actions();
        let a = if legal.len() == 1 || rng.random_range(0..4) == 0 {
            0
        } else {
            legal[rng.random_range(1..legal.len())]
        };
        g.apply_action(a).unwrap();
    }
    g
}

fn record(program: Arc<Program>, seed: u64) -> GameRecord {
    GameRecord::from_game(&play(program, seed), "random", seed, None).unwrap()
}

/// A per-test folder in cargo's scratch space for integration tests.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("record-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn dag() -> Arc<Program> {
    Arc::new(random_dag(40, 3))
}

#[test]
fn saved_random_games_replay_exactly() {
    let dir = scratch("replay");
    let programs = [
        Arc::new(random_dag(60, 1)),
        Arc::new(chain(12)),
        Arc::new(bench_workloads::load("resnet50").unwrap()),
    ];
    for program in programs {
        for seed in [1, 2] {
            let game = play(Arc::clone(&program), seed);
            let placed = game.actions().iter().filter(|&&a| a != 0).count();
            assert!(placed > 0, "{}: the policy placed nothing", program.name());
            let rec = GameRecord::from_game(&game, "random", seed, None).unwrap();
            let path = dir.join(format!("{}-{seed}.mmzgame", program.name()));
            rec.save(&path).unwrap();
            let back = GameRecord::load(&path).unwrap();
            assert_eq!(back.workload, program.name());
            assert_eq!(back.program_hash, program.content_hash());
            assert_eq!(back.player, "random");
            assert_eq!(back.seed, seed);
            let replay = back.replay(Arc::clone(&program)).unwrap();
            let buffers = buffers_of(&game);
            // The replay runs the same code on the same inputs: bit-identical, not just
            // within the tolerance the check allows.
            assert_eq!(replay.turns.len(), game.length());
            for (t, info) in replay.turns.iter().enumerate() {
                assert_eq!(
                    info.reward.to_bits(),
                    game.rewards()[t].to_bits(),
                    "turn {t}"
                );
                assert_eq!(info.action as usize, game.actions()[t]);
                assert_eq!(info.buffer, program.buffer(buffers[t]).name);
                assert_eq!(
                    info.action_name,
                    game.setup().action_name(game.actions()[t])
                );
            }
            assert_eq!(replay.game.final_latency(), game.final_latency());
            assert_eq!(replay.game.mapping(), game.mapping());
            // The last proxy latency is the tally after every placement.
            let last = replay.turns.last().unwrap().proxy_latency_s;
            assert_eq!(last, game.proxy_latency());
        }
    }
}

#[test]
fn json_round_trip_keeps_every_field() {
    let program = dag();
    let game = play(Arc::clone(&program), 5);
    let n = game.setup().action_count();
    let search: Vec<SearchStats> = (0..game.length())
        .map(|t| SearchStats {
            visits: (0..n as u32).map(|a| (a * 7 + t as u32) % 13).collect(),
            root_value: 0.1 + t as f32 / 3.0,
        })
        .collect();
    let rec = GameRecord::from_game(&game, "muzero", 5, Some(search.clone())).unwrap();
    let text = rec.to_json();
    let back = GameRecord::from_json(&text, "game.json").unwrap();
    assert_eq!(back.to_json(), text);
    assert_eq!(back.search.as_ref().unwrap(), &search);
    let bits = |xs: &[f64]| xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&back.rewards), bits(&rec.rewards));
    assert_eq!(
        back.final_latency_s.to_bits(),
        rec.final_latency_s.to_bits()
    );
    assert_eq!(back.options, rec.options);
    back.replay(program).unwrap();

    // Through a file too, with the same atomic writer as the binary form.
    let path = scratch("json").join("game.json");
    binio::write_bytes_atomic(&path, text.as_bytes()).unwrap();
    let read = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        GameRecord::from_json(&read, "game.json").unwrap().to_json(),
        text
    );
}

/// The buffer of each turn of `game`, found by playing its actions again.
fn buffers_of(game: &Game) -> Vec<usize> {
    let mut g = game.setup().start();
    let mut out = Vec::new();
    for a in game.actions() {
        out.push(g.current_buffer().unwrap());
        g.apply_action(a).unwrap();
    }
    out
}

#[test]
fn tampered_reward_is_reported_at_its_turn() {
    let program = dag();
    let rec = record(Arc::clone(&program), 9);
    let setup_game = play(Arc::clone(&program), 9);
    for turn in [0, 7, rec.actions.len() - 1] {
        let mut bad = rec.clone();
        bad.rewards[turn] += 1e-6 + 1e-3 * bad.rewards[turn].abs();
        // A later tamper must not hide the first.
        if turn + 3 < bad.rewards.len() {
            bad.rewards[turn + 3] -= 0.5;
        }
        match bad.replay(Arc::clone(&program)) {
            Err(ReplayError::Reward {
                turn: t,
                buffer,
                action,
                saved,
                replayed,
                ..
            }) => {
                assert_eq!(t, turn);
                let b = buffers_of(&setup_game)[turn];
                assert_eq!(buffer, program.buffer(b).name);
                assert_eq!(action, rec.actions[turn]);
                assert_eq!(saved, bad.rewards[turn]);
                assert_eq!(replayed, rec.rewards[turn]);
            }
            other => panic!("turn {turn}: expected a reward mismatch, got {other:?}"),
        }
    }
    // Noise far below the tolerance passes.
    let mut noisy = rec.clone();
    for r in &mut noisy.rewards {
        *r *= 1.0 + 1e-12;
    }
    noisy.replay(Arc::clone(&program)).unwrap();
}

#[test]
fn illegal_saved_action_is_reported_at_its_turn() {
    let program = dag();
    let rec = record(Arc::clone(&program), 11);
    let mut bad = rec.clone();
    bad.actions[4] = 10_000;
    let e = bad.replay(Arc::clone(&program)).unwrap_err();
    assert!(matches!(e, ReplayError::Illegal { turn: 4, .. }), "{e}");
    assert!(e.to_string().contains("turn 4"), "{e}");
}

#[test]
fn another_program_is_refused() {
    let rec = record(dag(), 1);
    // Same name, other contents.
    let e = rec.replay(Arc::new(random_dag(40, 4))).unwrap_err();
    assert!(matches!(e, ReplayError::ProgramHash { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "saved against a different version of workload `random-dag` (program hash 0x"
        ),
        "{msg}"
    );
    let e = rec.replay(Arc::new(chain(12))).unwrap_err();
    assert!(matches!(e, ReplayError::WrongWorkload { .. }), "{e}");
    assert!(e.to_string().contains("`random-dag`"), "{e}");
}

#[test]
fn corrupt_and_truncated_files_error_without_panic() {
    let program = Arc::new(chain(6));
    let rec = record(Arc::clone(&program), 2);
    let dir = scratch("corrupt");
    let path = dir.join("g.mmzgame");
    rec.save(&path).unwrap();
    let good = std::fs::read(&path).unwrap();

    // Every truncation, in memory (fast) and a few through the file.
    for len in 0..good.len() {
        let r: Result<GameRecord, _> =
            binio::from_bytes("g", &good[..len], GAME_MAGIC, GAME_FORMAT_VERSION);
        assert!(r.is_err(), "truncated to {len} bytes loaded");
    }
    for len in [0, 5, 12, good.len() / 2, good.len() - 1] {
        std::fs::write(&path, &good[..len]).unwrap();
        let e = GameRecord::load(&path).unwrap_err();
        assert!(e.to_string().contains("g.mmzgame"), "{e}");
    }

    // Every byte flipped: an error when loading or replaying, or (a byte of the player's
    // name, say) a game that still replays; never a panic.
    let mut caught = 0;
    for i in 0..good.len() {
        let mut c = good.clone();
        c[i] ^= 0xff;
        std::fs::write(&path, &c).unwrap();
        match GameRecord::load(&path) {
            Err(_) => caught += 1,
            Ok(r) => caught += r.replay(Arc::clone(&program)).is_err() as usize,
        }
    }
    assert!(
        caught * 2 > good.len(),
        "{caught} of {} flips caught",
        good.len()
    );

    // A foreign file.
    std::fs::write(&path, rec.to_json()).unwrap();
    let e = GameRecord::load(&path).unwrap_err();
    assert!(
        matches!(e, RecordError::Bin(BinError::BadMagic { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("not a `MMZGAME` file"), "{e}");
    // Broken JSON names its origin.
    let e = GameRecord::from_json("{\"format_version\": 1", "x.json").unwrap_err();
    assert!(e.to_string().starts_with("x.json: not a saved game"), "{e}");
}

#[test]
fn another_format_version_is_refused() {
    let rec = record(Arc::new(chain(6)), 3);
    let path = scratch("version").join("old.mmzgame");
    binio::write_atomic(&path, GAME_MAGIC, GAME_FORMAT_VERSION + 1, &rec).unwrap();
    let e = GameRecord::load(&path).unwrap_err();
    assert!(
        matches!(e, RecordError::Version { found, .. } if found == GAME_FORMAT_VERSION + 1),
        "{e}"
    );
    assert!(e.to_string().contains(&format!(
        "format version {}, this build reads {GAME_FORMAT_VERSION}",
        GAME_FORMAT_VERSION + 1
    )));
    // The JSON form carries its version in the record.
    let mut other = rec.clone();
    other.format_version = 99;
    let e = GameRecord::from_json(&other.to_json(), "old.json").unwrap_err();
    assert!(matches!(e, RecordError::Version { found: 99, .. }), "{e}");
}

#[test]
fn games_saved_under_rules_v1_are_named_as_such() {
    let rec = record(Arc::new(chain(6)), 3);
    let path = scratch("rules-v1").join("v1.mmzgame");
    for version in 1..=2 {
        binio::write_atomic(&path, GAME_MAGIC, version, &rec).unwrap();
        let e = GameRecord::load(&path).unwrap_err();
        assert!(
            matches!(e, RecordError::RulesV1 { found, .. } if found == version),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("saved by rules v1") && msg.contains("v1.mmzgame"),
            "{msg}"
        );
    }
    // A v1 JSON export: its modes are no longer known, but the version is named first.
    let json = rec
        .to_json()
        .replace("\"format_version\": 5", "\"format_version\": 2")
        .replace("\"keep\"", "\"resident\"");
    let e = GameRecord::from_json(&json, "v1.json").unwrap_err();
    assert!(e.to_string().contains("v1.json: saved by rules v1"), "{e}");
}

/// Format version 4 is rules v2: its games skipped turns that rules v3 plays and gave no
/// move in full, so its actions no longer line up; a file of it says so.
#[test]
fn games_saved_under_rules_v2_are_named_as_such() {
    let rec = record(Arc::new(chain(6)), 3);
    let path = scratch("rules-v2").join("v2.mmzgame");
    binio::write_atomic(&path, GAME_MAGIC, 4, &rec).unwrap();
    let e = GameRecord::load(&path).unwrap_err();
    assert!(matches!(e, RecordError::RulesV2 { found: 4, .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("v2.mmzgame: saved by rules v2"), "{msg}");
    let json = rec
        .to_json()
        .replace("\"format_version\": 5", "\"format_version\": 4");
    let e = GameRecord::from_json(&json, "v2.json").unwrap_err();
    assert!(e.to_string().contains("v2.json: saved by rules v2"), "{e}");
}

/// Format version 3 came before the reward kind was recorded: its games earned the cost
/// model's rewards, and a file of it is refused by a message that says so.
#[test]
fn games_saved_before_reward_kinds_are_named_as_such() {
    let rec = record(Arc::new(chain(6)), 3);
    let path = scratch("v3").join("v3.mmzgame");
    binio::write_atomic(&path, GAME_MAGIC, 3, &rec).unwrap();
    let e = GameRecord::load(&path).unwrap_err();
    assert!(
        matches!(e, RecordError::NoRewardKind { found: 3, .. }),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("v3.mmzgame") && msg.contains("version 3") && msg.contains("--reward proxy"),
        "{msg}"
    );
    let json = rec
        .to_json()
        .replace("\"format_version\": 5", "\"format_version\": 3");
    let e = GameRecord::from_json(&json, "v3.json").unwrap_err();
    assert!(
        matches!(e, RecordError::NoRewardKind { found: 3, .. }),
        "{e}"
    );
}

/// Load + replay + verify of a saved resnet50 game; run with `--ignored --nocapture` to
/// see the time (the budget is 50 ms in release). Not timed by default: CI machines vary.
#[test]
#[ignore]
fn resnet50_replay_time() {
    let program = Arc::new(bench_workloads::load("resnet50").unwrap());
    let rec = record(Arc::clone(&program), 1);
    let path = scratch("timing").join("resnet50.mmzgame");
    rec.save(&path).unwrap();
    let bytes = std::fs::metadata(&path).unwrap().len();
    let mut best = f64::INFINITY;
    for _ in 0..10 {
        let t = std::time::Instant::now();
        let r = GameRecord::load(&path).unwrap();
        let replay = r.replay(Arc::clone(&program)).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        assert_eq!(replay.turns.len(), program.buffers().len());
    }
    println!(
        "resnet50: {} turns, {bytes} bytes, load+replay+verify best of 10: {:.2} ms",
        program.buffers().len(),
        best * 1e3
    );
}

/// A replay shows each turn's simulated latency `S(t)`, and under the simulated reward the
/// rewards are its steps: `(S(t-1) - S(t)) / S0`, down to the final latency.
#[test]
fn replayed_turns_show_the_latency_the_rewards_telescope_over() {
    let program = dag();
    let rec = record(Arc::clone(&program), 5);
    let replay = rec.replay(program).unwrap();
    let s0 = rec.all_slow_latency_s;
    let mut before = s0;
    for t in &replay.turns {
        assert!(
            (t.reward - (before - t.latency_s) / s0).abs() <= 1e-12,
            "{t:?}"
        );
        before = t.latency_s;
    }
    assert_eq!(Some(before), replay.game.final_latency());
}
