"""swapadvisor_capture: record one PyTorch training iteration at the ATen
dispatcher and write it for swapadvisor.

A capture writes three files (docs/capture.md describes them exactly):

* ``PREFIX.graph.json.gz``  the dataflow graph, format v1 (docs/graph-format.md)
* ``PREFIX.exec.json.gz``   its executable part: every op's ATen overload and
  arguments, every tensor argument as a view (dtype, sizes, strides, offset)
  of a graph tensor
* ``PREFIX.values.bin``     the initial values of the parameters, buffers,
  optimizer state and the batch

Works with the PyTorch that Debian 12 ships (1.13) and with 2.x: it uses
only TorchDispatchMode, OpOverload._schema and public tensor APIs.
"""

__version__ = "0.1.0"

from .errors import CaptureError  # noqa: F401
