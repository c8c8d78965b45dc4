"""The matrix machinery: probes, backends, runner, results, report and gate.\n\nNothing here is imported by ``compat`` or ``kernels``."""
