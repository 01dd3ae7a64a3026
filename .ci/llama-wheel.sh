#!/usr/bin/env bash
# Builds llama-cpp-python once per (version, CPU architecture, build flags) into a wheel cache and prints the
# wheel's path; a warm machine reuses the wheel instead of compiling for ~9 minutes.
#
# Why not pip's default build: it compiles llama.cpp for the build machine's own CPU (GGML_NATIVE). On a Xeon with
# AMX that build died with SIGSEGV in libggml-cpu.so on the first completion, and a build made on an AVX-512
# machine would not run on one without it. On x86-64 the build targets AVX2 (every x86-64 CPU from 2013 on), with
# AVX-512 and AMX off, so one wheel runs on either kind of machine. The multimodal library (LLAVA_BUILD) is not
# needed by the server for text models and costs build time.
#
# LASTKNOWN_LLAMA_CPU=avx512 (opt in, for a machine that runs the model server itself): AVX-512 on with the
# extensions the CPU reports, AMX still off (the AMX build stopped with "Illegal instruction" in this project's VM).
# On the development Xeon it evaluated a 1,097-token prompt in 18-24 s against 27-31 s
# (bench/results/llama-build-speed.md); the wheel then runs only on CPUs with AVX-512, and CI never sets it.
set -euo pipefail

cd "$(dirname "$0")/.."
# The one pin, in pyproject.toml's localmodel extra.
version=$(sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)
[ -n "$version" ] || { echo "no llama-cpp-python[server]==X pin in pyproject.toml" >&2; exit 1; }
python=${PYTHON_FOR_WHEEL:?set PYTHON_FOR_WHEEL}
arch=$(uname -m)
case "$arch" in
  x86_64) flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF" ;;
  *) flags="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" ;;
esac
case "${LASTKNOWN_LLAMA_CPU:-portable}" in
  portable) ;;
  avx512)
    [ "$arch" = x86_64 ] && grep -qw avx512f /proc/cpuinfo \
      || { echo "LASTKNOWN_LLAMA_CPU=avx512: this CPU has no AVX-512" >&2; exit 1; }
    # Each extension only where /proc/cpuinfo names it (Linux spells VBMI "avx512vbmi"): an AMD EPYC with AVX-512
    # VNNI has no AVX-VNNI, and a kernel built for one it lacks stops with "Illegal instruction".
    extra="-DGGML_AVX512=ON"
    for pair in avx_vnni:AVX_VNNI avx512_vnni:AVX512_VNNI avx512vbmi:AVX512_VBMI avx512_bf16:AVX512_BF16; do
      grep -qw "${pair%%:*}" /proc/cpuinfo && extra="$extra -DGGML_${pair#*:}=ON"
    done
    flags="${flags/-DGGML_AVX512=OFF/$extra}" ;;
  *) echo "LASTKNOWN_LLAMA_CPU is portable or avx512, not '$LASTKNOWN_LLAMA_CPU'" >&2; exit 1 ;;
esac
pyver=$("$python" -c 'import sys; print(f"cp{sys.version_info.major}{sys.version_info.minor}")')
key=$(printf '%s|%s|%s|%s' "$version" "$arch" "$pyver" "$flags" | sha256sum | cut -c1-16)
cache=${LASTKNOWN_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lastknown/wheels}/llama-cpp-python-$version-$key

wheel=$(ls "$cache"/llama_cpp_python-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$wheel" ]; then
  echo "building llama-cpp-python $version for $arch ($flags); about 5-9 minutes on 2 cores" >&2
  tmp="$cache.partial.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  # --no-cache-dir: pip's own cache keys built wheels by source only, so it could hand back a native build.
  CMAKE_ARGS="$flags" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    "$python" -m pip wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \
    "llama-cpp-python==$version" -w "$tmp" >&2
  printf '%s\n' "$flags" > "$tmp/BUILD_FLAGS"
  rm -rf "$cache" && mv "$tmp" "$cache"
  wheel=$(ls "$cache"/llama_cpp_python-*.whl | head -n1)
fi
printf '%s\n' "$wheel"
