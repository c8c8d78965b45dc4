#!/usr/bin/env bash
# Session 15: whichever card comes. An H100 runs session 14's tune-forms.sh as written (seed:
# the H200's entries under the H100's name); an H200 runs the same re-tune of the fp32-ieee
# nk_t cases with the nmajor form, seeded from the committed table (which holds the H200's
# own entries), then the same full bench and summary.
set -uo pipefail
cd "$(dirname "$0")/../../.."
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
case "$name" in
  *H100*) exec bash notes/gpu-logs/session14/tune-forms.sh ;;
esac
sed 's#^KERNELS_SPLITK_TABLE=$d/h100-seed.toml#KERNELS_SPLITK_TABLE=kernels/data/splitk_tuned.toml#' \
  notes/gpu-logs/session14/tune-forms.sh > /tmp/tune-forms-h200.sh
grep -q "KERNELS_SPLITK_TABLE=kernels/data/splitk_tuned.toml" /tmp/tune-forms-h200.sh || { echo "seed swap failed"; exit 2; }
cp /tmp/tune-forms-h200.sh notes/gpu-logs/session14/tune-forms-h200.sh
exec bash notes/gpu-logs/session14/tune-forms-h200.sh
