"""The layers of src/ and include/fftconv/detail/ include only downwards.

Layers, top to bottom: api, dispatch, backward, direct, pipeline, kernels,
tiling, runtime (docs/architecture.md). A file in one may include files of
its own layer and of the layers below it, and the public vocabulary headers
(fftconv/config.hpp, element_type.hpp, problem.hpp, status.hpp, version.hpp,
workspace_allocator.hpp). The public dispatch headers (dispatch.hpp,
compiled_configs.hpp, specialize.cuh) belong to dispatch, the rest of the
public API to api.
Prints each include that goes upwards and exits 1 if there is one.
"""
import os
import re
import sys

LAYERS = ["api", "dispatch", "backward", "direct", "pipeline", "kernels", "tiling", "runtime"]
DISPATCH_API = {"dispatch.hpp", "compiled_configs.hpp", "specialize.cuh"}
VOCABULARY = {"config.hpp", "element_type.hpp", "problem.hpp", "status.hpp", "version.hpp", "version.h", "workspace_allocator.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of_include(path):
    """The layer an include path names, 'public' for fftconv/*.hpp, or None (not ours)."""
    parts = path.split("/")
    if parts[0] == "fftconv":
        if len(parts) == 2:
            if parts[1] in VOCABULARY:
                return None
            return "dispatch" if parts[1] in DISPATCH_API else "api"
        if parts[1] == "detail" and len(parts) >= 4:
            return parts[2]
        return None
    return parts[0] if parts[0] in LAYERS else None


def main(root):
    bad = []
    checked = 0
    for base, strip in ((os.path.join(root, "src"), "src"), (os.path.join(root, "include", "fftconv", "detail"), "detail")):
        for folder, _, files in os.walk(base):
            for name in files:
                path = os.path.join(folder, name)
                layer = os.path.relpath(path, base).split(os.sep)[0]
                if layer not in LAYERS:
                    continue
                checked += 1
                rank = LAYERS.index(layer)
                for included in INCLUDE.findall(open(path, encoding="utf-8").read()):
                    target = layer_of_include(included)
                    if target is None:
                        continue
                    if LAYERS.index(target) < rank:
                        bad.append(f"{os.path.relpath(path, root)} ({layer}) includes {included} ({target}, a layer above)")
    for line in bad:
        print(line)
    print(f"{checked} files checked, {len(bad)} upward includes")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
