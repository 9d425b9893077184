"""Arguments from Python are taken as given or refused with one error naming them: actions
are integers only (never a float truncated, a string parsed or a bool taken for 0/1), a
number out of its parameter's range names the parameter, and an empty or bare-string
solver list is refused instead of read as the defaults."""

import tempfile

import gymnasium as gym
import numpy as np
import pytest

import mallocmuzero as mmz
from mallocmuzero.env import ENV_ID, MallocGameEnv

HUGE = 2**70

# Everything here is not an action, though int() would make one of most of them.
NOT_ACTIONS = [2.9, 0.7, np.float64(2.0), np.array(0.7), np.array(2.0), "14", b"1", None, [1], np.array([1])]


@pytest.mark.parametrize("action", NOT_ACTIONS, ids=repr)
def test_gym_step_refuses_a_non_integer_action_and_plays_nothing(action):
    env = MallocGameEnv("alexnet")
    env.reset(seed=0)
    with pytest.raises(TypeError, match=r"^action: .*" + type(action).__name__):
        env.step(action)
    assert env.game.turn == 0


@pytest.mark.parametrize("action", [True, False, np.True_], ids=repr)
def test_a_bool_is_not_an_action(action):
    env = MallocGameEnv("alexnet")
    env.reset(seed=0)
    with pytest.raises(TypeError, match=r"^action: .*bool"):
        env.step(action)
    g = mmz.Game("alexnet")
    with pytest.raises(TypeError, match=r"^action: .*bool"):
        g.apply_action(action)
    assert env.game.turn == 0 and g.turn == 0


def test_integer_actions_of_every_kind_play():
    legal = int(mmz.Game("alexnet").legal_actions()[0])
    for a in [legal, np.int64(legal), np.int32(legal), np.uint8(legal), np.array(legal), np.array(legal, dtype=np.uint16)]:
        env = MallocGameEnv("alexnet")
        env.reset(seed=0)
        env.step(a)
        assert list(env.game.actions()) == [legal], repr(a)


@pytest.mark.parametrize("action", [-1, 10**6, HUGE, -HUGE, np.uint64(2**64 - 1)], ids=repr)
def test_an_out_of_range_action_says_so(action):
    env = MallocGameEnv("alexnet")
    env.reset(seed=0)
    n = env.action_space.n
    with pytest.raises(mmz.IllegalActionError, match=rf"^action {int(action)}: out of range: the game has actions 0\.\.{n}"):
        env.step(action)
    with pytest.raises(mmz.IllegalActionError, match=rf"^action {int(action)}: out of range"):
        mmz.Game("alexnet").apply_action(action)
    assert env.game.turn == 0


def vector_env(n):
    return gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point", workload="alexnet")


@pytest.mark.parametrize(
    "actions, match",
    [
        ([2.9, 0.5], r"^actions\[0\]: .*float"),
        ([0, 0.5], r"^actions\[1\]: .*float"),
        ((0, "1"), r"^actions\[1\]: .*str"),
        ([0, None], r"^actions\[1\]: .*NoneType"),
        ([True, False], r"^actions\[0\]: .*bool"),
        (np.array([2.9, 0.5]), r"^actions: .*float64"),
        (np.array([True, False]), r"^actions: .*bool"),
        (np.array(["1", "2"]), r"^actions: .*<U1"),
        ("01", r"^actions: .*str"),
        (3, r"^actions: .*int"),
    ],
    ids=repr,
)
def test_vector_env_refuses_non_integer_actions_and_moves_no_game(actions, match):
    venv = vector_env(2)
    venv.reset(seed=0)
    before = venv.unwrapped.action_masks()
    with pytest.raises(TypeError, match=match):
        venv.step(actions)
    np.testing.assert_array_equal(venv.unwrapped.action_masks(), before)
    assert all(venv.unwrapped._games.game(i).turn == 0 for i in range(2))


def test_vector_env_refuses_the_wrong_shape_and_out_of_range_actions():
    venv = vector_env(2)
    venv.reset(seed=0)
    n = venv.unwrapped.single_action_space.n
    for shaped in [np.zeros((2, 1), dtype=np.int64), np.zeros((1, 2), dtype=np.int64), np.zeros(3, dtype=np.int64), [0, 0, 0], np.int64(0)]:
        with pytest.raises((mmz.Error, TypeError), match=r"^actions: "):
            venv.step(shaped)
    for bad in [[0, -1], [0, HUGE], np.array([0, 2**64 - 1], dtype=np.uint64)]:
        with pytest.raises(mmz.IllegalActionError, match=rf"^env 1: action {int(bad[1])}: out of range: the game has actions 0\.\.{n}"):
            venv.step(bad)
    assert all(venv.unwrapped._games.game(i).turn == 0 for i in range(2))


