"""profiling/update_readme.py on a temporary README copy and temporary results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiling import update_readme as ur

REPO_ROOT = Path(__file__).resolve().parents[2]
BEFORE = "# project\n\nintro\n\n## Performance\n\n"
AFTER = "\n\n## Later section\n\nunchanged | text\n"


def fake_result(bench, device, started_at, rows, ceilings=None):
    """A results file in the harness's schema; numbers are fixtures, not measurements."""
    gpu = {"name": "Test GPU 9000", "driver": "999.1", "cuda_runtime": "13.0"}
    return {
        "schema": 1,
        "benchmark": bench,
        "device": device,
        "quick": False,
        "complete": True,
        "started_at": started_at,
        "machine": {
            "date": started_at,
            "cpu": "cpu",
            "numpy": "2.0",
            "cupy": "14.0",
            "torch": None,
            "gpu": gpu if device == "cuda" else None,
        },
        "peers": {},
        "ceilings": ceilings or {},
        "rows": rows,
        "warnings": [],
    }


COPY_ROWS = [
    {
        "case": "transpose 2D fp32",
        "impl": "gpu_tensor",
        "seconds": 0.002,
        "nbytes": 8 << 30,
        "gbps": 4295.0,
        "ceiling_gbps": 4500.0,
        "ceiling_kind": "d2d",
        "pct_of_ceiling": 0.954,
    },
    {
        "case": "transpose 2D fp32",
        "impl": "cupy",
        "seconds": 0.005,
        "nbytes": 8 << 30,
        "gbps": 1718.0,
    },
    {"case": "transpose 2D fp32", "impl": "torch", "skipped": "torch is not installed"},
]


def write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def readme(tmp_path):
    p = tmp_path / "README.md"
    p.write_text(f"{BEFORE}{ur.START}\nold text\n{ur.END}{AFTER}")
    return p


def run(readme, results, *extra):
    return ur.main(["--readme", str(readme), "--results", str(results), *extra])


def test_no_gpu_run_says_so(readme, tmp_path):
    results = tmp_path / "results"
    write(
        results / "copy-cpu.json",
        fake_result("copy", "cpu", "2026-01-01T00:00:00+00:00", COPY_ROWS[:2]),
    )
    write(
        results / "tmp" / "copy-gpu.json",  # quick runs under tmp/ never reach the README
        fake_result("copy", "cuda", "2026-01-02T00:00:00+00:00", COPY_ROWS),
    )
    assert run(readme, results) == 0
    text = readme.read_text()
    assert text == f"{BEFORE}{ur.START}\n{ur.NO_GPU_TEXT}\n{ur.END}{AFTER}"
    assert "GB/s" not in text


def test_gpu_run_fills_only_the_marked_section(readme, tmp_path):
    results = tmp_path / "results"
    ceilings = {
        "d2d": {"gbps": 4500.0, "convention": "read+write"},
        "h2d": {"gbps": 55.0, "convention": "bytes moved once"},
    }
    write(
        results / "old-run" / "copy.json",
        fake_result("copy", "cuda", "2026-01-01T00:00:00+00:00", COPY_ROWS[:1]),
    )
    write(
        results / "new-run" / "copy.json",
        fake_result("copy", "cuda", "2026-03-04T05:06:07+00:00", COPY_ROWS, ceilings),
    )
    assert run(readme, results) == 0
    text = readme.read_text()
    assert text.startswith(BEFORE + ur.START + "\n") and text.endswith(ur.END + AFTER)
    section = text[len(BEFORE + ur.START) : -len(ur.END + AFTER)]
    assert "2026-03-04" in section and "2026-01-01" not in section  # the newest run only
    assert "Test GPU 9000" in section and "driver 999.1" in section and "cupy 14.0" in section
    assert "device-to-device copy 4,500.0 GB/s (read+write)" in section
    assert "pinned H2D 55.0 GB/s" in section
    row = next(line for line in section.splitlines() if "transpose 2D fp32" in line)
    assert "4,295.0 GB/s" in row and "95.4% of d2d" in row and "cupy 5.000 ms" in row
    assert "(gpu_tensor 2.50× faster)" in row
    assert "Gaps to goals" in section and "new-run" in section
    # idempotent, and --check agrees
    assert run(readme, results) == 0 and readme.read_text() == text
    assert run(readme, results, "--check") == 0


def test_check_reports_stale_section(readme, tmp_path):
    results = tmp_path / "results"
    write(
        results / "r" / "copy.json",
        fake_result("copy", "cuda", "2026-03-04T05:06:07+00:00", COPY_ROWS),
    )
    before = readme.read_text()
    assert run(readme, results, "--check") == 1
    assert readme.read_text() == before  # --check never writes


def test_missing_markers_is_an_error_and_leaves_the_file(tmp_path, capsys):
    p = tmp_path / "README.md"
    p.write_text("# no markers here\n")
    assert run(p, tmp_path / "nothing") == 2
    assert p.read_text() == "# no markers here\n"
    assert "perf:start" in capsys.readouterr().err
    with pytest.raises(ValueError):
        ur.update(f"{ur.END}\n{ur.START}", "x")  # wrong order


def test_real_readme_has_markers_and_is_current():
    text = (REPO_ROOT / "README.md").read_text()
    assert text.count(ur.START) == 1 and text.count(ur.END) == 1
    # regenerating from the repo's own results changes nothing outside the markers
    new = ur.update(text, "probe")
    assert new.split(ur.START)[0] == text.split(ur.START)[0]
    assert new.split(ur.END)[1] == text.split(ur.END)[1]


def test_rows_measured_on_both_devices_pair_with_their_own_peers():
    rows = [
        {"case": "x + y [16]", "impl": "gpu_tensor (cpu)", "seconds": 2e-6},
        {"case": "x + y [16]", "impl": "numpy", "seconds": 1e-6},
        {"case": "x + y [16]", "impl": "gpu_tensor (cuda)", "seconds": 6e-6},
        {"case": "x + y [16]", "impl": "cupy", "seconds": 5e-6},
        {"case": "x + y [16]", "impl": "torch (cuda)", "seconds": 12e-6},
    ]
    section = ur.render_section(
        [fake_result("dispatch", "cuda", "2026-03-04T00:00:00+00:00", rows)]
    )
    lines = [line for line in section.splitlines() if line.startswith("| dispatch | x + y")]
    assert len(lines) == 2
    cpu, cuda = lines
    assert "gpu_tensor (cpu) 2.00 µs" in cpu and "numpy" in cpu and "cupy" not in cpu
    assert "(gpu_tensor (cpu) 2.00× slower)" in cpu
    assert "gpu_tensor (cuda) 6.00 µs" in cuda and "cupy 5.00 µs" in cuda and "torch" in cuda
