"""Floating-point operation counts of ATen ops, for the cost model.

Conventions (docs/capture.md, "FLOPs"): a multiply-add is 2 FLOPs; an
elementwise op costs its per-element count times the elements it writes;
data movement (copies, concatenation, fills, gathers) costs 0. Ops not in the
table fall back to one FLOP per element written and are reported by name
(Counter `fallbacks`) so that the table can grow.
"""

import math

import torch


def numel(t):
    return t.numel() if isinstance(t, torch.Tensor) else 0


def _prod(xs):
    return math.prod(int(x) for x in xs)


def _conv(inp, weight, transposed, groups, out):
    """2 * MACs of a convolution (forward or either backward product)."""
    k = _prod(weight.shape[2:])
    if transposed:
        # weight is [Cin, Cout/groups, k...]; each input element scatters into Cout/groups * k outputs
        return 2.0 * numel(inp) * weight.shape[1] * k
    cin_per_group = weight.shape[1]
    return 2.0 * numel(out) * cin_per_group * k


# Per-element FLOPs of elementwise ops (by base name, trailing '_' removed).
_ELEMENTWISE = {
    "add": 1, "sub": 1, "mul": 1, "div": 1, "neg": 1, "abs": 1, "relu": 1, "threshold": 1,
    "threshold_backward": 1, "clamp": 1, "clamp_min": 1, "clamp_max": 1, "hardtanh": 2,
    "hardtanh_backward": 2, "maximum": 1, "minimum": 1, "where": 1, "eq": 1, "ne": 1, "gt": 1,
    "lt": 1, "ge": 1, "le": 1, "sign": 1, "reciprocal": 1, "square": 1, "rsub": 1,
    "sqrt": 1, "rsqrt": 1, "exp": 1, "log": 1, "log1p": 1, "expm1": 1, "pow": 1, "sin": 1,
    "cos": 1, "tanh": 1, "sigmoid": 1, "tanh_backward": 2, "sigmoid_backward": 2,
    "addcmul": 3, "addcdiv": 3, "lerp": 3, "gelu": 8, "gelu_backward": 12, "silu": 4,
    "silu_backward": 6, "hardswish": 4, "hardswish_backward": 4, "hardsigmoid": 3,
    "hardsigmoid_backward": 2, "leaky_relu": 1, "leaky_relu_backward": 1, "elu": 3,
    "elu_backward": 3, "softplus": 3, "logical_not": 1, "logical_and": 1, "masked_fill": 1,
    "erf": 8, "triu": 1, "tril": 1, "bitwise_not": 1,
}
# Data movement and creation: no arithmetic.
_MOVEMENT = {
    "copy", "clone", "_to_copy", "cat", "stack", "zeros", "ones", "zeros_like", "ones_like",
    "full", "full_like", "fill", "zero", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "new_zeros", "new_ones", "new_full", "scalar_tensor", "embedding",
    "index", "index_select", "gather", "constant_pad_nd", "repeat", "contiguous", "arange",
    "_unsafe_view", "lift_fresh_copy", "masked_select", "select_backward", "slice_backward",
    "unsqueeze_copy", "expand_copy", "as_strided_scatter", "slice_scatter", "select_scatter",
    "roll", "flip", "_reshape_copy", "view_copy", "permute_copy", "t_copy", "transpose_copy",
    "detach_copy", "unbind_copy", "split_copy", "split_with_sizes_copy", "alias_copy",
    "bernoulli", "normal", "uniform", "rand", "randn", "randint", "randperm",
}


