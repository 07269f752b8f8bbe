#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian machine: installs what the tests need, then
# `cargo test --workspace`. Used by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests call: classic archive tools for interoperability tests, openssl
# for a real TLS server in the rss tests.
packages=(zip unzip tar xz-utils bzip2 openssl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "warning: missing packages ${missing[*]} (run as root on Debian to install them)" >&2
  fi
fi

exec cargo test --workspace --locked "$@"
