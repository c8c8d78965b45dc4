"""``python -m matrix.timings``: the probe table adds up to the runners' time."""

from __future__ import annotations

from matrix.report.timings import probes_table
from matrix.results import Result, Run


def _run(run_id: str, seconds: float, results: list[Result]) -> Run:
    return Run(run_id, env={"triton": "3.9.0"}, results=results, extra={"seconds": seconds})


def test_probe_table_ranks_tasks_counts_rows_under_them_and_shows_the_rest():
    runs = [
        _run("a", 10.0, [Result("fp", "interpret", None, "observed", seconds=6.0),
                         Result("fp.binary.add", "interpret", None, "observed", seconds=6.0),
                         Result("splitk", "aot", "cuda:80", "pass", seconds=3.0)]),
        _run("b", 5.0, [Result("fp", "interpret", None, "observed", seconds=2.0)]),
    ]  # fmt: skip
    lines = probes_table(runs, top=1).splitlines()
    assert lines[2] == "| fp | interpret | 2 | 8.0 | 4.0 | 53% |"  # the row's 6 s not again
    assert lines[3] == "| 1 others | | | 3.0 | | 20% |"
    outside = "| outside probes (start-up, raw files, a team suite) | | 2 | 4.0 | 2.0 | 27% |"
    assert lines[4] == outside
    assert lines[5] == "| all cells | | 2 | 15.0 | | 100% |"
    assert probes_table([]).splitlines()[-1] == "| all cells | | 0 | 0.0 | | - |"
