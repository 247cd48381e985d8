"""Writes an IDX data set of noise images with random labels:
make_idx.py DIR TRAIN_COUNT TEST_COUNT SEED (28x28 images, 10 classes)."""
import os
import struct
import sys

import numpy as np

out, train, test, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(seed)
for prefix, count in (("train", train), ("t10k", test)):
    images = rng.integers(0, 256, (count, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, count, dtype=np.uint8)
    with open(os.path.join(out, f"{prefix}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, count, 28, 28) + images.tobytes())
    with open(os.path.join(out, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 2049, count) + labels.tobytes())
