#!/usr/bin/env bash
# Builds the release binary and prints the startup benchmark (DESIGN.md §9).
# Usage: bench/run.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release -q -p lurkbot -p lurkbot-bench
"$CARGO_TARGET_DIR/release/lurkbot-bench" startup --bin "$CARGO_TARGET_DIR/release/lurkbot" "$@"
