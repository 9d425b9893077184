"""JAX programs as programs: the HLO loader from Python (no jax needed), and where jax is
installed, trace_jax on the cross-check programs of scripts/jax_programs.py against XLA's
own cost and memory analysis (the tolerances of bench-workloads/tests/hlo_xla.rs, whose
reasons docs/workloads.md gives)."""

import json
import os
import sys
from pathlib import Path

import pytest

import mallocmuzero as mmz

REPO = Path(__file__).resolve().parents[2]
HLO = REPO / "bench-workloads" / "tests" / "data" / "hlo"


def test_hlo_text_loads_without_jax_and_bad_text_names_the_line():
    text = (HLO / "mlp.hlo.txt").read_text()
    p = mmz.Program.from_hlo(text, "mlp.hlo.txt", name="mlp", weight_parameters=[0, 1, 2, 3, 4, 5])
    assert p.name == "mlp" and p.num_ops == 6
    kinds = set(p.buffers()["kind"])
    assert {"weight", "input", "output"} <= kinds
    same = mmz.Program.load(str(HLO / "mlp.hlo.txt"))
    assert same.total_flops == p.total_flops and same.num_ops == p.num_ops
    cut = text[: len(text) // 2]
    with pytest.raises(mmz.Error, match=r"cut.hlo.txt: line \d+.*truncated text"):
        mmz.Program.from_hlo(cut, "cut.hlo.txt")


def test_bundled_jax_programs_are_workloads():
    names = mmz.workloads()
    bundled = ("jax-transformer-4l-train", "jax-transformer-4l-train-lowered", "jax-convnet-train", "jax-mlp-train", "jax-rnn-scan")
    for name in bundled:
        assert name in names
    rows = mmz.evaluate("jax-mlp-train", ["xla", "greedy-size"], fast_capacity="1MiB")
    assert all(r["valid"] for r in rows)


def test_trace_jax_without_jax_says_how_to_get_it():
    try:
        import jax  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="jax"):
            mmz.trace_jax(lambda x: x, 1.0)
    else:
        pytest.skip("jax is installed: the cross-checks below run")


def _need_jax():
    """jax, or a skip where it is missing; .ci/run sets MMZ_REQUIRE_JAX=1 (it installs jax
    from requirements-test.txt) so that there a missing jax fails instead."""
    if os.environ.get("MMZ_REQUIRE_JAX") == "1":
        import jax

        return jax
    return pytest.importorskip("jax")


def _programs():
    sys.path.insert(0, str(REPO / "scripts"))
    import jax_programs

    return jax_programs


def _xla(compiled):
    cost = compiled.cost_analysis()
    if isinstance(cost, list):
        cost = cost[0]
    mem = compiled.memory_analysis()
    peak = mem.argument_size_in_bytes + mem.output_size_in_bytes - mem.alias_size_in_bytes + mem.temp_size_in_bytes
    return cost.get("flops", 0.0) + cost.get("transcendentals", 0.0), cost.get("bytes accessed", 0.0), peak


@pytest.mark.parametrize(
    "name", ["mlp", "mlp-train", "transformer-block", "transformer-block-train", "convnet", "rnn-scan", "op-mix"]
)
def test_trace_jax_matches_xlas_cost_and_memory_analysis(name):
    jax = _need_jax()
    jp = _programs()
    fn, args, weights, _ = jp.CHECKS[name]()
    p = mmz.trace_jax(fn, *args, name=name, weights=weights)
    low = mmz.trace_jax(fn, *args, name=name, stage="lowered", weights=weights)
    if name == "rnn-scan":
        # XLA counts a while body once; the loader unrolls it: compare with JAX's unrolled.
        fn, args, _, _ = jp.rnn_scan(unroll=True)
    flops, bytes_accessed, peak = _xla(jax.jit(fn, keep_unused=True).lower(*args).compile())
    op_bytes = sum(int(s) for s in _op_bytes(p))
    assert abs(p.total_flops / flops - 1) <= 1e-3, (p.total_flops, flops)
    assert abs(low.total_flops / flops - 1) <= 0.06, (low.total_flops, flops)
    assert 0.95 <= op_bytes / bytes_accessed <= 1.3, (op_bytes, bytes_accessed)
    assert 0.6 <= p.peak_live_bytes / peak <= 1.0, (p.peak_live_bytes, peak)
    assert "weight" in set(p.buffers()["kind"])


def _op_bytes(p):
    doc = json.loads(p.to_json())
    sizes = [b["bytes"] for b in doc["buffers"]]
    return [sum(sizes[b] for b in op["reads"] + op["writes"]) for op in doc["ops"]]


def test_a_training_step_traces_to_a_file_that_loads_and_evaluates(tmp_path):
    jax = _need_jax()
    jp = _programs()
    fn, args, weights, description = jp.transformer_block_train()
    doc = mmz.trace_jax_to_dict(fn, *args, name="block-train", weights=weights, description=description)
    assert doc["format"] == "mallocmuzero-program" and doc["name"] == "block-train"
    assert doc["source"] == {"generator": "mallocmuzero.trace_jax", "jax": jax.__version__, "stage": "optimized"}
    assert doc["description"].startswith("a training step of one pre-LN transformer block")
    f = tmp_path / "block-train.json"
    f.write_text(json.dumps(doc))
    p = mmz.Program.load(str(f))
    rows = mmz.evaluate(str(f), ["xla", "greedy-size"], fast_capacity=p.peak_live_bytes // 4)
    assert all(r["valid"] for r in rows)
    with pytest.raises(ValueError, match="stage"):
        mmz.trace_jax(fn, *args, stage="scheduled")
