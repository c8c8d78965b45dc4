"""Release fields of acknowledgements are ranges of versions, not globs over spellings
(issue 43: ``fnmatch`` let ``3.1*`` take ``3.10.0``)."""

from __future__ import annotations

import pytest

from matrix.core import DataFileError, Release
from matrix.gate.config import AcceptedChange, load_accepted
from matrix.gate.timing import load_slowdowns
from matrix.release_range import ReleaseRangeError, in_range, parse_range


def R(text: str) -> Release:
    return Release.parse(text)


@pytest.mark.parametrize(
    "pattern, inside, outside",
    [
        ("*", ["3.0.0", "3.10.0", "3.9.0rc1"], []),
        ("3.1.*", ["3.1.0", "3.1.9"], ["3.10.0", "3.11.1", "3.0.0"]),
        ("3.8.*", ["3.8", "3.8.0", "3.8.1rc1"], ["3.80.0", "3.9.0"]),
        ("3.*", ["3.0.0", "3.10.0"], ["4.0.0", "30.0.0"]),
        ("3.9", ["3.9.0"], ["3.9.1", "3.90.0", "3.9.0rc1"]),
        ("3.9.0", ["3.9"], ["3.9.1"]),
        (">=3.4,<3.8", ["3.4.0", "3.7.9", "3.7.1rc1"], ["3.8.0", "3.10.0", "3.3.0"]),
        ("~=3.6.0", ["3.6.0", "3.6.4"], ["3.7.0"]),
    ],
)
def test_a_pattern_takes_exactly_its_range(pattern, inside, outside) -> None:
    assert [v for v in inside if not in_range(R(v), pattern)] == []
    assert [v for v in outside if in_range(R(v), pattern)] == []


@pytest.mark.parametrize("pattern", ["3.1*", "3.?", "[3].8", "3.*.1", "banana", "", "  ", ">=3.1*"])
def test_a_glob_over_the_spelling_is_refused_naming_it(pattern) -> None:
    with pytest.raises(ReleaseRangeError, match=r"expected a release X\.Y\.Z"):
        parse_range(pattern)


def test_a_release_is_named_in_its_one_spelling() -> None:
    assert parse_range("3.9").text == "3.9.0" and parse_range(" 3.8.* ").text == "3.8.*"


def test_an_acknowledgement_for_3_1_star_does_not_accept_3_10() -> None:
    change = AcceptedChange("p", "*", "a", "b", "why", baseline="3.0.*", candidate="3.1.*")
    assert change.for_upgrade(R("3.0.0"), R("3.1.0"))
    assert not change.for_upgrade(R("3.0.0"), R("3.10.0"))


def test_an_accepted_changes_file_with_a_spelling_glob_is_refused(tmp_path) -> None:
    path = tmp_path / "accepted.toml"
    path.write_text('[[change]]\nprobe = "p"\nfrom = "a"\nto = "b"\nreason = "r"\n'
                    'candidate = "3.1*"\n')  # fmt: skip
    with pytest.raises(DataFileError, match=r"change\[0\]\.candidate.*3\.1\*"):
        load_accepted(path)
    path.write_text(path.read_text().replace('"3.1*"', '">=3.9,<3.10"'))
    (change,) = load_accepted(path)
    assert change.for_upgrade(R("3.8.0"), R("3.9.0")) and not change.for_upgrade(
        R("3.8.0"), R("3.1")
    )


def test_a_slowdown_acknowledgement_reads_its_releases_the_same_way(tmp_path) -> None:
    path = tmp_path / "accepted.toml"
    path.write_text('[[slowdown]]\ncase = "*"\nreason = "r"\nbaseline = "3.1*"\n')
    with pytest.raises(DataFileError, match=r"slowdown\[0\]\.baseline"):
        load_slowdowns(path)
    path.write_text('[[slowdown]]\ncase = "*"\nreason = "r"\nbaseline = "3.1.*"\n')
    (ack,) = load_slowdowns(path)
    assert ack.matches("c", "splitk", "h200", R("3.1.0"), R("3.2.0"), 1.0)
    assert not ack.matches("c", "splitk", "h200", R("3.10.0"), R("3.11.0"), 1.0)
