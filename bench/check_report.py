"""Checks the files test_report wrote: the JSON parses and holds the texts
(invalid UTF-8 replaced), the SVG is well-formed XML showing the escaped
texts, the Markdown table rows keep their cell count, a bfloat16 run's files
carry its element type (and a float32 run's none), and fftconv_version is
the library's version (meson.build's project version).
Usage: check_report.py TEST_REPORT WORK_DIR VERSION"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

program, work, version = sys.argv[1:]
os.makedirs(work, exist_ok=True)
prefix = os.path.join(work, "report")
subprocess.run([program, prefix], check=True)
failures = []

data = json.load(open(prefix + ".json", encoding="utf-8"))
if data["gpu"] != 'GPU <"quoted"> & co':
    failures.append(f"json gpu = {data['gpu']!r}")
if data["commit"] != "abc\"def'<g>|`h\n\x01\t\ufffd":
    failures.append(f"json commit = {data['commit']!r}")
algorithms = data["shapes"][0]["algorithms"]
if ([a["name"] for a in algorithms] != ["fftconv", "fftconv-generic", "cudnn"]
        or algorithms[0]["samples_ms"] != [1.0, 2.0, 3.0] or algorithms[1]["mean_ms"] != 4.0):
    failures.append(f"json algorithms = {algorithms!r}")
if algorithms[2]["ran"] is not False or "mean_ms" in algorithms[2]:
    failures.append(f"json: an algorithm that did not run has figures: {algorithms[2]!r}")
summary = {row["name"]: row for row in data["summary"]}
# The depthwise shape runs no compiled configuration, so has no fftconv-generic row.
if (summary.get("fftconv", {}).get("shapes") != 2
        or summary.get("fftconv-generic (incomplete)", {}).get("total_mean_ms") != 4.0):
    failures.append(f"json summary: not fftconv over 2 shapes and an incomplete fftconv-generic total of 4.0: "
                    f"{data['summary']!r}")
shapes = data["shapes"]
dense, depthwise = shapes if len(shapes) == 2 else ({}, {})
expected_dense = {"height": 16, "width": 16, "kernel_extent": 5, "kernel_height": 5, "kernel_width": 5,
                  "padding_height": 0, "padding_width": 0, "groups": 1, "bias": False}
expected_depthwise = {"batch": 4, "in_channels": 8, "out_channels": 8, "height": 24, "width": 20,
                      "kernel_height": 13, "kernel_width": 3, "padding_height": 6, "padding_width": 1,
                      "groups": 8, "bias": True, "seed": 8}
for shape, expected in ((dense, expected_dense), (depthwise, expected_depthwise)):
    wrong = {key: shape.get(key) for key, value in expected.items() if shape.get(key) != value}
    if wrong:
        failures.append(f"json shape {shape!r}: expected {expected!r}, differs at {wrong!r}")
if dense.get("pass") != "forward":
    failures.append(f"json: pass {dense.get('pass')!r}, expected 'forward'")
if "kernel_extent" in depthwise:
    failures.append("json: a rectangular kernel has a kernel_extent (schema 1's key is for square kernels only)")
if data.get("fftconv_version") != version:
    failures.append(f"json: fftconv_version {data.get('fftconv_version')!r}, expected {version!r}")
if f"fftconv {version}," not in open(prefix + ".md", encoding="utf-8").read():
    failures.append(f"markdown: no 'fftconv {version},' in the header")
if data.get("schema_version") != 4 or data.get("suite") != "custom":
    failures.append(f"json: schema_version {data.get('schema_version')!r}, suite {data.get('suite')!r}")
for key in ("tool", "driver", "cuda_runtime", "cufft", "cublas", "cudnn", "date", "repetitions", "l2_flush",
            "l2_flush_bytes", "reuse_filter", "accuracy_bar", "shapes", "summary"):
    if key not in data:
        failures.append(f"json: no {key!r}")

try:
    svg = ElementTree.parse(prefix + ".svg").getroot()
    texts = " ".join("".join(element.itertext()) for element in svg.iter())
    if 'GPU <"quoted"> & co' not in texts:
        failures.append("svg: the GPU name is not shown as given")
    if "fftconv-generic" not in texts:
        failures.append("svg: no fftconv-generic in the legend")
    if "24x20 K13x3 C8 B4 dw pad6x1 +bias" not in texts:
        failures.append("svg: the depthwise shape's label is not shown")
except ElementTree.ParseError as error:
    failures.append(f"svg is not well-formed XML: {error}")

markdown_rows = []
for line in open(prefix + ".md", encoding="utf-8", errors="replace"):
    if line.startswith("| 16x16") or line.startswith("| 24x20"):
        markdown_rows.append(line)
        cells = line.replace("\\|", "").count("|")
        if cells != 12:
            failures.append(f"markdown row has {cells - 1} cells: {line!r}")
if not any(line.startswith("| 16x16 K5 C2->3 B1 | fftconv |") for line in markdown_rows):
    failures.append(f"markdown: no row labelled '16x16 K5 C2->3 B1' (dense, unpadded, no bias): {markdown_rows!r}")
if not any(line.startswith("| 24x20 K13x3 C8 B4 dw pad6x1 +bias | fftconv |") for line in markdown_rows):
    failures.append(f"markdown: no row labelled '24x20 K13x3 C8 B4 dw pad6x1 +bias': {markdown_rows!r}")
if not any(line.startswith("| 24x20 K13x3 C8 B4 dw pad6x1 +bias | cudnn | not available") for line in markdown_rows):
    failures.append(f"markdown: the algorithm that did not run has no row saying why: {markdown_rows!r}")
if not any("| fftconv-generic |" in line and "2.0000×" in line for line in markdown_rows):
    failures.append(f"markdown: no fftconv-generic row at 2.0000x fftconv's time: {markdown_rows!r}")

# A float32 run writes no element keys (absent means float32); a bfloat16 run
# writes them, at the top, in the bar and in every algorithm, and judges each
# row by its own output's type.
if "element" in data or any("element" in a for shape in data["shapes"] for a in shape["algorithms"]):
    failures.append("json: a float32 run has an 'element' key")
half = json.load(open(prefix + "-bfloat16.json", encoding="utf-8"))
if half.get("element") != "bfloat16":
    failures.append(f"bfloat16 json: element {half.get('element')!r}")
half_bar = half.get("accuracy_bar", {})
if half_bar.get("max_relative_l2_bfloat16") != 2 ** -8 or "elementwise_bfloat16" not in half_bar:
    failures.append(f"bfloat16 json: accuracy_bar {half_bar!r}")
half_algorithms = half["shapes"][0]["algorithms"]
rows = {a["name"]: a for a in half_algorithms}
if [a["name"] for a in half_algorithms] != ["fftconv", "fftconv (cast passes)", "fftconv-generic", "cudnn",
                                            "cudnn_fastest"]:
    failures.append(f"bfloat16 json algorithms: {[a['name'] for a in half_algorithms]!r}")
elif (rows["fftconv"].get("element") != "bfloat16" or rows["cudnn_fastest"].get("element") != "float32"
      or rows["fftconv (cast passes)"].get("passes") is not True or rows["cudnn_fastest"].get("passes") is not False):
    failures.append(f"bfloat16 json: elements or bars of the rows: {half_algorithms!r}")
half_md = open(prefix + "-bfloat16.md", encoding="utf-8").read()
if "Activations (x and y; dy and dx) are bfloat16" not in half_md:
    failures.append("bfloat16 markdown: the header does not say the activations' type")
if not any(line.startswith("| 16x16 K5 C2->3 B1 | fftconv (cast passes) |") and line.count("|") == 12
           for line in half_md.splitlines()):
    failures.append("bfloat16 markdown: no 12-cell row for fftconv (cast passes)")
try:
    half_svg = ElementTree.parse(prefix + "-bfloat16.svg").getroot()
    if "fftconv (cast passes)" not in " ".join("".join(e.itertext()) for e in half_svg.iter()):
        failures.append("bfloat16 svg: no fftconv (cast passes) in the legend")
except ElementTree.ParseError as error:
    failures.append(f"bfloat16 svg is not well-formed XML: {error}")

print("\n".join(failures) or "report files: ok")
sys.exit(1 if failures else 0)
