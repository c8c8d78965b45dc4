"""The CUDA-to-CPU redirect: a pytest plugin that lets a suite written for a GPU run its Triton
kernels under the interpreter on CPU tensors (``--tests-device cuda-on-cpu``;
``matrix.measure.test_device`` says when and what its outcomes mean).

Loaded as ``pytest -p matrix.measure.redirect`` (the suite runner does this, before
``matrix.measure.capture``); it installs itself before the first conftest is imported
(``pytest_load_initial_conftests``), since a conftest often asks ``torch.cuda.is_available()``
at import. What it installs, in this process only:

- a ``torch.overrides.TorchFunctionMode`` that turns a CUDA device (``"cuda"``, ``"cuda:0"``,
  ``torch.device("cuda")``, a device index) into the CPU in every call's ``device=``, in
  ``Tensor.to(...)`` and ``Tensor.cuda()``, and answers ``Tensor.is_cuda`` with True;
- stand-ins for ``torch.cuda``: is_available, device_count, current_device, set_device,
  synchronize, capability, name and properties of the faked card (``matrix/data/redirect.toml``,
  capability from ``MATRIX_REDIRECT_CAPABILITY``, default 9.0), streams, events, memory
  counters, seeds, ``torch.cuda.amp.autocast`` and ``torch.autocast("cuda")`` (turned off);
- operators registered for the CUDA dispatch key registered for the CPU key instead;
- ``triton.runtime.driver.active`` set to a stand-in that reports a cuda target of that
  capability and the CPU as torch device (without it Triton loads its CUDA driver);
- every ``triton.autotune`` pinned to its first configuration (benchmarking configurations in
  the interpreter costs minutes and measures nothing): the kernel's function carries
  ``_matrix_pinned = {"config": "...", "of": N}``, which the capture records on its launches.
"""

from __future__ import annotations

import contextlib
import functools
import time
import types
from typing import Any

import pytest

# Imported now: pytest's bootstrap (matrix.measure.suite.PYTEST_BOOT) forgets the matrix
# package once its plugins are loaded, so nothing of it can be imported later.
from matrix.backends.aot import parse_target
from matrix.measure import test_device

_installed: list[str] = []


def _capability() -> str:
    return test_device.capability()


# ------------------------------------------------------------------------------ torch devices


def _is_cuda(device: Any) -> bool:
    import torch

    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, int) and not isinstance(device, bool)  # an index means a GPU


def _cpu(device: Any) -> Any:
    return "cpu" if _is_cuda(device) else device


