"""`gpu-tensor profile [OPTIONS] SCRIPT [ARGS]`: the table, the sections, the trace, the
script's exit code, and where our options may go."""

from __future__ import annotations

import json

import pytest

from gpu_tensor.cli.main import main as cli_main

SCRIPT = """
import sys
import gpu_tensor as gt
x = gt.ones(32, 32)
for _ in range(int(sys.argv[1])):
    y = (x * 2.0 + 1.0).exp()
print("ran", sys.argv[1:])
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_profile_prints_the_table_and_writes_the_trace(script, tmp_path, capsys):
    trace = tmp_path / "out.json"
    code = cli_main(["profile", "--row-limit", "3", "--trace", str(trace), str(script), "2", "7"])
    out = capsys.readouterr().out
    assert code == 7  # the script's own exit code
    assert "ran ['2', '7']" in out
    assert "== profile of train.py (exit code 7) ==" in out
    table = out.split("==\n\n", 1)[1]
    assert table.splitlines()[1].split()[:2] == ["Name", "Self"]
    assert len([ln for ln in table.splitlines()[3:] if ln.startswith(" ")]) >= 3
    assert "mul -> add -> exp" in out  # the fusion report
    data = json.loads(trace.read_text())
    assert any(e.get("name") == "aten::exp" for e in data["traceEvents"])


def test_options_after_the_script_need_a_double_dash(script, tmp_path, capsys):
    assert cli_main(["profile", str(script), "1", "--row-limit", "2"]) == 2
    assert "ambiguous" in capsys.readouterr().err
    code = cli_main(["profile", str(script), "--row-limit", "2", "--trace", "none", "--", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "ran ['1']" in out and "wrote" not in out


def test_bad_input_is_one_line(tmp_path, script, capsys):
    assert cli_main(["profile", str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capsys.readouterr().err
    assert cli_main(["profile", "--sort-by", "bogus", "--trace", "none", str(script), "1"]) == 2
    assert "not a column key" in capsys.readouterr().err
