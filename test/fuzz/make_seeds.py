"""Seed corpora of the fuzz targets: make_seeds.py SOURCE_DIR OUT_DIR.

OUT_DIR/<target>/ gets valid inputs of each kind (and a few near misses),
in each target's framing (test/fuzz/*.cpp): the small reference models
and the hostile, Pad, Einsum and ConvTranspose models of test/lit/driver/Inputs for onnx_import, .npy and
.pb tensors of each dtype, an IDX image/label pair, and a checkpoint of
checkpoint.cpp's model."""
import io
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
from onnx import numpy_helper

source, out = sys.argv[1], sys.argv[2]


def write(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)


# onnx_import: byte 0 picks the batch size.
models = os.path.join(source, "models")
for name in sorted(os.listdir(models)):
    path = os.path.join(models, name)
    if name.endswith(".onnx") and os.path.getsize(path) < 64 * 1024:
        write("onnx_import", name, b"\x01" + open(path, "rb").read())
for script, prefix, *flags in (
        ("hostile_models.py", "hostile_"), ("pad_models.py", "pad_"),
        ("einsum_models.py", "einsum_"),
        ("conv_transpose_torch_export.py", "conv_transpose_", "--invalid")):
    with tempfile.TemporaryDirectory() as generated:
        subprocess.run([sys.executable, os.path.join(
            source, "test/lit/driver/Inputs", script), generated, *flags],
            check=True)
        for name in sorted(os.listdir(generated)):
            write("onnx_import", prefix + name,
                  b"\x00" + open(os.path.join(generated, name), "rb").read())

# tensor_file: byte 0 even: .npy, odd: .pb.
for dtype in (np.float32, np.float64, np.int64, np.int32):
    array = np.arange(24, dtype=dtype).reshape(2, 3, 4)
    buffer = io.BytesIO()
    np.save(buffer, array)
    write("tensor_file", f"{np.dtype(dtype).name}.npy", b"\x00" + buffer.getvalue())
    if dtype in (np.float32, np.float64, np.int64):
        proto = numpy_helper.from_array(array, "t").SerializeToString()
        write("tensor_file", f"{np.dtype(dtype).name}.pb", b"\x01" + proto)
buffer = io.BytesIO()
np.save(buffer, np.zeros((0, 5), np.float32))
write("tensor_file", "empty.npy", b"\x00" + buffer.getvalue())

# idx: two bytes of split, then images and labels.
images = struct.pack(">IIII", 2051, 3, 4, 4) + bytes(range(48))
labels = struct.pack(">II", 2049, 3) + bytes([1, 2, 3])
write("idx", "three", struct.pack(">H", len(images)) + images + labels)
write("idx", "truncated", struct.pack(">H", len(images) - 5) + images[:-5] + labels)

# checkpoint: byte 0 odd: append the checksum; checkpoint.cpp's model.
def tensor(name, dtype, shape, data):
    out = struct.pack("<I", len(name)) + name.encode()
    out += struct.pack("<II", dtype, len(shape))
    out += b"".join(struct.pack("<q", d) for d in shape)
    return out + struct.pack("<Q", len(data)) + data


body = b"TRAINCK1" + struct.pack("<I", 1)
body += struct.pack("<I", 16) + b"0123456789abcdef"
body += struct.pack("<Q", 5) + b"extra"
body += struct.pack("<I", 3)
body += tensor("fc.bias", 0, [4], bytes(16))
body += tensor("fc.weight", 0, [4, 3], bytes(48))
body += tensor("step", 4, [], bytes(8))
write("checkpoint", "valid", b"\x01" + body)
write("checkpoint", "foreign_hash", b"\x01" + body.replace(b"0123", b"9999"))
