"""Which releases an acknowledgement's ``baseline``/``candidate`` take: a range of versions,
never a glob over the spelling (issue 43: ``fnmatch`` let ``3.1*`` take ``3.10.0``).

The one owner of that match; the gate's accepted changes and GPU slowdown acknowledgements
read their release fields through ``parse_range`` (when the file is loaded: a pattern that is
none of these is refused there, naming the file and key) and ``in_range`` (when matching):

- ``*``: every release;
- a release, ``3.9`` or ``3.9.0``: that release (``3.9`` is ``3.9.0``; its pre-releases are
  other releases);
- a prefix ending in ``.*``, ``3.8.*`` or ``3.*``: every release that starts with those
  components (``3.8.*`` takes ``3.8.0`` and ``3.8.1rc1``, never ``3.80.0``);
- a version specifier (PEP 440, packaging's ``SpecifierSet``), ``>=3.4,<3.8``: those releases,
  pre-releases included.

``3.1*``, ``3.?``, ``[3].8`` or ``banana`` take nothing a reader could guess: refused.

>>> from matrix.core import Release
>>> in_range(Release.parse("3.10.0"), "3.1.*"), in_range(Release.parse("3.1.2"), "3.1.*")
(False, True)
>>> in_range(Release.parse("3.6.0"), ">=3.4,<3.8"), in_range(Release.parse("3.9"), "3.9.0")
(True, True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from matrix.core import Release, ReleaseError

EXPECTED = "a release X.Y.Z (3.9.0), a prefix ending in .* (3.8.*), a specifier (>=3.4,<3.8) or *"
# components, then ".*": what "==X.Y.*" of PEP 440 takes; nothing else may hold a "*"
_PREFIX = re.compile(r"\d+(\.\d+)*\.\*")


class ReleaseRangeError(ValueError):
    """A pattern that is not a range of releases; the message names it and what was expected."""


@dataclass(frozen=True)
class ReleaseRange:
    text: str  # as written (reports name it so)
    spec: SpecifierSet | None  # None: every release

    def __contains__(self, release: Release) -> bool:
        return self.spec is None or self.spec.contains(release.version, prereleases=True)


@lru_cache(maxsize=256)
def parse_range(text: str) -> ReleaseRange:
    """``text`` as a range of releases, or ``ReleaseRangeError`` naming it and the forms
    expected (see the module's docstring)."""
    written = text.strip()
    if not written:  # SpecifierSet("") would take every release
        raise ReleaseRangeError(f"{text!r} is no range of releases: expected {EXPECTED}")
    if written == "*":
        return ReleaseRange(written, None)
    if _PREFIX.fullmatch(written):
        return ReleaseRange(written, SpecifierSet(f"=={written}"))
    if written[:1].isdigit() and not any(c in written for c in "*?[]"):
        try:
            release = Release.parse(written)  # named in its one spelling: 3.9 is 3.9.0
            return ReleaseRange(str(release), SpecifierSet(f"=={release}"))
        except ReleaseError:
            pass
    elif written[:1] in "<>=!~" and "*" not in written.replace(".*", ""):
        try:
            return ReleaseRange(written, SpecifierSet(written))
        except InvalidSpecifier:
            pass
    raise ReleaseRangeError(f"{text!r} is no range of releases: expected {EXPECTED}")


def in_range(release: Release, pattern: str) -> bool:
    """Whether ``release`` lies in ``pattern`` (a form ``parse_range`` reads)."""
    return release in parse_range(pattern)
