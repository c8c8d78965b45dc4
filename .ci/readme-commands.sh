#!/usr/bin/env bash
# The README's gate and scanner commands on a clean Python: a fresh venv gets only what the
# README's "Gate your own kernels in CI" section says to `pip install`, then runs
# `python -m matrix scan` and `python -m matrix gate` on the committed results, scanning this
# project's kernels/. Either may find hazards (exit 1, documented); exit 2 (undecidable, or a
# missing dependency) fails CI. This machine's own Python has jsonschema, which would hide a
# missing install step (issue 40): hence the venv.
#
#     bash .ci/readme-commands.sh SCRATCH    # .ci/run passes its scratch folder
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${1:?usage: .ci/readme-commands.sh SCRATCH_FOLDER}
venv="$scratch/readme-venv"
started=$(date +%s)

python3 -m venv "$venv"
# The section's `pip install` lines, as written (a README edit changes what CI installs).
mapfile -t setup < <(awk '/^## /{inside = ($0 == "## Gate your own kernels in CI")} \
    inside && /^pip install /' README.md)
if [ "${#setup[@]}" -eq 0 ]; then
    echo "ci: README.md's 'Gate your own kernels in CI' section has no 'pip install' line" >&2
    exit 1
fi
for line in "${setup[@]}"; do
    command=${line%%#*}  # without the line's comment
    echo "ci: in a fresh venv: $command"
    # pip's find-links warnings on this machine are noise; a failed install stops the run.
    (source "$venv/bin/activate" && eval "$command --disable-pip-version-check -q") \
        >"$scratch/readme-pip.log" 2>&1 || { cat "$scratch/readme-pip.log"; exit 1; }
done

# rc 0 or 1 is a verdict; anything else (2: undecidable or a dependency missing) fails.
check() {
    local name=$1; shift
    local rc=0
    "$venv/bin/python" "$@" >"$scratch/$name.out" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
        echo "ci: the README's $name command exited $rc on a clean Python: $*" >&2
        tail -c 2000 "$scratch/$name.out" >&2
        exit 1
    fi
    echo "ci: README $name on a clean Python: exit $rc"
}
check scan -m matrix scan kernels --results reports/raw --candidate 3.9.0
check gate -m matrix gate --baseline 3.8.0 --candidate 3.9.0 --results reports/raw \
    --scan kernels --out "$scratch/gate"
test -s "$scratch/gate/gate.md" || { echo "ci: the gate wrote no $scratch/gate/gate.md" >&2; exit 1; }
# The install gives the one command its console script too (pyproject's [project.scripts]).
"$venv/bin/triton-compat" --help >/dev/null || { echo "ci: no working triton-compat script" >&2; exit 1; }
echo "ci: README commands on a clean Python in $(( $(date +%s) - started )) s"
