use super::*;
use crate::players::{GreedyPlayer, Player, RandomPlayer, XlaPlayer};
use crate::{GameOptions, GameSetup};
use accel_sim::{Hardware, Mapping};
use std::sync::Arc;

fn setup(workload: &str) -> Arc<GameSetup> {
    let program = Arc::new(bench_workloads::load(workload).unwrap());
    GameSetup::new(program, Hardware::tpu_v4i_like(), GameOptions::default()).unwrap()
}

/// Every allocation of `m`, sorted, with its buffer's name.
fn allocations_of(setup: &GameSetup, m: &Mapping) -> Vec<(String, Allocation)> {
    let mut v: Vec<_> = m
        .buffers
        .iter()
        .enumerate()
        .flat_map(|(b, p)| {
            let name = setup.program().buffer(b).name.clone();
            p.allocations.iter().map(move |a| (name.clone(), *a))
        })
        .collect();
    v.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
    v
}

fn sorted(mut v: Vec<(String, Allocation)>) -> Vec<(String, Allocation)> {
    v.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
    v
}

#[test]
fn the_map_after_every_turn_is_the_games_mapping_then() {
    for (workload, player) in [
        ("alexnet", &GreedyPlayer as &dyn Player),
        ("random-dag", &RandomPlayer as &dyn Player),
        ("unet", &XlaPlayer as &dyn Player),
    ] {
        let setup = setup(workload);
        let game = player.play(&setup, 3);
        let view = GameView::of(&game, &player.name(), 3, None, &ViewLimits::default());
        assert_eq!(view.turns(), game.turn(), "{workload}");
        assert!(view.left_out().is_empty(), "{:?}", view.left_out());
        let mut g = setup.start();
        assert_eq!(
            sorted(view.allocations_after(0)),
            allocations_of(&setup, &g.mapping())
        );
        for (t, &a) in game.actions().iter().enumerate() {
            let reward = g.apply_action(a).unwrap();
            assert_eq!(view.turns.reward[t], short(reward), "{workload} turn {t}");
            assert_eq!(
                sorted(view.allocations_after(t + 1)),
                allocations_of(&setup, &g.mapping()),
                "{workload} after turn {t}"
            );
        }
        let last = view.turns.latency.last().copied();
        assert_eq!(last, game.final_latency().map(short), "{workload}");
    }
}

#[test]
fn alternatives_give_the_latency_each_move_would() {
    let setup = setup("alexnet");
    let game = GreedyPlayer.play(&setup, 0);
    let view = GameView::of(&game, "greedy", 0, None, &ViewLimits::default());
    let alts = &view.alternatives;
    let mut g = setup.start();
    let mut checked = 0;
    for (t, &a) in game.actions().iter().enumerate() {
        assert_eq!(alts.turn[t], t as u32);
        let rows = alts.start[t] as usize..alts.start[t + 1] as usize;
        let legal: Vec<usize> = rows.clone().map(|i| alts.action[i] as usize).collect();
        assert_eq!(legal, g.legal_actions(), "turn {t}");
        assert!(legal.contains(&a));
        for i in rows {
            if let Some(d) = alts.delta[i] {
                assert_eq!(d, short(g.simulated_delta(alts.action[i] as usize)));
                checked += 1;
            }
        }
        g.apply_action(a).unwrap();
    }
    assert!(checked > game.turn(), "{checked}");
}

#[test]
fn limits_leave_out_what_they_say() {
    let setup = setup("alexnet");
    let game = GreedyPlayer.play(&setup, 0);
    let full = GameView::of(&game, "greedy", 0, None, &ViewLimits::default());
    let limits = ViewLimits {
        alternative_turns: 5,
        map_allocations: 10,
        op_names: 3,
    };
    let small = GameView::of(&game, "greedy", 0, None, &limits);
    let kept = small.alternatives.turn.len();
    assert!((1..=5).contains(&kept), "{kept}");
    assert_eq!(small.alternatives.start.len(), kept + 1);
    assert_eq!(full.alternatives.turn.len(), full.turns());
    assert_eq!(small.allocations.buffer.len(), 10);
    assert!(full.allocations.buffer.len() > 10);
    assert!(small.op_names.is_none());
    assert_eq!(small.left_out().len(), 3, "{:?}", small.left_out());
    assert!(small.left_out()[0].contains("legal alternatives"));
    // What is kept is the same as in the full view.
    assert_eq!(small.turns.action, full.turns.action);
}

