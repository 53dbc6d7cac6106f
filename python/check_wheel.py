"""python/check_wheel.py SOURCE_ROOT VERSION WORK_DIR [--nvcc NVCC] [--skip REASON]

The wheel check (Meson test 'wheel', python/meson.build). Run by the
interpreter the module is built for, it does what docs/python-install.md
says, on a copy of SOURCE_ROOT's files (git's tracked and untracked ones):

1. a venv of this interpreter with --system-site-packages, whose pip builds
   the wheel with --no-build-isolation (pyproject.toml: meson-python,
   python_only); the build is kept short with a native file giving
   gpu_arch = 90 and no compiled configurations;
2. fails unless the wheel holds the fftconv package's .py files, one native
   module and the dist-info, nothing else (no headers, .pc, CMake files,
   libfftconv, bench, bundled libraries), its version is VERSION and torch
   is an optional extra; the native module's RUNPATH must not point into
   the build;
3. installs it into the venv (no index, no dependencies) and imports it from
   outside the source tree (no GPU needed): __version__ must be VERSION and
   the package must be the venv's.

Exit 77 (skipped) with the reason where pip, meson-python, venv/ensurepip,
patchelf or ninja are missing, or --skip says why the module cannot be built.
"""
import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def fail(reason):
    print(f"FAIL: {reason}")
    sys.exit(1)


def run(*args, **kwargs):
    print("+ " + " ".join(str(a) for a in args), flush=True)
    result = subprocess.run([str(a) for a in args], **kwargs)
    if result.returncode != 0:
        if kwargs.get("capture_output"):
            print(result.stdout, result.stderr, sep="")
        fail(f"{os.path.basename(str(args[0]))} {' '.join(str(a) for a in args[1:3])} ... exited {result.returncode}")
    return result


