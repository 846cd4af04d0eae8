#!/usr/bin/env bash
# One full GPU reading in one command, on a machine with no network:
#   profiling/gpu_check.sh [RESULTS_DIR] [--preflight] [--quick] [--pytest-timeout S]
#                          [--bench-budget S]
#   (for testing this script on a CPU machine: --allow-no-gpu --tests PATHS --bench-dir DIR)
#
# 1. preflight: a CUDA GPU must be visible to cupy, else exit 2 within seconds;
#    prints GPU, driver and CUDA versions (nvidia-smi, cupy's runtime) and package versions
# 2. the whole test suite, every tier, with the real GPU as the default device (as `make
#    test` on a GPU machine), under a time limit; its results table goes to tests.md
# 3. every profiling/bench_*.py in full mode, each under its own time slot
# 4. the gaps-to-goals table on stdout
# Results (per-benchmark JSON + logs, summary.md, tests.md, pytest log) go to RESULTS_DIR, by default
# profiling/results/<UTC date>-<gpu>. Uses the machine's python and packages and installs
# nothing: the checkout is put on PYTHONPATH. Exit status: 0 when the tests passed and every
# benchmark ran, 1 otherwise, 2 when there is no GPU.
#
# Time: whole run within 9 minutes on an H200: ~10 s preflight, pytest (limit 270 s: the
# suite takes ~3 min on 2 CPU cores, and a GPU machine has 16), then the benchmarks get what
# is left of 510 s (at least 120 s; --bench-budget fixes it), an equal share each, and ~10 s
# of summaries.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
REPO=$(pwd)

OUT_DIR=""
PREFLIGHT_ONLY=0
ALLOW_NO_GPU=0  # go on past a failed preflight: only to test the rest of this script on CPU
TESTS=""  # pytest paths; empty = the whole suite
BENCH_DIR=""
QUICK=""  # --quick: benchmarks at their small sizes (a fast smoke run of the whole chain)
PYTEST_TIMEOUT=270  # seconds: every tier; the cuda tests compile each kernel variant once
BENCH_BUDGET=""     # seconds for all benchmarks together; default: what is left of TOTAL_S
TOTAL_S=510         # the whole script, leaving 30 s of the 9 minutes for the unexpected
MIN_BENCH_S=120     # even after slow tests, every benchmark gets a real slot
PREFLIGHT_TIMEOUT=60  # cupy's first CUDA call can take a while on a cold driver
while [ $# -gt 0 ]; do
    case "$1" in
        --preflight) PREFLIGHT_ONLY=1 ;;
        --quick) QUICK=--quick ;;
        --allow-no-gpu) ALLOW_NO_GPU=1 ;;
        --tests) TESTS=$2; shift ;;
        --bench-dir) BENCH_DIR=$2; shift ;;
        --pytest-timeout) PYTEST_TIMEOUT=$2; shift ;;
        --bench-budget) BENCH_BUDGET=$2; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        -*) echo "gpu_check: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) OUT_DIR=$1 ;;
    esac
    shift
done

# The machine's python: $PYTHON if set, else the checkout's .venv when there is one, else python3.
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
elif [ -x "$REPO/.venv/bin/python" ]; then PY="$REPO/.venv/bin/python"
else PY=python3
fi
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

echo "== gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) in $REPO with $PY"

# -- 1. preflight: fail fast with no GPU ----------------------------------------------------
if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,clocks.max.sm,ecc.mode.current --format=csv \
        || timeout 20 nvidia-smi || echo "nvidia-smi failed (continuing: cupy decides)"
else
    echo "nvidia-smi: not found"