#[test]
fn search_statistics_are_carried_per_turn() {
    let setup = setup("alexnet");
    let game = GreedyPlayer.play(&setup, 0);
    let n = setup.action_count();
    let search: Vec<SearchStats> = (0..game.turn())
        .map(|t| SearchStats {
            visits: (0..n).map(|a| ((a + t) % 3) as u32).collect(),
            root_value: t as f32 * 0.5,
        })
        .collect();
    let view = GameView::of(&game, "muzero", 0, Some(&search), &ViewLimits::default());
    let s = view.search.as_ref().unwrap();
    assert_eq!(s.root_value.len(), game.turn());
    let t = 4;
    let rows = s.start[t] as usize..s.start[t + 1] as usize;
    let got: Vec<(u32, u32)> = rows.map(|i| (s.action[i], s.visits[i])).collect();
    let want: Vec<(u32, u32)> = search[t]
        .visits
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > 0)
        .map(|(a, &v)| (a as u32, v))
        .collect();
    assert_eq!(got, want);
    assert_eq!(s.root_value[t], 2.0);
}

#[test]
fn the_differences_account_for_the_whole_gap() {
    let setup = setup("unet");
    let greedy = GreedyPlayer.play(&setup, 0);
    let xla = XlaPlayer.play(&setup, 0);
    let limits = ViewLimits::default();
    let a = GameView::of(&greedy, "greedy", 0, None, &limits);
    let b = GameView::of(&xla, "xla", 0, None, &limits);
    let c = compare(&a, &b).unwrap();
    let f = c.first_difference.expect("greedy and xla differ on unet");
    assert_eq!(greedy.actions()[..f], xla.actions()[..f]);
    assert_ne!(greedy.actions().get(f), xla.actions().get(f));
    assert!(!c.differences.is_empty());
    let total: f64 = c.differences.iter().map(|d| d.cost_s).sum::<f64>() + c.same_decisions_s;
    let gap = greedy.final_latency().unwrap() - xla.final_latency().unwrap();
    assert!(
        (total - gap).abs() <= 1e-6 * setup.all_slow_latency(),
        "{total} vs {gap}"
    );
    // A game against itself has no difference.
    let same = compare(&a, &a).unwrap();
    assert_eq!(same.first_difference, None);
    assert!(same.differences.is_empty());
    assert_eq!(same.same_decisions_s, 0.0);
}

#[test]
fn games_of_other_programs_or_hardware_are_refused() {
    let limits = ViewLimits::default();
    let a = GameView::of(&GreedyPlayer.play(&setup("unet"), 0), "g", 0, None, &limits);
    let b = GameView::of(
        &GreedyPlayer.play(&setup("alexnet"), 0),
        "g",
        0,
        None,
        &limits,
    );
    let e = compare(&a, &b).unwrap_err();
    assert!(e.to_string().contains("`unet` and `alexnet`"), "{e}");
    let program = Arc::new(bench_workloads::load("unet").unwrap());
    let hw = Hardware::tpu_v4i_like().with_capacity(1, 4 << 20).unwrap();
    let other = GameSetup::new(program, hw, GameOptions::default()).unwrap();
    let c = GameView::of(&GreedyPlayer.play(&other, 0), "g", 0, None, &limits);
    let e = compare(&a, &c).unwrap_err();
    assert!(matches!(e, CompareError::Rules { .. }), "{e}");
    // Both on the hardware of one name: the message says what differs, and how.
    let msg = e.to_string();
    assert!(
        msg.contains("hardware.levels[1].capacity is") && msg.contains(" in A and 4194304 in B"),
        "{msg}"
    );
    let reward = GameOptions {
        reward: crate::Reward::Proxy,
        ..GameOptions::default()
    };
    let setup_r = GameSetup::new(
        Arc::new(bench_workloads::load("unet").unwrap()),
        Hardware::tpu_v4i_like(),
        reward,
    )
    .unwrap();
    let d = GameView::of(&GreedyPlayer.play(&setup_r, 0), "g", 0, None, &limits);
    let msg = compare(&a, &d).unwrap_err().to_string();
    assert!(msg.contains("options.reward is"), "{msg}");
}

