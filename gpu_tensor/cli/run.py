"""`memory-summary --run script.py [args...]`: run a script in this process with memory
history recording on, then summarise the device memory as the script left it (its
globals, and on an exception the frames it died in, are kept alive for the snapshot).

The summary is printed however the script ends: normally, sys.exit(n), or an
exception; an OutOfMemoryError gets one line naming it (the snapshot then shows the
'oom' event and what held the memory), other exceptions their usual traceback. The
exit code is the script's own (1 for an exception), so --run fits in CI.
"""

from __future__ import annotations

import builtins
import json
import sys
import traceback
import types
from pathlib import Path

from ._errors import CliError

__all__ = [
    "run_script",
    "take_snapshot",
    "split_run_argv",
    "split_after_script",
    "option_strings",
]


def option_strings(parser) -> set[str]:
    """Every option string of `parser` and its subcommands (argparse keeps them in
    `_actions`; it has no public way to list them)."""
    out = set()
    for action in parser._actions:
        out.update(action.option_strings)
        for sub in (getattr(action, "choices", None) or {}).values():
            if hasattr(sub, "_actions"):
                out |= option_strings(sub)
    return out


def split_run_argv(argv: list[str], own_options) -> tuple[list[str], list[str] | None]:
    """(argv for the parser, the script's argv or None without --run).

    `--run SCRIPT ARGS...` hands ARGS to the script. memory-summary's own options may
    follow SCRIPT only before a `--` that starts the script's arguments
    (`--run s.py --html m.html -- --epochs 3`); one of them after SCRIPT with no `--`
    is refused, since it is unclear whose it is (it used to vanish into the script)."""
    if "--run" not in argv:
        return argv, None
    i = argv.index("--run")
    head, tail = argv[:i], argv[i + 1 :]
    if not tail or tail[0] == "--":
        raise CliError("--run needs a script: --run SCRIPT [ARGS...]")
    script = tail[0]
    ours, theirs = split_after_script(
        tail[1:],
        own_options,
        lambda option: (
            f"{option} after --run {script} is ambiguous: put memory-summary options before "
            f"--run (memory-summary {option} ... --run {script}), or end them with -- so "
            f"what follows goes to the script (--run {script} {option} ... -- ARGS)"
        ),
    )
    return head + ours + ["--run", script], [script, *theirs]


def split_after_script(rest: list[str], own_options, ambiguous) -> tuple[list[str], list[str]]:
    """The tokens after SCRIPT as (ours, the script's): a `--` ends ours. Without one they
    are all the script's, and one of our options among them is refused with the message
    `ambiguous(option)`, since it is unclear whose it is (`profile` and `--run` share this)."""
    if "--" in rest:
        j = rest.index("--")
        return rest[:j], rest[j + 1 :]
    clash = next((t for t in rest if t.split("=", 1)[0] in own_options), None)
    if clash is not None:
        raise CliError(ambiguous(clash.split("=", 1)[0]))
    return [], rest


def take_snapshot(memory, device: int) -> dict:
    """The full snapshot dict of `device`: torch's `_snapshot()` plus our extension."""
    return memory._snapshot(device)


def _exec(script: Path, args: list[str], memory) -> tuple[int, list]:
    """Run the script as __main__; returns (exit code, keepalive). keepalive holds the
    script's globals and, when it failed, its traceback (so the locals of the frames it
    died in): the snapshot must see the memory those still hold, as at the failure."""
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=str(script), __builtins__=builtins, __cached__=None)
    keep: list = [module]
    saved_argv, saved_path, saved_main = sys.argv, list(sys.path), sys.modules.get("__main__")
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))  # as `python script.py` would
    sys.modules["__main__"] = module
    try:
        # compile() honours a coding cookie in the bytes, and names the file in tracebacks.
        exec(compile(script.read_bytes(), str(script), "exec"), module.__dict__)
        return 0, keep
    except SystemExit as exc:
        keep.append(exc.__traceback__)
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0, keep
        print(exc.code, file=sys.stderr)  # sys.exit("message") prints it and exits 1
        return 1, keep
    except memory.OutOfMemoryError as exc:
        keep.append(exc.__traceback__)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "out of memory"
        print(f"gpu-tensor: {script.name} raised OutOfMemoryError: {first}", file=sys.stderr)
        return 1, keep
    except KeyboardInterrupt as exc:
        keep.append(exc.__traceback__)
        print(f"gpu-tensor: {script.name} interrupted", file=sys.stderr)
        return 130, keep  # the shell's code for SIGINT; the summary still follows
    except Exception as exc:
        keep.append(exc.__traceback__)
        # The script's own traceback, without this runner's frame on top.
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
        return 1, keep
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def _save(snap: dict, path: str) -> None:
    # The same dict save_snapshot (JSON) and _dump_snapshot (pickle, for torch's tools) write.
    try:
        if Path(path).suffix.lower() in (".pickle", ".pkl"):
            import pickle

            with open(path, "wb") as fh:
                pickle.dump(snap, fh)
        else:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(snap, fh)
    except OSError as exc:
        raise CliError(f"{path}: cannot write ({exc.strerror or exc})") from None


def run_script(
    argv: list[str],
    device: int | None = None,
    top: int = 10,
    as_json: bool = False,
    html: str | None = None,
    save: str | None = None,
) -> int:
    """Run argv[0] with argv[1:]; print the memory summary; return the script's exit code."""
    if not argv:
        raise CliError("--run needs a script: --run SCRIPT [ARGS...]")
    script = Path(argv[0])
    if not script.is_file():
        raise CliError(f"{script}: no such script")
    from gpu_tensor.cuda import memory
    from gpu_tensor.memory import registry

    device = 0 if device is None else device
    memory._record_memory_history(enabled="all")
    try:
        code, keepalive = _exec(script, argv[1:], memory)
        sys.stdout.flush()
        if registry.find(device) is None:
            print(f"\n{script.name} made no allocations on cuda:{device}; nothing to summarise.")
            return code
        snap = take_snapshot(memory, device)
        del keepalive  # the script's objects may go now
    finally:
        memory._record_memory_history(enabled=None)

    from .snapshot_load import validate_snapshot
    from .snapshot_view import render_text, snapshot_json

    snap = validate_snapshot(snap)
    if as_json:
        print(json.dumps(dict(snapshot_json(snap, top, device), exit_code=code), indent=2))
    else:
        print(f"\n== memory after {script.name} (exit code {code}) ==\n")
        sys.stdout.write(render_text(snap, top, device))
    if save:
        _save(snap, save)
    if html:
        from .html import write_html

        write_html(html, snap, f"Memory after {script.name}", device, top)
    for path in (save, html):
        if path and not as_json:
            print(f"wrote {path}")
    return code
