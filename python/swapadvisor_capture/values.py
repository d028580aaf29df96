"""The values file (docs/capture.md, "Values file"): the bytes of some graph
tensors, e.g. the initial parameters, buffers, optimizer state and batch.

    offset 0   8 bytes  magic "SAVALUES"
           8   u32      version (1)
          12   u32      0 (reserved)
          16   u64      H: size of the header in bytes
          24   H bytes  header, UTF-8 JSON:
                        {"graph": NAME, "tensors": [{"tensor": ID, "name": ..., "kind": ...,
                                                     "bytes": N, "offset": OFF}, ...]}
               zero padding up to D = the next multiple of 64
           D   data: tensor ID's N bytes start at D + OFF (OFF a multiple of 64)

All integers are little-endian; the bytes are the tensor's storage as the
machine holds it (little-endian on every platform PyTorch supports).
"""

import json
import struct

import torch

MAGIC = b"SAVALUES"
VERSION = 1
ALIGN = 64


def _round(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def write_values(path, entries, graph_name=""):
    """entries: list of (tensor_id, name, kind, data) with data a CPU uint8
    tensor (or bytes)."""
    header_entries = []
    off = 0
    blobs = []
    for tid, name, kind, data in entries:
        raw = data.contiguous().numpy().tobytes() if isinstance(data, torch.Tensor) else bytes(data)
        header_entries.append({"tensor": int(tid), "name": name, "kind": kind, "bytes": len(raw),
                               "offset": off})
        blobs.append((off, raw))
        off = _round(off + len(raw))
    header = json.dumps({"graph": graph_name, "tensors": header_entries},
                        separators=(",", ":")).encode()
    data_start = _round(24 + len(header))
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<IIQ", VERSION, 0, len(header)))
        f.write(header)
        f.write(b"\0" * (data_start - 24 - len(header)))
        pos = 0
        for o, raw in blobs:
            f.write(b"\0" * (o - pos))
            f.write(raw)
            pos = o + len(raw)


def read_values(path):
    """Returns (header dict, {tensor_id: bytes})."""
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:8] != MAGIC:
        raise ValueError(f"{path}: not a swapadvisor values file (bad magic)")
    version, _, hlen = struct.unpack_from("<IIQ", buf, 8)
    if version != VERSION:
        raise ValueError(f"{path}: unsupported values file version {version}")
    header = json.loads(buf[24:24 + hlen].decode())
    data_start = _round(24 + hlen)
    out = {}
    for e in header["tensors"]:
        s = data_start + e["offset"]
        if s + e["bytes"] > len(buf):
            raise ValueError(f"{path}: tensor {e['tensor']} runs past the end of the file")
        out[e["tensor"]] = buf[s:s + e["bytes"]]
    return header, out


def replace_values(src, dst, by_name):
    """Writes to dst the values file src with the tensors named in by_name
    ({name: tensor}) holding those tensors' bytes instead (each as many
    bytes as before): a data-parallel rank's batch in place of the
    captured one."""
    header, vals = read_values(src)
    entries = []
    left = dict(by_name)
    for e in header["tensors"]:
        data = vals[e["tensor"]]
        if e["name"] in left:
            t = left.pop(e["name"]).detach().cpu().contiguous()
            raw = t.reshape(-1).view(torch.uint8)
            if raw.numel() != len(data):
                raise ValueError(f"{src}: {e['name']} has {len(data)} bytes, its replacement "
                                 f"{raw.numel()}")
            data = raw
        entries.append((e["tensor"], e["name"], e["kind"], data))
    if left:
        raise ValueError(f"{src}: no tensor named {', '.join(sorted(left))}")
    write_values(dst, entries, header.get("graph", ""))


def as_tensor(raw, dtype=torch.uint8):
    """A writable CPU tensor holding a copy of raw bytes."""
    t = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
    return t.view(dtype) if dtype != torch.uint8 else t
