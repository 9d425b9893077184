"""The libraries from Python: programs, hardware, evaluate (the command line's rows),
saved games (load, replay, render), pickling, and clear errors for bad input."""

import json
import pickle

import numpy as np
import pytest

import mallocmuzero as mmz


def test_programs_load_window_and_round_trip_through_json():
    p = mmz.Program.load("alexnet")
    assert p.name == "alexnet" and len(p) == p.num_ops > 0
    b = p.buffers()
    assert b["size"].dtype == np.uint64 and len(b["size"]) == p.num_buffers
    assert (b["start"] <= b["end"]).all() and set(b["kind"]) <= {"weight", "input", "activation", "output"}
    assert p.live_bytes().max() == p.peak_live_bytes
    again = mmz.Program.from_json(p.to_json(), "copy")
    assert again.content_hash == p.content_hash
    w = p.window(2, 9)
    assert len(w) == 7 and w.content_hash == mmz.Program.load("alexnet@2..9").content_hash
    assert "alexnet" in mmz.workloads()


def test_hardware_presets_and_capacities():
    hw = mmz.Hardware.load("tpu-v4i-like").with_fast_capacity("3MiB")
    levels = hw.levels()
    assert levels[0]["capacity"] is None and levels[1]["capacity"] == 3 << 20
    assert mmz.Hardware.load("tpu-v4i-like").with_fast_capacity(1 << 20).levels()[1]["capacity"] == 1 << 20
    assert set(mmz.hardware_presets()) >= {"tpu-v4i-like", "nnp-i-like"}


def test_evaluate_returns_the_command_lines_rows(cli):
    args = ["--workload", "alexnet", "--solver", "xla", "--solver", "greedy-size", "--solver", "beam:4"]
    rows = mmz.evaluate("alexnet", ["xla", "greedy-size", "beam:4"])
    cli_rows = json.loads(cli("evaluate", *args, "--json").stdout)["results"]
    assert [r["solver"] for r in rows] == [r["solver"] for r in cli_rows]
    for mine, theirs in zip(rows, cli_rows):
        assert set(mine) == set(theirs)
        for k, v in theirs.items():
            if k != "solve_s":
                assert mine[k] == v, k
    # A Program object and a Hardware object give the same numbers as their names.
    hw = mmz.Hardware.load("nnp-i-like").with_fast_capacity("2MiB")
    a = mmz.evaluate(mmz.Program.load("alexnet"), ["xla"], hw)
    b = mmz.evaluate("alexnet", ["xla"], "nnp-i-like", "2MiB")
    assert a[0]["latency_s"] == b[0]["latency_s"]


def test_a_race_runs_into_a_folder_and_resumes(cli, tmp_path):
    out = tmp_path / "race"
    first = mmz.race("alexnet", ["xla", "greedy-size"], seconds=0.5, out=str(out))
    assert [(r["solver"], r["reused"]) for r in first] == [("xla", False), ("greedy-size", False)]
    assert (out / "results.json").exists()
    # Run again with a solver added: the saved results are kept, the new one raced.
    again = mmz.race("alexnet", ["xla", "greedy-size", "random"], seconds=0.5, out=str(out))
    assert [r["reused"] for r in again] == [True, True, False]
    for a, b in zip(first, again):
        assert a["best_latency_s"] == b["best_latency_s"] and a["curve"] == b["curve"]
    assert again[2]["valid"] and again[2]["best_latency_s"] > 0
    # The command line resumes Python's folder: nothing is raced again, the same results.
    args = ["--workload", "alexnet", "--seconds", "0.5", "--threads", "1"]
    solvers = ["--solver", "xla", "--solver", "greedy-size", "--solver", "random"]
    theirs = json.loads(cli("race", *args, *solvers, "--out", out, "--json").stdout)["results"]
    assert [r["solver"] for r in theirs] == [r["solver"] for r in again]
    for mine, t in zip(again, theirs):
        assert set(mine) - {"reused"} == set(t)
        assert mine["best_latency_s"] == t["best_latency_s"] and mine["curve"] == t["curve"]
    # Another budget is another race: refused, naming the file.
    with pytest.raises(mmz.Error, match="results.json"):
        mmz.race("alexnet", ["xla"], seconds=1.0, out=str(out))
    with pytest.raises(mmz.Error, match="unknown race solver `greedy`"):
        mmz.race("alexnet", ["greedy"], seconds=0.5)
    assert mmz.race_solver_names()[:3] == ["xla", "xla-repack", "greedy-size"]