def test_vector_env_takes_integer_actions_of_any_integer_dtype():
    masks = vector_env(2).unwrapped.action_masks()
    legal = [int(np.flatnonzero(m)[0]) for m in masks]
    for actions in [legal, tuple(legal), [np.int64(a) for a in legal], np.array(legal, dtype=np.int32), np.array(legal, dtype=np.uint8)]:
        venv = vector_env(2)
        venv.reset(seed=0)
        venv.step(actions)
        assert [list(venv.unwrapped._games.game(i).actions()) for i in range(2)] == [[a] for a in legal], repr(actions)
    # The raw VecGame takes the same (the environment passes its actions through).
    vg = mmz.VecGame(2, "alexnet")
    vg.step(np.array(legal, dtype=np.int16))
    assert vg.game(0).turn == 1


def test_evaluate_refuses_an_empty_solver_list():
    with pytest.raises(mmz.Error, match=r"^solvers: empty list; name at least one solver or pass None for the defaults"):
        mmz.evaluate("alexnet", [])
    with pytest.raises(mmz.Error, match=r"^solvers: empty list"):
        mmz.evaluate("alexnet", ())


def test_evaluate_refuses_a_bare_string_for_the_solver_list():
    with pytest.raises(TypeError, match=r"^solvers: .*str.*solvers=\['xla'\]"):
        mmz.evaluate("alexnet", "xla")
    with pytest.raises(TypeError, match=r"^solvers\[1\]: .*int"):
        mmz.evaluate("alexnet", ["xla", 3])
    with pytest.raises(TypeError, match=r"^solvers: .*int"):
        mmz.evaluate("alexnet", 3)
    # A tuple is a list of names too.
    assert [r["solver"] for r in mmz.evaluate("alexnet", ("xla",))] == ["xla"]


def _game():
    return mmz.Game("alexnet")


SMALL = '{"games_per_iteration": 4, "demo_pretrain_steps": 4, "batch_size": 8, "search": {"simulations": 4}, "eval_simulations": 4}'


# Removed when the tests end (the lambdas below get no fixtures).
_RUNS = tempfile.TemporaryDirectory()


def _learner():
    return mmz.Learner.start(tempfile.mkdtemp(dir=_RUNS.name) + "/run", "diamond", config=SMALL)


def _worker():
    return mmz.SelfPlayWorker(_learner().describe())


# (parameter, a call passing it `v`): every integer parameter of the package.
INT_PARAMS = [
    ("slots", lambda v: mmz.Game("alexnet", slots=v)),
    ("fast_levels", lambda v: mmz.Game("alexnet", fast_levels=v)),
    ("num_envs", lambda v: mmz.VecGame(v, "alexnet")),
    ("slots", lambda v: mmz.VecGame(2, "alexnet", slots=v)),
    ("fast_levels", lambda v: mmz.VecGame(2, "alexnet", fast_levels=v)),
    ("i", lambda v: mmz.VecGame(2, "alexnet").game(v)),
    ("action", lambda v: _game().action_name(v)),
    ("seed", lambda v: _game().save("/nonexistent/never-written.game", seed=v)),
    ("start", lambda v: mmz.Program.load("alexnet").window(v, 3)),
    ("end", lambda v: mmz.Program.load("alexnet").window(0, v)),
    ("seed", lambda v: mmz.evaluate("alexnet", ["xla"], seed=v)),
    ("simulations", lambda v: mmz.evaluate("alexnet", ["xla"], simulations=v)),
    ("proposal_rounds", lambda v: mmz.evaluate("alexnet", ["xla"], proposal_rounds=v)),
    ("slots", lambda v: mmz.evaluate("alexnet", ["xla"], slots=v)),
    ("fast_levels", lambda v: mmz.evaluate("alexnet", ["xla"], fast_levels=v)),
    ("threads", lambda v: mmz.SelfPlayWorker(b"", threads=v)),
    ("seed", lambda v: mmz.Learner.start("/nonexistent/never-written", "alexnet", seed=v)),
    ("slots", lambda v: mmz.Learner.start("/nonexistent/never-written", "alexnet", slots=v)),
    ("fast_levels", lambda v: mmz.Learner.start("/nonexistent/never-written", "alexnet", fast_levels=v)),
    ("steps", lambda v: _learner().pretrain(steps=v)),
    ("steps", lambda v: _learner().absorb(b"", steps=v)),
    ("version", lambda v: _worker().load_weights(v, b"")),
]


@pytest.mark.parametrize("value", [HUGE, -1], ids=["2**70", "-1"])
@pytest.mark.parametrize("name, call", INT_PARAMS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(INT_PARAMS)])
def test_an_integer_out_of_range_names_its_parameter(name, call, value):
    with pytest.raises(mmz.Error, match=rf"^{name}\b.*{value}"):
        call(value)


