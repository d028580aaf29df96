"""Run by python.install from outside the source tree, with PYTHONPATH the
install prefix's site-packages (argv[1]): the package imports from there,
plans, and, when the ATen plugin was installed beside its module, finds
that one (not the build tree's)."""
import os
import sys

import swapadvisor

prefix = sys.argv[1]
assert swapadvisor.__file__.startswith(prefix), swapadvisor.__file__
print(swapadvisor.stats(model="mlp-3", batch=8)["ops"])
plugin = os.path.join(os.path.dirname(swapadvisor.__file__), "libswapadvisor_aten.so")
if os.path.exists(plugin):
    assert os.environ.get("SA_ATEN_PLUGIN") == plugin, os.environ.get("SA_ATEN_PLUGIN")
    assert swapadvisor.training_available(), swapadvisor.training_unavailable_reason()
    print("the ATen plugin beside the module:", plugin)
