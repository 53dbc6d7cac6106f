"""The version is written once, in meson.build's project(version : ...):
every other place takes it from there. Checks the generated files of the
build (fftconv/version.h, fftconv.pc, fftconvConfigVersion.cmake, the Python
package's _version.py when the module is configured), that pyproject.toml
declares the version dynamic (meson-python reads meson.build) and that no
source file writes the version literally.
Usage: check_version_sources.py SOURCE_ROOT BUILD_ROOT VERSION"""
import os
import re
import subprocess
import sys

source_root, build_root, version = sys.argv[1:]
major, minor, patch = version.split(".")
failures = []


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def expect(label, found, expected):
    print(f"{label}: {found!r}")
    if found != expected:
        failures.append(f"{label} is {found!r}, expected {expected!r}")


header = read(os.path.join(build_root, "include", "fftconv", "version.h"))
for name, value in (("MAJOR", major), ("MINOR", minor), ("PATCH", patch)):
    m = re.search(rf"^#define FFTCONV_VERSION_{name} (\S+)$", header, re.M)
    expect(f"version.h FFTCONV_VERSION_{name}", m and m.group(1), value)
m = re.search(r'^#define FFTCONV_VERSION_STRING "([^"]*)"$', header, re.M)
expect("version.h FFTCONV_VERSION_STRING", m and m.group(1), version)

pc = read(os.path.join(build_root, "meson-private", "fftconv.pc"))
m = re.search(r"^Version: (\S+)$", pc, re.M)
expect("fftconv.pc Version", m and m.group(1), version)

cmake = read(os.path.join(build_root, "cmake", "fftconvConfigVersion.cmake"))
m = re.search(r'set\(PACKAGE_VERSION "([^"]*)"\)', cmake)
expect("fftconvConfigVersion.cmake PACKAGE_VERSION", m and m.group(1), version)

python_version = os.path.join(build_root, "python", "fftconv", "_version.py")
if os.path.exists(python_version):
    scope = {}
    exec(read(python_version), scope)
    expect("python fftconv/_version.py __version__", scope.get("__version__"), version)
else:
    print("python: the module is not configured in this build (meson's summary says why); _version.py not checked")

pyproject = read(os.path.join(source_root, "pyproject.toml"))
project = re.search(r"^\[project\]$(.*?)(?=^\[|\Z)", pyproject, re.M | re.S)
project = project.group(1) if project else ""
if re.search(r"^version\s*=", project, re.M):
    failures.append("pyproject.toml [project] writes a version: declare it dynamic (meson-python reads meson.build)")
if not re.search(r"^dynamic\s*=\s*\[[^\]]*\"version\"", project, re.M):
    failures.append("pyproject.toml [project] does not declare dynamic = [\"version\"]")

# No tracked source outside meson.build writes the version itself.
tracked = subprocess.run(["git", "-C", source_root, "ls-files", "include", "src", "python", "cmake", "bench",
                          "pyproject.toml", "examples"], capture_output=True, text=True)
if tracked.returncode == 0:
    literal = re.compile(r"(?<![\d.])" + re.escape(version) + r"(?![\d.])")
    for path in tracked.stdout.split():
        full = os.path.join(source_root, path)
        try:
            text = read(full)
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if literal.search(line):
                failures.append(f"{path}:{number} writes the version {version} itself: {line.strip()}")
else:
    print("not a git checkout: the sources' literals are not checked")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
