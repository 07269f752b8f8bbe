#!/usr/bin/env python3
"""The read-only data the listed functions use, in the binary's order.

Usage: scripts/hot-data.py [--append | --check] BINARY LIST

Prints their names, one a line; with --append, adds those LIST does not name yet to it; with
--check, says how many of them LIST names and fails under 90 % (a constant's name is a counter
within its crate: after a change of code it names another constant, so what is recorded is
checked against what the recorded functions use in this build).

BINARY is the release binary built with its symbols and the names of its anonymous constants
(`-C strip=none`; `.cargo/config.toml` keeps the `.Lanon.*` names with `-save-temp-labels`);
LIST is `crates/lurkbot/hot-symbols.txt`. A datum is used when one of the listed functions names
it in an instruction (an address relative to the instruction pointer; also the datum that ends
there, which is how a loop over an array may name it), or when a pointer in a relocated or
writable datum in use points at it (format strings' pieces, tracing's call sites, tables of
strings). Laid out first in `.rodata` by the link's ordering file, the data an idle gateway reads
shares a few pages instead of being spread over the section's 1.9 MB (ARCHITECTURE.md §9).
Data in merged sections (constants of 4, 8, 16 or 32 bytes, NUL-terminated strings) has no name
the linker keeps and stays where the linker puts it.
"""
import bisect
import re
import struct
import subprocess
import sys


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def sections(binary):
    """Each section's address, file offset and size, by name."""
    found = {}
    for line in run("readelf", "-SW", binary).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            found[m.group(1)] = tuple(int(m.group(i), 16) for i in (2, 3, 4))
    return found


def data_lookup(binary, types="rRdD"):
    """A function giving the named datum (address, size, name) of those `nm` types at an address."""
    data = []
    for line in run("nm", "-S", "--defined-only", binary).splitlines():
        part = line.split()
        if len(part) == 4 and part[2] in types:
            data.append((int(part[0], 16), int(part[1], 16), part[3]))
    data.sort()
    starts = [d[0] for d in data]

    def datum_at(address):
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and data[i][0] <= address < data[i][0] + max(data[i][1], 1):
            return data[i]
        return None

    return datum_at


def hot_data(binary, listed):
    functions = set(listed)
    found = sections(binary)
    rodata, relro, writable = (found[s] for s in (".rodata", ".data.rel.ro", ".data"))
    inside = lambda a, s: s[0] <= a < s[0] + s[2]
    in_data = lambda a: inside(a, rodata) or inside(a, relro) or inside(a, writable)
    datum_at = data_lookup(binary)

    # Each instruction objdump resolves an address for ends in "# <address> <symbol>".
    refs, current = set(), None
    header = re.compile(r"^[0-9a-f]+ <(.*)>:$")
    comment = re.compile(r"# ([0-9a-f]+) <")
    dump = subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", binary], stdout=subprocess.PIPE, text=True)
    for line in dump.stdout:
        if line.endswith(">:\n"):
            m = header.match(line)
            # Local labels (basic blocks, kept with the constants' names) start no function.
            if not (m and m.group(1).startswith(".L")):
                current = m.group(1) if m else None
        elif current in functions and "#" in line:
            m = comment.search(line)
            if m:
                refs.add(int(m.group(1), 16))
    if dump.wait() != 0:
        sys.exit("objdump failed")

    used, pending = {}, []

    def use(address):
        d = datum_at(address) if in_data(address) else None
        if d and d[2] not in used:
            used[d[2]] = d
            pending.append(d)

    for ref in refs:
        use(ref)
        use(ref - 1)
    image = open(binary, "rb").read()
    while pending:
        address, size, _ = pending.pop()
        section = relro if inside(address, relro) else writable if inside(address, writable) else None
        if section is None:
            continue
        offset = address - section[0] + section[1]
        for k in range(0, size - 7, 8):
            (pointer,) = struct.unpack_from("<Q", image, offset + k)
            use(pointer)
    return [d[2] for d in sorted(used.values()) if inside(d[0], rodata)]


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) == 4 and sys.argv[1] in ("--append", "--check") else None
    if len(sys.argv) != (4 if mode else 3):
        sys.exit(__doc__.split("\n\n")[1])
    binary, listed = sys.argv[-2:]
    names = [n for n in open(listed).read().split("\n") if n]
    used = hot_data(binary, names)
    known = set(names)
    if mode == "--append":
        added = [n for n in used if n not in known]
        open(listed, "w").write("\n".join(names + added) + "\n")
        print(f"{listed}: {len(added)} read-only data added that the listed functions use")
    elif mode == "--check":
        found = sum(1 for n in used if n in known)
        share = 100.0 * found / max(len(used), 1)
        print(f"{listed}: {found} of the {len(used)} read-only data its functions use are listed ({share:.1f} %)")
        if share < 90.0:
            sys.exit(f"{listed} is stale (under 90 %): record it again with scripts/hot-symbols.sh")
    else:
        print("\n".join(used))
