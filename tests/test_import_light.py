"""`import gpu_tensor` stays light: no cupy import, and it works with cupy missing."""

import os
import subprocess
import sys
import textwrap

import pytest


def _run(code, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPU_TENSOR")}
    e.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=e,
        timeout=120,
    )


def test_import_does_not_import_cupy():
    r = _run("""
        import sys
        import gpu_tensor, gpu_tensor.creation, gpu_tensor.ops.elementwise
        import gpu_tensor.cuda._device as c
        c.is_available()
        import gpu_tensor.creation as cr
        (cr.ones(3) + 1).sum()
        assert 'cupy' not in sys.modules, 'cupy was imported'
        print('ok')
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_emulated_cuda_does_not_import_cupy():
    from gpu_tensor import device as dv

    if dv.real_cuda_available():
        pytest.skip("a real GPU is present")
    r = _run(
        """
        import sys
        import gpu_tensor.creation as cr
        x = cr.ones(3, device='cuda') * 2
        assert x.tolist() == [2.0, 2.0, 2.0]
        assert 'cupy' not in sys.modules
        print('ok')
    """,
        GPU_TENSOR_FALLBACK="1",
    )
    assert r.returncode == 0, r.stderr


def test_works_when_cupy_is_unimportable():
    r = _run(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == 'cupy' or name.startswith('cupy.') or name.startswith('cupy_'):
                    raise ImportError('cupy blocked for this test')
        sys.meta_path.insert(0, Block())
        import gpu_tensor
        import gpu_tensor.creation as cr
        import gpu_tensor.cuda._device as c
        assert (cr.arange(4) * 2).tolist() == [0, 2, 4, 6]
        print(c.is_available(), c.is_emulated())
        x = cr.zeros(2, device='cuda')
        print(x.device)
    """,
        GPU_TENSOR_FALLBACK="1",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "cuda:0"]


ENTRY_MODULES = [
    "gpu_tensor._tensor",
    "gpu_tensor.creation",
    "gpu_tensor.ops.elementwise",
    "gpu_tensor.ops.reduction",
    "gpu_tensor.ops.indexing",
    "gpu_tensor.ops.linalg",
    "gpu_tensor.ops.join",
    "gpu_tensor.ops.shape",
    "gpu_tensor._views",
    "gpu_tensor._layout",
    "gpu_tensor.transfer.move",
    "gpu_tensor._interop",
    "gpu_tensor.storage",
    "gpu_tensor.testing",
    "gpu_tensor.cuda._device",
    "gpu_tensor.backends.emulated",
]


def test_any_module_can_be_imported_first():
    """No import-order traps: each module, imported first in a fresh interpreter, leaves a
    working Tensor (methods attached)."""
    for mod in ENTRY_MODULES:
        r = _run(
            f"""
            import {mod}
            import gpu_tensor.creation as cr
            x = cr.ones(2, 3, device='cuda') + 1
            assert x.t().contiguous().sum().item() == 12.0
        """,
            GPU_TENSOR_FALLBACK="1",
        )
        assert r.returncode == 0, f"importing {mod} first: {r.stderr}"
