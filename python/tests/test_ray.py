"""Self-play on Ray: a local run of 2 actors and the learner writes a run folder the
command line evaluates and resumes; on a simulated 2-node cluster the actors land on both
nodes and the run survives an actor killed mid-run. Every test has a timeout and shuts
Ray down."""

import json
import threading
import time

import pytest
import ray
from ray.cluster_utils import Cluster

from mallocmuzero import ray_train

SMALL = json.dumps(
    {
        "games_per_iteration": 4,
        "demo_pretrain_steps": 20,
        "batch_size": 32,
        "checkpoint_every": 2,
        "search": {"simulations": 8, "gumbel": {"c_scale": 0.1}},
        "eval_simulations": 8,
    }
)


def small_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(SMALL)
    return str(path)


@pytest.mark.timeout(240)
def test_local_run_writes_a_run_folder_the_cli_evaluates_and_resumes(tmp_path, cli):
    out = tmp_path / "run"
    cfg = ray_train.RunConfig(
        out=str(out), actors=2, seconds=30, workload="alexnet", config=small_config(tmp_path), quiet=True
    )
    try:
        ray.init(num_cpus=3, log_to_driver=False)
        summary = ray_train.run(cfg)
    finally:
        ray.shutdown()
    assert summary["session_iterations"] >= 2, summary
    # The session ends at its time (the batch being learned from when it comes finishes).
    assert summary["session_seconds"] < 30 + 5, summary
    assert summary["actor_replacements"] == 0
    assert (out / "checkpoints" / "latest.json").is_file()
    assert (out / "best" / "game.game").is_file()
    metrics = (out / "metrics.jsonl").read_text().splitlines()
    assert len(metrics) == summary["iterations"]
    rows = json.loads(
        cli("evaluate", "--workload", "alexnet", "--solver", "xla", "--solver", "muzero", "--checkpoint", out, "--json").stdout
    )["results"]
    agent = next(r for r in rows if r["solver"] == "muzero")
    assert agent["valid"] and agent["latency_s"] > 0
    # The folder continues as an ordinary run.
    resumed = json.loads(cli("train", "--resume", out, "--steps", str(summary["train_steps"] + 5), "--json").stdout)
    assert resumed["iterations"] > summary["iterations"]


def _wait_for_actors(prefix, count, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        mine = [n for n in ray.util.list_named_actors() if n.startswith(prefix)]
        if len(mine) >= count:
            return mine
        time.sleep(0.2)
    raise AssertionError(f"actors {prefix}* did not start")


@pytest.mark.timeout(300)
def test_two_node_cluster_spreads_actors_and_survives_a_killed_actor(tmp_path):
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    progress = []
    result = {}
    cfg = ray_train.RunConfig(
        out=str(tmp_path / "run"),
        actors=2,
        seconds=40,
        workload="alexnet",
        config=small_config(tmp_path),
        quiet=True,
        actor_name_prefix="mmz-test",
    )
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
        t = threading.Thread(target=lambda: result.update(ray_train.run(cfg, progress.append)))
        t.start()
        _wait_for_actors("mmz-test-", 2, 60)
        while len(progress) < 2 and t.is_alive():
            time.sleep(0.2)
        victim = ray.get_actor("mmz-test-0-0")
        ray.kill(victim, no_restart=True)
        killed_at = len(progress)
        t.join(timeout=200)
        assert not t.is_alive()
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert result, "the run raised"
    assert len(result["actor_nodes"]) == 2, result["actor_nodes"]
    assert result["actor_replacements"] >= 1
    assert len(progress) > killed_at + 1, "the run did not go on after the kill"
    assert (tmp_path / "run" / "checkpoints" / "latest.json").is_file()
