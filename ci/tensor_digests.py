#!/usr/bin/env python3
"""Prints the SHA-256 of every tensor of every .safetensors file under the
given directories, one line per tensor: '<file relative to its root> <tensor>
<dtype> <shape> <sha256 of the tensor's bytes>'. Only the tensor bytes are
hashed (not the metadata, which carries run ids and log lengths), so two
runs with the same seed compare bit for bit with `diff`: the check a
behaviour-preserving change passes (docs/testing.md, "Bit for bit").

  python3 ci/tensor_digests.py RUN_DIR [RUN_DIR ...] > digests.txt
"""
import hashlib
import json
import os
import struct
import sys


def tensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    body = data[8 + header_len:]
    for name in sorted(k for k in header if k != "__metadata__"):
        t = header[name]
        begin, end = t["data_offsets"]
        yield name, t["dtype"], t["shape"], hashlib.sha256(body[begin:end]).hexdigest()


def main(roots):
    if not roots:
        sys.exit(__doc__)
    for root in roots:
        files = []
        for d, _, names in os.walk(root):
            files += [os.path.join(d, n) for n in names if n.endswith(".safetensors")]
        if not files:
            sys.exit(f"tensor_digests: no .safetensors file under {root}")
        for path in sorted(files):
            rel = os.path.relpath(path, root)
            for name, dtype, shape, digest in tensors(path):
                print(f"{rel} {name} {dtype} {'x'.join(map(str, shape)) or 'scalar'} {digest}")


if __name__ == "__main__":
    main(sys.argv[1:])
