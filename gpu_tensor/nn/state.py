"""Loading a state_dict into a Module tree (torch's key matching and messages)."""

from __future__ import annotations

from gpu_tensor._tensor import Tensor
from gpu_tensor.autograd import no_grad

from .parameter import Parameter, adopt_payload

__all__ = ["load_into"]


def load_into(root, state_dict, strict: bool, assign: bool):
    """Returns (missing_keys, unexpected_keys, error messages). Shape mismatches are errors
    whatever `strict` says, as in torch."""
    if not hasattr(state_dict, "keys"):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    expected, errors = set(), []
    missing = []
    for prefix, mod in root.named_modules():
        pre = f"{prefix}." if prefix else ""
        entries = list(mod._parameters.items()) + [
            (n, b) for n, b in mod._buffers.items() if n not in mod._non_persistent
        ]
        for name, own in entries:
            if own is None:
                continue
            key = pre + name
            expected.add(key)
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor '
                    f"or Tensor-like object from checkpoint but received "
                    f"{type(value)}"
                )
                continue
            if tuple(value.shape) != tuple(own.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{value.shape} from checkpoint, the shape in current model is "
                    f"{own.shape}."
                )
                continue
            _load_one(mod, name, own, value, assign)
    unexpected = [k for k in state_dict.keys() if k not in expected]
    return missing, unexpected, errors


def _load_one(mod, name, own, value, assign):
    with no_grad():
        if assign:
            if isinstance(own, Parameter):
                adopt_payload(own, value.detach())
            else:
                mod._buffers[name] = value
        else:
            own.copy_(value)
