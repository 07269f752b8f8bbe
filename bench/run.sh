#!/usr/bin/env bash
# Builds the release binary and runs a benchmark (DESIGN.md §9).
# Usage: bench/run.sh [startup|archive] [--runs N] [--mib N]
#   startup  binary size, --version and exec help against the budgets (default)
#   archive  zip/tar throughput against Info-ZIP zip/unzip and GNU tar, as ratios, and peak RSS
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release -q -p lurkbot -p lurkbot-bench
"$CARGO_TARGET_DIR/release/lurkbot-bench" "$@" --bin "$CARGO_TARGET_DIR/release/lurkbot"
