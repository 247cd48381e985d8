"""Writes ONNX Pad models (opset 13 unless named) into the directory given
as the only argument: one per mode, negative pads, axes (opset 18), and
pads that cannot be."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, mode, pads, shape=(2, 3, 4), value=None, axes=None, opset=13):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(np.array(pads, np.int64), "pads")]
    inputs = ["x", "pads"]
    if value is not None or axes is not None:
        inits.append(numpy_helper.from_array(np.array(value or 0, np.float32), "value"))
        inputs.append("value")
    if axes is not None:
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        inputs.append("axes")
    node = helper.make_node("Pad", inputs, ["y"], mode=mode)
    graph = helper.make_graph([node], name, [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


save("constant", "constant", [0, 1, 0, 0, 2, 0], value=1.5)
save("edge", "edge", [0, 0, 2, 0, 0, 1])
save("reflect", "reflect", [0, 2, 0, 0, 1, 0])
save("negative", "constant", [0, -1, 1, 0, 0, -2])
save("axes", "reflect", [1, 1], axes=[-1], opset=18)
save("wrap", "wrap", [0, 0, 1, 0, 0, 2], opset=19)
save("wrap13", "wrap", [0, 0, 1, 0, 0, 2])
save("reflect_too_far", "reflect", [0, 3, 0, 0, 0, 0])
save("pads_length", "constant", [1, 1])
save("crop_all", "constant", [0, -2, 0, 0, -1, 0])
save("huge", "constant", [0, 2**61, 0, 0, 2**61, 0])
save("too_big", "constant", [0, 2**39, 0, 0, 0, 0])
save("int64_min", "constant", [0, -2**63, 0, 0, 0, 0])
