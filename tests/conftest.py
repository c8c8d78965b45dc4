"""Test-wide setup: kernels run under the Triton interpreter on the CPU.

TRITON_INTERPRET is read when ``@triton.jit`` decorates a function, i.e. when ``kernels`` is
imported, so it is set here, before any test module imports Triton.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")


import pytest


@pytest.fixture(scope="session")
def matrix_envs_dir(tmp_path_factory: pytest.TempPathFactory):
    """Cell environments (uv venvs with torch, Triton and numpy) shared by every test module
    that runs the orchestrator: building one costs seconds each time, and they hold nothing a
    test changes. MATRIX_TEST_ENVS_DIR reuses them across pytest runs (repeating a test)."""
    from pathlib import Path

    given = os.environ.get("MATRIX_TEST_ENVS_DIR")
    return Path(given) if given else tmp_path_factory.mktemp("envs")
