"""Running the user's code (the entry file, build(), make_batch(), the model,
the loss, backward) so that an exception it raises becomes one CaptureError
line naming what raised it, the op and module it was in and the user's line,
instead of a traceback through this package (docs/capture.md, "Mistakes in
an entry point").

Note [User code or bug]: an exception that comes out of user code is the
user's unless it was raised by this package's own code on the way (the
recorder sits under every op the model runs). The recorder marks the
exceptions an op itself raised (mark_op_failure: a shape mismatch inside
aten::addmm is the model's); any other exception that passed through a frame
of this package is a bug in the package and is re-raised as it is, so that
the command line shows its traceback and says it is a bug.
"""

import os
import sys
import sysconfig

from .errors import CaptureError

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_OP_ATTR = "_swapadvisor_capture_op"


def mark_op_failure(exc, where):
    """Marks an exception that the ATen op `where` (the recorder's op
    description) raised: the op failed on the user's arguments."""
    try:
        if not hasattr(exc, _OP_ATTR):
            setattr(exc, _OP_ATTR, where)
    except (AttributeError, TypeError):
        pass  # an exception type without attributes: left unmarked


def _library_dirs():
    dirs = {_PACKAGE_DIR}
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.abspath(p))
    for name in ("torch", "torchvision"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            dirs.add(os.path.dirname(os.path.abspath(mod.__file__)))
    return dirs


def _inside(path, dirs):
    path = os.path.abspath(path)
    return any(path == d or path.startswith(d + os.sep) for d in dirs)


def _frames(exc):
    """The frames the exception passed through below the user_call."""
    tb = exc.__traceback__
    tb = tb.tb_next if tb is not None else None  # user_call's own frame
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def _short(path):
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    return path if rel.startswith("..") else rel


def _first_line(exc):
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else "(no message)"
    return text if len(text) <= 300 else text[:297] + "..."


def _module_names(model):
    if model is None:
        return {}
    try:
        return {id(m): (name or type(m).__name__) for name, m in model.named_modules()}
    except Exception:  # a model whose named_modules() fails says so elsewhere
        return {}


def user_error(exc, what, hint, model=None):
    """The CaptureError for an exception that the user's code (`what`, e.g.
    "the model's forward") raised, or None when it is a bug in this package
    (Note [User code or bug])."""
    frames = _frames(exc)
    op = getattr(exc, _OP_ATTR, None)
    if op is None and any(_inside(tb.tb_frame.f_code.co_filename, {_PACKAGE_DIR})
                          for tb in frames):
        return None
    libs = _library_dirs()
    names = _module_names(model)
    module = None
    where = None
    for tb in frames:
        f = tb.tb_frame
        owner = f.f_locals.get("self") if names else None
        if owner is not None and id(owner) in names:
            module = names[id(owner)]
        fname = f.f_code.co_filename
        if not fname.startswith("<") and not _inside(fname, libs):
            where = f"{_short(fname)}:{tb.tb_lineno} in {f.f_code.co_name}"
    message = _first_line(exc)
    if isinstance(exc, SyntaxError) and exc.filename:
        message = exc.msg or "invalid syntax"
        where = f"{_short(exc.filename)}:{exc.lineno}"
    details = []
    if op is not None:
        details.append(op)  # names the module itself in the forward pass
    elif module is not None:
        details.append(f"module {module}")
    if where:
        details.append(f"at {where}")
    detail = f" ({', '.join(details)})" if details else ""
    return CaptureError(f"{what} raised {type(exc).__name__}: {message}{detail}; {hint}")


def user_call(what, hint, fn, *args, model=None, **kwargs):
    """fn(*args, **kwargs), the user's code: an exception it raises becomes
    a CaptureError saying that `what` raised it, with `hint` (what to do);
    a CaptureError (the recorder's) passes as it is, and so does a bug in
    this package (Note [User code or bug])."""
    try:
        return fn(*args, **kwargs)
    except CaptureError:
        raise
    except Exception as e:
        err = user_error(e, what, hint, model)
        if err is None:
            raise
        raise err from e


def describe(v):
    """A value as an error message names it: "a tensor of shape [3, 4]",
    "a tuple of 3 values", "a dict with keys 'x', 'y'", "None"."""
    import torch
    if v is None:
        return "None"
    if isinstance(v, torch.Tensor):
        return f"a {str(v.dtype).replace('torch.', '')} tensor of shape {list(v.shape)}"
    if isinstance(v, (tuple, list)):
        n = len(v)
        return f"a {type(v).__name__} of {n} value{'s' if n != 1 else ''}"
    if isinstance(v, dict):
        keys = ", ".join(repr(k) for k in list(v)[:5]) + (", ..." if len(v) > 5 else "")
        return f"a dict with keys {keys}" if v else "an empty dict"
    if isinstance(v, type):
        return f"the class {v.__name__}"
    return f"a {type(v).__name__}"