def op_flops(base, a, results, fallbacks):
    """FLOPs of one call. base: op name without namespace (e.g. "addmm");
    a: dict of schema argument name -> value (defaults filled in);
    results: the tensors the call returned (flattened)."""
    name = base[:-1] if base.endswith("_") and not base.startswith("__") else base
    out = max((numel(t) for t in results), default=0)
    if name in ("mm",):
        m, k = a["self"].shape
        return 2.0 * m * k * a["mat2"].shape[1]
    if name == "addmm":
        m, k = a["mat1"].shape
        n = a["mat2"].shape[1]
        return 2.0 * m * k * n + m * n
    if name == "bmm":
        b, m, k = a["self"].shape
        return 2.0 * b * m * k * a["mat2"].shape[2]
    if name == "baddbmm":
        b, m, k = a["batch1"].shape
        n = a["batch2"].shape[2]
        return 2.0 * b * m * k * n + b * m * n
    if name in ("addbmm",):
        b, m, k = a["batch1"].shape
        n = a["batch2"].shape[2]
        return 2.0 * b * m * k * n + m * n
    if name == "dot" or name == "vdot":
        return 2.0 * numel(a["self"])
    if name == "mv":
        return 2.0 * numel(a["self"])
    if name == "addmv":
        return 2.0 * numel(a["mat"]) + numel(a["self"])
    if name in ("outer", "ger", "addr"):
        return float(out)
    if name in ("convolution", "_convolution", "mkldnn_convolution", "cudnn_convolution",
                "thnn_conv2d", "_slow_conv2d_forward", "slow_conv3d_forward",
                "_nnpack_spatial_convolution", "conv2d", "conv1d", "conv3d",
                "cudnn_convolution_transpose", "convolution_overrideable"):
        transposed = bool(a.get("transposed", False)) or "transpose" in name
        groups = int(a.get("groups", 1))
        inp = a.get("input", a.get("self"))
        f = _conv(inp, a["weight"], transposed, groups, results[0])
        if isinstance(a.get("bias"), torch.Tensor):
            f += numel(results[0])
        return f
    if name == "convolution_backward":
        go, inp, w = a["grad_output"], a["input"], a["weight"]
        mask = list(a.get("output_mask", [True, True, True]))
        fwd = _conv(inp, w, bool(a.get("transposed", False)), int(a.get("groups", 1)), go)
        f = 0.0
        if mask[0]:
            f += fwd
        if mask[1]:
            f += fwd
        if len(mask) > 2 and mask[2]:
            f += numel(go)
        return f
    if name in ("native_batch_norm", "_native_batch_norm_legit", "cudnn_batch_norm",
                "miopen_batch_norm", "_batch_norm_impl_index", "batch_norm"):
        return 7.0 * numel(a["input"])
    if name in ("native_batch_norm_backward", "cudnn_batch_norm_backward",
                "miopen_batch_norm_backward", "batch_norm_backward"):
        return 11.0 * numel(a.get("grad_out", a.get("grad_output")))
    if name == "native_layer_norm":
        return 8.0 * numel(a["input"])
    if name == "native_layer_norm_backward":
        return 14.0 * numel(a["grad_out"])
    if name in ("native_group_norm",):
        return 8.0 * numel(a["input"])
    if name in ("native_group_norm_backward",):
        return 14.0 * numel(a["grad_out"])
    if name in ("_softmax", "_safe_softmax", "_log_softmax", "softmax", "log_softmax"):
        return 5.0 * numel(a["self"])
    if name in ("_softmax_backward_data", "_log_softmax_backward_data"):
        return 3.0 * numel(a["grad_output"])
    if name in ("nll_loss_forward", "nll_loss2d_forward"):
        return float(numel(a["target"]))
    if name in ("nll_loss_backward", "nll_loss2d_backward"):
        return float(numel(a["self"]))
    if name in ("mse_loss",):
        return 3.0 * numel(a["self"])
    if name in ("mse_loss_backward",):
        return 3.0 * numel(a["self"])
    if name in ("max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool2d",
                "avg_pool3d", "max_pool2d", "mkldnn_max_pool2d"):
        k = _prod(a["kernel_size"]) if len(a["kernel_size"]) > 1 else int(a["kernel_size"][0]) ** (
            2 if "2d" in name else 3)
        return float(numel(results[0]) * k)
    if name in ("max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward"):
        return float(numel(a["grad_output"]))
    if name in ("avg_pool2d_backward", "avg_pool3d_backward"):
        k = _prod(a["kernel_size"]) if len(a["kernel_size"]) > 1 else int(a["kernel_size"][0]) ** 2
        return float(numel(a["grad_output"]) * k)
    if name in ("_adaptive_avg_pool2d", "adaptive_avg_pool2d", "_adaptive_avg_pool3d",
                "mean", "sum", "prod", "amax", "amin", "max", "min", "norm", "linalg_vector_norm",
                "var", "std", "var_mean", "std_mean", "logsumexp", "argmax", "argmin", "all", "any",
                "cumsum", "_adaptive_avg_pool2d_backward", "_adaptive_avg_pool3d_backward"):
        inp = a.get("self", a.get("grad_output"))
        return float(max(numel(inp), out))
    if name == "embedding_dense_backward":
        return float(numel(a["grad_output"]))
    if name in ("embedding_backward", "index_add", "index_put", "_index_put_impl", "scatter_add",
                "scatter", "index_copy", "masked_scatter"):
        return float(out)
    if "scaled_dot_product" in name and "attention" in name:
        q, k = a["query"], a["key"]
        if "backward" in name:
            q, k = a["query"], a["key"]
        L, E = q.shape[-2], q.shape[-1]
        S = k.shape[-2]
        batch = _prod(q.shape[:-2])
        f = batch * (4.0 * L * S * E + 5.0 * L * S)
        return 2.5 * f if "backward" in name else f
    if name in _MOVEMENT or name.endswith("_copy"):
        return 0.0
    if name in _ELEMENTWISE:
        per = _ELEMENTWISE[name]
        if name in ("add", "sub") and a.get("alpha", 1) not in (1, 1.0):
            per = 2
        if out == 0:  # in-place: the elements of the updated tensor
            out = numel(a.get("self"))
        return float(per * out)
    fallbacks[base] += 1
    if out == 0:
        out = numel(a.get("self"))
    return float(out)
