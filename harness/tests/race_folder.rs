//! A race resumed through the library ([`harness::race_folder::race_into`]), the run the
//! command line and Python both make: a result saved under the same budget, seed, threads and settings
//! is kept, one whose mapping no longer checks out is raced again, and a folder of another
//! race, or one another process holds, is refused.

use accel_sim::Hardware;
use harness::race::{race_case, RaceConfig};
use harness::race_folder::{case_folder, race_into, FolderError, RaceFolder};
use harness::Case;
use malloc_game::GameOptions;

fn case() -> Case {
    let p = accel_sim::fixtures::three_ops("tiny", 1 << 20, 1e6);
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 3 << 20).unwrap();
    Case::new(p, hw).unwrap()
}

fn config() -> RaceConfig {
    RaceConfig {
        seconds: 0.5,
        threads: 1,
        seed: 3,
        options: GameOptions::default(),
        train: Default::default(),
        checkpoint: None,
        agent_dir: None,
        egrl: egrl::EgrlConfig::default(),
        exact_objective: exact::Objective::default(),
        mip_share: None,
    }
}

/// Races `names` into `dir` the way `race --out` does ([`race_into`]), reusing what
/// checks out; the names raced afresh come back beside the results.
fn race_into_dir(
    dir: &std::path::Path,
    names: &[&str],
) -> (Vec<harness::race::RaceResult>, Vec<String>) {
    let cases = [case()];
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut dropped = Vec::new();
    let finished = race_into(
        Some(dir),
        &cases,
        &names,
        &|_| config(),
        &mut |c, n, cfg| Ok(race_case(c, n, cfg, &mut |_, _| {})?),
        &mut |_, n, _| dropped.push(n.to_string()),
    )
    .unwrap();
    let raced: Vec<String> = finished
        .iter()
        .filter(|f| !f.reused)
        .map(|f| f.result.solver.clone())
        .collect();
    // A result dropped is one raced again.
    assert!(dropped.iter().all(|d| raced.contains(d)));
    (finished.into_iter().map(|f| f.result).collect(), raced)
}

#[test]
fn a_race_resumes_through_the_library() {
    let dir = malloc_muzero::fixtures::temp("race-folder");
    let (first, raced) = race_into_dir(&dir, &["xla", "greedy-size"]);
    assert_eq!(raced, ["xla", "greedy-size"]);
    let case_dir = dir.join(case_folder(&case()));
    assert!(case_dir.join("xla.mapping.json").exists());
    assert!(case_dir.join("curves.svg").exists());

    // Run again: both are kept, with the same latencies; a solver added is raced.
    let (again, raced) = race_into_dir(&dir, &["xla", "greedy-size", "beam"]);
    assert_eq!(raced, ["beam"]);
    for (a, b) in first.iter().zip(&again) {
        assert_eq!(a.best_latency_s, b.best_latency_s);
    }

    // A mapping file gone: that result is raced again, the others kept.
    std::fs::remove_file(case_dir.join("greedy-size.mapping.json")).unwrap();
    let (_, raced) = race_into_dir(&dir, &["xla", "greedy-size", "beam"]);
    assert_eq!(raced, ["greedy-size"]);

    // Another budget: not this race's folder.
    let other = RaceFolder::open(Some(&dir), &[case()], 9.0, 3, 1);
    assert!(matches!(other, Err(FolderError::NotThisRace(_))));

    // One process writes a folder at a time.
    let held = RaceFolder::open(Some(&dir), &[case()], 0.5, 3, 1).unwrap();
    let second = RaceFolder::open(Some(&dir), &[case()], 0.5, 3, 1);
    assert!(matches!(second, Err(FolderError::Lock(_))));
    drop(held);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A folder of a build before the guided agent holds its training race under the name
/// `muzero` (with its `train` settings): it is `muzero-train`'s result now, mapping file
/// and all, and `muzero` (the guided search, whose settings name its `guide`) races afresh.
#[test]
fn an_older_builds_training_result_is_muzero_trains() {
    let dir = malloc_muzero::fixtures::temp("race-folder-migrate");
    race_into_dir(&dir, &["xla"]);
    // Write the folder as such a build would have: xla's result, as the training race's.
    let path = dir.join("results.json");
    let mut saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut trained = saved["results"][0].clone();
    trained["solver"] = "muzero".into();
    trained["settings"]["train"] = serde_json::json!({"batch_size": 128});
    let mut guided = trained.clone();
    guided["settings"]["guide"] = "bundled".into();
    saved["results"].as_array_mut().unwrap().push(trained);
    std::fs::write(&path, serde_json::to_string(&saved).unwrap()).unwrap();
    let case_dir = dir.join(case_folder(&case()));
    std::fs::copy(
        case_dir.join("xla.mapping.json"),
        case_dir.join("muzero.mapping.json"),
    )
    .unwrap();

    let mut folder = RaceFolder::open(Some(&dir), &[case()], 0.5, 3, 1).unwrap();
    assert!(folder.reuse(&case(), "muzero").is_none());
    let kept = folder.reuse(&case(), "muzero-train").unwrap().unwrap();
    assert_eq!(kept.solver, "muzero-train");
    assert!(case_dir.join("muzero-train.mapping.json").exists());
    assert!(!case_dir.join("muzero.mapping.json").exists());
    folder.save().unwrap();
    drop(folder);

    // Today's `muzero` result (its settings name a guide) keeps its name.
    saved["results"][1] = guided;
    std::fs::write(&path, serde_json::to_string(&saved).unwrap()).unwrap();
    let mut folder = RaceFolder::open(Some(&dir), &[case()], 0.5, 3, 1).unwrap();
    assert!(folder.reuse(&case(), "muzero-train").is_none());
    assert!(folder.reuse(&case(), "muzero").is_some());
    drop(folder);
    std::fs::remove_dir_all(&dir).unwrap();
}