def test_exact_objectives_and_the_gap_to_the_best_bound(cli):
    # alexnet on its suite hardware: the checked-in bound, and the relaxation's proven one.
    # Two seconds: the MIP proves alexnet at once, the local search has the rest.
    rows = mmz.evaluate("alexnet", ["xla", "exact"], exact_seconds=2)
    for r in rows:
        assert r["bound_source"] in ("cached", "exact") and r["lower_bound_s"] > r["bound_latency_s"]
        assert r["gap_to_bound"] == pytest.approx(r["latency_s"] / r["lower_bound_s"] - 1, rel=1e-12)
        assert r["gap_to_bound"] >= -1e-9
    assert rows[1]["proof"]["objective"] == "simulated"
    proxy = mmz.evaluate("alexnet", ["exact"], exact_objective="proxy", exact_seconds=2)
    assert proxy[0]["proof"]["objective"] == "proxy"
    assert proxy[0]["proof"]["lower_bound_s"] < rows[1]["proof"]["lower_bound_s"]
    with pytest.raises(mmz.Error, match="exact_objective"):
        mmz.evaluate("alexnet", ["exact"], exact_objective="cost")


def test_the_bundled_generalist_plays_without_a_checkpoint(cli):
    args = ["--workload", "diamond", "--solver", "muzero", "--simulations", "4"]
    rows = mmz.evaluate("diamond", ["muzero"], simulations=4)
    cli_rows = json.loads(cli("evaluate", *args, "--json").stdout)["results"]
    assert rows[0]["valid"] and rows[0]["latency_s"] == cli_rows[0]["latency_s"]
    learned = mmz.evaluate("diamond", ["muzero"], simulations=4, search_model="learned")
    cli_learned = cli("evaluate", *args, "--search-model", "learned", "--json").stdout
    assert learned[0]["latency_s"] == json.loads(cli_learned)["results"][0]["latency_s"]
    with pytest.raises(mmz.Error, match="search_model"):
        mmz.evaluate("diamond", ["muzero"], search_model="exact")
    # The game alone, without the proposals that follow it by default.
    alone = mmz.evaluate("diamond", ["muzero"], simulations=4, proposal_rounds=0)
    cli_alone = cli("evaluate", *args, "--proposal-rounds", "0", "--json").stdout
    assert alone[0]["latency_s"] == json.loads(cli_alone)["results"][0]["latency_s"]
    assert rows[0]["latency_s"] <= alone[0]["latency_s"]
    with pytest.raises(mmz.Error, match="proposal-rounds: must be at most 65536"):
        mmz.evaluate("diamond", ["muzero"], proposal_rounds=65537)


def test_saved_games_replay_and_render(tmp_path):
    game = mmz.Game("alexnet")
    while not game.is_terminal():
        game.apply_action(int(game.legal_actions()[-1]))
    path = tmp_path / "g.game"
    game.save(path, player="last-legal")
    saved = mmz.SavedGame.load(path)
    assert saved.player == "last-legal" and saved.final_latency_s == game.final_latency()
    r = saved.replay()
    assert r["latency_s"] == game.final_latency()
    assert [t["reward"] for t in r["turns"]] == list(game.rewards())
    assert r["game"].final_latency() == game.final_latency()
    assert saved.render_svg().startswith("<svg") and "<svg" in saved.timeline_svg()


def test_games_copy_and_pickle():
    g = mmz.Game("alexnet")
    for _ in range(5):
        g.apply_action(int(g.legal_actions()[0]))
    c = g.clone()
    c.apply_action(int(c.legal_actions()[0]))
    assert g.turn == 5 and c.turn == 6
    p = pickle.loads(pickle.dumps(g))
    assert list(p.actions()) == list(g.actions()) and np.array_equal(p.observation(), g.observation())


