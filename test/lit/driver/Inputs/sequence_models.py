"""Writes ONNX models (opset 18) into the directory given as the only
argument: a SplitToSequence read by SequenceAt (chunks of 3 along axis 1,
the last one smaller, then items 0 and -1), a CastLike, a position out of
range, a split into single elements (not supported), and a float
initializer that holds -inf added to the input (a mask)."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, inits, outputs=("y",)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    ys = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    graph = helper.make_graph(nodes, name, [x], ys, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def scalar(name, value, dtype=np.int64):
    return numpy_helper.from_array(np.array(value, dtype), name)


split = helper.make_node("SplitToSequence", ["x", "three"], ["parts"], axis=1)
save("sequence", [split,
                  helper.make_node("SequenceAt", ["parts", "first"], ["y"]),
                  helper.make_node("SequenceAt", ["parts", "last"], ["z"]),
                  helper.make_node("CastLike", ["half", "x"], ["h"]),
                  helper.make_node("Mul", ["z", "h"], ["w"])],
     [scalar("three", 3), scalar("first", 0), scalar("last", -1),
      scalar("half", 0.5, np.float64)], outputs=("y", "w"))
save("out_of_range", [split, helper.make_node("SequenceAt", ["parts", "four"], ["y"])],
     [scalar("three", 3), scalar("four", 3)])
save("no_split", [helper.make_node("SplitToSequence", ["x"], ["parts"], axis=1),
                  helper.make_node("SequenceAt", ["parts", "first"], ["y"])],
     [scalar("first", 0)])
mask = np.zeros(8, np.float32)
mask[4:] = -np.inf
save("mask", [helper.make_node("Add", ["x", "mask"], ["y"])],
     [numpy_helper.from_array(mask, "mask")])
