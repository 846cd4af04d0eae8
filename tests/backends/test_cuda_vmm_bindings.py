"""backends/cuda_vmm.py against NVIDIA's real cuda-bindings package, over a stand-in
libcuda.so.1 (vmm_stub/libcuda_stub.c) that logs every driver call with its arguments as
the bindings marshalled them: struct fields, enum values, handle sizes, access lists. No
GPU needed; what the driver itself does is only modelled (maps, aliases, access).

Checked from the log: the large pool's pages are 20 MiB handles and the small pool's 2 MiB
(each mapped, aliased and unmapped whole: the stub refuses anything else); the memory is
exportable (POSIX fd handle type on Linux) and RDMA capable exactly where the device says
so; cuMemSetAccess names this device alone until a peer is added, then the peer alone for
what is mapped, then both; everything is released at the end. (The streams and events of
items 3-4 go through cupy's runtime, not these bindings: the simulator checks them.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpu_tensor.kernel import sources

MiB = 1 << 20
STUB = Path(__file__).parent / "vmm_stub" / "libcuda_stub.c"

SCRIPT = textwrap.dedent("""
    import ctypes
    import os

    lib = ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)  # the stub, before the bindings

    from gpu_tensor.backends import cuda_vmm
    from gpu_tensor.memory.allocator import CachingAllocator
    from gpu_tensor.memory.config import parse_alloc_conf

    MiB = 1 << 20


    def mark(what):
        with open(os.environ["GT_STUB_LOG"], "a") as f:
            f.write(f"MARK {what}\\n")


    class Plain:
        def alloc(self, n):
            raise AssertionError("expandable segments asked for a cudaMalloc segment")

        free = alloc

        def mem_get_info(self):
            return 1 << 30, 1 << 30


    def fill(ptr, byte, n):
        assert lib.gt_stub_fill(ctypes.c_ulonglong(ptr), byte, ctypes.c_size_t(n)) == 0


    def read(ptr, n):
        buf = (ctypes.c_ubyte * n)()
        assert lib.gt_stub_read(ctypes.c_ulonglong(ptr), buf, ctypes.c_size_t(n)) == 0
        return bytes(buf)


    driver = cuda_vmm.load_driver()
    assert cuda_vmm.available(driver, 0)
    source = cuda_vmm.VmmSource(Plain(), driver, 0, synchronize=lambda: None)
    mark("self-test")
    cuda_vmm.self_test(source, fill, read)
    mark("policy")
    a = CachingAllocator(source, 0, config=parse_alloc_conf("expandable_segments:True"))
    first, hole, last = (a.malloc(40 * MiB) for _ in range(3))
    a.free(hole)
    big = a.malloc(60 * MiB)  # restitches the hole's two 20 MiB handles
    small = a.malloc(MiB)
    mark("peer")
    assert source.add_peer(1) and source.peers == [1]
    mark("after peer")
    more = a.malloc(20 * MiB)
    mark("free")
    for block in (first, last, big, small, more):
        a.free(block)
    a.empty_cache()
    assert source.physical_bytes() == source.mapped_bytes() == 0
    mark("device 1")
    other = cuda_vmm.VmmSource(Plain(), driver, 1, synchronize=lambda: None)
    other.map(other.reserve(2 * MiB), 2 * MiB)
    other.unmap(*next(iter(other._reserved.items())))
    print("ok")
""")


def _cuda_h() -> Path | None:
    return next((inc for inc in sources.header_candidates() if (inc / "cuda.h").is_file()), None)


@pytest.fixture(scope="module")
def call_log(tmp_path_factory):
    pytest.importorskip("cuda.bindings.driver", reason="needs NVIDIA's cuda-bindings")
    include = _cuda_h()
    if shutil.which("gcc") is None or include is None:
        pytest.skip("the stub driver needs gcc and CUDA's cuda.h (a CUDA runtime wheel)")
    out = tmp_path_factory.mktemp("stub")
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            f"-I{include}",
            "-o",
            str(out / "libcuda.so.1"),
            str(STUB),
            "-ldl",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    log = out / "calls.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_TENSOR")}
    env.update(LD_LIBRARY_PATH=str(out), GT_STUB_LOG=str(log), GT_STUB_RDMA="10")
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
    sections, name = {}, "start"
    for line in log.read_text().splitlines():
        if line.startswith("MARK "):
            name = line[5:]
        sections.setdefault(name, []).append(line)
    return sections


def _calls(lines, name):
    """The key=value fields of each logged call `name`."""
    return [
        dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
        for line in lines
        if line.startswith(name + " ")
    ]


def test_the_driver_saw_no_misuse(call_log):
    every = [line for lines in call_log.values() for line in lines]
    assert not [line for line in every if line.startswith(("VIOLATION", "FAULT"))]
    creates, releases = (
        sum(line.startswith(c + " ") for line in every) for c in ("cuMemCreate", "cuMemRelease")
    )
    maps, unmaps = (
        sum(line.startswith(c + " ") for line in every) for c in ("cuMemMap", "cuMemUnmap")
    )
    assert creates == releases > 0 and maps == unmaps > creates  # aliases map twice


def test_large_pool_pages_are_20_mib_handles(call_log):
    sizes = [
        int(c["size"])
        for name in ("policy", "peer", "after peer")
        for c in _calls(call_log.get(name, []), "cuMemCreate")
    ]
    # 3 x 40 MiB, then 60 MiB of which the hole gives 40: 7 large handles; 1 MiB: one small
    # page; 20 MiB: one more
    assert sorted(sizes) == [2 * MiB] + [20 * MiB] * 8


def test_memory_is_exportable_and_rdma_capable_where_the_device_says_so(call_log):
    posix = "1" if sys.platform.startswith("linux") else "0"
    for section, rdma in (("policy", "1"), ("device 1", "0")):  # GT_STUB_RDMA="10"
        creates = _calls(call_log[section], "cuMemCreate")
        assert creates and all(
            c["handle_types"] == posix and c["rdma"] == rdma and c["type"] == "1" for c in creates
        )
    granularity = _calls(call_log["start"], "cuMemGetAllocationGranularity")
    assert granularity[0]["handle_types"] == posix  # the granularity of that very prop


def test_peers_get_access_only_when_added(call_log):
    before = [
        c for name in ("self-test", "policy") for c in _calls(call_log[name], "cuMemSetAccess")
    ]
    assert before and all(c["count"] == "1" and c["devices"] == "0" for c in before)
    granted = _calls(call_log["peer"], "cuMemSetAccess")
    assert granted and all(c["count"] == "1" and c["devices"] == "1" for c in granted)
    assert sum(int(c["size"]) for c in granted) >= 140 * MiB  # everything mapped then
    after = _calls(call_log["after peer"], "cuMemSetAccess")
    assert after and all(c["count"] == "2" and c["devices"] == "0,1" for c in after)
