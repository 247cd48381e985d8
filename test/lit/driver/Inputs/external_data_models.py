"""Writes models with external tensor data into DIR (external-data.test):

  inline.onnx        a small MLP (Gemm, Relu, Gemm), weights inline
  external/mlp.onnx  the same, every initializer in external/weights.bin
                     (as onnx.save_model(save_as_external_data=True) writes)
  bad_*/model.onnx   one initializer whose external data may not be read:
                     absolute, '..', a symbolic link out of the directory,
                     missing, a directory, too short, a wrong length, an
                     offset past the end, a negative offset
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp():
    rng = np.random.default_rng(0)
    weights = {"w1": rng.normal(0, 0.3, (16, 8)).astype(np.float32),
               "b1": np.zeros(16, np.float32),
               "w2": rng.normal(0, 0.3, (4, 16)).astype(np.float32),
               "b2": np.zeros(4, np.float32)}
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def external(model, **entries):
    """Makes w1 external with `entries` (location, offset, length)."""
    tensor = next(t for t in model.graph.initializer if t.name == "w1")
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, str(value)
    return model


def main(out):
    os.makedirs(out, exist_ok=True)
    onnx.save(mlp(), os.path.join(out, "inline.onnx"))
    os.makedirs(os.path.join(out, "external"), exist_ok=True)
    onnx.save_model(mlp(), os.path.join(out, "external", "mlp.onnx"),
                    save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 8)).astype(np.float32)
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "y.npy"), rng.integers(0, 4, 6).astype(np.int64))
    w1 = numpy_helper.to_array(next(t for t in mlp().graph.initializer
                                    if t.name == "w1")).tobytes()
    secret = os.path.join(out, "secret.bin")
    open(secret, "wb").write(w1)
    cases = {
        "absolute": {"location": secret},
        "dotdot": {"location": "../secret.bin"},
        "symlink": {"location": "link.bin"},
        "missing": {"location": "nothing.bin"},
        "directory": {"location": "sub"},
        "short": {"location": "w.bin"},
        "length": {"location": "w.bin", "length": 100},
        "offset": {"location": "w.bin", "offset": 1 << 40},
        "negative": {"location": "w.bin", "offset": -4},
    }
    for name, entries in cases.items():
        directory = os.path.join(out, "bad_" + name)
        os.makedirs(os.path.join(directory, "sub"), exist_ok=True)
        onnx.save(external(mlp(), **entries), os.path.join(directory, "model.onnx"))
        open(os.path.join(directory, "w.bin"), "wb").write(
            w1[:100] if name == "short" else w1)
        link = os.path.join(directory, "link.bin")
        if not os.path.lexists(link):
            os.symlink(secret, link)


if __name__ == "__main__":
    main(sys.argv[1])
