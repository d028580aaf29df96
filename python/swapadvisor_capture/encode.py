"""Argument values <-> JSON, as docs/capture.md ("Argument encoding") defines.

Plain JSON carries None, bools, ints, floats (always written with a '.' or an
exponent, so a reader can tell 2.0 from 2) and strings. Everything else is a
one-key object: {"float": "inf"}, {"complex": [re, im]}, {"dtype": "float32"},
{"layout": "strided"}, {"device": "cpu"}, {"memory_format": "channels_last"};
tensors are {"tensor": id, "dtype", "sizes", "strides", "offset"} views or
{"empty": true, ...} for tensors without storage bytes.
"""

import math

import torch

from .errors import CaptureError

_MEMORY_FORMATS = {
    torch.contiguous_format: "contiguous_format",
    torch.channels_last: "channels_last",
    torch.preserve_format: "preserve_format",
    torch.channels_last_3d: "channels_last_3d",
}
_MEMORY_FORMATS_BY_NAME = {v: k for k, v in _MEMORY_FORMATS.items()}

_LAYOUTS = {torch.strided: "strided"}


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def dtype_from_name(name):
    d = getattr(torch, name, None)
    if not isinstance(d, torch.dtype):
        raise CaptureError(f"unknown dtype {name!r}")
    return d


def encode_float(x):
    if math.isfinite(x):
        return float(x)
    return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def decode_float(v):
    if isinstance(v, dict):
        return float(v["float"])
    return float(v)


def encode_value(v, tensor_fn, where):
    """Encodes one argument value. tensor_fn(t) encodes a tensor; where names
    the argument for error messages."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return encode_float(v)
    if isinstance(v, complex):
        return {"complex": [encode_float(v.real), encode_float(v.imag)]}
    if isinstance(v, torch.Tensor):
        return tensor_fn(v)
    if isinstance(v, torch.dtype):
        return {"dtype": dtype_name(v)}
    if isinstance(v, torch.layout):
        if v not in _LAYOUTS:
            raise CaptureError(f"{where}: layout {v} is not supported; use strided (dense) "
                               "tensors")
        return {"layout": _LAYOUTS[v]}
    if isinstance(v, torch.device):
        return {"device": v.type}
    if isinstance(v, torch.memory_format):
        return {"memory_format": _MEMORY_FORMATS[v]}
    if isinstance(v, (list, tuple)):
        return [encode_value(x, tensor_fn, f"{where}[{i}]") for i, x in enumerate(v)]
    sym = getattr(torch, "SymInt", None)
    if sym is not None and isinstance(v, sym):
        raise CaptureError(f"{where}: a symbolic size ({v}) cannot be replayed; capture with real sizes")
    raise CaptureError(f"{where}: argument of type {type(v).__name__} ({v!r:.60}) cannot be "
                       "represented; pass a tensor or a Python number there (a torch.Generator: "
                       "use the global generator, which the capture seeds)")


def decode_value(v, tensor_fn, device):
    """The inverse of encode_value; tensor_fn(obj) builds a tensor from a
    {"tensor": ...} or {"empty": ...} object; device replaces recorded devices."""
    if v is None or isinstance(v, (bool, str, int, float)):
        return v
    if isinstance(v, list):
        return [decode_value(x, tensor_fn, device) for x in v]
    if isinstance(v, dict):
        if "tensor" in v or "empty" in v:
            return tensor_fn(v)
        if "float" in v:
            return decode_float(v)
        if "complex" in v:
            return complex(decode_float(v["complex"][0]), decode_float(v["complex"][1]))
        if "dtype" in v:
            return dtype_from_name(v["dtype"])
        if "layout" in v:
            return torch.strided
        if "device" in v:
            return torch.device(device)
        if "memory_format" in v:
            return _MEMORY_FORMATS_BY_NAME[v["memory_format"]]
    raise CaptureError(f"cannot decode argument {v!r:.80}")
