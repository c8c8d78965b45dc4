"""Benchmark split-K (atomic, deterministic), tiled and cuBLAS on the same inputs, on a GPU.

    python -m kernels.bench --out reports/bench/h200.json              # time the suite
    python -m kernels.bench --tune kernels/data/splitk_tuned.toml ...  # sweep configs first

One module per job, in the manner of ``triton.testing``'s declarative ``Benchmark``: the suite
says *what* is compared (``suite``: the cases; ``impls``: the lines, a registry of named
implementations), and the rest says *how*, identically for every line:

* ``checks``: fresh random inputs, a poisoned (NaN) output, a float64 reference and the
  tolerance of ``kernels.numerics`` (the one owner of kernel numerics);
* ``timing``: CUDA-graph replay over input copies that do not fit in L2 (the GPU time), the
  median of ``triton.testing.do_bench`` (eager: L2 flushed, host overhead included where it
  exceeds the flush), host time per call (back-to-back calls, no sync), and the two ceilings;
* ``sweep``: ``--tune``'s candidates, parallel precompile, and the tuned TOML table;
* ``output``: the records, the summary against the goals under both timers, the table printed;
* ``cli``: the command line (``python -m kernels.bench``);
* ``repeat``: deterministic mode's bitwise stability on a GPU (``python -m kernels.bench.repeat``);
* ``loader_ab``: one plan timed with both loaders.

Importing this package needs no torch; the GPU parts import it when they run.
"""