def _mode_class() -> type:
    import torch
    from torch.overrides import TorchFunctionMode

    tensor_to, tensor_cuda = torch.Tensor.to, torch.Tensor.cuda
    is_cuda = torch.Tensor.is_cuda  # its getter comes as a new method-wrapper each time

    class CudaToCpu(TorchFunctionMode):
        """Rewrites CUDA devices to the CPU in every torch call it sees."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if getattr(func, "__self__", None) is is_cuda and func.__name__ == "__get__":
                return True
            if func is tensor_cuda:
                kwargs.pop("device", None)
                kwargs.pop("non_blocking", None)
                kwargs.pop("memory_format", None)
                return args[0]
            if "device" in kwargs:
                kwargs["device"] = _cpu(kwargs["device"])
            if func is tensor_to and len(args) > 1:
                args = (args[0], _cpu(args[1]), *args[2:])
            return func(*args, **kwargs)

    return CudaToCpu


# -------------------------------------------------------------------------------- torch.cuda


class _Stream:
    """A CUDA stream that is the CPU's program order."""

    cuda_stream = 0
    device = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait_stream(self, other: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Any:
        event = event or _Event()
        event.record()
        return event

    def query(self) -> bool:
        return True

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class _Event:
    """A CUDA event timed by the host clock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.t = time.perf_counter()

    def record(self, stream: Any = None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _Event) -> float:
        return (end.t - self.t) * 1000.0


class _NoContext(contextlib.ContextDecorator):
    """A context manager and decorator that does nothing (a device or autocast scope)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> _NoContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def _properties(device: Any = None) -> types.SimpleNamespace:
    p = test_device.device_properties(_capability())
    return types.SimpleNamespace(
        name=p["name"],
        major=p["major"],
        minor=p["minor"],
        multi_processor_count=p["multiprocessor_count"],
        total_memory=p["total_memory"],
        shared_memory_per_block_optin=p["max_shared_mem"],
        warp_size=p["warp_size"],
        regs_per_multiprocessor=p["max_num_regs"],
        gcnArchName="",
    )


def _stub_torch_cuda() -> None:
    import torch

    cuda = torch.cuda
    p = test_device.device_properties(_capability())
    cpu_gen = torch.random.default_generator

    def seed(value: int) -> None:
        cpu_gen.manual_seed(int(value))  # the tensors are CPU tensors: their generator

    stubs: dict[str, Any] = {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "_lazy_init": lambda: None,
        "init": lambda: None,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "synchronize": lambda device=None: None,
        "get_device_capability": lambda device=None: (p["major"], p["minor"]),
        "get_device_name": lambda device=None: p["name"],
        "get_device_properties": _properties,
        "get_arch_list": lambda: [f"sm_{p['major']}{p['minor']}"],
        "is_bf16_supported": lambda *a, **k: True,
        "empty_cache": lambda: None,
        "ipc_collect": lambda: None,
        "manual_seed": seed,
        "manual_seed_all": seed,
        "seed": lambda: None,
        "seed_all": lambda: None,
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "max_memory_reserved": lambda device=None: 0,
        "reset_peak_memory_stats": lambda device=None: None,
        "reset_max_memory_allocated": lambda device=None: None,
        "mem_get_info": lambda device=None: (p["total_memory"], p["total_memory"]),
        "Stream": _Stream,
        "Event": _Event,
        "stream": lambda s=None: _NoContext(),
        "current_stream": lambda device=None: _Stream(),
        "default_stream": lambda device=None: _Stream(),
        "device": _NoContext,
        "device_of": _NoContext,
    }
    for name, value in stubs.items():
        setattr(cuda, name, value)
    amp = getattr(cuda, "amp", None)
    if amp is not None:
        amp.autocast = _NoContext
    _installed.append("torch.cuda")


def _redirect_autocast() -> None:
    """``torch.autocast("cuda", ...)`` (and ``torch.amp.autocast``) is turned off: CPU autocast
    casts other operators than CUDA's, so an emulation would be another program."""
    import torch

    real: Any = torch.amp.autocast_mode.autocast  # patched below, as a value

    class autocast(real):
        def __init__(self, device_type: str, *args: Any, **kwargs: Any) -> None:
            if device_type == "cuda":
                device_type, kwargs["enabled"] = "cpu", False
                args = ()
            super().__init__(device_type, *args, **kwargs)

    setattr(torch, "autocast", autocast)  # noqa: B010 (torch's own names, replaced on purpose)
    setattr(torch.amp, "autocast", autocast)  # noqa: B010
    _installed.append("autocast")


def _redirect_registrations() -> None:
    """An operator implemented for the CUDA dispatch key is registered for the CPU key."""
    import torch

    lib = torch.library.Library
    original = lib.impl

    @functools.wraps(original)
    def impl(self: Any, op_name: Any, fn: Any, dispatch_key: str = "", *args: Any, **kw: Any):
        if dispatch_key == "CUDA":
            dispatch_key = "CPU"
        return original(self, op_name, fn, dispatch_key, *args, **kw)

    setattr(lib, "impl", impl)  # noqa: B010 (torch's own method, replaced on purpose)
    _installed.append("torch.library CUDA key")


# ---------------------------------------------------------------------------------- Triton


class StandInDriver:
    """``triton.runtime.driver.active`` for a faked CUDA card whose torch device is the CPU."""

    def __init__(self, capability: str) -> None:
        self.props = test_device.device_properties(capability)
        props = {
            k: self.props[k]
            for k in (
                "max_shared_mem",
                "max_num_regs",
                "multiprocessor_count",
                "sm_clock_rate",
                "mem_clock_rate",
                "mem_bus_width",
            )
        }
        props["warpSize"] = self.props["warp_size"]
        self.utils = types.SimpleNamespace(
            get_device_properties=lambda device=0: dict(props),
            get_current_device=lambda: 0,
            set_current_device=lambda device: None,
        )
        self.backend = "cuda"

    @staticmethod
    def is_active() -> bool:
        return True

    def get_current_target(self) -> Any:

        return parse_target(f"cuda:{self.props['major']}{self.props['minor']}")

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def get_device_interface(self) -> Any:
        import torch

        return torch.cuda

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: Any) -> None:
        pass

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        return self.props["major"], self.props["minor"]

    def get_benchmarker(self) -> Any:
        from triton.testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self) -> Any:
        import torch

        return torch.empty(1024, dtype=torch.int)

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()

    def map_python_to_cpp_type(self, ty: str) -> str:
        return ty


