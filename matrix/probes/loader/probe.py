"""The tile loader ``compat`` picks at import on this release, and why.

Runs ``import compat`` in the probe's process (interpreter, or a GPU) and records
``compat.LOADER`` with ``compat.LOADER_REASON`` and every detected feature as evidence: the
descriptor loader is only chosen after a zero-padded trial load gave exact numbers there.
"""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation


def observe(ctx: Context) -> Observation:
    import compat

    return Observation(compat.LOADER, compat.LOADER_REASON, compat.FEATURES.to_dict())
