#!/usr/bin/python3
"""Captures under torch.autocast (issue 14; docs/capture.md, "Mixed
precision"), run by CTest:

    test_autocast.py --cli build/swapadvisor

The tiny CNN (tests/capture/entries/tiny_cnn.py) captured with --autocast
bf16: autocast's casts are recorded ops (aten::_to_copy of the batch and the
weights), the convolution and linear ops and their backward are marked
"dtype": "bfloat16" (graph format 1.2), the loss's log-softmax stays float32
(unmarked), the params stay FP32; swapadvisor's reader accepts the graph and
costs its BF16 ops at the profile's BF16 rate (on a compute-bound profile
without launch overhead, the ideal time with bf16_tflops 16x the FP32 peak
is below the one without it); and the Python replay of the capture gives
eager autocast's losses.

Exit status 77 (CTest's SKIP_RETURN_CODE) without torch.
"""

import argparse
import json
import math
import os
import sys
import tempfile

from checks import ROOT, check, must, verdict

sys.path.insert(0, os.path.join(ROOT, "python"))
CAPTURE = os.path.join(ROOT, "python", "swapadvisor-capture")
ENTRY = "tests/capture/entries/tiny_cnn.py"

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: this Python has no torch (apt-get install python3-torch python3-torchvision)")
    sys.exit(77)

from swapadvisor_capture.capture import read_json_gz  # noqa: E402


def ideal_us(cli, graph, profile):
    out = must([cli, "stats", graph, "--device", profile, "--json"], "stats")
    return json.loads(out)["ideal_us"]


def write_profile(path, **extra):
    """Compute-bound (huge HBM bandwidth), no launch overhead."""
    p = {"format": "swapadvisor-device", "version": 1, "memory_bytes": 1 << 30, "h2d_gbps": 10,
         "d2h_gbps": 10, "peak_tflops": 1, "hbm_gbps": 1e6, "launch_overhead_us": 0, **extra}
    with open(path, "w") as f:
        json.dump(p, f)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fp32, bf16 = os.path.join(tmp, "fp32"), os.path.join(tmp, "bf16")
        must([sys.executable, CAPTURE, ENTRY, "-o", fp32, "--json"], "capture")
        must([sys.executable, CAPTURE, ENTRY, "-o", bf16, "--json", "--autocast", "bf16"],
             "capture --autocast bf16")
        g = read_json_gz(bf16 + ".graph.json.gz")
        # 1.2 for the dtypes; 1.3 where batch norms are marked recompute_skips_updates
        check(g.get("minor_version", 0) >= 2 and any(o.get("dtype") for o in g["ops"]),
              f"format 1.2: minor_version {g.get('minor_version')}")
        dtype = {}
        for o in g["ops"]:
            dtype.setdefault(o["type"], set()).add(o.get("dtype", "float32"))
        for t in ("aten::convolution", "aten::convolution_backward", "aten::addmm",
                  "aten::_to_copy"):
            check(dtype.get(t) == {"bfloat16"}, f"{t} ops are bfloat16: {dtype.get(t)}")
        check(dtype.get("aten::_log_softmax") == {"float32"},
              f"the loss's log-softmax stays float32: {dtype.get('aten::_log_softmax')}")
        params = [t for t in g["tensors"] if t["kind"] == "param"]
        check(params and all(t.get("dtype") == "float32" for t in params),
              "params stay float32 (the master copy)")
        check(any(t.get("dtype") == "bfloat16" and t["kind"] == "activation"
                  for t in g["tensors"]), "activations are bfloat16")
        check(not any("dtype" in o for o in read_json_gz(fp32 + ".graph.json.gz")["ops"]),
              "without autocast no op is marked")
        plain = write_profile(os.path.join(tmp, "plain.json"))
        tensor = write_profile(os.path.join(tmp, "tensor.json"), bf16_tflops=16)
        graph = bf16 + ".graph.json.gz"
        slow, fast = ideal_us(a.cli, graph, plain), ideal_us(a.cli, graph, tensor)
        check(fast < slow / 2, f"BF16 ops run at bf16_tflops: ideal {fast:.2f} us with it, "
                               f"{slow:.2f} us without")
        # Torch 2.6's own BF16 CPU run of this net gives a NaN loss at the
        # second iteration now and then when other processes load the
        # machine: in stop 23's CI the replay once (many threads), and with
        # three of this test side by side on one thread, 3 of 6 pairs (the
        # replay or plain eager; never in 12 eager runs side by side). Not
        # ours to mend here: a pair with a NaN is said and run again, up to
        # 10 times.
        for _ in range(10):
            replay = must([sys.executable, CAPTURE, "replay", bf16, "--iterations", "2"], "replay")
            eager = json.loads(must([sys.executable, CAPTURE, "eager", ENTRY, "--iterations", "2",
                                     "--autocast", "bf16", "--json"], "eager --autocast bf16"))
            got = [float(line.split()[-1]) for line in replay.splitlines() if "loss" in line]
            if not any(math.isnan(x) for x in got + eager["losses"]):
                break
            print(f"torch gave a NaN loss (replay {got}, eager {eager['losses']}): run again")
        check(got == eager["losses"], f"replay losses {got} == eager autocast {eager['losses']}")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
