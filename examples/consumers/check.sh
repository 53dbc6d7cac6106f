#!/usr/bin/env bash
# examples/consumers/check.sh MODE SOURCE_ROOT BUILD_ROOT — builds and runs a
# consumer of fftconv the way its README and docs/building.md say (a Meson test; the
# commands are echoed). The installed ones build against a staged
# `meson install --destdir` of BUILD_ROOT, so the library is compiled once.
# MODE:
#   pkg-config        g++ and gcc with only $(pkg-config --cflags --libs
#                     fftconv): once with the prefix redefined, once under
#                     PKG_CONFIG_SYSROOT_DIR; then linked with an rpath and
#                     run without LD_LIBRARY_PATH
#   pkg-config-nvcc   nvcc with $(pkg-config --cflags --libs fftconv): a .cu
#                     of the C++ API (-std=c++20) and one of the C ABI (nvcc's
#                     default standard), both on the shared CUDA runtime
#   cmake             find_package(fftconv) from a C++ project
#   cmake-c           ... from a C-only project
#   cmake-cuda        ... from a project with LANGUAGES CXX CUDA and a .cu
#                     target (also with each CMake in FFTCONV_EXTRA_CMAKE,
#                     space-separated paths, e.g. a newer one than Debian's)
#   meson-subproject  fftconv through the wrap file of docs/building.md as a subproject
#                     of a CUDA project whose own .cu specialises the pipeline
#                     (specialize.cuh): that .cu is compiled by the
#                     subproject's build, linked against BUILD_ROOT's library
#                     (the same sources and configurations: the library is
#                     not compiled a second time) and run
#   meson-debug       configure a debug-build project that takes fftconv as a
#                     subproject; fftconv's sources must compile with -O3, no -g/-G
#   pre-cxx20         the C++ headers refuse C++17 (g++ and nvcc without
#                     -std=c++20) with fftconv's #error first; the C header
#                     compiles as C99 and C++11
#   python            import the installed Python package from the staged
#                     site directory, check its version, plan a problem
# The programs run after linking; without a GPU they check what they can
# and exit 0 (C++) or 77 (the C example), both accepted.
set -euo pipefail
# (No `producer | grep -q`: grep -q stops at its first match, the producer can
# then die of SIGPIPE, and pipefail would fail the check that matched.)
mode="$1"
source_root=$(cd "$2" && pwd)
build_root=$(cd "$3" && pwd)
consumers="$source_root/examples/consumers"
work="$build_root/consumers/$mode"
rm -rf "$work"
mkdir -p "$work"

run() { echo "+ $*"; "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

# Runs a consumer program; 0 passes, 77 (no GPU) passes, anything else fails.
run_program() {
    set +e
    echo "+ $*"
    "$@"
    local status=$?
    set -e
    [ "$status" -eq 0 ] || [ "$status" -eq 77 ] || fail "$1 exited $status"
}

# The build's options, as `meson configure` shows them.
build_option() {
    meson introspect "$build_root" --buildoptions | python3 -c '
import json, sys
value = next(o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1])
print(",".join(value) if isinstance(value, list) else value)' "$1"
}

stage() {
    run meson install -C "$build_root" --no-rebuild --quiet --destdir "$work/stage" >/dev/null
    prefix=$(build_option prefix)
    libdir=$(build_option libdir)
    staged_prefix="$work/stage$prefix"
    staged_libdir="$staged_prefix/$libdir"
    [ -f "$staged_libdir/pkgconfig/fftconv.pc" ] || fail "no fftconv.pc under $staged_libdir/pkgconfig"
    # The staged library is not where the loader looks.
    plain_ld_library_path="${LD_LIBRARY_PATH:-}"
    export LD_LIBRARY_PATH="$staged_libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    version=$(meson introspect "$build_root" --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
}

# Runs a program with the loader's own search path only (no staged libdir):
# it must find libfftconv through its rpath.
run_without_staged_path() {
    LD_LIBRARY_PATH="$plain_ld_library_path" run_program "$@"
}

# fftconv installed where the loader looks anyway (a system install): then a
# binary without an rpath runs too, and the "cannot open" check says nothing.
fftconv_in_loader_path() {
    ldconfig -p 2>/dev/null | grep -E 'libfftconv\.so\.[0-9.]+ ' > /dev/null
}

