"""matrix.report.workers: a build's independent work in forked processes, results in order."""

from __future__ import annotations

import functools
import os

import pytest

from matrix.report import workers


def test_each_calls_result_comes_back_in_order() -> None:
    calls = [functools.partial(pow, 3, i) for i in range(9)]
    assert workers.run_all(calls) == [3**i for i in range(9)]


def test_the_calls_run_in_other_processes_where_there_are_cpus() -> None:
    pids = workers.run_all([os.getpid] * 6)
    if (os.cpu_count() or 1) >= 2:
        assert os.getpid() not in pids
    else:
        assert set(pids) == {os.getpid()}


def test_a_calls_exception_is_raised_here() -> None:
    def fails() -> None:
        raise ValueError("the fifth call failed")

    with pytest.raises(ValueError, match="the fifth call failed"):
        workers.run_all([lambda: 1] * 4 + [fails])


def test_few_calls_run_in_this_process() -> None:
    assert workers.run_all([os.getpid] * (workers.MIN_CALLS - 1)) == [os.getpid()] * (
        workers.MIN_CALLS - 1
    )
