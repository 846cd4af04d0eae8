"""`gpu-tensor` entry point: `memory-summary` (live, SNAPSHOT, --run), `profile SCRIPT`,
`launch` and `demo`.

main() returns the exit code and never lets a traceback out for bad input: 0 success,
1 the program run under --run failed, 2 bad input or usage (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ._errors import CliError
from .snapshot_check import Limits

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of argparse's usage block
        raise CliError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gpu-tensor",
        description="gpu_tensor command line: device memory at a glance, and a demo.",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    ms = sub.add_parser(
        "memory-summary",
        help="live GPU memory (NVML), or render a saved snapshot, or --run a script",
        description=(
            "With no SNAPSHOT: every GPU via NVML and this process's allocator. With a "
            "SNAPSHOT (.json from save_snapshot, .pickle from _dump_snapshot): stats table, "
            "segment map, largest allocations, fragmentation. With --run: run a script with "
            "memory history recording on and summarise its memory when it exits."
        ),
    )
    ms.add_argument(
        "snapshot",
        nargs="*",
        metavar="SNAPSHOT",
        help="snapshot file to render; several (one per rank): side by side",
    )
    ms.add_argument("--json", action="store_true", help="machine-readable output")
    for flag, field, what in (
        ("--max-snapshot-bytes", "max_bytes", "file size in bytes"),
        ("--max-snapshot-nodes", "max_nodes", "values in the snapshot"),
        ("--max-shared-refs", "max_shared", "shared references"),
    ):
        ms.add_argument(
            flag,
            type=int,
            metavar="N",
            dest=field,
            help=f"limit on the snapshot's {what} (default {getattr(Limits(), field)})",
        )
    ms.add_argument("--html", metavar="FILE", help="also write a self-contained HTML picture")
    ms.add_argument(
        "--save-snapshot",
        metavar="FILE",
        help="with --run: save the final snapshot (.json, or .pickle for torch tools)",
    )
    ms.add_argument(
        "--top",
        type=int,
        default=10,
        metavar="N",
        help="how many of the largest allocations to list (default 10)",
    )
    ms.add_argument(
        "--device",
        type=int,
        default=None,
        metavar="N",
        help="device index to show (default: the snapshot's device, or 0)",
    )
    ms.add_argument(
        "--run",
        nargs=argparse.REMAINDER,
        metavar="SCRIPT [ARGS]",
        help="run SCRIPT with its ARGS and summarise its memory; options of ours after "
        "SCRIPT need -- before the script's ARGS (cli/run.py split_run_argv)",
    )
    ms.add_argument(
        "--compare",
        metavar="B",
        help="with SNAPSHOT: what grew and shrank from SNAPSHOT to snapshot B, by "
        "allocation site (drawn too with --html)",
    )
    demo = sub.add_parser(
        "demo",
        help="image pre-processing pipeline on the best device, then throughput and memory",
        description=(
            "Batches of uint8 HWC images: numpy -> pinned host buffer -> async upload on a "
            "side stream -> fused (x/255 - mean)/std with HWC->CHW -> a small MLP. Runs on "
            "the GPU when there is one, else on the emulated cuda device (and says so); "
            "prints a numpy check, throughput, overlap and the memory summary."
        ),
    )
    demo.add_argument(
        "--batch-size", type=int, default=32, metavar="N", help="images per batch (default 32)"
    )
    demo.add_argument(
        "--image-size",
        type=int,
        default=64,
        metavar="PIXELS",
        help="images are PIXELS x PIXELS x 3 uint8 (default 64)",
    )
    demo.add_argument(
        "--steps", type=int, default=20, metavar="N", help="batches to run (default 20)"
    )
    demo.add_argument("--no-progress", action="store_true", help="no progress bar even on a TTY")
    from .launch import add_launch_parser

    add_launch_parser(sub)
    from .profile import add_profile_parser

    add_profile_parser(sub)
    return parser


def _memory_summary(args) -> int:
    if args.top < 0:
        raise CliError("--top must be >= 0")
    if args.compare and not args.snapshot:
        raise CliError(
            "--compare B needs a SNAPSHOT to compare it with: memory-summary A --compare B"
        )
    if len(args.snapshot) > 1:  # one file per rank, side by side
        if args.run is not None or args.html or args.compare:
            raise CliError(
                "--run, --html and --compare take one SNAPSHOT; several are shown side by side"
            )
        from .memory_ranks import ranks_main

        return ranks_main(args.snapshot, as_json=args.json, device=args.device)
    args.snapshot = args.snapshot[0] if args.snapshot else None
    if args.run is not None:
        if args.snapshot:
            raise CliError("give either SNAPSHOT or --run SCRIPT, not both")
        from .run import run_script

        return run_script(
            args.run,
            device=args.device,
            top=args.top,
            as_json=args.json,
            html=args.html,
            save=args.save_snapshot,
        )
    if args.save_snapshot:
        raise CliError("--save-snapshot only applies with --run SCRIPT")
    if args.snapshot is None:
        if args.html:
            raise CliError("--html needs a SNAPSHOT file or --run SCRIPT")
        from .live import live_main

        return live_main(as_json=args.json)
    from .snapshot_load import load_snapshot
    from .snapshot_view import render_text, snapshot_json

    limits = Limits(
        **{
            k: getattr(args, k)
            for k in ("max_bytes", "max_nodes", "max_shared")
            if getattr(args, k) is not None
        }
    )
    snap = load_snapshot(args.snapshot, limits)
    if args.compare:
        from .compare import compare_main

        return compare_main(snap, load_snapshot(args.compare, limits), args)
    if args.json:
        # json.dump writes piece by piece: the whole document is never one string
        json.dump(snapshot_json(snap, args.top, args.device), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(snap, args.top, args.device, label=args.snapshot))
    if args.html:
        from .html import write_html
        from .snapshot_figures import device_of

        title = f"Memory snapshot {Path(args.snapshot).name}"
        write_html(args.html, snap, title, device=device_of(snap, args.device), top=args.top)
        if not args.json:
            sys.stdout.write(f"\nwrote {args.html}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    parser = build_parser()
    try:
        from .run import option_strings, split_run_argv

        argv = sys.argv[1:] if argv is None else list(argv)
        script_argv = None
        if argv[:1] == ["memory-summary"]:  # `launch SCRIPT ARGS` passes its ARGS untouched
            argv, script_argv = split_run_argv(argv, option_strings(parser))
        args = parser.parse_args(argv)
        if script_argv is not None:
            args.run = script_argv
        if args.command == "memory-summary":
            return _memory_summary(args)
        if args.command == "profile":
            from .profile import profile_main

            return profile_main(args)
        if args.command == "launch":
            from .launch import launch_main

            return launch_main(args)
        if args.command == "demo":
            from .demo import demo_main

            return demo_main(
                batch_size=args.batch_size,
                image_size=args.image_size,
                steps=args.steps,
                progress=not args.no_progress,
            )
        parser.print_help(sys.stderr)
        return 2
    except CliError as exc:
        sys.stderr.write(f"gpu-tensor: error: {exc}\n")
        return 2
    except SystemExit as exc:  # --help, or argparse giving up
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `gpu-tensor ... | head`: the reader left; nothing to report
        return 0


if __name__ == "__main__":
    sys.exit(main())