# cmake_consumer PROJECT CMAKE [ARGS...]: configure and build a consumer
# project of examples/consumers with that CMake; the build log is kept.
cmake_consumer() {
    local project="$1" cmake="$2"
    shift 2
    local out="$work/$project-cmake-$("$cmake" --version | head -1 | awk '{print $3}')"
    run "$cmake" -S "$consumers/$project" -B "$out" -DCMAKE_PREFIX_PATH="$staged_prefix" \
        -DCMAKE_BUILD_TYPE=Release "$@" >"$out.configure.log" 2>&1 ||
        { cat "$out.configure.log"; fail "$cmake configure of $project"; }
    run "$cmake" --build "$out" --verbose >"$out.build.log" 2>&1 ||
        { cat "$out.build.log"; fail "$cmake build of $project"; }
    grep -E "(nvcc|c\+\+|cc|g\+\+|gcc) " "$out.build.log" | grep -v "^--" | tail -n 2
    cmake_out="$out"
}

case "$mode" in
pkg-config)
    stage
    export PKG_CONFIG_PATH="$staged_libdir/pkgconfig"
    # 1. The .pc file as installed, its prefix pointed at the staging area.
    flags=$(pkg-config --define-variable=prefix="$staged_prefix" --cflags --libs fftconv)
    echo "pkg-config --define-variable=prefix=... --cflags --libs fftconv: $flags"
    run g++ -std=c++20 "$consumers/use_fftconv.cpp" -o "$work/use_fftconv" $flags
    run_program "$work/use_fftconv"
    run gcc "$source_root/examples/c_api.c" -o "$work/c_api" $flags
    run_program "$work/c_api"
    # 2. The staging area as a sysroot: every path of the file moves into it,
    #    the CUDA toolkit's too (pkgconf's rule, and a cross build's: the
    #    target's toolkit is in its sysroot), so the toolkit is linked in.
    cuda_root=$(pkg-config --variable=cuda_root fftconv)
    mkdir -p "$(dirname "$work/stage$cuda_root")"
    [ -e "$work/stage$cuda_root" ] || ln -s "$cuda_root" "$work/stage$cuda_root"
    flags=$(PKG_CONFIG_SYSROOT_DIR="$work/stage" pkg-config --cflags --libs fftconv)
    echo "PKG_CONFIG_SYSROOT_DIR=... pkg-config --cflags --libs fftconv: $flags"
    case "$flags" in
        *"-isystem $work/stage$cuda_root/include"*) ;;
        *) fail "the CUDA include directory is not in the sysroot: $flags" ;;
    esac
    case "$flags" in
        *"-I$staged_prefix/"*) ;;
        *) fail "fftconv's include directory is not in the sysroot: $flags" ;;
    esac
    run g++ -std=c++20 "$consumers/use_fftconv.cpp" -o "$work/use_fftconv_sysroot" $flags
    run_program "$work/use_fftconv_sysroot"
    run gcc "$source_root/examples/c_api.c" -o "$work/c_api_sysroot" $flags
    run_program "$work/c_api_sysroot"
    # 3. A prefix install outside the loader's paths: the rpath of docs/building.md.
    flags=$(pkg-config --define-variable=prefix="$staged_prefix" --cflags --libs fftconv)
    rpath=$(pkg-config --define-variable=prefix="$staged_prefix" --variable=libdir fftconv)
    if ! fftconv_in_loader_path; then
        set +e
        output=$(LD_LIBRARY_PATH="$plain_ld_library_path" "$work/use_fftconv" 2>&1)
        status=$?
        set -e
        echo "without LD_LIBRARY_PATH or an rpath: exit $status: $output" | head -3
        [ "$status" -ne 0 ] && [[ "$output" == *"libfftconv.so."*": cannot open"* ]] ||
            fail "a binary without an rpath found the staged libfftconv (docs/building.md's note would be wrong)"
    fi
    run g++ -std=c++20 "$consumers/use_fftconv.cpp" -o "$work/use_fftconv_rpath" $flags -Wl,-rpath,"$rpath"
    run_without_staged_path "$work/use_fftconv_rpath"
    ;;
pkg-config-nvcc)
    stage
    export PKG_CONFIG_PATH="$staged_libdir/pkgconfig"
    flags=$(pkg-config --define-variable=prefix="$staged_prefix" --cflags --libs fftconv)
    rpath=$(pkg-config --define-variable=prefix="$staged_prefix" --variable=libdir fftconv)
    echo "pkg-config --define-variable=prefix=... --cflags --libs fftconv: $flags"
    run nvcc -std=c++20 "$consumers/use_fftconv.cu" -o "$work/use_fftconv_cuda" $flags
    run_program "$work/use_fftconv_cuda"
    run nvcc "$consumers/use_c_api.cu" -o "$work/use_c_api" $flags -Xlinker -rpath="$rpath"
    run_without_staged_path "$work/use_c_api"
    # One CUDA runtime: the shared one fftconv uses, not nvcc's default static
    # copy beside it (cudaMalloc would then be defined in the program).
    for program in use_fftconv_cuda use_c_api; do
        if nm --defined-only "$work/$program" | grep -Eq ' [Tt] cudaMalloc$'; then
            fail "$program carries the static CUDA runtime"
        fi
        ldd "$work/$program" | grep 'libcudart\.so' > /dev/null || fail "$program does not load libcudart.so"
    done
    ;;
