"""The cache one matrix run's cells share (matrix.probes.support.run_cache): only inside a run,
gone after it, never read half-written, and the fingerprint's values semantics come from it
with the fp row saying so."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from matrix.measure.orchestrate import run_cache_folder
from matrix.probes.fp import probe as fp
from matrix.probes.fp import semantics as sem
from matrix.probes.support import run_cache
from matrix.probes.support.base import Context


def test_without_a_run_nothing_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(run_cache.ENV, raising=False)
    assert run_cache.store("kind", "k", 1) is False
    assert run_cache.load("kind", "k") is None


def test_a_run_folder_is_named_to_children_and_removed(tmp_path: Path) -> None:
    before = os.environ.get(run_cache.ENV)
    with run_cache_folder(tmp_path / "envs") as folder:
        assert os.environ[run_cache.ENV] == str(folder) and folder.is_dir()
        assert run_cache.store("kind", run_cache.key("a", 1), {"x": 1})
        assert run_cache.load("kind", run_cache.key("a", 1)) == {"x": 1}
        assert run_cache.load("kind", run_cache.key("a", 2)) is None
    assert not folder.exists()
    assert os.environ.get(run_cache.ENV) == before


def test_the_folder_goes_when_the_run_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), run_cache_folder(tmp_path) as folder:
        run_cache.store("kind", "k", 1)
        raise RuntimeError("a cell's worker died")
    assert not folder.exists()


def test_an_unreadable_entry_is_computed_again(tmp_path: Path) -> None:
    with run_cache_folder(tmp_path) as folder:
        (folder / "kind").mkdir()
        (folder / "kind" / "k.pickle").write_bytes(b"\x80\x04 truncated")
        assert run_cache.load("kind", "k") is None


def test_the_key_covers_the_sources_and_the_triton_build() -> None:
    digest = run_cache.sources_digest()
    assert len(digest) == 64 and digest == run_cache.sources_digest()
    assert run_cache.key("3.6.0", "cuda:90", [1]) != run_cache.key("3.6.0", "cuda:80", [1])
    assert "libtriton" in run_cache.triton_identity()


def test_values_semantics_are_shared_and_the_row_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = sem.Semantics("cuda:90", "ttir", {0: ["arith.addf"]}, {}, {})
    seen: list[str] = []

    def load(kind: str, digest: str):
        seen.append(kind)
        return shared

    monkeypatch.setattr(run_cache, "load", load)
    got = fp.values_semantics(Context("interpret", None), [])
    assert got is shared and seen == ["fp-values-semantics"]
    assert fp.SEMANTICS_SOURCE.startswith("shared")
