"""gpu_tensor/memory/allocator.py is assembled from mixins (segments.py, capture.py,
readers.py, events.py): the parts stay stateless, never shadow each other, keep the
per-tensor hot path in allocator.py, and are the ones its docstring names."""

from __future__ import annotations

import inspect

from gpu_tensor.memory import allocator
from gpu_tensor.memory.allocator import CachingAllocator

HOT = (
    "malloc",
    "free",
    "_alloc_found_block",
    "_free_block",
    "_unpark",
    "_reuse_parked",
    "_operation",
    "_end_operation",
)


def _parts():
    return [c for c in CachingAllocator.__mro__[1:] if c is not object]


def test_the_docstring_names_every_part_and_its_module():
    doc = " ".join(allocator.__doc__.split())  # its lines wrap anywhere
    assert _parts(), "CachingAllocator has no parts: update this test and the docstring"
    for part in _parts():
        module = part.__module__.rsplit(".", 1)[-1]
        assert f"{module}.py (`{part.__name__}`" in doc, (part, module)


def test_parts_hold_no_state_and_no_constructor():
    for part in _parts():
        assert part.__slots__ == (), part
        assert "__init__" not in vars(part), part


def test_no_method_is_defined_twice():
    seen = {}
    for cls in (CachingAllocator, *_parts()):
        for name, value in vars(cls).items():
            if name.startswith("__") or not callable(value) and not isinstance(value, property):
                continue
            assert name not in seen, f"{name} in {cls.__name__} and {seen[name].__name__}"
            seen[name] = cls
    # the moved methods are where the docstring says
    assert seen["_alloc_segment"].__module__.endswith(".segments")
    assert seen["begin_allocate_to_pool"].__module__.endswith(".capture")
    assert seen["stats"].__module__.endswith(".readers")
    assert seen["record_stream"].__module__.endswith(".events")


def test_the_per_tensor_hot_path_stays_in_allocator_py():
    for name in HOT:
        assert name in vars(CachingAllocator), name
        fn = inspect.unwrap(getattr(CachingAllocator, name))
        assert fn.__code__.co_filename == allocator.__file__, name
