"""Generated CUDA source: golden text, and every variant compiles under NVRTC (no GPU needed).

The golden files, golden/<variant>.cu.golden, are test data: the kernel text the generator
writes for each variant, without the preamble, compared as text. Nothing compiles them from
that path (the NVRTC test compiles freshly generated source), hence the data ending.
Regenerate the golden files after an intended codegen change with
    .venv/bin/python tests/fusion/test_codegen.py --update
and review the diff.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fusion_variants import op_variants, variants  # noqa: E402

from gpu_tensor.fusion.codegen import generate  # noqa: E402
from gpu_tensor.fusion.preamble import PREAMBLE, PREAMBLE_REAL  # noqa: E402

GOLDEN = Path(__file__).parent / "golden"
VARIANTS = variants()


def _golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.cu.golden"


def _kernel_text(name: str) -> str:
    graph, plan, out_dtypes = VARIANTS[name]
    return _split(generate(graph, plan, out_dtypes).source)[1]


def _split(source) -> tuple:
    """(whether the source carries the whole preamble, its kernel text): the whole one
    where the kernel has a complex operand or scalar, else the real part alone."""
    whole = source.startswith(PREAMBLE)
    assert whole or source.startswith(PREAMBLE_REAL)
    text = source[len(PREAMBLE if whole else PREAMBLE_REAL) :]
    assert ("gt_c64" in text or "gt_c128" in text) == whole
    return whole, text


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_generated_source_matches_golden(name):
    path = _golden_path(name)
    assert path.is_file(), f"missing golden {path}; run this file with --update"
    assert _kernel_text(name) == path.read_text()


def test_every_golden_file_belongs_to_a_variant():
    assert sorted(GOLDEN.iterdir()) == sorted(map(_golden_path, VARIANTS))


def test_generation_is_deterministic_and_names_are_content_hashes():
    g, p, o = VARIANTS["gelu_f16_vector"]
    a, b = generate(g, p, o), generate(g, p, o)
    assert a == b
    other = generate(*VARIANTS["gelu_f16_transposed"])
    assert a.name != other.name and a.name in a.source


def test_vector_variant_reads_and_writes_through_packs():
    text = _kernel_text("norm_rowcol_vector")
    assert "gt_load<gt_half, 8>(in0 + base" in text  # fp16 x: one 16-byte access per thread
    assert "gt_load<float, 8>(in3 + col" in text  # row vector, vectorized along the row
    assert "in1[row * cs1]" in text  # column vector: one scalar per 8 outputs
    assert "gt_store<gt_half, 8>(out0 + base" in text


def test_half_is_computed_in_float_and_rounded_on_store():
    text = _kernel_text("gelu_f16_vector")
    assert re.search(r"const float t\d+ = gt_to_float\(a0\[k\]\);", text)
    assert "gt_from_float<gt_half>(" in text
    assert "__half" not in text and "ftz" not in text


def test_index_width_follows_the_plan():
    assert "const int tid" in _kernel_text("axpb_f32_vector")
    assert "const long long tid" in _kernel_text("axpb_i64_index64")


def _combined(sources) -> str:
    """One translation unit: the real kernels right after the real preamble (so they are
    shown to need nothing of the complex part), then the complex part and its kernels."""
    split = [_split(s) for s in sources]
    real = "".join(text for whole, text in split if not whole)
    complex_ = "".join(text for whole, text in split if whole)
    return PREAMBLE_REAL + real + PREAMBLE[len(PREAMBLE_REAL) :] + complex_


@pytest.mark.parametrize("arch", ["compute_80", "compute_90"])
def test_every_variant_compiles_under_nvrtc(arch):
    from gpu_tensor.kernel import nvrtc

    try:
        nvrtc.nvrtc_version()
    except Exception as exc:  # noqa: BLE001 - any failure to load NVRTC means: skip
        pytest.skip(f"NVRTC is not available here: {exc}")
    sources = [generate(g, p, o).source for g, p, o in VARIANTS.values()]
    sources += [generate(g, p).source for _, g, p in op_variants()]
    ptx = nvrtc.compile_ptx(_combined(sources), arch)
    assert ptx.count(".entry") == len(sources)
    # No flush-to-zero arithmetic (numpy keeps denormals). libdevice's own fmod/pow use an
    # internal rcp.approx.ftz step on purpose, so only plain arithmetic is checked.
    assert not re.findall(r"\b(?:add|sub|mul|fma|div)\.[\w.]*ftz", ptx)
    vector = nvrtc.compile_ptx(generate(*VARIANTS["norm_rowcol_vector"]).source, arch)
    accesses = set(re.findall(r"(?:ld|st)\.global(?:\.nc)?\.v4\.\w+", vector))
    assert any(a.startswith("ld") for a in accesses) and any(a.startswith("st") for a in accesses)
    # in place (an output aliases an input): no __restrict__, so no non-coherent loads
    assert "ld.global.nc" in vector
    aliased = generate(*VARIANTS["norm_rowcol_vector"], restrict=False).source
    assert "__restrict__" not in aliased
    assert "ld.global.nc" not in nvrtc.compile_ptx(aliased, arch)


def _update() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name in VARIANTS:
        _golden_path(name).write_text(_kernel_text(name))
        print("wrote", _golden_path(name))


if __name__ == "__main__" and "--update" in sys.argv:
    _update()
