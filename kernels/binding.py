"""A kernel launch with its compiled kernel and constant arguments bound once, per plan.

``kernel[grid](...)`` costs about 21 µs of host time per call on an H200 host (Triton 3.6):
argument binding, the specialization cache key, the stream lookup, then the launcher. For a
plan whose shapes, strides and constexprs never change, all but the launcher is the same every
call. ``BoundKernel`` launches once through ``kernel[grid]`` (which compiles or finds the kernel
and returns it), then calls the compiled kernel's launcher directly with the argument list
built once, replacing only the slots that change (the tensors).

Which layer is used is found by looking at what the release hands back, never by its version:

* ``launcher``: the compiled kernel has ``run``, ``function`` and ``packed_metadata``, its
  source signature names every argument of the function (so the launcher takes them all,
  constexprs included, as ``JITFunction.run`` passes them), and ``triton.knobs`` holds the
  launch hooks;
* ``jit``: anything else (the interpreter, releases whose launcher takes another argument list):
  ``kernel[grid](**kwargs)`` with the keyword arguments bound once.

The caller keeps the specialization fixed: a plan is keyed on shapes, strides, integer values
and pointer alignment (``kernels.splitk``), which is what Triton specializes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import triton

LAYERS = ("launcher", "jit")


def _knob_hooks() -> Any | None:
    """``triton.knobs.runtime`` where the release has it (where JITFunction.run reads the launch
    hooks from), else None."""
    knobs = getattr(triton, "knobs", None)
    runtime = getattr(knobs, "runtime", None)
    if runtime is None or not hasattr(runtime, "launch_enter_hook"):
        return None
    return runtime


def launcher_layer(compiled: Any, arg_names: Sequence[str]) -> str:
    """``"launcher"`` if ``compiled`` (what ``kernel[grid](...)`` returned) can be launched
    directly with every argument in order, else ``"jit"``; see the module docstring."""
    if compiled is None or _knob_hooks() is None:
        return "jit"
    if not all(hasattr(compiled, n) for n in ("run", "function", "packed_metadata")):
        return "jit"
    signature = getattr(getattr(compiled, "src", None), "signature", None)
    if not isinstance(signature, dict) or list(signature) != list(arg_names):
        return "jit"
    return "launcher"


class BoundKernel:
    """One plan's launch: ``kernel``, ``grid``, options and constant arguments fixed.

    ``varying`` names the arguments that change per call, passed positionally to ``__call__``
    in that order; ``stream`` is the raw CUDA stream handle (ignored on the ``jit`` layer,
    where Triton reads the current stream itself).
    """

    def __init__(
        self,
        kernel: Any,
        grid: tuple[int, ...],
        args: dict[str, Any],
        options: dict[str, Any],
        varying: Sequence[str],
    ) -> None:
        self.kernel = kernel
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.kwargs = {**args, **options}
        self.names = list(getattr(kernel, "arg_names", list(args)))
        missing = [n for n in self.names if n not in args]
        if missing:
            raise ValueError(f"BoundKernel: arguments {missing} of the kernel are not bound")
        self.values = [args[n] for n in self.names]
        self.slots = [self.names.index(n) for n in varying]
        self.varying = tuple(varying)
        self.layer = "jit"  # until the first launch shows what the release returns
        self._compiled: Any = None
        self._hooks: Any = None  # triton.knobs.runtime, read once the first launch is seen

    def rebind(self, **args: Any) -> None:
        """Replace constant arguments (e.g. another stream's workspace); same types only, so
        the specialization, hence the compiled kernel, stays the same."""
        for name, value in args.items():
            self.values[self.names.index(name)] = value
            self.kwargs[name] = value

    def __call__(self, stream: int | None, *tensors: Any) -> None:
        if self.layer == "launcher":
            values = self.values
            for slot, t in zip(self.slots, tensors, strict=True):
                values[slot] = t
            c, hooks = self._compiled, self._hooks
            enter = hooks.launch_enter_hook
            meta = c.launch_metadata(self.grid, stream, *values) if enter is not None else None
            c.run(*self.grid, stream, c.function, c.packed_metadata, meta, enter,
                  hooks.launch_exit_hook, *values)  # fmt: skip
            return
        kwargs = self.kwargs
        for name, t in zip(self.varying, tensors, strict=True):
            kwargs[name] = t
        compiled = self.kernel[self.grid](**kwargs)
        if self._compiled is None:
            self._compiled = compiled
            self.layer = launcher_layer(compiled, self.names)
            self._hooks = _knob_hooks()