@pytest.mark.parametrize("value", [2.0, 2.9, "2", True, np.float32(2.0)], ids=repr)
@pytest.mark.parametrize("name, call", INT_PARAMS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(INT_PARAMS)])
def test_an_integer_parameter_refuses_floats_strings_and_bools_by_name(name, call, value):
    with pytest.raises(TypeError, match=rf"^{name}: expected an int.*{type(value).__name__}"):
        call(value)


def test_capacities_name_their_parameter_and_refuse_bools_and_out_of_range_ints():
    hw = mmz.Hardware.load("tpu-v4i-like")
    for v in [HUGE, -1]:
        with pytest.raises(mmz.Error, match=rf"^capacity: .*{v}\b"):
            hw.with_fast_capacity(v)
        with pytest.raises(mmz.Error, match=rf"^fast_capacity: .*{v}\b"):
            mmz.Game("alexnet", fast_capacity=v)
    for v in [True, 2.5]:
        with pytest.raises(TypeError, match=rf"^capacity: .*{type(v).__name__}"):
            hw.with_fast_capacity(v)
        with pytest.raises(TypeError, match=rf"^fast_capacity: .*{type(v).__name__}"):
            mmz.Game("alexnet", fast_capacity=v)
        with pytest.raises(TypeError, match=rf"^fast_capacity: .*{type(v).__name__}"):
            mmz.evaluate("alexnet", ["xla"], fast_capacity=v)
    # A numpy integer is bytes like an int.
    assert hw.with_fast_capacity(np.int64(1 << 20)).levels()[1]["capacity"] == 1 << 20


@pytest.mark.parametrize("value", [1, "yes", None], ids=repr)
def test_bool_parameters_refuse_other_types_by_name(value):
    if isinstance(value, str):
        # suite also takes a suite's name: another name is refused as one.
        with pytest.raises(mmz.Error, match=r"^suite: unknown suite `yes` \(known: standard, scale\)"):
            mmz.evaluate(solvers=["xla"], suite=value)
    else:
        with pytest.raises(TypeError, match=rf"^suite: expected a bool.*{type(value).__name__}"):
            mmz.evaluate(solvers=["xla"], suite=value)
    with pytest.raises(TypeError, match=rf"^interrupted: expected a bool.*{type(value).__name__}"):
        _learner().finish(interrupted=value)


@pytest.mark.parametrize("name", ["exact_seconds", "exact_gap"])
@pytest.mark.parametrize("value", [True, "0.5"], ids=repr)
def test_evaluate_float_parameters_refuse_bools_and_strings_by_name(name, value):
    with pytest.raises(TypeError, match=rf"^{name}: expected a number.*{type(value).__name__}"):
        mmz.evaluate("alexnet", ["xla"], **{name: value})


@pytest.mark.parametrize("value", [0, 257])
def test_evaluate_refuses_threads_out_of_range(value):
    with pytest.raises(mmz.Error, match=rf"^threads: must be in 1..=256, got {value}"):
        mmz.evaluate("alexnet", ["xla"], threads=value)


def test_the_beam_finds_the_same_mapping_on_two_threads():
    rows = [mmz.evaluate("alexnet", ["beam"], threads=t)[0] for t in (1, 2)]
    for r in rows:
        r.pop("solve_s")
    assert rows[0] == rows[1]


def test_trace_refuses_a_float_or_bool_dtype_bytes():
    # Checked before torch is needed: 2.0 or True would pass `in (1, 2, 4, 8)`.
    for v in [2.0, True]:
        with pytest.raises(TypeError, match=rf"^dtype_bytes: .*{type(v).__name__}"):
            mmz.trace(object(), (), dtype_bytes=v)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "field, value, error",
    [
        ("actors", 2.5, TypeError),
        ("actors", True, TypeError),
        ("actors", "2", TypeError),
        ("seconds", "60", TypeError),
        ("seconds", True, TypeError),
        ("seconds", float("inf"), ValueError),
        ("threads_per_actor", 1.5, TypeError),
        ("threads_per_actor", 0, ValueError),
        ("num_cpus", 2.5, TypeError),
        ("num_cpus", 0, ValueError),
        ("seed", 2.5, TypeError),
        ("seed", -1, ValueError),
    ],
    ids=repr,
)
def test_ray_train_refuses_bad_numbers_before_starting_ray(tmp_path, field, value, error):
    ray_train = pytest.importorskip("mallocmuzero.ray_train")
    import ray

    cfg = ray_train.RunConfig(out=str(tmp_path / "run"), workload="diamond", seconds=0.01, quiet=True)
    setattr(cfg, field, value)
    with pytest.raises(error, match=rf"^{field}: "):
        ray_train.run(cfg)
    assert not ray.is_initialized() and not (tmp_path / "run").exists()
