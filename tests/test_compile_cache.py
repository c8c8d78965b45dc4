"""The kept compile cache (matrix.backends.compile_cache): who may use it, how it is keyed,
and that a compile Triton answers from it says so while its artifacts stay the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.backends import compile_cache
from matrix.catalog import PROBES
from matrix.core import REPO_ROOT
from matrix.measure import runner


def test_only_aot_tasks_of_probes_that_ask_are_given_the_cache(tmp_path: Path) -> None:
    tasks = runner.plan_tasks(PROBES, ["interpret", "aot"], None)
    told = {(t.probe, t.backend, t.target): t.to_json(tmp_path) for t in tasks}
    given = {k for k, v in told.items() if "compile_cache" in v}
    asking = {p.name for p in PROBES if p.compile_cache}
    assert asking, "the catalog names no probe that may use the cache"
    assert given == {k for k in told if k[0] in asking and k[1] == "aot"}
    assert all(v["compile_cache"] == str(tmp_path) for k, v in told.items() if k in given)
    # Never a probe that observes an environment variable's effect on the compile:
    assert not {p.name for p in PROBES if p.compile_cache and p.env}
    assert not any("compile_cache" in t.to_json(None) for t in tasks)


def test_each_set_of_compile_variables_gets_a_folder_of_its_own(tmp_path: Path) -> None:
    plain = compile_cache.folder_for(tmp_path, {"PATH": "/bin"})
    assert compile_cache.folder_for(tmp_path, {"PATH": "/usr/bin", "HOME": "/x"}) == plain
    assert compile_cache.folder_for(tmp_path, {"TRITON_CACHE_DIR": "/elsewhere"}) == plain
    ieee = compile_cache.folder_for(tmp_path, {"TRITON_F32_DEFAULT": "ieee"})
    assert ieee != plain and ieee.parent == tmp_path
    assert compile_cache.folder_for(tmp_path, {"MLIR_ENABLE_DUMP": "1"}) not in (plain, ieee)


def test_a_cache_past_its_entry_limit_is_emptied(tmp_path: Path) -> None:
    base = tmp_path / "compile-cache"
    for i in range(3):
        (base / "envhash" / f"kernel{i}").mkdir(parents=True)
    assert not compile_cache.prune(base, max_entries=3) and base.is_dir()
    assert compile_cache.prune(base, max_entries=2) and not base.exists()
    assert not compile_cache.prune(base)  # nothing there: nothing to do


CHILD = """
import json, sys
from matrix.backends.aot import compile_for_target
from matrix.probes.support import dot_precision as dp
art = compile_for_target(dp.f32_dot_default, {"a": "*fp32", "b": "*fp32", "c": "*fp32"},
                         {"BLOCK": 32}, "cuda:80", cache_dir=sys.argv[1])
print(json.dumps({"cached": art.cached, "ir": art.ir, "torch": "torch" in sys.modules}))
"""


def test_a_second_process_is_answered_from_the_kept_cache_with_the_same_artifacts(
    tmp_path: Path,
) -> None:
    pytest.importorskip("triton")
    import json

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    folder = compile_cache.folder_for(tmp_path, env)

    def compile_once() -> dict:
        out = subprocess.run([sys.executable, "-c", CHILD, str(folder)], env=env, cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=240)  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.splitlines()[-1])

    first, second = compile_once(), compile_once()
    assert first["cached"] is False and second["cached"] is True
    assert first["ir"] == second["ir"]  # what the probes read is the compile's own output
    assert first["torch"] is False  # a Pointer description needs no torch import
