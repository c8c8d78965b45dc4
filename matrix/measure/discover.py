"""``--discover``: Triton releases on the package index that the matrix data file lacks.

Reads the package index's JSON listing (the simple API, PEP 691/700: ``Accept:
application/vnd.pypi.simple.v1+json`` gives ``versions``), so it needs neither pip nor uv:
nox's uv environments have no pip. The index is ``UV_INDEX_URL``/``PIP_INDEX_URL`` where set,
else PyPI. A transient failure is retried a bounded number of times; then a ``DiscoverError``
says what failed. Keeps final releases at or above the data file's ``discover_from``.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

from matrix.core import Release, ReleaseError
from matrix.measure.cells import MatrixConfig

DEFAULT_INDEX = "https://pypi.org/simple"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
ATTEMPTS = 3


class DiscoverError(RuntimeError):
    """The package index could not be asked; the message names the URL and what happened."""


def index_url() -> str:
    return (
        os.environ.get("UV_INDEX_URL") or os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX
    ).rstrip("/")


def parse_simple_json(doc: object, where: str) -> list[str]:
    """The versions of a PEP 700 project page, sorted; a page without them is a DiscoverError.

    >>> parse_simple_json({"versions": ["3.9.0", "3.10.0", "2.0.0.dev1", "banana"]}, "x")
    ['2.0.0.dev1', '3.9.0', '3.10.0']
    """
    versions = doc.get("versions") if isinstance(doc, dict) else None
    if not isinstance(versions, list):
        raise DiscoverError(f"{where}: expected a JSON project page with 'versions' (PEP 700)")
    found = []
    for v in versions:
        try:
            found.append(Release.parse(v))
        except ReleaseError:
            continue  # not PEP 440: nothing the matrix could install
    return [str(v) for v in sorted(found)]


def index_versions(package: str = "triton") -> list[str]:
    """Every version of ``package`` the index lists, oldest first."""
    url = f"{index_url()}/{package}/"
    request = urllib.request.Request(url, headers={"Accept": SIMPLE_JSON})
    last = ""
    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(2.0 * attempt)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return parse_simple_json(json.load(response), url)
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code} {e.reason}"
            if e.code < 500 and e.code != 429:
                break  # not transient
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            last = str(getattr(e, "reason", e))
        except json.JSONDecodeError as e:
            raise DiscoverError(f"{url}: not JSON ({e})") from None
    raise DiscoverError(f"{url}: {last} (tried {attempt + 1} times)")


def new_releases(available: list[str], config: MatrixConfig) -> list[Release]:
    """Final releases >= discover_from that the data file does not list."""
    found = [Release.parse(v, "pip index versions") for v in available]
    return [
        r
        for r in found
        if r >= config.discover_from and not r.version.is_prerelease and r not in config.releases
    ]


def discover_releases(config: MatrixConfig) -> list[Release]:
    return new_releases(index_versions(), config)
