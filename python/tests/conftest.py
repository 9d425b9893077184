"""Shared fixtures: the command line binary the Python results are compared against."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    """Runs `mallocmuzero ARGS...` (the release build: $MMZ_CLI, else the workspace's
    target/release) and returns its stdout; a failure fails the test with its stderr."""
    exe = os.environ.get("MMZ_CLI")
    if exe is None:
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        exe = str(target / "release" / "mallocmuzero")
    if not Path(exe).is_file():
        found = shutil.which("mallocmuzero")
        if found is None:
            pytest.fail(f"no mallocmuzero binary at {exe}: build it (cargo build --release -p mallocmuzero) or set MMZ_CLI")
        exe = found

    def run(*args, check=True):
        p = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=300)
        if check and p.returncode != 0:
            pytest.fail(f"mallocmuzero {' '.join(map(str, args))} exited {p.returncode}: {p.stderr}")
        return p

    return run
