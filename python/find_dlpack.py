"""Prints where a usable dlpack.h is: the include directory, then the header
name to include from it. Used by python/meson.build when dlpack/dlpack.h is
not on the compiler's search path and -Ddlpack_include is not given.

Array libraries ship the header for their own extensions; their packages are
located without importing them (importing torch takes seconds)."""
import importlib.util
import os
import sys

# (package, include directory inside it, header name under that directory)
CANDIDATES = [
    ("torch", "include", "dlpack/dlpack.h"),
    ("torch", "include", "ATen/dlpack.h"),
    ("cupy", os.path.join("_core", "include", "cupy"), "dlpack/dlpack.h"),
    ("jaxlib", "include", "dlpack/dlpack.h"),
]

looked = []
for package, include, header in CANDIDATES:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        looked.append(f"{package} (not installed)")
        continue
    root = os.path.join(list(spec.submodule_search_locations)[0], include)
    path = os.path.join(root, header)
    if os.path.isfile(path):
        print(root)
        print(header)
        sys.exit(0)
    looked.append(path)
print("no dlpack.h found; looked at: " + ", ".join(looked), file=sys.stderr)
sys.exit(1)
