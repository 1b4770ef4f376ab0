#!/usr/bin/env bash
# Creates or refreshes .venv with everything rolecall and its tests need; quiet when current.
#
# Runs on a fresh machine with only Python >= 3.11 and the package registries. The slow part
# is building llama-cpp-python from source (about 6-7 minutes on 2 cores); pip keeps the
# built wheel in its own cache (~/.cache/pip), so where the machine keeps that cache the
# next set-up takes seconds. Nothing here depends on the cache being there.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      PYTHON=$candidate; break
    fi
  done
fi
[ -n "$PYTHON" ] || { echo "rolecall needs Python >= 3.11 (set PYTHON=/path/to/python)" >&2; exit 1; }

# The browser tests drive Debian's Chromium (never a browser downloaded by a test tool);
# Korean text in their screenshots needs a Korean font.
if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi nanum; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium and fonts-nanum for the browser tests..." >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq chromium fonts-nanum >/dev/null
  else
    echo "note: the browser tests need chromium (sudo apt-get install chromium fonts-nanum)" >&2
  fi
fi

stamp=.venv/.rolecall-setup
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

echo "setting up .venv (first time: ~10 minutes, most of it building llama-cpp-python)..." >&2
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first and pinned: 2.13.0 is the CPU build on this kind of machine; a bare "torch"
# would pull a multi-GB CUDA build.
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
  .venv/bin/python -m pip install --quiet torch==2.13.0 -e '.[all]'
echo "$want" > "$stamp"
echo "set-up done: .venv" >&2
