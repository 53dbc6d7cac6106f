#!/usr/bin/env python3
"""A program that includes fftconv/specialize.cuh must not compile the
library's own configurations again (compiled_configs.hpp declares them
extern template): its defined symbols hold run_specialized<...> only for the
configurations it adds itself.

    check_extern_instantiations.py PROGRAM OWN_CONFIG -- LIBRARY_CONFIG...

Configurations are K:C:T, or K:C:T:dw for depthwise. OWN_CONFIG is one the
program instantiates on purpose: it must be found defined (so the check can
fail).
"""
import subprocess
import sys


def symbol(config):
    k, c, t, *kind = config.split(":")
    # nm -C leaves out the depthwise member where it has its default (false)
    depthwise = ", true" if kind == ["dw"] else ""
    return f"run_specialized<fftconv::tile_config{{{k}, {c}, {t}{depthwise}}}>"


def main():
    program, own = sys.argv[1], sys.argv[2]
    library = sys.argv[sys.argv.index("--") + 1:]
    defined = subprocess.run(["nm", "-C", "--defined-only", program], check=True, capture_output=True,
                             text=True).stdout
    failures = []
    if symbol(own) not in defined:
        failures.append(f"{symbol(own)} is not defined in {program}: the check cannot see instantiations")
    for config in library:
        if symbol(config) in defined:
            failures.append(f"{program} compiled the library's configuration {config} again ({symbol(config)})")
    for f in failures:
        print("FAIL:", f)
    print(f"checked {len(library)} library configurations against {program}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
