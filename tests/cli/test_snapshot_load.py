"""Bad snapshot files: one line on stderr, exit code 2, no traceback, nothing unpickled."""

from __future__ import annotations

import json
import pickle

import pytest

from gpu_tensor.cli.snapshot_load import SnapshotError, load_snapshot


class Evil:
    """Unpickling this would run os.system; the restricted unpickler must refuse first."""

    def __reduce__(self):
        import os

        return (os.system, ("touch PWNED",))


def _bad_files(tmp_path, data_dir):
    good = json.loads((data_dir / "small_snapshot.json").read_text())
    text = (data_dir / "small_snapshot.json").read_text()
    files = {
        "missing": (tmp_path / "does_not_exist.json", "no such file"),
        "directory": (tmp_path, "is a directory"),
        "empty": (tmp_path / "empty.json", "empty"),
        "truncated_json": (tmp_path / "truncated.json", "truncated JSON"),
        "truncated_json_between_items": (tmp_path / "cut.json", "truncated JSON"),
        "invalid_json": (tmp_path / "invalid.json", "invalid JSON"),
        "not_a_snapshot_json": (tmp_path / "other.json", "no 'segments'"),
        "wrong_type": (tmp_path / "scalar.json", "not a memory snapshot"),
        "list_of_numbers": (tmp_path / "numbers.json", "not a segment dict"),
        "bad_block_state": (tmp_path / "state.json", "unknown state"),
        "text_file": (tmp_path / "notes.txt", "unknown format"),
        "deep_json": (tmp_path / "deep.json", "nested too deeply"),
        "negative_size": (tmp_path / "negative.json", "negative size"),
        "binary_garbage": (tmp_path / "garbage.pickle", "not a readable pickle"),
        "truncated_pickle": (tmp_path / "cut.pickle", "not a readable pickle"),
        "pickle_not_snapshot": (tmp_path / "list.pickle", "not a segment dict"),
        "pickle_with_class": (tmp_path / "evil.pickle", "refused"),
    }
    files["empty"][0].write_text("  \n")
    files["truncated_json"][0].write_text(text[: len(text) // 2])
    files["truncated_json_between_items"][0].write_text(text[: text.index(",", len(text) // 3) + 1])
    files["invalid_json"][0].write_text('{"segments": [1, 2,, 3]}')
    files["not_a_snapshot_json"][0].write_text(json.dumps({"hello": "world"}))
    files["wrong_type"][0].write_text('{"segments": 5}')
    files["list_of_numbers"][0].write_text("[1, 2, 3]")
    good["segments"][0]["blocks"][0]["state"] = "exploded"
    files["bad_block_state"][0].write_text(json.dumps(good))
    files["text_file"][0].write_text("hello, this is not a snapshot\n")
    files["deep_json"][0].write_text("[" * 100_000 + "]" * 100_000)
    negative = json.loads(text)
    negative["segments"][1]["blocks"][1]["size"] = -5
    files["negative_size"][0].write_text(json.dumps(negative))
    files["binary_garbage"][0].write_bytes(b"\x80\x04\xff\xfe garbage")
    whole = (data_dir / "torch_snapshot.pickle").read_bytes()
    files["truncated_pickle"][0].write_bytes(whole[: len(whole) // 2])
    files["pickle_not_snapshot"][0].write_bytes(pickle.dumps({"segments": ["a", "b"]}))
    files["pickle_with_class"][0].write_bytes(pickle.dumps({"segments": [Evil()]}))
    return files


CASES = [
    "missing",
    "directory",
    "empty",
    "truncated_json",
    "truncated_json_between_items",
    "invalid_json",
    "not_a_snapshot_json",
    "wrong_type",
    "list_of_numbers",
    "bad_block_state",
    "deep_json",
    "negative_size",
    "text_file",
    "binary_garbage",
    "truncated_pickle",
    "pickle_not_snapshot",
    "pickle_with_class",
]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_and_exit_2(run_cli, tmp_path, data_dir, case):
    path, expected = _bad_files(tmp_path, data_dir)[case]
    proc = run_cli("memory-summary", str(path), cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("gpu-tensor: error: ")
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "PWNED").exists()


def test_restricted_unpickler_never_calls_the_global(tmp_path, monkeypatch):
    import os

    calls = []
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps({"segments": [Evil()]}))
    monkeypatch.setattr(os, "system", lambda cmd: calls.append(cmd))
    with pytest.raises(SnapshotError, match="posix.system|os.system|refused"):
        load_snapshot(path)
    assert calls == []


class CallsEval:
    def __reduce__(self):
        return (eval, ("1+1",))


def test_pickle_naming_a_builtin_function_is_refused(tmp_path):
    # eval lives in builtins but is no container: the allow-list names containers only.
    payload = pickle.dumps({"segments": [CallsEval()]})
    assert b"eval" in payload
    path = tmp_path / "eval.pickle"
    path.write_bytes(payload)
    with pytest.raises(SnapshotError, match="builtins.eval"):
        load_snapshot(path)


def test_unwritable_html_path_is_one_line(run_cli, tmp_path, data_dir):
    proc = run_cli(
        "memory-summary",
        str(data_dir / "small_snapshot.json"),
        "--html",
        str(tmp_path / "no" / "such" / "dir" / "x.html"),
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "cannot write" in proc.stderr


def test_every_bad_file_is_a_case(tmp_path, data_dir):
    assert sorted(CASES) == sorted(_bad_files(tmp_path, data_dir))
