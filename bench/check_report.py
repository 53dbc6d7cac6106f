"""Checks the files test_report wrote: the JSON parses and holds the texts
(invalid UTF-8 replaced), the SVG is well-formed XML showing the escaped
texts, the Markdown table rows keep their cell count.
Usage: check_report.py TEST_REPORT WORK_DIR"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

program, work = sys.argv[1:]
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
if summary.get("fftconv-generic", {}).get("total_mean_ms") != 4.0:
    failures.append(f"json summary has no fftconv-generic total of 4.0: {data['summary']!r}")
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
except ElementTree.ParseError as error:
    failures.append(f"svg is not well-formed XML: {error}")

markdown_rows = []
for line in open(prefix + ".md", encoding="utf-8", errors="replace"):
    if line.startswith("| 16x16"):
        markdown_rows.append(line)
        cells = line.replace("\\|", "").count("|")
        if cells != 11:
            failures.append(f"markdown row has {cells - 1} cells: {line!r}")
if not any("| fftconv-generic |" in line and "2.0000×" in line for line in markdown_rows):
    failures.append(f"markdown: no fftconv-generic row at 2.0000x fftconv's time: {markdown_rows!r}")

print("\n".join(failures) or "report files: ok")
sys.exit(1 if failures else 0)
