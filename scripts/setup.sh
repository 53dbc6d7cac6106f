#!/usr/bin/env bash
# scripts/setup.sh — sourced by scripts/test and scripts/bench: finds nvcc,
# installs the Debian packages that are missing, configures and builds.
#
# Required (the library and its tests): meson, ninja, cmake, pkg-config,
# doctest, Boost.Hana (headers only). Wanted (each part is skipped with a
# message where its packages cannot be installed, e.g. on a machine without a
# package mirror):
# the bench's CLI11 and nlohmann-json; the Python module's Python headers,
# pybind11 and DLPack, and pytest and NumPy for its tests.
# FFTCONV_BUILD_DIR picks the build directory (default build/),
# FFTCONV_GPU_ARCH the compute capabilities (default: meson_options.txt's).
# FFTCONV_NO_INSTALL=1 installs nothing (machines without a package mirror).
# FFTCONV_DEB_DIR=DIR: header-only packages carried there as .deb files
# (apt-get download libcli11-dev nlohmann-json3-dev ...) are unpacked beside
# the build directory and put on CPATH, for machines without a mirror.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${FFTCONV_BUILD_DIR:-$root/build}"
export PATH="$PATH:/usr/local/cuda/bin"

if ! command -v nvcc >/dev/null 2>&1; then
    echo "fftconv: nvcc not found on PATH or in /usr/local/cuda/bin." >&2
    echo "fftconv needs the CUDA Toolkit (12 or newer, with cuFFT and cuBLAS) installed first." >&2
    exit 1
fi

if [ -n "${FFTCONV_DEB_DIR:-}" ]; then
    unpacked="$build-debs"
    for deb in "$FFTCONV_DEB_DIR"/*.deb; do
        [ -f "$deb" ] || { echo "fftconv: FFTCONV_DEB_DIR=$FFTCONV_DEB_DIR holds no .deb files" >&2; exit 1; }
        dpkg -x "$deb" "$unpacked"
    done
    export CPATH="$unpacked/usr/include${CPATH:+:$CPATH}"
fi

required=()
command -v c++ >/dev/null 2>&1 || required+=(g++)                 # nvcc's host compiler, and the checks below
command -v meson >/dev/null 2>&1 || required+=(meson)
command -v ninja >/dev/null 2>&1 || required+=(ninja-build)
command -v cmake >/dev/null 2>&1 || required+=(cmake)           # Meson finds doctest through CMake; the CMake consumer test
command -v pkg-config >/dev/null 2>&1 || required+=(pkg-config)
[ -f /usr/include/doctest/doctest.h ] || required+=(doctest-dev)
# Boost.Hana (the compiled table's checks and lookup), where the compiler
# finds it: /usr/include, or CPATH (FFTCONV_DEB_DIR's libboost1.74-dev).
echo '#include <boost/hana.hpp>' | c++ -std=c++20 -fsyntax-only -x c++ - 2>/dev/null || required+=(libboost-dev)

wanted=()
[ -f /usr/include/CLI/CLI.hpp ] || wanted+=(libcli11-dev)             # fftconv-bench's command line
[ -f /usr/include/nlohmann/json.hpp ] || wanted+=(nlohmann-json3-dev) # fftconv-bench's JSON
# The Python module is built for the interpreter Meson runs under: Debian's
# meson runs /usr/bin/python3, whose packages these are.
if [ -x /usr/bin/python3 ]; then
    python_include=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    [ -f "$python_include/Python.h" ] || wanted+=(python3-dev)
    /usr/bin/python3 -c 'import pytest' 2>/dev/null || wanted+=(python3-pytest)
    /usr/bin/python3 -c 'import numpy' 2>/dev/null || wanted+=(python3-numpy)
fi
[ -f /usr/include/pybind11/pybind11.h ] || wanted+=(pybind11-dev)
[ -f /usr/include/dlpack/dlpack.h ] || wanted+=(libdlpack-dev)
# `pip install --no-build-isolation .` in a venv (docs/python-install.md)
# builds with these; the wheel test (suite 'wheel') does it, and skips
# naming the one that is missing.
command -v patchelf >/dev/null 2>&1 || wanted+=(patchelf)
if [ -x /usr/bin/python3 ]; then
    /usr/bin/python3 -c 'import mesonpy' 2>/dev/null || wanted+=(python3-mesonpy)
    /usr/bin/python3 -m pip --version >/dev/null 2>&1 || wanted+=(python3-pip)
    /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || wanted+=(python3-venv)  # python3 -m venv
fi

installed_now=0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_lists=unknown  # updated / failed, once known
# install_packages NAME...: apt-get install them (the package lists updated
# once; where that fails, nothing is tried again); true when all installed.
install_packages() {
    [ -z "${FFTCONV_NO_INSTALL:-}" ] && command -v apt-get >/dev/null 2>&1 || return 1
    if [ "$apt_lists" = unknown ]; then
        if timeout 60 $sudo apt-get update -qq >&2; then apt_lists=updated; else apt_lists=failed; fi
    fi
    [ "$apt_lists" = updated ] || return 1
    DEBIAN_FRONTEND=noninteractive timeout 600 $sudo apt-get install -y -qq --no-install-recommends "$@" >&2
}
# The required packages first: one wanted package a distribution lacks must
# not stop them.
if [ ${#required[@]} -gt 0 ]; then
    echo "fftconv: installing ${required[*]}" >&2
    if install_packages "${required[@]}"; then
        installed_now=1
    else
        echo "fftconv: could not install ${required[*]} (no apt-get, or no package mirror): install them yourself" >&2
        exit 1
    fi
fi
if [ ${#wanted[@]} -gt 0 ]; then
    echo "fftconv: installing ${wanted[*]}" >&2
    if install_packages "${wanted[@]}"; then
        installed_now=1
    else
        # One at a time: each that installs gives its part back.
        not_installed=()
        for package in "${wanted[@]}"; do
            if install_packages "$package"; then installed_now=1; else not_installed+=("$package"); fi
        done
        echo "fftconv: could not install ${not_installed[*]}: the parts that need them are skipped" \
             "(meson's summary says which)" >&2
    fi
fi

if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$root" ${FFTCONV_GPU_ARCH:+-Dgpu_arch="$FFTCONV_GPU_ARCH"} >&2
elif [ "$installed_now" -eq 1 ]; then
    # Optional parts are detected when configuring: look again.
    meson setup --reconfigure "$build" "$root" >&2
fi
# Meson 1.0 gives nvcc no dependency file, so ninja does not rebuild a .cu
# object when only a header it includes changed: after any header is newer
# than the last build, rebuild every CUDA object.
stamp="$build/.cuda-headers-stamp"
if [ -f "$stamp" ] && [ -n "$(find "$root/include" "$root/src" "$root/test" "$root/reference" "$root/bench" \
        "$root/examples" "$build/include" \( -name '*.h' -o -name '*.hpp' -o -name '*.cuh' \) -newer "$stamp" \
        -print -quit 2>/dev/null)" ]; then
    echo "fftconv: headers changed since the last build: recompiling the CUDA sources" >&2
    find "$build" -name '*.cu.o' -delete
fi
ninja -C "$build" >&2 && touch "$stamp"
