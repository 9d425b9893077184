"""The Python snippets of the front page (README.md) and of docs/python.md run as written.

Every ```python block of both files is one test: it runs in a fresh namespace with a fresh
temporary folder as the working directory (the snippets write races, saved games and
viewer pages under relative paths). A block that imports an optional package (Gymnasium,
jax, Ray, torch) is skipped where that package is missing; .ci/run installs all but torch,
and sets MMZ_REQUIRE_JAX=1 so that there a missing jax fails instead of skipping.

A block not meant to run carries the mark on its fence (```python not-run) and its reason
in NOT_RUN below, keyed by its first line, so no snippet stops running unnoticed. Today
every block runs: NOT_RUN is empty.
"""

import ast
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/python.md"]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.M | re.S)
# Packages a snippet may import beyond the package itself, numpy and the standard library.
OPTIONAL = {"gymnasium", "jax", "ray", "torch"}
# First line of a block marked `not-run` -> why it does not run.
NOT_RUN = {}


def _blocks():
    out = []
    for doc in DOCS:
        text = (REPO / doc).read_text()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append(pytest.param(doc, line, m.group(1).strip(), m.group(2), id=f"{doc}:{line}"))
    return out


BLOCKS = _blocks()


def _imported(code):
    """The top-level packages `code` imports."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_both_pages_have_snippets():
    # A fence the pattern stopped matching would otherwise leave nothing to run.
    for doc in DOCS:
        assert any(p.values[0] == doc for p in BLOCKS), f"{doc}: no ```python block found"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("doc,line,info,code", BLOCKS)
def test_snippet_runs(doc, line, info, code, tmp_path, monkeypatch):
    first = code.splitlines()[0] if code.strip() else ""
    if info:
        assert info == "not-run", f"{doc}:{line}: unknown fence words `{info}` (only `not-run`)"
        assert first in NOT_RUN, f"{doc}:{line}: marked not-run without a reason in NOT_RUN"
        pytest.skip(f"not run: {NOT_RUN[first]}")
    assert first not in NOT_RUN, f"{doc}:{line}: in NOT_RUN but not marked not-run"
    for name in sorted(_imported(code) & OPTIONAL):
        if name == "jax" and os.environ.get("MMZ_REQUIRE_JAX") == "1":
            continue  # the block's own import fails the test
        pytest.importorskip(name)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{doc}:{line}", "exec"), {"__name__": "__snippet__"})
