#!/usr/bin/env bash
# Regenerates crates/lurkbot/hot-symbols.txt, the order the release link lays functions and
# read-only data out in (crates/lurkbot/build.rs): every function the gateway runs from its start
# to idle with an IRC connection joined and Telegram and Discord open — the scenario of the
# idle-RSS budget (ARCHITECTURE.md §9) — recorded by Valgrind's callgrind, then the read-only data
# those functions use (scripts/hot-data.py). Laid out together, they share pages, and an idle
# gateway holds about 3 MB of the binary's pages (7.5 MB RSS in all; 17.6 with a stale list).
#
# The names must be those of `cargo build --release -p lurkbot` built on its own (with another
# package in the same command, e.g. `-p lurkbot-bench`, the dependencies' features unify with
# that package's, their symbol names change and the layout no longer applies: 15.2 MB idle
# instead of 8.7 then). RUSTFLAGS are not hashed into crate metadata, so a build with
# `-C strip=none` in RUSTFLAGS has the same symbol names and keeps them; RUSTFLAGS replaces the
# flags of .cargo/config.toml, so they are read from it and repeated (`-save-temp-labels` keeps
# the constants' names; frame pointers are part of the code). A name that no longer exists (code changed, a
# dependency or the toolchain upgraded) is skipped by the linker; run this again then, and after
# any change of those flags or of the toolchain (what is inlined changes, so new functions run at
# idle). Needs valgrind and the gateway bench's peers (ngircd), and perf (Debian: linux-perf) for
# the second pass below; takes about half an hour (28 min on 2026-11-29, both builds included).
#
# `scripts/hot-symbols.sh --faults` skips callgrind and only adds what the real CPU's page faults
# show (below) to the list as it is.
#
# `scripts/hot-symbols.sh --check` only builds the binary with its symbols and says how many of
# the recorded functions it still has and how many of the data they use are listed; it fails
# below 90 % of either (the release procedure and `bench/run.sh gateway` run it: a layout gone
# stale costs idle memory without a warning).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
symbols="$target/symbols/release/lurkbot"
# RUSTFLAGS replaces .cargo/config.toml's flags, so they are read from there and repeated.
config_flags=$(python3 -c 'import tomllib; print(" ".join(tomllib.load(open(".cargo/config.toml", "rb"))["target"]["x86_64-unknown-linux-gnu"]["rustflags"]))')
symbol_flags="-C strip=none $config_flags"
# Appends the read-only data the listed functions use that the list does not name yet.
add_data() {
  python3 scripts/hot-data.py --append "$symbols" crates/lurkbot/hot-symbols.txt
}
if [ "${1:-}" = --check ]; then
  RUSTFLAGS="$symbol_flags" cargo build --release -q -p lurkbot --target-dir "$target/symbols"
  python3 - "$symbols" crates/lurkbot/hot-symbols.txt <<'EOF'
import subprocess, sys
binary, listed = sys.argv[1], sys.argv[2]
names = [n for n in open(listed).read().split("\n") if n]
out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True)
present = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
found = sum(1 for n in names if n in present)
share = 100.0 * found / max(len(names), 1)
print(f"hot-symbols.txt: {found} of {len(names)} recorded functions and data are in this build ({share:.1f} %)")
if share < 90.0:
    sys.exit("hot-symbols.txt is stale (under 90 %): record it again with scripts/hot-symbols.sh")
EOF
  python3 scripts/hot-data.py --check "$symbols" crates/lurkbot/hot-symbols.txt
  exit
