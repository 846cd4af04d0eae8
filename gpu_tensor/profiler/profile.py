"""`gt.profiler.profile`: torch.profiler.profile's API over the modes word.

    with gt.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                             record_shapes=True, profile_memory=True) as prof:
        model(x)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

Steps, schedule and on_trace_ready follow torch's state machine: a recording window opens
when the schedule says RECORD (or at start() without a schedule) and closes at its
RECORD_AND_SAVE step, when on_trace_ready(prof) runs; without prof.step() a schedule never
leaves step 0. Only the thread that started the profile is recorded (the modes word is
per thread); an op on another thread costs one more check while a profile runs.
"""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings

from ..backends import cuda_kind
from . import chrome
from .events import EventList
from .fusion import chains, fusion_table
from .recorder import Session, active_session
from .results import Results
from .schedule import ProfilerAction, record_every_step

__all__ = [
    "ProfilerActivity",
    "profile",
    "record_function",
    "tensorboard_trace_handler",
    "supported_activities",
]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities():
    """CPU, and CUDA when a cuda device is usable (a GPU, or the emulated/simulated one)."""
    from .. import cuda

    found = {ProfilerActivity.CPU}
    if cuda.is_available():
        found.add(ProfilerActivity.CUDA)
    return found


class record_function:
    """A labelled range in the profile (torch.profiler.record_function): a context manager
    and a decorator. Outside a profile it costs one thread-local read."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._op = None
        self._session = None

    def __enter__(self):
        session = active_session()
        if session is not None:
            self._session = session
            self._op = session.push(self.name, annotation=True)
        return self

    def __exit__(self, *exc):
        if self._op is not None:
            self._session.pop(self._op)
            self._op = self._session = None
        return False

    def __call__(self, fn):
        import functools

        name = self.name

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(name):
                return fn(*args, **kwargs)

        return wrapped


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """An on_trace_ready that writes `{worker}.{time_ns}.pt.trace.json[.gz]` in dir_name."""

    def handler(prof):
        nonlocal worker_name
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as exc:
            raise RuntimeError("Can't create directory: " + dir_name) from exc
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler


class profile:
    """torch.profiler.profile (see the module docstring). Arguments torch has and this
    profiler does not use (with_flops, with_modules, experimental_config, ...) are accepted
    and ignored."""

    def __init__(
        self,
        *,
        activities=None,
        schedule=None,
        on_trace_ready=None,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        with_flops=False,
        with_modules=False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events=False,
        use_cuda=None,
        custom_trace_id_callback=None,
        post_processing_timeout_s=None,
    ):
        activities = set(activities) if activities else supported_activities()
        if use_cuda is not None:
            warnings.warn(
                "The attribute `use_cuda` will be deprecated soon, please use "
                "``use_device = 'cuda'`` instead.",
                FutureWarning,
                stacklevel=2,
            )
            if use_cuda:
                activities.add(ProfilerActivity.CUDA)
        self.activities = activities
        from .. import cuda

        self.use_device = (
            "cuda" if (ProfilerActivity.CUDA in activities and cuda.is_available()) else None
        )
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.acc_events = acc_events
        self.on_trace_ready = on_trace_ready
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else record_every_step
        self.step_num = 0
        self.current_action = self.schedule(0)
        self.step_rec_fn = None
        self._session = None  # the window being recorded
        self._results = None  # the last finished window
        self._kept = []  # acc_events: earlier windows
        self._transitions = self._transition_table()

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        self._running = True
        self._transit(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def stop(self):
        if not getattr(self, "_running", False):
            return  # stopped already (or never started): on_trace_ready fires once
        self._running = False
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit(self.current_action, None)

    def step(self):
        """Signal that the next step starts (needed with a schedule)."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _transition_table(self):
        A = ProfilerAction
        prep, start, stop, ready = (
            self._prepare_trace,
            self._start_trace,
            self._stop_trace,
            self._trace_ready,
        )

        def warn(text):
            return lambda: warnings.warn(text, stacklevel=3)

        return {
            (A.NONE, A.WARMUP): [prep],
            (A.NONE, A.RECORD): [prep, start],
            (A.NONE, A.RECORD_AND_SAVE): [prep, start],
            (A.WARMUP, A.NONE): [warn("Incorrect schedule: WARMUP followed by NONE"), start, stop],
            (A.WARMUP, A.RECORD): [start],
            (A.WARMUP, A.RECORD_AND_SAVE): [start],
            (A.RECORD, A.NONE): [warn("Incorrect schedule: RECORD followed by NONE"), stop],
            (A.RECORD, A.WARMUP): [warn("Incorrect schedule: RECORD followed by WARMUP"), stop],
            (A.RECORD_AND_SAVE, A.NONE): [stop, ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [stop, ready, prep],
            (A.RECORD_AND_SAVE, A.RECORD): [stop, ready, prep, start],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [stop, ready, prep, start],
            (A.WARMUP, None): [start, stop],
            (A.RECORD, None): [stop, ready],
            (A.RECORD_AND_SAVE, None): [stop, ready],
        }

    def _transit(self, prev, current):
        for action in self._transitions.get((prev, current), ()):
            action()

    def _prepare_trace(self):
        self._session = Session(
            record_shapes=self.record_shapes,
            profile_memory=self.profile_memory,
            with_stack=self.with_stack,
            device_timing=self.use_device is not None,
        )

    def _start_trace(self):
        if self._session is None:
            self._prepare_trace()
        if active_session() is not None:
            raise RuntimeError(
                "Can't start a profiler while another one records on this "
                "thread; stop the first one (or nest record_function ranges "
                "inside it instead)"
            )
        self._session.begin()

    def _stop_trace(self):
        session, self._session = self._session, None
        if session is None:
            return
        session.end()
        if self.acc_events and self._results is not None:
            self._kept.append(self._results)
        self._results = Results(session, self.use_device)
        self._saved = False

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ------------------------------------------------------------------ results
    def _finished(self):
        if self._results is None:
            raise RuntimeError(
                "Profiler didn't finish running: nothing was recorded yet "
                "(leave the `with` block, call stop(), or with a schedule "
                "call prof.step() each step)"
            )
        return self._results

    def events(self):
        """The FunctionEvents of the last recorded window (all windows with acc_events)."""
        events = []
        for r in self._kept + [self._finished()]:
            events += r.events
        r = self._results
        return EventList(
            events,
            use_device=r.use_device,
            profile_memory=r.session.profile_memory,
            notes=r.events._notes,
        )

    def key_averages(
        self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False
    ):
        if group_by_input_shape and not self.record_shapes:
            warnings.warn(
                "group_by_input_shape needs record_shapes=True: the rows have no "
                "shapes to group by",
                stacklevel=2,
            )
        return self.events().key_averages(
            group_by_input_shape, group_by_stack_n, group_by_overload_name
        )

    def export_chrome_trace(self, path, use_python_export=False):
        """Write the last window as Chrome trace JSON (`.gz`: gzipped). Unlike torch, a
        second export writes the file again rather than raising."""
        return chrome.write(self._finished(), path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Collapsed stacks (flamegraph.pl's input): one line per op with a stack."""
        with open(path, "w", encoding="utf-8") as f:
            for e in self.events():
                if e.stack:
                    frames = ";".join(reversed(e.stack))
                    f.write(f"{frames};{e.name} {int(getattr(e, metric))}\n")

    def add_metadata(self, key, value):
        pass  # torch adds it to the trace; accepted so programs run

    # beyond torch ------------------------------------------------------------------
    def fusion_candidates(self):
        """Chains of elementwise ops @gt.fuse would merge (fusion.py)."""
        return chains(self._finished().session)

    def memory_sites(self):
        """Device memory by the user line that allocated it (results.py)."""
        return self._finished().memory_sites()

    def summary(self, sort_by="self_cpu_time_total", row_limit=20):
        """torch's table, then the sections torch lacks (`sections()`)."""
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit) + self.sections()

    def sections(self):
        """Host syncs by op (when the program waited on the device), device memory by
        allocation site (with profile_memory), and the fusion report."""
        r = self._finished()
        text = ""
        syncs = [(e.key, e.syncs, e.count) for e in self.key_averages() if e.syncs]
        if syncs:
            text += "\nHost waits on the device (syncs), by op:\n"
            for key, n, count in sorted(syncs, key=lambda t: -t[1]):
                text += f"  {key:<40} {n:>8} syncs in {count} calls\n"
        sites = r.memory_site_table()
        if sites:
            text += "\n" + sites
        fusion = fusion_table(self.fusion_candidates())
        if fusion:
            text += "\n" + fusion
        return text

    @property
    def profiler(self):
        return self  # torch's prof.profiler (the legacy object): same methods here

    def _emulated(self):
        return self.use_device is not None and cuda_kind().synchronous
