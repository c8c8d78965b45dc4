"""The matrix machinery: probes, backends, runner, results, report and gate.

Nothing here is imported by ``compat`` or ``kernels``.
"""