fi
RUSTFLAGS="$symbol_flags" cargo build --release -q -p lurkbot --target-dir "$target/symbols"
cargo build --release -q -p lurkbot-bench --target-dir "$target"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "${1:-}" != --faults ]; then
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
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
add_data
fi
# Valgrind's CPU is not this machine's: code picked by CPU features (SHA-1's SHA-NI path) and
# paths that depend on timing (a start-up race or timeout that goes the other way on a real core)
# never show in callgrind's profile, yet each maps a block of cold code. With `perf`, the same
# scenario runs again on the real CPU with every page fault traced, and each function a fault in
# the binary's code lands in — and each named datum one in its read-only data lands in — that is
# not in the list yet is added (a fault shows only the first function or datum of a block that is
# touched: run `--faults` again until it adds nothing).
command -v perf >/dev/null || {
  echo "perf not found (apt-get install linux-perf): the list has callgrind's functions only" >&2
  exit 0
}
cat > "$work/lurkbot" <<EOF
#!/bin/bash
case " \$* " in *" memory index "*) touch "$work/armed";; esac
if [ -e "$work/armed" ] && [[ " \$* " == *" gateway "* ]]; then
  rm -f "$work/armed"
  setsid perf record -q -e page-faults -c 1 -d -o "$work/faults.data" -- "$symbols" "\$@" &
  echo \$! > "$work/perf.pid"
  wait
  exit 0
fi
exec "$symbols" "\$@"
EOF
chmod +x "$work/lurkbot"
# Linked again with the list as it now is, so the faults are those of the layout it makes.
RUSTFLAGS="$symbol_flags" cargo build --release -q -p lurkbot --target-dir "$target/symbols"
# The idle gateway's faults only: after this long the bench turns to its WebSocket burst.
idle_secs=40
cat > "$work/added.py" <<'EOF'
import bisect, importlib.util, re, sys
binary, faults, listed, idle_secs = sys.argv[1:5]
spec = importlib.util.spec_from_file_location("hot_data", "scripts/hot-data.py")
hot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hot)
names = [n for n in open(listed).read().split("\n") if n]
known = set(names)
funcs = []
for line in hot.run("nm", "-n", "--defined-only", binary).splitlines():
    part = line.split()
    # Local labels (`.L…`: basic blocks, constants) are not where a function starts.
    if len(part) == 3 and part[1] in "tT" and not part[2].startswith(".L"):
        funcs.append((int(part[0], 16), part[2]))
starts = [a for a, _ in funcs]
rodata_at = hot.data_lookup(binary, "rR")
found = hot.sections(binary)
(lo, _, size), (ro_lo, _, ro_size) = (found[s] for s in (".text", ".rodata"))
hi, ro_hi = lo + size, ro_lo + ro_size
base, first, added = None, None, []
for line in open(faults):
    if "PERF_RECORD_MMAP" in line:
        if base is None and " @ 0 " in line and line.rstrip().endswith(binary):
            base = int(re.search(r"\[0x([0-9a-f]+)\(", line).group(1), 16)
        continue
    part = line.split()
    if base is None or len(part) != 2 or not part[0].endswith(":"):
        continue
    time, addr = float(part[0][:-1]), int(part[1], 16) - base
    first = time if first is None else first
    if time - first > int(idle_secs) - 5:
        continue
    if lo <= addr < hi:
        name = funcs[bisect.bisect_right(starts, addr) - 1][1]
    elif ro_lo <= addr < ro_hi:
        # Read-only data no listed function names (read through a pointer made elsewhere).
        datum = rodata_at(addr)
        if datum is None:
            continue
        name = datum[2]
    else:
        continue
    if name not in known:
        known.add(name)
        added.append(name)
if first is None:
    sys.exit("perf recorded no page fault of the idle gateway")
open(listed, "w").write("\n".join(names + added) + "\n")
print(f"{listed}: {len(added)} functions and data added from the real CPU's page faults")
EOF
# Three runs: which of two paths a start-up race takes differs from run to run.
for round in 1 2 3; do
  "$target/release/lurkbot-bench" gateway --bin "$work/lurkbot" --runs 3 --idle-secs "$idle_secs" > "$work/bench2.log" 2>&1 || true
  [ -s "$work/perf.pid" ] || { echo "the idle gateway did not start: $work/bench2.log" >&2; cat "$work/bench2.log" >&2; exit 1; }
  kill -INT "$(cat "$work/perf.pid")" 2>/dev/null || true
  rm -f "$work/perf.pid"
  sleep 3
  pkill -f "$symbols --home" 2>/dev/null || true
  perf script -i "$work/faults.data" --show-mmap-events -F time,addr 2>/dev/null > "$work/faults.txt"
  python3 "$work/added.py" "$symbols" "$work/faults.txt" crates/lurkbot/hot-symbols.txt "$idle_secs"
  add_data
done