def copy_sources(source_root, destination):
    """The files a fresh clone has (plus untracked, not ignored ones): no
    build directories, no .mesonpy-* left by another pip run."""
    listed = None
    if shutil.which("git") and os.path.exists(os.path.join(source_root, ".git")):
        result = subprocess.run(["git", "-C", source_root, "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True)
        if result.returncode == 0:
            listed = [p for p in result.stdout.decode().split("\0") if p]
    if listed is None:
        ignored = shutil.ignore_patterns("build*", ".mesonpy*", "__pycache__", ".git", "device-*")
        shutil.copytree(source_root, destination, ignore=ignored, symlinks=True)
        return
    for relative in listed:
        origin = os.path.join(source_root, relative)
        if not os.path.lexists(origin):
            continue  # deleted in the working tree, not yet in the index
        target = os.path.join(destination, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(origin):
            os.symlink(os.readlink(origin), target)
        elif os.path.isfile(origin):
            shutil.copy2(origin, target)


def check_contents(wheel, version):
    """Returns the native module's name in the wheel; fails on anything else
    than the package, its native module and the dist-info."""
    dist_info = f"fftconv-{version}.dist-info/"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    with zipfile.ZipFile(wheel) as archive:
        entries = archive.infolist()
        names = [e.filename for e in entries]
        print(f"{wheel.split('/')[-1]}: {os.path.getsize(wheel)} bytes, {len(names)} files")
        for e in entries:
            print(f"  {e.file_size:>10}  {e.filename}")
        metadata = archive.read(dist_info + "METADATA").decode() if dist_info + "METADATA" in names else None

    problems = []
    natives = []
    for name in names:
        base = name.rsplit("/", 1)[-1]
        if re.search(r"\.(h|hpp|cuh|hh|hxx|inl)$", name) or "/include/" in "/" + name:
            problems.append(f"{name}: a header")
        elif name.endswith(".pc") or "/pkgconfig/" in "/" + name:
            problems.append(f"{name}: a pkg-config file")
        elif name.endswith(".cmake") or "/cmake/" in "/" + name:
            problems.append(f"{name}: a CMake file")
        elif re.match(r"libfftconv\.(so|a)", base):
            problems.append(f"{name}: the C++ library (the native module carries its objects)")
        elif "fftconv-bench" in name or "/bin/" in "/" + name or ".data/scripts/" in name:
            problems.append(f"{name}: a program")
        elif name.startswith(".fftconv.mesonpy.libs/"):
            problems.append(f"{name}: a bundled library")
        elif name.startswith(dist_info):
            if base not in ("METADATA", "WHEEL", "RECORD", "LICENSE", "entry_points.txt"):
                problems.append(f"{name}: unexpected in the dist-info")
        elif re.fullmatch(r"fftconv/[A-Za-z_][A-Za-z0-9_]*\.py", name):
            pass
        elif name == "fftconv/_native" + suffix:
            natives.append(name)
        else:
            problems.append(f"{name}: neither the fftconv package's Python sources, its native module"
                            f" (fftconv/_native{suffix}) nor the dist-info")
    for required in ["fftconv/__init__.py", "fftconv/_version.py", "fftconv/torch.py"]:
        if required not in names:
            problems.append(f"{required} is missing")
    if len(natives) != 1:
        problems.append(f"expected one native module fftconv/_native{suffix}, found {natives}")
    if metadata is None:
        problems.append(f"no {dist_info}METADATA (is the wheel's version {version}?)")
    else:
        headers = re.findall(r"^([A-Za-z-]+): (.*)$", metadata, flags=re.M)
        meta_version = [v for k, v in headers if k == "Version"]
        if meta_version != [version]:
            problems.append(f"METADATA Version {meta_version}, meson.build says {version}")
        requires = [v for k, v in headers if k == "Requires-Dist"]
        for requirement in requires:
            if "extra ==" not in requirement:
                problems.append(f"Requires-Dist {requirement!r} is not optional (torch must be an extra)")
        if not any(r.startswith("torch") and "extra == \"torch\"" in r.replace("'", "\"") for r in requires):
            problems.append(f"no optional torch requirement (extra 'torch') in METADATA: {requires}")
    if problems:
        fail("the wheel holds more or less than the package and its native module:\n  " + "\n  ".join(problems))
    return natives[0]


def check_runpath(wheel, native, work):
    """The native module finds the CUDA libraries through its RUNPATH; it must
    not name the build tree (a wheel built from the build tree's binary)."""
    readelf = shutil.which("readelf")
    if readelf is None:
        print("note: no readelf, the native module's RUNPATH is not checked")
        return
    with zipfile.ZipFile(wheel) as archive:
        extracted = archive.extract(native, os.path.join(work, "unpacked"))
    dynamic = subprocess.run([readelf, "-d", extracted], capture_output=True, text=True, check=True).stdout
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\).*\[(.*)\]", dynamic)
    print(f"{native}: RUNPATH {runpath}")
    for entry in ":".join(runpath).split(":"):
        if entry and os.path.realpath(entry).startswith(os.path.realpath(work)):
            fail(f"{native}'s RUNPATH names the build tree: {entry}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source_root")
    parser.add_argument("version")
    parser.add_argument("work")
    parser.add_argument("--nvcc", help="nvcc the project is built with: its folder goes first on PATH")
    parser.add_argument("--skip", help="skip, saying why")
    args = parser.parse_args()
    if args.skip:
        skip(args.skip)

    missing = []
    for module, package in [("pip", "python3-pip"), ("mesonpy", "python3-mesonpy"), ("ensurepip", "python3-venv")]:
        if importlib.util.find_spec(module) is None:
            missing.append(f"{module} for {sys.executable} (Debian: {package})")
    for program, package in [("patchelf", "patchelf"), ("meson", "meson"), ("ninja", "ninja-build")]:
        if shutil.which(program) is None:
            missing.append(f"{program} (Debian: {package})")
    if missing:
        skip("cannot build the wheel here, missing: " + ", ".join(missing))

    env = dict(os.environ)
    if args.nvcc:
        env["PATH"] = os.path.dirname(args.nvcc) + os.pathsep + env.get("PATH", "")
    # Nothing of the calling build's or test run's environment (meson test
    # sets MALLOC_PERTURB_), and pip stays offline: no version check, no
    # index (the install below says --no-index; the build needs nothing).
    for name in ["PYTHONPATH", "PIP_REQUIRE_VIRTUALENV", "VIRTUAL_ENV", "MESON_BUILD_ROOT", "MESON_SOURCE_ROOT",
                 "MALLOC_PERTURB_"]:
        env.pop(name, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    source = os.path.join(work, "source")
    copy_sources(os.path.abspath(args.source_root), source)
    if not os.path.isfile(os.path.join(source, "pyproject.toml")):
        fail(f"no pyproject.toml in the copy of {args.source_root}")

    venv = os.path.join(work, "venv")
    run(sys.executable, "-m", "venv", "--system-site-packages", venv, env=env)
    venv_python = os.path.join(venv, "bin", "python")

    # The CI build: one architecture and no compiled configurations (the
    # import and version need none). One --config-settings value only: pip
    # 23.0 (Debian 12) keeps the last of a repeated key, so the options go in
    # a native file ([project options], later native files override).
    options = os.path.join(work, "wheel-options.ini")
    with open(options, "w") as f:
        f.write("[project options]\ngpu_arch = '90'\nconfigs = []\n")
    dist = os.path.join(work, "dist")
    started = time.monotonic()
    run(venv_python, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "-w", dist,
        f"--config-settings=setup-args=--native-file={options}", source, env=env, cwd=work)
    print(f"wheel built in {time.monotonic() - started:.0f} s", flush=True)

    wheels = [w for w in os.listdir(dist) if w.endswith(".whl")]
    if len(wheels) != 1:
        fail(f"expected one wheel in {dist}, found {wheels}")
    wheel = os.path.join(dist, wheels[0])
    if not wheels[0].startswith(f"fftconv-{args.version}-"):
        fail(f"the wheel {wheels[0]} is not version {args.version} (meson.build)")
    native = check_contents(wheel, args.version)
    check_runpath(wheel, native, work)

    run(venv_python, "-m", "pip", "install", "--no-deps", "--no-index", wheel, env=env, cwd=work)
    probe = ("import fftconv, sys; print(fftconv.__version__); print(fftconv.__file__); "
             "print(fftconv.compiled_configs()); print(fftconv.device_count())")
    result = run(venv_python, "-c", probe, env=env, cwd=work, capture_output=True, text=True)
    print(result.stdout, end="")
    lines = result.stdout.splitlines()
    if lines[0] != args.version:
        fail(f"fftconv.__version__ is {lines[0]}, meson.build says {args.version}")
    site = subprocess.run([venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    if not os.path.realpath(lines[1]).startswith(os.path.realpath(site)):
        fail(f"imported {lines[1]}, not the venv's ({site})")

    shutil.rmtree(source, ignore_errors=True)  # the build tree in it; the wheel and venv stay
    print(f"OK: {wheels[0]} holds only the package and its native module, and imports in a venv")


if __name__ == "__main__":
    main()
