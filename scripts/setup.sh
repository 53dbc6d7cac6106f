#!/usr/bin/env bash
# scripts/setup.sh — sourced by scripts/test and scripts/bench: finds nvcc,
# installs the Debian packages that are missing, configures and builds.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${FFTCONV_BUILD_DIR:-$root/build}"
export PATH="$PATH:/usr/local/cuda/bin"

if ! command -v nvcc >/dev/null 2>&1; then
    echo "fftconv: nvcc not found on PATH or in /usr/local/cuda/bin." >&2
    echo "fftconv needs the CUDA Toolkit (12 or newer, with cuFFT and cuBLAS) installed first." >&2
    exit 1
fi

missing=()
command -v meson >/dev/null 2>&1 || missing+=(meson)
command -v ninja >/dev/null 2>&1 || missing+=(ninja-build)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)           # Meson finds doctest through CMake
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
[ -f /usr/include/doctest/doctest.h ] || missing+=(doctest-dev)
[ -f /usr/include/boost/hana.hpp ] || missing+=(libboost-dev)  # Boost.Hana (headers)
if [ ${#missing[@]} -gt 0 ]; then
    echo "fftconv: installing ${missing[*]}" >&2
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "fftconv: no apt-get here; install these yourself: ${missing[*]}" >&2
        exit 1
    fi
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$root" -Dgpu_arch="${FFTCONV_GPU_ARCH:-90}" >&2
fi
ninja -C "$build" >&2
