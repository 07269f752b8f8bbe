#!/usr/bin/env bash
# Regenerates crates/lurkbot/hot-symbols.txt, the order the release link lays functions out in
# (crates/lurkbot/build.rs): every function the gateway runs from its start to idle with an IRC
# connection joined and Telegram and Discord open — the scenario of the idle-RSS budget
# (ARCHITECTURE.md §9) — recorded by Valgrind's callgrind. Laid out together, they share pages,
# and an idle gateway holds 4.1 MB of the binary's pages (8.7 MB RSS in all; 17.6 with a stale list).
#
# The names must be those of `cargo build --release -p lurkbot` built on its own (with another
# package in the same command, e.g. `-p lurkbot-bench`, the dependencies' features unify with
# that package's, their symbol names change and the layout no longer applies: 15.2 MB idle
# instead of 8.7). RUSTFLAGS are not hashed into
# crate metadata, so a build with `-C strip=none` in RUSTFLAGS has the same symbol names and
# keeps them. A name that no longer exists (code changed, a dependency or the toolchain
# upgraded) is skipped by the linker; run this again then. Needs valgrind and the gateway
# bench's peers (ngircd); takes a few minutes.
#
# `scripts/hot-symbols.sh --check` only builds the binary with its symbols and says how many of
# the recorded functions it still has; it fails below 90 % (the release procedure and
# `bench/run.sh gateway` run it: a layout gone stale costs idle memory without a warning).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
symbols="$target/symbols/release/lurkbot"
if [ "${1:-}" = --check ]; then
  RUSTFLAGS="-C strip=none" cargo build --release -q -p lurkbot --target-dir "$target/symbols"
  python3 - "$symbols" crates/lurkbot/hot-symbols.txt <<'EOF'
import subprocess, sys
binary, listed = sys.argv[1], sys.argv[2]
names = [n for n in open(listed).read().split("\n") if n]
out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True)
present = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
found = sum(1 for n in names if n in present)
share = 100.0 * found / max(len(names), 1)
print(f"hot-symbols.txt: {found} of {len(names)} recorded idle functions are in this build ({share:.1f} %)")
if share < 90.0:
    sys.exit("hot-symbols.txt is stale (under 90 %): record it again with scripts/hot-symbols.sh")
EOF
  exit
fi
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
RUSTFLAGS="-C strip=none" cargo build --release -q -p lurkbot --target-dir "$target/symbols"
cargo build --release -q -p lurkbot-bench --target-dir "$target"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/lurkbot" <<EOF
#!/bin/sh
for a in "\$@"; do
  if [ "\$a" = gateway ]; then
    exec valgrind --tool=callgrind --demangle=no --dump-instr=no --compress-strings=no \
      --callgrind-out-file="$work/cg.%p" "$symbols" "\$@"
  fi
done
exec "$symbols" "\$@"
EOF
chmod +x "$work/lurkbot"
"$target/release/lurkbot-bench" gateway --bin "$work/lurkbot" --runs 3 --idle-secs 240 > "$work/bench.log" 2>&1 &
bench=$!
# The idle gateway is the last one started: once the bench reports the start times it starts
# it, connects IRC and waits for both channels (slow under callgrind), then idles — long enough
# for what an idle gateway does now and then (Discord's heartbeat every 41 s, the IRC link's
# ping after 60 s of silence, Telegram's long polls, the lease and schedule timers).
until grep -q "start → /health" "$work/bench.log"; do
  kill -0 "$bench" 2>/dev/null || { cat "$work/bench.log" >&2; exit 1; }
  sleep 1
done
sleep 170
pid=$(pgrep -n -f "callgrind.*$symbols")
callgrind_control -d "$pid" >/dev/null
sleep 5
kill "$bench" 2>/dev/null || true
pkill -f "callgrind.*$symbols" 2>/dev/null || true
python3 - "$work" crates/lurkbot/hot-symbols.txt <<'EOF'
import glob, sys
work, out = sys.argv[1], sys.argv[2]
names, seen = [], set()
for path in sorted(glob.glob(f"{work}/cg.*.*")):
    ob = ""
    for line in open(path, errors="replace"):
        if line.startswith("ob="):
            ob = line[3:].strip()
        elif line.startswith("fn=") and ob.endswith("/lurkbot"):
            name = line[3:].strip()
            # Code without a symbol shows as its address: nothing to order by.
            if name not in seen and not name.startswith("0x"):
                seen.add(name)
                names.append(name)
if len(names) < 500:
    sys.exit(f"only {len(names)} functions recorded: the profile is incomplete")
open(out, "w").write("\n".join(names) + "\n")
print(f"{out}: {len(names)} functions")
EOF