fi
GPU_SLUG=$(timeout "$PREFLIGHT_TIMEOUT" "$PY" - <<'EOF'
import importlib.util, platform, sys

def out(msg):
    print(msg, file=sys.stderr)

if importlib.util.find_spec("cupy") is None:
    out("gpu_check: NO GPU: cupy is not installed for " + sys.executable)
    sys.exit(2)
import cupy
try:
    n = cupy.cuda.runtime.getDeviceCount()
except Exception as exc:
    out(f"gpu_check: NO GPU: cupy {cupy.__version__} sees no CUDA device "
        f"({type(exc).__name__}: {exc})")
    sys.exit(2)
if n < 1:
    out("gpu_check: NO GPU: no CUDA device")
    sys.exit(2)
rt = cupy.cuda.runtime
props = rt.getDeviceProperties(0)
name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
ver = lambda v: f"{v // 1000}.{(v % 1000) // 10}"
out(f"GPU 0 of {n}: {name}, {props['totalGlobalMem'] / 2**30:.1f} GiB, "
    f"sm_{props['major']}{props['minor']}, {props['multiProcessorCount']} SMs")
out(f"CUDA driver {ver(rt.driverGetVersion())}, CUDA runtime {ver(rt.runtimeGetVersion())}")
versions = [f"python {platform.python_version()}", f"cupy {cupy.__version__}"]
for mod in ("numpy", "torch", "pytest", "hypothesis"):
    if importlib.util.find_spec(mod) is None:
        versions.append(f"{mod} absent")
    else:
        versions.append(f"{mod} {__import__(mod).__version__}")
if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
    versions.append("cuda-bindings absent (expandable segments: cudaMalloc segments instead)")
else:
    import cuda.bindings
    versions.append(f"cuda-bindings {getattr(cuda.bindings, '__version__', '?')}")
out(", ".join(versions))
print("".join(c if c.isalnum() else "-" for c in name.lower()).strip("-"))
EOF
)
status=$?
if [ $status -ne 0 ]; then
    [ $status -eq 124 ] && echo "gpu_check: NO GPU: the CUDA probe hung for ${PREFLIGHT_TIMEOUT} s" >&2
    if [ $ALLOW_NO_GPU -eq 0 ]; then
        echo "gpu_check: this script needs a CUDA GPU visible to cupy; nothing was run." >&2
        echo "gpu_check: on a machine without one, run 'make test' and 'make bench' instead." >&2
        exit 2
    fi
    echo "gpu_check: --allow-no-gpu: going on without a GPU (a test of this script only)" >&2
    GPU_SLUG=cpu
fi
[ $PREFLIGHT_ONLY -eq 1 ] && { echo "gpu_check: preflight ok ($GPU_SLUG)"; exit 0; }

OUT_DIR=${OUT_DIR:-profiling/results/$(date -u +%Y%m%d)-$GPU_SLUG}
mkdir -p "$OUT_DIR" || exit 2
echo "results: $OUT_DIR"
failed=0

# -- 2. the whole suite on the GPU ---------------------------------------------------------
echo "== pytest, every tier, cuda the default device (limit ${PYTEST_TIMEOUT} s)"
# A real GPU makes cuda the default device and the cuda tier run; the fallback is off so
# no test silently lands on the emulated device. $TESTS is a list of paths: split on purpose.
# shellcheck disable=SC2086
env -u GPU_TENSOR_FALLBACK -u GPU_TENSOR_DEFAULT_DEVICE \
    timeout --kill-after=10 "$PYTEST_TIMEOUT" "$PY" -m pytest -q -p no:cacheprovider -rs \
    --junitxml="$OUT_DIR/pytest.xml" $TESTS 2>&1 | tee "$OUT_DIR/pytest.log"
rc=${PIPESTATUS[0]}
case $rc in
    0) echo "pytest: passed" ;;
    5) echo "pytest: no tests collected" ;;
    124|137) echo "pytest: TIMED OUT after ${PYTEST_TIMEOUT} s"; failed=1 ;;
    *) echo "pytest: FAILED (exit $rc)"; failed=1 ;;
esac
"$PY" - "$OUT_DIR/pytest.xml" "$OUT_DIR/tests.md" <<'PYEOF' || failed=1
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    sys.exit(0)  # pytest was killed before writing it: the log says why
suites = [root] if root.tag == "testsuite" else list(root)
rows = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
secs = sum(float(s.get("time", 0)) for s in suites)
with open(sys.argv[2], "w") as f:
    f.write("| tests | passed | failed | errors | skipped | seconds |\n|---|---|---|---|---|---|\n")
    passed = rows["tests"] - rows["failures"] - rows["errors"] - rows["skipped"]
    f.write(f"| {rows['tests']} | {passed} | {rows['failures']} | {rows['errors']} | "
            f"{rows['skipped']} | {secs:.0f} |\n")
print(open(sys.argv[2]).read())
PYEOF

# -- 3. every benchmark, full sizes, each in its own time slot ------------------------------
if [ -z "$BENCH_BUDGET" ]; then
    BENCH_BUDGET=$(( TOTAL_S - SECONDS - 10 ))
    [ "$BENCH_BUDGET" -lt "$MIN_BENCH_S" ] && BENCH_BUDGET=$MIN_BENCH_S
fi
echo "== benchmarks (${BENCH_BUDGET} s in all; ${SECONDS} s spent so far)"
"$PY" -m profiling.run_all $QUICK ${BENCH_DIR:+--bench-dir "$BENCH_DIR"} --out "$OUT_DIR" \
    --total-budget "$BENCH_BUDGET" 2>&1 \
    | tee "$OUT_DIR/run_all.log"
rc=${PIPESTATUS[0]}
[ $rc -ne 0 ] && { echo "benchmarks: some did not finish cleanly (run_all exit $rc)"; failed=1; }

# -- 4. gaps to goals ------------------------------------------------------------------------
echo
"$PY" -m profiling.report "$OUT_DIR" || failed=1
echo
echo "gpu_check: results in $OUT_DIR (summary.md, *.json, logs); exit $failed"
exit $failed
