"""Can this release compile for the target at all (aot)?

A trial store and an fp16 ``tl.dot`` are compiled for the target in a child process
(``matrix.backends.targets``): a release that predates a target may abort the process on it
(3.0.0-3.2.0 on ``cuda:100``/``cuda:120``: "computeCapability not supported"), which must not
read as a crash of the code asked about. ``compiles``: both trials compiled; ``unsupported``:
one failed or the process died, with the release's own words. Every other compile for an
unsupported target is ``skipped`` with the same reason. The answer is kept per environment,
so a warm run reads it back.
"""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation, attempt


def observe(ctx: Context) -> Observation:
    from matrix.backends import targets

    target = ctx.compile_target
    out = attempt(lambda: targets.check(target))  # a missing tool: skipped (CannotObserve)
    if out.raised and isinstance(out.exception, targets.TargetUnsupported):
        return Observation("unsupported", str(out.exception), {"target": target})
    if out.raised:
        raise out.exception  # type: ignore[misc]  # not ours to classify: the child records it
    return Observation("compiles", f"a store and an fp16 tl.dot compile for {target}",
                       {"target": target})  # fmt: skip