#[test]
fn pages_are_self_contained() {
    let setup = setup("alexnet");
    let game = GreedyPlayer.play(&setup, 0);
    let view = GameView::of(&game, "a</script><b>", 0, None, &ViewLimits::default());
    let html = game_html(&view);
    assert!(html.starts_with("<!DOCTYPE html>"));
    // The data cannot end its script element early, and nothing is fetched.
    let data = &html[html.find("id=\"mmz-data\">").unwrap()..];
    let data = &data[..data.find("</script>").unwrap()];
    assert!(!data.contains("</"), "{}", &data[..200]);
    for fetch in ["http://", "https://", "src=", "<link", "import("] {
        assert!(!html.contains(fetch), "{fetch}");
    }
    let json = &data["id=\"mmz-data\">".len()..];
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["a"]["player"], "a</script><b>");
    assert_eq!(v["mode"], "game");
    let xla = GameView::of(
        &XlaPlayer.play(&setup, 0),
        "xla",
        0,
        None,
        &ViewLimits::default(),
    );
    let page = compare_html(&view, &xla).unwrap();
    assert!(page.contains("\"mode\":\"compare\""));
}

/// Names from user files never blank a page: no `<` of theirs reaches the inline data
/// (`<!--` and `<script` change how a script element is read; `</script` ends it), on a
/// game's page, a comparison's, and the one `train` writes beside a best game.
#[test]
fn no_name_can_end_or_hide_the_inline_data() {
    let setup = setup("alexnet");
    let game = GreedyPlayer.play(&setup, 0);
    let hostile = "<!--<script>x</script>-->";
    let limits = ViewLimits::default();
    let mut view = GameView::of(&game, hostile, 0, None, &limits);
    view.workload = hostile.into();
    view.buffers.name[0] = hostile.into();
    view.levels[0].name = hostile.into();
    let mut xla = GameView::of(&XlaPlayer.play(&setup, 0), "xla", 0, None, &limits);
    xla.workload = hostile.into();
    let train_page = crate::viewer::against_xla_html(&game, hostile, 0, None, &limits);
    for html in [
        game_html(&view),
        compare_html(&view, &xla).unwrap(),
        train_page,
    ] {
        let start = html.find("id=\"mmz-data\">").unwrap() + "id=\"mmz-data\">".len();
        let data = &html[start..start + html[start..].find("</script>").unwrap()];
        assert!(!data.contains('<'), "{}", &data[..200]);
        let v: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["a"]["player"], hostile);
        // The title is escaped as HTML.
        assert!(!html[..start].contains("<!--<"), "title");
    }
    let v = serde_json::json!({"s": "a\\<b"});
    let text = script_json(&v);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
}

#[test]
fn prefetches_carry_the_first_use_they_serve() {
    let setup = setup("resnet50");
    let game = GreedyPlayer.play(&setup, 0);
    let view = GameView::of(&game, "greedy", 0, None, &ViewLimits::default());
    let a = &view.allocations;
    let mut prefetches = 0;
    for i in 0..a.buffer.len() {
        if a.prefetch[i] == 0 {
            assert_eq!(a.first_use[i], -1);
            continue;
        }
        prefetches += 1;
        let name = &view.buffers.name[a.buffer[i] as usize];
        let b = (0..setup.program().buffers().len())
            .find(|&b| &setup.program().buffer(b).name == name)
            .unwrap();
        let want = setup
            .program()
            .uses(b)
            .iter()
            .copied()
            .find(|&u| u >= a.start[i] as usize && u <= a.end[i] as usize);
        assert_eq!(a.first_use[i], want.map_or(-1, |u| u as i64), "{name}");
    }
    assert!(prefetches > 0);
}