def test_bad_input_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"ops": 3}')
    with pytest.raises(mmz.Error, match="bad.json"):
        mmz.Program.load(str(bad))
    with pytest.raises(mmz.Error, match="unknown hardware"):
        mmz.Game("alexnet", "tpu-v9")
    with pytest.raises(mmz.Error, match="fast-capacity|capacity"):
        mmz.Game("alexnet", fast_capacity="lots")
    with pytest.raises(mmz.Error, match="solver"):
        mmz.evaluate("alexnet", ["no-such-solver"])
    with pytest.raises(mmz.Error, match="window"):
        mmz.Program.load("alexnet").window(5, 2)
    junk = tmp_path / "junk.game"
    junk.write_bytes(b"not a game at all")
    with pytest.raises(mmz.Error, match="junk.game"):
        mmz.SavedGame.load(junk)


def test_a_race_takes_the_command_lines_configs_and_refuses_unread_ones(cli, tmp_path):
    # EGRL's config reaches its solver: the result's settings carry it, as the command
    # line's `--egrl-config` does.
    text = '{"hidden": 8, "rounds": 1}'
    mine = mmz.race("diamond", ["egrl-ea"], seconds=0.5, egrl_config=text)
    assert mine[0]["valid"] and mine[0]["settings"]["egrl"]["hidden"] == 8
    file = tmp_path / "egrl.json"
    file.write_text(text)
    args = ["--workload", "diamond", "--seconds", "0.5", "--threads", "1", "--solver", "egrl-ea"]
    theirs = json.loads(cli("race", *args, "--egrl-config", file, "--json").stdout)["results"]
    assert theirs[0]["settings"] == mine[0]["settings"]
    # A setting no solver of the race reads costs no budget: it is refused, named.
    with pytest.raises(mmz.Error, match="config: only the muzero-train solver"):
        mmz.race("diamond", ["xla"], seconds=0.5, config='{"eval_simulations": 4}')
    with pytest.raises(mmz.Error, match="search_model: only the muzero-train solver"):
        mmz.race("diamond", ["xla"], seconds=0.5, search_model="learned")
    with pytest.raises(mmz.Error, match="egrl_config: only the EGRL solvers"):
        mmz.race("diamond", ["xla"], seconds=0.5, egrl_config=text)
    # The race sets the seed; a config's own would be dropped without a word.
    with pytest.raises(mmz.Error, match="egrl_config: field `seed`"):
        mmz.race("diamond", ["egrl-ea"], seconds=0.5, egrl_config='{"seed": 3}')
    with pytest.raises(mmz.Error, match="config: .*nope"):
        mmz.race("diamond", ["muzero-train"], seconds=0.5, config='{"nope": 1}')
    with pytest.raises(mmz.Error, match="search_model"):
        mmz.race("diamond", ["muzero-train"], seconds=0.5, search_model="dreamed")


def test_trace_without_torch_says_how_to_get_it():
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="torch"):
            mmz.trace(object(), ())
    else:
        pytest.skip("torch is installed: tracing itself is checked by scripts/export_workloads.py")


def test_a_mapping_file_plays_exactly_as_its_line(cli, tmp_path):
    """Rules v3: every valid mapping is a line. greedy-size's offsets are not the menu's,
    so its line has moves given in full (-1 in `actions`); it ends at the very latency the
    race measured, pickles with those moves, and another program's mapping is refused (`mmz.Error`)."""
    out = tmp_path / "race"
    cli("race", "--workload", "alexnet", "--seconds", "1", "--threads", "1", "--solver", "greedy-size", "--out", out, "--json")
    path = out / "alexnet-tpu-v4i-like" / "greedy-size.mapping.json"
    results = json.loads((out / "results.json").read_text())["results"]
    raced = next(r for r in results if r["solver"] == "greedy-size")
    line = mmz.Game("alexnet").play_mapping(path)
    assert line.is_terminal()
    assert -1 in list(line.actions())
    assert line.final_latency() == raced["best_latency_s"]
    again = pickle.loads(pickle.dumps(line))
    assert again.final_latency() == line.final_latency()
    assert list(again.actions()) == list(line.actions())
    with pytest.raises(mmz.Error, match="greedy-size.mapping.json"):
        mmz.Game("resnet50").play_mapping(path)
