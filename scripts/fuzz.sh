#!/usr/bin/env bash
# Runs every cargo-fuzz target under fuzz/ for SECONDS each (default 600), two at a time, on
# the stable toolchain (no sanitizer: `-s none`). Seeds: fuzz/corpus/<target>/ (made here from
# the test feeds and the classic zip/tar tools when missing). Crashes land in fuzz/artifacts/.
# Needs `cargo install cargo-fuzz`. Usage: scripts/fuzz.sh [SECONDS] [TARGET…]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-600}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(command_parser zip_reader tar_reader feed_parser ical_reader)

seed() {
  mkdir -p corpus/command_parser corpus/zip_reader corpus/tar_reader corpus/feed_parser corpus/ical_reader
  cp -n ../crates/lurkbot-term/tests/feeds/* corpus/feed_parser/ 2>/dev/null || true
  [ -n "$(ls corpus/zip_reader)" ] && [ -n "$(ls corpus/tar_reader)" ] && return
  local d; d="$(mktemp -d)"
  mkdir -p "$d/src/sub"; echo hello >"$d/src/a.txt"; echo world >"$d/src/sub/b.txt"; ln -s a.txt "$d/src/link"
  local here; here="$(pwd)"
  (cd "$d" && zip -qry "$here/corpus/zip_reader/seed.zip" src && tar cf "$here/corpus/tar_reader/seed.tar" src \
    && tar czf "$here/corpus/tar_reader/seed.tgz" src && tar cJf "$here/corpus/tar_reader/seed.txz" src)
  rm -rf "$d"
}
seed
cargo fuzz build -s none -O
mkdir -p logs
run() {
  local t="$1"
  cargo fuzz run -s none -O "$t" "corpus/$t" -- -max_total_time="$seconds" -timeout=30 \
    -print_final_stats=1 >"logs/$t.log" 2>&1 && echo "$t: ok ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$') runs in ${seconds} s)" \
    || { echo "$t: FAILED, see fuzz/logs/$t.log"; return 1; }
}
status=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  run "${targets[i]}" & a=$!
  if [ $((i + 1)) -lt ${#targets[@]} ]; then run "${targets[i+1]}" & b=$!; wait "$b" || status=1; fi
  wait "$a" || status=1
done
exit "$status"
