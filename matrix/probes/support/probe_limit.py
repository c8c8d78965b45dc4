"""The per-probe time limit, told to each probe child: a probe that can spend more or less of
it (the fingerprint's GPU narrowing, ``matrix.probes.fp.probe``) reads it from the child's
environment instead of assuming the default. The runner (``matrix.measure.runner``) sets it;
nothing else writes it. It lives with the probes' support code: probes import nothing of
``matrix.measure``."""

from __future__ import annotations

import os

PROBE_LIMIT_ENV = "MATRIX_PROBE_LIMIT_S"
# The runner's default --timeout (``runner.DEFAULT_TIMEOUT_S`` is this), and the limit a probe
# assumes when it runs outside a runner (a test, a direct call).
DEFAULT_LIMIT_S = 300.0


def limit_env(seconds: float) -> dict[str, str]:
    """What a child's environment gets so that its probes know their limit."""
    return {PROBE_LIMIT_ENV: f"{seconds:g}"}


def probe_limit_s() -> float:
    """Seconds this probe child may run; a missing or unreadable value is the default."""
    try:
        value = float(os.environ.get(PROBE_LIMIT_ENV, ""))
    except ValueError:
        return DEFAULT_LIMIT_S
    return value if value > 0 else DEFAULT_LIMIT_S
