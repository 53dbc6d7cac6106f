#!/usr/bin/env bash
# examples/consumers/check.sh MODE SOURCE_ROOT BUILD_ROOT — builds and runs a
# consumer of fftconv the way its README section says (a Meson test; the
# commands are echoed). MODE:
#   pkg-config   stage `meson install --destdir`, then g++ and gcc with only
#                $(pkg-config --cflags --libs fftconv): once with the prefix
#                redefined, once under PKG_CONFIG_SYSROOT_DIR
#   cmake        stage the install, then find_package(fftconv) from a C++
#                project and from a C-only project
#   meson-debug  configure a debug-build project that takes fftconv as a
#                subproject; fftconv's sources must compile with -O3, no -g/-G
#   python       stage the install, import the installed Python package from
#                the staged site directory and plan a problem with it
# The programs run after linking; without a GPU they check what they can
# and exit 0 (C++) or 77 (the C example), both accepted.
set -euo pipefail
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

stage() {
    run meson install -C "$build_root" --no-rebuild --quiet --destdir "$work/stage" >/dev/null
    prefix=$(meson introspect "$build_root" --buildoptions |
        python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
    libdir=$(meson introspect "$build_root" --buildoptions |
        python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')
    staged_prefix="$work/stage$prefix"
    staged_libdir="$staged_prefix/$libdir"
    [ -f "$staged_libdir/pkgconfig/fftconv.pc" ] || fail "no fftconv.pc under $staged_libdir/pkgconfig"
    # The staged library is not where the loader looks.
    export LD_LIBRARY_PATH="$staged_libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
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
    # 2. The staging area as a sysroot: fftconv's paths move into it, the
    #    CUDA toolkit's must not (it is not inside the sysroot).
    flags=$(PKG_CONFIG_SYSROOT_DIR="$work/stage" pkg-config --cflags --libs fftconv)
    echo "PKG_CONFIG_SYSROOT_DIR=... pkg-config --cflags --libs fftconv: $flags"
    cuda_root=$(pkg-config --variable=cuda_root fftconv)
    case "$flags" in
        *"$work/stage$cuda_root"*) fail "the sysroot was prepended to the CUDA path $cuda_root" ;;
    esac
    run g++ -std=c++20 "$consumers/use_fftconv.cpp" -o "$work/use_fftconv_sysroot" $flags
    run_program "$work/use_fftconv_sysroot"
    run gcc "$source_root/examples/c_api.c" -o "$work/c_api_sysroot" $flags
    run_program "$work/c_api_sysroot"
    ;;
cmake)
    stage
    for project in cmake cmake-c; do
        run cmake -S "$consumers/$project" -B "$work/$project" -DCMAKE_PREFIX_PATH="$staged_prefix" \
            -DCMAKE_BUILD_TYPE=Release >"$work/$project.configure.log" 2>&1 ||
            { cat "$work/$project.configure.log"; fail "cmake configure of $project"; }
        run cmake --build "$work/$project" --verbose >"$work/$project.build.log" 2>&1 ||
            { cat "$work/$project.build.log"; fail "cmake build of $project"; }
        grep -E "c\+\+ |cc |g\+\+|gcc" "$work/$project.build.log" | grep -v "^--" | tail -n 2
    done
    # C++20 must have come from the imported target, not from the consumer.
    grep -q -- "-std=gnu++20\|-std=c++20" "$work/cmake.build.log" || fail "the C++ consumer was not compiled as C++20"
    run_program "$work/cmake/use_fftconv"
    run_program "$work/cmake-c/c_api"
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
python)
    stage
    # Where the build installs the native module: <site>/fftconv/_native*.so.
    module=$(meson introspect "$build_root" --installed | python3 -c '
import json, sys
print(next((path for path in json.load(sys.stdin).values() if "/fftconv/_native" in path), ""))')
    [ -n "$module" ] || fail "the build installs no Python module (is it configured? meson's summary says)"
    site="$work/stage$(dirname "$(dirname "$module")")"
    for file in __init__.py _api.py _errors.py _frameworks.py torch.py; do
        [ -f "$site/fftconv/$file" ] || fail "$site/fftconv/$file was not installed"
    done
    interpreter=$(grep -o "Python module: yes, for [^ ]*" "$build_root/meson-logs/meson-log.txt" | tail -1 | awk '{print $NF}')
    cd "$work"  # away from the source tree, so only the installed package can be imported
    run env PYTHONPATH="$site" "${interpreter:-python3}" -c '
import fftconv, sys
assert fftconv.__file__.startswith(sys.argv[1]), fftconv.__file__
plan = fftconv.plan((2, 3, 40, 36), (8, 3, 5, 5))
print("installed", fftconv.__file__, "->", plan)
assert plan.tile_extent >= 5
' "$site"
    ;;
*)
    fail "unknown mode '$mode' (pkg-config, cmake, meson-debug, python)"
    ;;
esac
echo "consumer $mode: ok"