cmake)
    stage
    cmake_consumer cmake cmake
    # C++20 must have come from the imported target, not from the consumer.
    grep -q -- "-std=gnu++20\|-std=c++20" "$cmake_out.build.log" || fail "the C++ consumer was not compiled as C++20"
    # CMake links imported libraries with a build-tree rpath: no LD_LIBRARY_PATH needed.
    run_without_staged_path "$cmake_out/use_fftconv"
    ;;
cmake-c)
    stage
    cmake_consumer cmake-c cmake
    run_without_staged_path "$cmake_out/c_api"
    ;;
cmake-cuda)
    stage
    cmakes=(cmake ${FFTCONV_EXTRA_CMAKE:-})
    [ -n "${FFTCONV_EXTRA_CMAKE:-}" ] ||
        echo "(only $(cmake --version | head -1): set FFTCONV_EXTRA_CMAKE to paths of other CMakes to build this with them too)"
    for cmake in "${cmakes[@]}"; do
        cmake_consumer cmake-cuda "$cmake" -DCMAKE_CUDA_ARCHITECTURES=90
        # C++20 for the .cu from the imported target: nvcc's -std=c++20 (the
        # flag where this CMake does not know cuda_std_20 for nvcc).
        grep -E "nvcc.*use_fftconv\.cu" "$cmake_out.build.log" | grep -- "-std=c++20" > /dev/null ||
            fail "$cmake: the .cu was not compiled with -std=c++20"
        run_without_staged_path "$cmake_out/use_fftconv_cuda"
    done
    ;;
