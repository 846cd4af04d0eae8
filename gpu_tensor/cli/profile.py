"""`gpu-tensor profile [OPTIONS] SCRIPT [ARGS...]`: run a script under gt.profiler, then
print the table (torch's columns, then syncs, memory by allocation site and the fusion
report) and write a Chrome trace (open it in Perfetto or chrome://tracing).

Our options go before SCRIPT; after it they need `--` before the script's own ARGS
(`profile s.py --row-limit 5 -- --epochs 3`), as `memory-summary --run` takes them. The exit
code is the script's own; the profile is printed however the script ends.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._errors import CliError
from .run import option_strings, split_after_script

__all__ = ["add_profile_parser", "profile_main"]


def add_profile_parser(sub) -> None:
    p = sub.add_parser(
        "profile",
        help="run a script under the profiler: op table, memory by site, fusion report, trace",
        description="Run SCRIPT with ARGS under gpu_tensor.profiler (CPU and, when available, "
        "CUDA activity), then print key_averages().table() with our extra sections and "
        "write a Chrome trace.",
    )
    _options(p)
    p.add_argument("script", help="the Python script to run")
    p.add_argument(
        "args",
        nargs=argparse.REMAINDER,
        help="the script's arguments (ours after SCRIPT need -- first)",
    )


def _options(p) -> None:
    p.add_argument(
        "--sort-by",
        default="self_cpu_time_total",
        metavar="KEY",
        help="table order: any FunctionEventAvg attribute, e.g. cuda_time_total "
        "(default self_cpu_time_total)",
    )
    p.add_argument(
        "--row-limit", type=int, default=20, metavar="N", help="rows in the table (default 20)"
    )
    p.add_argument(
        "--trace",
        default=None,
        metavar="PATH",
        help="Chrome trace to write (default SCRIPT.pt.trace.json; .gz gzips; 'none' writes none)",
    )
    p.add_argument(
        "--no-memory", action="store_true", help="no profile_memory (memory columns, by-site table)"
    )
    p.add_argument(
        "--record-shapes",
        action="store_true",
        help="record input shapes and group the table by them",
    )
    p.add_argument(
        "--with-stack",
        action="store_true",
        help="record the user stack of each op (Source Location column)",
    )


class _Quiet(argparse.ArgumentParser):
    def error(self, message):  # one line, as the main parser does
        raise CliError(f"profile options before --: {message}")


def _split(args) -> None:
    """Options of ours after SCRIPT: allowed before a `--`, refused without one."""
    probe = _Quiet(add_help=False)
    _options(probe)
    ours, args.args = split_after_script(
        list(args.args),
        option_strings(probe),
        lambda option: (
            f"{option} after {args.script} is ambiguous: put profile options before the "
            f"script (profile {option} ... {args.script}), or end them with -- so what "
            f"follows goes to the script ({args.script} {option} ... -- ARGS)"
        ),
    )
    probe.parse_args(ours, namespace=args)


def profile_main(args) -> int:
    _split(args)
    script = Path(args.script)
    if not script.is_file():
        raise CliError(f"{script}: no such script")
    if args.row_limit < 0:
        raise CliError("--row-limit must be >= 0")
    from gpu_tensor import profiler
    from gpu_tensor.cuda import memory

    from .run import _exec

    prof = profiler.profile(
        record_shapes=args.record_shapes,
        profile_memory=not args.no_memory,
        with_stack=args.with_stack,
    )
    prof.start()
    try:
        code, keepalive = _exec(script, list(args.args), memory)
    finally:
        prof.stop()
    sys.stdout.flush()
    del keepalive
    averages = prof.key_averages(group_by_input_shape=args.record_shapes)
    try:
        table = averages.table(sort_by=args.sort_by, row_limit=args.row_limit)
    except AttributeError:
        raise CliError(
            f"--sort-by {args.sort_by}: not a column key (try self_cpu_time_total, "
            "cpu_time_total, cuda_time_total, self_cuda_memory_usage)"
        ) from None
    print(f"\n== profile of {script.name} (exit code {code}) ==\n")
    sys.stdout.write(table)
    sys.stdout.write(prof.sections())
    trace = args.trace if args.trace is not None else str(script.with_suffix(".pt.trace.json"))
    if trace != "none":
        try:
            prof.export_chrome_trace(trace)
        except OSError as exc:
            raise CliError(f"{trace}: cannot write ({exc.strerror or exc})") from None
        print(f"wrote {trace}")
    return code
