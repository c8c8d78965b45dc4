"""Plain Python helpers that ``python_in_kernel`` calls from kernels through a module attribute
(``helpers.host_half(BLOCK)``), as libraries call their ``utils`` module: the code generator
reaches them by attribute, not by a global name, so a release may treat them differently."""


def host_half(n):
    return n // 2
