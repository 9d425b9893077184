"""The Gymnasium environments: Gymnasium's own checker, masked random play that ends in a
valid mapping whose latency the command line confirms, determinism, illegal actions, and
the vectorised environment agreeing with single games."""

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import mallocmuzero as mmz
from mallocmuzero.env import ENV_ID, MallocGameEnv

CASES = [
    dict(workload="alexnet"),
    dict(workload="mobilenet-v2", hw="nnp-i-like"),
    dict(workload="bert-base-s128@0..40", fast_capacity="4MiB"),
]


@pytest.mark.parametrize("case", CASES)
def test_gymnasium_env_checker_passes(case):
    env = gym.make(ENV_ID, **case)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def masked_random_episode(env, seed):
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    actions, rewards, observations = [], [], [obs]
    while True:
        mask = env.unwrapped.action_masks()
        assert np.array_equal(mask, info["action_mask"])
        legal = np.flatnonzero(mask)
        assert legal.size > 0
        a = int(rng.choice(legal))
        obs, r, terminated, truncated, info = env.step(a)
        assert env.observation_space.contains(obs)
        actions.append(a)
        rewards.append(r)
        observations.append(obs)
        assert not truncated
        if terminated:
            return actions, rewards, observations, info


@pytest.mark.parametrize("case", CASES)
def test_masked_random_play_is_a_valid_mapping_the_cli_agrees_with(case, cli, tmp_path):
    env = gym.make(ENV_ID, **case)
    actions, rewards, _, info = masked_random_episode(env, seed=3)
    game = env.unwrapped.game
    assert game.is_terminal()
    assert list(game.actions()) == actions
    np.testing.assert_allclose(game.rewards(), rewards, rtol=0, atol=0)
    # The saved game replays in the command line with every reward verified, to the
    # same simulated latency.
    path = tmp_path / "random.game"
    game.save(path, player="masked-random", seed=3)
    out = cli("replay", path, "--workload", case["workload"], "--json").stdout
    replayed = json.loads(out)
    assert replayed["latency_s"] == pytest.approx(info["latency_s"], rel=1e-12)
    # The mapping itself passes the command line's validator and simulator.
    mapping = tmp_path / "random.json"
    mapping.write_text(game.mapping_json())
    args = ["evaluate", "--workload", case["workload"], "--solver", "all-slow", "--mapping", mapping, "--json"]
    for flag in ("hw", "fast_capacity"):
        if flag in case:
            args += [f"--{flag.replace('_', '-')}", case[flag]]
    rows = json.loads(cli(*args).stdout)["results"]
    row = next(r for r in rows if r["solver"].startswith("file:"))
    assert row["valid"], row
    assert row["latency_s"] == pytest.approx(info["latency_s"], rel=1e-12)


def test_seeded_resets_repeat_exactly():
    runs = []
    for _ in range(2):
        env = gym.make(ENV_ID, workload="alexnet")
        env.reset(seed=11)
        trace = []
        for _ in range(200):
            a = env.action_space.sample()
            obs, r, term, _, _ = env.step(a)
            trace.append((a, r, obs.tobytes()))
            if term:
                env.reset()
        runs.append(trace)
    assert runs[0] == runs[1]


def test_sample_draws_legal_actions_and_an_illegal_action_raises():
    env = MallocGameEnv("alexnet")
    env.reset(seed=0)
    for _ in range(50):
        assert env.action_masks()[env.action_space.sample()]
    illegal = np.flatnonzero(~env.action_masks())
    assert illegal.size > 0
    before = env.game
    with pytest.raises(mmz.IllegalActionError, match="not legal"):
        env.step(int(illegal[0]))
    with pytest.raises(ValueError):  # an IllegalActionError is a ValueError
        env.step(env.action_space.n + 3)
    assert list(env.game.actions()) == list(before.actions())
    while not env.game.is_terminal():
        env.step(env.action_space.sample())
    with pytest.raises(mmz.IllegalActionError, match="ended"):
        env.step(0)


def test_vector_env_steps_like_single_games():
    n = 5
    venv = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point", workload="alexnet")
    singles = [MallocGameEnv("alexnet") for _ in range(n)]
    obs, info = venv.reset(seed=1)
    single_obs = [e.reset(seed=1)[0] for e in singles]
    np.testing.assert_array_equal(obs, np.stack(single_obs))
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(120):
        masks = venv.unwrapped.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, term, trunc, info = venv.step(actions)
        for i, e in enumerate(singles):
            o, r, t, _, inf = e.step(int(actions[i]))
            assert rewards[i] == r and term[i] == t
            if t:
                finished += 1
                assert info["_final_obs"][i]
                np.testing.assert_array_equal(info["final_obs"][i], o)
                assert info["latency_s"][i] == inf["latency_s"]
                o, _ = e.reset()
            np.testing.assert_array_equal(obs[i], o)
    assert finished >= n  # every game ended at least once and restarted
    bad = np.zeros(n, dtype=np.int64)
    bad[2] = np.flatnonzero(~venv.unwrapped.action_masks()[2])[0]
    before = venv.unwrapped.action_masks()
    with pytest.raises(mmz.IllegalActionError, match="env 2"):
        venv.step(bad)
    np.testing.assert_array_equal(venv.unwrapped.action_masks(), before)
