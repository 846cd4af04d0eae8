"""`nn.Module`: parameters, buffers and submodules registered by attribute assignment, with
torch's traversal, state_dict, train/eval, device/dtype moves, hooks and repr."""

from __future__ import annotations

from collections import OrderedDict, namedtuple

from gpu_tensor._tensor import Tensor
from gpu_tensor.autograd import no_grad

from .parameter import Parameter, adopt_payload, zero_grads

__all__ = ["Module"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        return (
            "<All keys matched successfully>"
            if not self.missing_keys and not self.unexpected_keys
            else super().__repr__()
        )


class RemovableHandle:
    """What register_forward_hook returns: `.remove()` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Module:
    """Base class of every layer. Subclasses set parameters, buffers and submodules as
    attributes in __init__ (after calling super().__init__()) and define forward()."""

    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() takes no arguments; call "
                "super().__init__() without them"
            )
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args, **kwargs):
        for hook in tuple(self._forward_pre_hooks.values()):
            changed = hook(self, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
        result = self.forward(*args, **kwargs)
        for hook in tuple(self._forward_hooks.values()):
            changed = hook(self, args, result)
            if changed is not None:
                result = changed
        return result

    # -- registration ---------------------------------------------------------------
    def _check_ready(self):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                "cannot assign parameters, buffers or modules before Module.__init__() call"
            )

    def _check_slot(self, name, value, kind: str, cls, required: str) -> None:
        """register_parameter's and register_buffer's checks, with torch's messages."""
        self._check_ready()
        _check_name(self, name, kind)
        if value is not None and not isinstance(value, cls):
            raise TypeError(
                f"cannot assign '{type(value).__name__}' object to {kind} "
                f"'{name}' ({required} or None required)"
            )

    def register_parameter(self, name: str, param) -> None:
        self._check_slot(name, param, "parameter", Parameter, "torch.nn.Parameter")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        self._check_slot(name, tensor, "buffer", Tensor, "torch Tensor")
        self._buffers[name] = tensor
        (self._non_persistent.discard if persistent else self._non_persistent.add)(name)

    def add_module(self, name: str, module) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name(self, name, "module", allow_dot=False)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        d = self.__dict__
        params, modules = d.get("_parameters"), d.get("_modules")
        if isinstance(value, Parameter):
            self._check_ready()
            _forget(self, name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            _reassign(params, name, value, (), "parameter", "torch.nn.Parameter")
        elif isinstance(value, Module):
            self._check_ready()
            _forget(self, name)
            modules[name] = value
        elif modules is not None and name in modules:
            _reassign(modules, name, value, (), "child module", "torch.nn.Module")
        elif (buffers := d.get("_buffers")) is not None and name in buffers:
            _reassign(buffers, name, value, Tensor, "buffer", "torch.Tensor")
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(
            set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules)
        )

    # -- traversal --------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                sub = f"{prefix}.{name}" if prefix else name
                yield from child.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str):
        mod = self
        for item in target.split(".") if target else ():
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    # -- modes and moves ----------------------------------------------------------------
    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn):
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def _apply(self, fn):
        """Convert every parameter (in place: the same Parameter objects), its grad, and
        every buffer."""
        for m in self.modules():
            for p in m._parameters.values():
                if p is None:
                    continue
                with no_grad():
                    adopt_payload(p, fn(p.detach()))
                    if p.grad is not None:
                        p.grad = fn(p.grad)
            for name, b in m._buffers.items():
                if b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype), to(tensor): floating parameters and
        buffers take the dtype; everything takes the device."""
        from gpu_tensor.dtype import DType

        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, DType):
                dtype = a
            else:
                device = a
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                f"nn.Module.to only accepts floating point or complex dtypes, but "
                f"got desired dtype={dtype}"
            )

        def convert(t):
            if dtype is not None and t.is_floating_point():
                return t.to(device=device, dtype=dtype) if device is not None else t.to(dtype)
            return t.to(device) if device is not None else t

        return self._apply(convert)

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def cpu(self):
        return self.to("cpu")

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    # -- hooks ------------------------------------------------------------------------------
    def register_forward_hook(self, hook):
        """hook(module, args, output) runs after forward; a non-None return replaces output."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook):
        """hook(module, args) runs before forward; a non-None return replaces args."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    # -- state ------------------------------------------------------------------------------
    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=out, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values into the parameters and buffers; with strict, missing or unexpected
        keys raise RuntimeError (torch's message). Returns (missing_keys, unexpected_keys)."""
        from .state import load_into

        missing, unexpected, errors = load_into(self, state_dict, strict, assign)
        if strict:
            if unexpected:
                errors.insert(
                    0,
                    "Unexpected key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in unexpected)
                    ),
                )
            if missing:
                errors.insert(
                    0,
                    "Missing key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in missing)
                    ),
                )
        if errors:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(
                    type(self).__name__, "\n\t".join(errors)
                )
            )
        return _IncompatibleKeys(missing, unexpected)

    # -- repr ----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, child in self._modules.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


def _check_name(module, name, kind, allow_dot=False):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name and not allow_dot:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if hasattr(type(module), name):
        raise KeyError(f"attribute '{name}' already exists")


def _forget(module, name):
    """Drop `name` from every table and the instance dict before it is re-registered."""
    module.__dict__.pop(name, None)
    for table in ("_parameters", "_buffers", "_modules"):
        module.__dict__[table].pop(name, None)
    module._non_persistent.discard(name)


def _reassign(table, name, value, allowed, kind, expected):
    """`module.name = value` for a name already in `table` (parameters, child modules,
    buffers): None or an `allowed` value replaces the entry; anything else is torch's
    TypeError."""
    if value is not None and not isinstance(value, allowed):
        raise TypeError(
            f"cannot assign '{type(value).__name__}' as {kind} '{name}' "
            f"({expected} or None expected)"
        )
    table[name] = value
