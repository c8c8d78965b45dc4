"""Probe children forked from a runner that has imported torch once for all of them.

A CPU cell starts up to three probe children (``matrix.measure.runner``: one per backend and
environment), and each imported torch on its own: 2.6 s a child on this 2-core machine
(``python -c "import torch"`` in 3.9.0's cell environment, 2026-12-03), a quarter of an
interpreter-only cell. The runner imports it once (``preload``) and forks each child from
itself (``start``), which then sets its environment and runs ``matrix.measure.child`` as the
command would. Triton is never imported here: a child's backend and variables are set before it
loads Triton, as for a child started by a command. What is preloaded reads none of the
variables a child sets (``runner.child_environment``: Triton's, Python's, OpenMP's thread count,
which the preload is given too).

A GPU child is always started by a command: a CUDA context must not be inherited.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping

from matrix.core import REPO_ROOT
from matrix.measure import procs

PRELOADED = ("torch",)
# The backends whose children may be forked from the runner.
FORKED_BACKENDS = frozenset({"interpret", "aot"})
# OpenMP threads of a probe child (``runner.child_environment`` says why one). OpenMP reads it
# when torch loads it, so the preload sees it too: and then torch starts no thread, which a
# fork needs (``procs.can_fork``).
CHILD_OMP_THREADS = "1"
# Set to 0: every child is started by a command, as before this module (troubleshooting).
SWITCH = "MATRIX_FORK_CHILDREN"


def preload() -> bool:
    """Import ``PRELOADED`` into this process; whether children may now be forked from it.

    False where forking is unsafe here, or an import failed: the children then start by a
    command and import for themselves, and whatever failed here fails there, in a probe's
    result with its evidence, never in the runner."""
    if os.environ.get(SWITCH, "1") == "0" or not procs.can_fork():
        return False
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = CHILD_OMP_THREADS
    procs.use_bytecode_of(procs.bytecode_kept())  # the children's: else torch compiles afresh
    try:
        for name in PRELOADED:
            importlib.import_module(name)
    except Exception:  # recorded by the children, who meet it again (see above)
        return False
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved
    return procs.can_fork()  # the imports started no thread


def start(env: Mapping[str, str], child_args: list[str], output: int) -> procs.Forked:
    """``python -m matrix.measure.child *child_args`` with ``env``, forked from this process;
    stdout and stderr on the file descriptor ``output``."""
    return procs.fork(lambda: _child(dict(env), child_args), output=output)


def _child(env: dict[str, str], child_args: list[str]) -> int:
    """In the forked child: what a fresh interpreter would have from ``env``, then the child."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(REPO_ROOT)
    procs.use_bytecode_of(env)
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from matrix.measure import child

    return child.main(child_args)
