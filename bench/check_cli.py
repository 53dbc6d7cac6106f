"""Runs fftconv-bench with a command line and checks its exit status and
that the expected text appears (stdout for --help, stderr otherwise).
Usage: check_cli.py BENCH EXPECTED_STATUS EXPECTED_TEXT ARGS..."""
import subprocess
import sys

bench, expected_status, expected_text, *arguments = sys.argv[1:]
result = subprocess.run([bench, *arguments], capture_output=True, text=True, timeout=60)
stream = result.stdout if arguments == ["--help"] else result.stderr
print(f"$ fftconv-bench {' '.join(arguments)}\nexit {result.returncode}\n"
      f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
if result.returncode != int(expected_status):
    sys.exit(f"FAIL: exit status {result.returncode}, expected {expected_status}")
if expected_text not in stream:
    sys.exit(f"FAIL: {expected_text!r} is not in the output it should be in")
if "no CUDA GPU" in result.stderr:
    sys.exit("FAIL: the bench looked for a GPU before rejecting the command line")
print("ok")
