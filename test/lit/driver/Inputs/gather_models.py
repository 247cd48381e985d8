"""Writes ONNX Gather models with constant indices (opset 13) into the
directory given as the only argument: one position (torch's qkv[0]),
evenly spaced positions (x[:, ::2]), a negative index, and positions that
are not evenly spaced (a gather stays a gather)."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, indices, axis):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    init = numpy_helper.from_array(np.array(indices, np.int64), "indices")
    node = helper.make_node("Gather", ["x", "indices"], ["y"], axis=axis)
    graph = helper.make_graph([node], name, [x], [y], [init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


save("one", 1, 0)
save("strided", [0, 2, 4], 1)
save("negative", -1, 2)
save("uneven", [0, 1, 3], 1)