def _stand_in_driver() -> None:
    from triton.runtime import driver as config  # the DriverConfig (the name hides the module)

    stand_in = StandInDriver(_capability())
    if hasattr(config, "set_active"):
        config.set_active(stand_in)
        if hasattr(config, "_default"):  # reset_active() must not load the real driver either
            config._default = stand_in
    else:
        config.active = stand_in
    _installed.append("triton driver stand-in")


def _underlying_function(fn: Any) -> Any:
    """The Python function under an autotuner, heuristics and ``@triton.jit`` wrappers."""
    for _ in range(8):
        inner = getattr(fn, "fn", None)
        if inner is None:
            break
        fn = inner
    return fn


def _pin_autotune() -> None:
    from triton.runtime import autotuner

    cls = autotuner.Autotuner
    original = cls.__init__
    if getattr(original, "_matrix_pinned", False):
        return

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        configs = list(getattr(self, "configs", []) or [])
        if len(configs) > 1:
            self.configs = configs[:1]
        target = _underlying_function(self)
        # A callable that takes no attributes: its launches say nothing of the pin.
        with contextlib.suppress(AttributeError, TypeError):
            target._matrix_pinned = {
                "config": str(configs[0]) if configs else "",
                "of": len(configs),
            }

    init._matrix_pinned = True  # type: ignore[attr-defined]
    cls.__init__ = init
    _installed.append("autotune pinned to its first config")


# A kernel the interpreter cannot run (an API the release removed, libdevice, inline asm) ends
# its test at its first launch, and the launches after it are never seen. Under the redirect
# the error is kept, the launch returns with its outputs untouched and the test goes on, so
# that its later launches are captured too; the test then fails with the kept error (its
# outcome and class are the kernel's, whatever the untouched outputs did after).
_kernel_errors: list[BaseException] = []


def _continue_past_kernel_errors() -> None:
    from triton.runtime import interpreter

    executor = getattr(interpreter, "GridExecutor", None)
    if executor is None or getattr(executor.__call__, "_matrix_continue", False):
        return
    original = executor.__call__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        except Exception as e:  # the kernel's error, kept for its test (comment above)
            _kernel_errors.append(e)
            return None

    call._matrix_continue = True  # type: ignore[attr-defined]
    executor.__call__ = call
    _installed.append("a kernel's interpreter error kept, its test continued to later launches")


# ------------------------------------------------------------------------------------ install


def install() -> list[str]:
    """Install everything (module docstring); return what was installed. Idempotent."""
    if _installed:
        return list(_installed)

    mode = _mode_class()()
    mode.__enter__()  # for the whole session: never left
    _installed.append("CUDA-to-CPU TorchFunctionMode")
    _stub_torch_cuda()
    _redirect_autocast()
    _redirect_registrations()
    _stand_in_driver()
    _pin_autotune()
    _continue_past_kernel_errors()
    return list(_installed)


def pytest_load_initial_conftests(early_config: Any, parser: Any, args: Any) -> None:
    installed = install()
    early_config._matrix_redirect = installed


def _take_kernel_error() -> BaseException | None:
    first = _kernel_errors[0] if _kernel_errors else None
    _kernel_errors.clear()
    return first


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    """The test fails with its first kernel's error (``_kernel_errors``), whatever it did after."""
    _kernel_errors.clear()
    try:
        result = yield
    except Exception:
        kept = _take_kernel_error()
        if kept is not None:
            raise kept from None
        raise
    kept = _take_kernel_error()
    if kept is not None:
        raise kept
    return result


def pytest_configure(config: Any) -> None:
    install()  # where the early hook did not run (the plugin named in a conftest)


def pytest_report_header(config: Any) -> str:
    return f"matrix redirect (cuda-on-cpu, capability {_capability()}): " + ", ".join(_installed)
