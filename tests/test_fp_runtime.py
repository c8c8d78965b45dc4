"""The fingerprint's runtime_semantics group (matrix/probes/fp/fp_runtime.py): each rule in
a forked child; a rule's own failure, a dead child and a missing hook are their own statuses."""

from __future__ import annotations

import os

import pytest

from matrix.probes.fp import fp_runtime as R


def test_statuses_of_a_failing_a_dying_and_a_missing_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    def raises() -> str:
        raise RuntimeError("boom")

    def dies() -> str:
        os._exit(3)

    monkeypatch.setitem(R.RULES, "t.raises", ("triton.set_allocator", raises, "r"))
    monkeypatch.setitem(R.RULES, "t.dies", ("triton.set_allocator", dies, "d"))
    monkeypatch.setitem(R.RULES, "t.missing", ("triton.no_such_hook", raises, "m"))
    (row,) = R.runtime_semantics_rows(["t.raises", "t.dies", "t.missing"])
    assert row.data["cells"] == {"t.raises": "error", "t.dies": "crashed", "t.missing": "absent"}
    assert row.data["details"]["t.raises"] == "RuntimeError: boom"
    assert row.data["details"]["t.dies"] == "exit code 3"
    assert row.data["details"]["t.missing"] == "no triton.no_such_hook"


def test_a_rule_does_not_leak_into_the_parent() -> None:
    before = R._current_allocator()
    status, _ = R.run_rule("allocator.outside_context")
    assert status in ("seen", "not-seen")
    assert R._current_allocator() is before  # the child set it, not this process


def test_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no\.such"):
        R.runtime_semantics_rows(["no.such"])


def test_installed_release_allocator_and_knobs() -> None:
    import contextvars

    import triton.runtime._allocation as allocation

    (row,) = R.runtime_semantics_rows(["allocator.other_thread", "knobs.scope_restores"])
    # Where the release keeps the allocator in a ContextVar, another thread does not see it.
    per_context = isinstance(allocation._allocator, contextvars.ContextVar)
    expected = "not-seen" if per_context else "seen"
    assert row.data["cells"]["allocator.other_thread"] == expected
    assert row.data["cells"]["knobs.scope_restores"] in ("restored", "kept", "absent")
