"""Triton matmul kernels: split-K and tiled, with the tile loader ``compat`` chose at import.

>>> from kernels import splitk_matmul, tiled_matmul  # doctest: +SKIP
>>> c = splitk_matmul(a, b, split_k=None, out_dtype=None, precision="ieee")  # doctest: +SKIP
"""

from kernels.checks import DeviceError
from kernels.splitk import plan_splitk, splitk_matmul
from kernels.tiled import tiled_matmul

__all__ = ["DeviceError", "plan_splitk", "splitk_matmul", "tiled_matmul"]
