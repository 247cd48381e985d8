"""Writes ONNX models whose small float weight (4 elements: every float
initializer of 16 or fewer is also known at import time, for Clip bounds
and shape arithmetic) reaches its reader through Unsqueeze, Identity,
Reshape, Cast or CastLike, into the directory given as the only argument. torch's
GroupNorm export unsqueezes a weight of that size."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
w = numpy_helper.from_array(np.arange(1, 5, dtype=np.float32), "w")
axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
shape = numpy_helper.from_array(np.array([4, 1], np.int64), "shape")
paths = {
    "unsqueeze": [helper.make_node("Unsqueeze", ["w", "axes"], ["wu"])],
    "identity": [helper.make_node("Identity", ["w"], ["wi"]),
                 helper.make_node("Unsqueeze", ["wi", "axes"], ["wu"])],
    "reshape": [helper.make_node("Reshape", ["w", "shape"], ["wu"])],
    "cast": [helper.make_node("Cast", ["w"], ["wc"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["wc", "axes"], ["wu"])],
    "castlike": [helper.make_node("CastLike", ["w", "x"], ["wc"]),
                 helper.make_node("Reshape", ["wc", "shape"], ["wu"])],
}
for name, nodes in paths.items():
    graph = helper.make_graph(nodes + [helper.make_node("Mul", ["x", "wu"], ["y"])], name,
                              [x], [y], [w, axes, shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())