meson-subproject)
    project="$work/project"
    mkdir -p "$project/subprojects"
    cp "$consumers/meson-subproject/meson.build" "$consumers/meson-subproject/own_shape.cu" "$project/"
    # The wrap file of docs/building.md; the subproject's directory is already there (a
    # link to this checkout, so its working tree is what is tested), and
    # Meson uses it instead of cloning `url`.
    sed "s|@URL@|$source_root|" "$consumers/meson-subproject/fftconv.wrap" >"$project/subprojects/fftconv.wrap"
    ln -s "$source_root" "$project/subprojects/fftconv"
    configs=$(build_option configs)
    run meson setup "$work/build" "$project" -Dfftconv:gpu_arch=90 "-Dfftconv:configs=$configs" \
        >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; fail "meson setup of the subproject consumer"; }
    object=$(python3 -c '
import json, sys
entry = next(e for e in json.load(open(sys.argv[1])) if e["file"].endswith("own_shape.cu"))
print(entry["output"])' "$work/build/compile_commands.json")
    # The consumer's own .cu, as the subproject's build compiles it (the
    # include directories and generated headers of the subproject, the
    # consumer's cuda_std=c++20). Its library target is not built.
    run ninja -C "$work/build" "$object"
    run python3 "$source_root/test/check_extern_instantiations.py" "$work/build/$object" 7:12:32 -- ${configs//,/ }
    run nvcc -gencode=arch=compute_90,code=sm_90 "$work/build/$object" -o "$work/own_shape" \
        -cudart shared -L"$build_root" -lfftconv -lcufft -lcublas -Xlinker -rpath="$build_root"  # as fftconv_dep links
    run_program "$work/own_shape"
    ;;
meson-debug)
    project="$work/project"
    mkdir -p "$project/subprojects"
    cp "$consumers/meson-debug/meson.build" "$consumers/use_fftconv.cpp" "$project/"
    ln -s "$source_root" "$project/subprojects/fftconv"
    # Configure only: compiling fftconv a second time would take minutes, and
    # the compile commands are what is checked.
    run meson setup "$work/build" "$project" -Dfftconv:gpu_arch=90 >"$work/setup.log" 2>&1 ||
        { cat "$work/setup.log"; fail "meson setup of the debug consumer"; }
    python3 - "$work/build/compile_commands.json" <<'PY'
import json, shlex, sys
commands = json.load(open(sys.argv[1]))
def args_of(entry):
    return shlex.split(entry["command"])
ours = [e for e in commands if "use_fftconv.cpp" in e["file"]]
library = [e for e in commands if "subprojects/fftconv/src/" in e["file"]]
if not ours or not library:
    sys.exit(f"FAIL: expected the consumer's and fftconv's sources in compile_commands.json, found {len(ours)} and {len(library)}")
# The consumer's own file shows the debug build is in effect (else this test proves nothing).
consumer_args = args_of(ours[0])
if "-g" not in consumer_args or "-O0" not in consumer_args:
    sys.exit(f"FAIL: the consumer's own source is not built -g -O0: {' '.join(consumer_args)}")
failed = False
for entry in library:
    args = args_of(entry)
    name = entry["file"].split("subprojects/fftconv/")[1]
    bad = [a for a in args if a in ("-G", "--device-debug", "-g", "-O0")]
    if "-O3" not in args or bad:
        print(f"FAIL: {name} is compiled with {bad or 'no -O3'}: {' '.join(args)}")
        failed = True
    else:
        print(f"ok: {name}: -O3, no -g/-G")
sys.exit(1 if failed else 0)
PY
    ;;
pre-cxx20)
    stage
    include="$staged_prefix/$(build_option includedir)"
    message="fftconv's C++ headers need C++20"
    # first_error COMPILER ARGS...: the compile must fail, its first error
    # being fftconv's #error.
    first_error() {
        set +e
        local output
        output=$("$@" 2>&1)
        local status=$?
        set -e
        local first
        first=$(grep -m1 -E "error" <<<"$output" || true)
        echo "+ $* -> exit $status, first error: $first"
        [ "$status" -ne 0 ] || fail "$* compiled"
        [[ "$first" == *"$message"* ]] || { echo "$output" | head -20; fail "$*: the first error is not fftconv's"; }
    }
    # Every installed C++ header (all but the C ones), so a new one is checked too.
    headers=$(cd "$include/fftconv" && ls *.hpp *.cuh)
    for expected in fftconv.hpp context.hpp version.hpp compiled_configs.hpp specialize.cuh; do
        grep -qx "$expected" <<<"$headers" || fail "$expected is not installed"
    done
    for header in $headers; do
        echo "#include <fftconv/$header>" >"$work/$header.cpp"
        first_error g++ -std=c++17 -fsyntax-only -I"$include" -isystem "$(pkg-config --variable=cuda_root \
            "$staged_libdir/pkgconfig/fftconv.pc")/include" "$work/$header.cpp"
    done
    flags=$(PKG_CONFIG_PATH="$staged_libdir/pkgconfig" pkg-config --define-variable=prefix="$staged_prefix" \
        --cflags --libs fftconv)
    # nvcc's default standard is C++17: the README's command without -std=c++20.
    first_error nvcc "$consumers/use_fftconv.cu" -o "$work/refused" $flags
    first_error nvcc -std=c++17 "$consumers/meson-subproject/own_shape.cu" -o "$work/refused" $flags
    # The C ABI needs no C++20.
    echo "#include <fftconv/fftconv.h>" >"$work/c_header.c"
    cp "$work/c_header.c" "$work/c_header.cpp"
    cuda_include="$(pkg-config --variable=cuda_root "$staged_libdir/pkgconfig/fftconv.pc")/include"
    run gcc -std=c99 -Wall -Wextra -fsyntax-only -I"$include" -isystem "$cuda_include" "$work/c_header.c"
    run g++ -std=c++11 -Wall -Wextra -fsyntax-only -I"$include" -isystem "$cuda_include" "$work/c_header.cpp"
    ;;
python)
    stage
    # Where the build installs the native module: <site>/fftconv/_native*.so.
    module=$(meson introspect "$build_root" --installed | python3 -c '
import json, sys
print(next((path for path in json.load(sys.stdin).values() if "/fftconv/_native" in path), ""))')
    [ -n "$module" ] || fail "the build installs no Python module (is it configured? meson's summary says)"
    site="$work/stage$(dirname "$(dirname "$module")")"
    for file in __init__.py _api.py _errors.py _frameworks.py _version.py torch.py; do
        [ -f "$site/fftconv/$file" ] || fail "$site/fftconv/$file was not installed"
    done
    interpreter=$(grep -o "Python module: yes, for [^ ]*" "$build_root/meson-logs/meson-log.txt" | tail -1 | awk '{print $NF}')
    cd "$work"  # away from the source tree, so only the installed package can be imported
    run env PYTHONPATH="$site" "${interpreter:-python3}" -c '
import fftconv, sys
assert fftconv.__file__.startswith(sys.argv[1]), fftconv.__file__
assert fftconv.__version__ == sys.argv[2], (fftconv.__version__, sys.argv[2])
plan = fftconv.plan((2, 3, 40, 36), (8, 3, 5, 5))
print("installed", fftconv.__file__, fftconv.__version__, "->", plan)
assert plan.tile_extent >= 5
' "$site" "$version"
    ;;
*)
    fail "unknown mode '$mode' (pkg-config, pkg-config-nvcc, cmake, cmake-c, cmake-cuda, meson-subproject, meson-debug, pre-cxx20, python)"
    ;;
esac
echo "consumer $mode: ok"
