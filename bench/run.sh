#!/usr/bin/env bash
# Builds the release binary and runs a benchmark (ARCHITECTURE.md §9).
# Usage: bench/run.sh [startup|archive|rss|agent|journal|observability|gateway|gateways|turn|memory|soak|users|peers|media|browser|speech] [--runs N] [--cycles N] [--mib N] [--idle-secs N]
#   startup  binary size, --version and exec help against the budgets (default)
#   archive  zip/tar (gz, bz2, plain) throughput against Info-ZIP zip/unzip and GNU tar, as ratios, and peak RSS
#   rss      feed parse and fetch+parse against Python feedparser (installed here in a venv)
#   media    web_fetch's article extraction on a 2 MiB page; a 24-megapixel JPEG prepared for the
#            model beside Pillow doing the same resize (time, peak RSS)
#   browser  the browser tool's Chromium: launch → first snapshot of a simple page, a snapshot of
#            a large page (time, size), beside chromium --dump-dom in the same run
#   speech   tts of a 500-character reply (espeak-ng, OGG/Opus encoded in-process) beside
#            espeak-ng | ffmpeg libopus in the same run (time, peak RSS)
#   agent    agent loop overhead per tool round trip, peak RSS of a 200-turn chat session
#   journal  what the turn journal adds to one turn (p50/p99 with and without it, same run;
#            on the embedded store and on PostgreSQL)
#   observability  what recording metrics and exporting traces (OTLP/HTTP to a loopback sink)
#            add to one turn (p50/p99, same run), the OTLP bytes per turn, one scrape's cost
#   gateways one and three gateways on PostgreSQL, each on its own CPU share (a cgroup; root):
#            turns/s and their ratio, PostgreSQL's CPU a turn; with the database 1 ms away (a
#            delaying proxy) the failover and a turn's cost and round trips; idle RSS
#   gateway  start to /health, idle RSS after 60 s (anonymous, the binary's pages, libraries; PSS)
#            once scripts/hot-symbols.sh --check passes, 1,000 WebSocket clients doing health
#   turn     the gateway's own CPU per API turn (one scripted model call, no tool call) over 200
#            sequential turns (median of three rounds), on the embedded store and on PostgreSQL; turns/s per core
#   memory   the memory index at 50,000 chunks: build time, memory_search p50/p99 keyword and hybrid
#   soak     10,000 API turns and 10,000 WebSocket cycles with cron, heartbeat and an IRC flood:
#            RSS after the run within 8 MiB of RSS after 100 turns, retained structures bounded
#   users    20 users on one gateway ([users] enabled): one user's 4,000 API turns, the others'
#            WebSocket cycles, a light user's health p50/p99 idle and under that load; RSS bounded
#   peers    LurkBot beside OpenClaw, Hermes Agent and nanobot (installed into a scratch folder,
#            $LURKBOT_PEERS_DIR or ~/.cache/lurkbot-bench/peers): install size, --version, gateway
#            start to health, idle RSS, one tool-call turn; writes the table into README.md
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
extra=()
if [ "${1:-}" = rss ] || [ "${1:-}" = media ]; then
  venv="${LURKBOT_BENCH_VENV:-$HOME/.cache/lurkbot-bench/venv}"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import feedparser, PIL' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q feedparser pillow
  fi
  extra=(--python "$venv/bin/python")
fi
if [ "${1:-}" = peers ]; then
  peers="${LURKBOT_PEERS_DIR:-$HOME/.cache/lurkbot-bench/peers}"
  mkdir -p "$peers"
  scripts/openclaw-cli.sh "$peers/openclaw"
  # Hermes Agent's gateway needs aiohttp, which only its `messaging` extra installs.
  for pkg in 'hermes-agent[messaging]==0.19.0' nanobot-ai==0.3.5; do
    name="${pkg%%[-[]*}"
    if [ ! -f "$peers/$name/.complete-$pkg" ]; then
      echo "installing $pkg into $peers/$name"
      rm -rf "${peers:?}/$name"
      python3 -m venv "$peers/$name"
      "$peers/$name/bin/pip" install -q "$pkg"
      touch "$peers/$name/.complete-$pkg"
    fi
  done
  extra=(--peers "$peers" --readme README.md)
fi
if [ "${1:-}" = gateway ] && [ -z "${LURKBOT_BIN:-}" ]; then
  # The idle figure depends on the recorded layout of the code: a stale one fails here, not
  # silently in the figure (a build with symbols of its own: minutes).
  scripts/hot-symbols.sh --check
fi
if [ "${1:-}" = speech ]; then
  # The binary with its symbols (a build of its own: minutes), to measure what the Opus encoder
  # adds to it.
  CARGO_PROFILE_RELEASE_STRIP=none cargo build --release -q -p lurkbot --target-dir "$CARGO_TARGET_DIR/symbols"
  extra=(--symbols "$CARGO_TARGET_DIR/symbols/release/lurkbot")
fi
# Two builds, the measured binary last: built together, cargo would unify features and the
# bench's scripted model server (lurkbot-llm's `fake`) would end up in the binary it measures.
# LURKBOT_BIN measures a binary already built (a release build takes minutes) instead.
cargo build --release -q -p lurkbot-bench
bin="${LURKBOT_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release -q -p lurkbot
  bin="$CARGO_TARGET_DIR/release/lurkbot"
fi
"$CARGO_TARGET_DIR/release/lurkbot-bench" "$@" --bin "$bin" "${extra[@]}"
