"""A checkpoint of this model as another trainc build could have written it.

  reshape_checkpoint.py IN.ckpt OUT.ckpt

Rewrites IN's first tensor of rank 2 or more with its shape flattened to one dimension (the
same bytes, another layout; the checksum made again), the way a library
of the same model built by another trainc may keep its state
(lib/Runtime/CheckpointFormat.cpp has the format).
"""
import struct
import sys

MASK = (1 << 64) - 1


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & MASK
    return h


def main():
    data = open(sys.argv[1], "rb").read()[:-8]
    at = 8 + 4  # magic, version
    (n,) = struct.unpack_from("<I", data, at)
    at += 4 + n  # model hash
    (n,) = struct.unpack_from("<Q", data, at)
    at += 8 + n  # caller's extra bytes
    (count,) = struct.unpack_from("<I", data, at)
    at += 4
    for _ in range(count):  # to the first tensor of rank 2 or more
        (n,) = struct.unpack_from("<I", data, at)
        at += 4 + n + 4  # name, dtype
        (rank,) = struct.unpack_from("<I", data, at)
        dims = struct.unpack_from(f"<{rank}q", data, at + 4)
        if rank >= 2:
            break
        (n,) = struct.unpack_from("<Q", data, at + 4 + 8 * rank)
        at += 4 + 8 * rank + 8 + n
    else:
        raise SystemExit("no tensor of rank 2 or more")
    elements = 1
    for d in dims:
        elements *= d
    flat = struct.pack("<Iq", 1, elements)
    out = data[:at] + flat + data[at + 4 + 8 * rank:]
    open(sys.argv[2], "wb").write(out + struct.pack("<Q", fnv1a(out)))


if __name__ == "__main__":
    main()
