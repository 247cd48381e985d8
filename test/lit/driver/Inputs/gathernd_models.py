"""Writes the ONNX patterns torch 2.x's dynamo exporter uses for Swin-T's
windowed attention (opset 18) into the directory given as the only
argument: GatherND with known indices (the relative position bias table
read at its index buffer; tuples of one and of two entries), GatherND with
indices computed at run time, out-of-range and batch_dims refusals, the
shifted-window mask built from a ConstantOfShape through CastLike, Slice,
Transpose and ScatterND, and a Slice of a weight (never folded)."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, inputs, inits):
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, name, inputs, [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype), name)


def gathernd(name, data_shape, indices, batch_dims=0):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, data_shape)
    node = helper.make_node("GatherND", ["x", "indices"], ["y"], batch_dims=batch_dims)
    save(name, [node], [x], [const("indices", indices)])


gathernd("table", [9, 3], [[0], [8], [-1], [4]])
gathernd("pairs", [2, 3, 4], [[1, 2], [0, -1]])
gathernd("out_of_range", [2, 3, 4], [[0, 3]])
gathernd("batch_dims", [2, 3, 4], [[1], [0]], batch_dims=1)

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
i = helper.make_tensor_value_info("i", TensorProto.INT64, [5, 2])
save("runtime", [helper.make_node("GatherND", ["x", "i"], ["y"])], [x, i], [])

# torchvision's shifted-window mask (x.new_zeros, then mask[a:b, c:d] =
# count), as dynamo writes it: zeros of a known shape cast like x, sliced,
# transposed, one entry scattered; added to x.
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2])
nodes = [
    helper.make_node("ConstantOfShape", ["shape"], ["zeros"],
                     value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
    helper.make_node("CastLike", ["zeros", "x"], ["like"]),
    helper.make_node("Slice", ["like", "starts", "ends", "axes"], ["rows"]),
    helper.make_node("Transpose", ["rows"], ["t"], perm=[1, 0]),
    helper.make_node("Constant", [], ["count"],
                     value=helper.make_tensor("c", TensorProto.FLOAT, [1], [7.0])),
    helper.make_node("ScatterND", ["t", "where", "count"], ["mask"]),
    helper.make_node("Add", ["x", "mask"], ["y"]),
]
save("mask", nodes, [x], [const("shape", [4, 4]), const("starts", [2]), const("ends", [4]),
                          const("axes", [0]), const("where", [[3, 1]])])

# A weight sliced and transposed: trained through both, never folded.
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2])
w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
nodes = [helper.make_node("Slice", ["w", "starts", "ends", "axes"], ["rows"]),
         helper.make_node("Transpose", ["rows"], ["t"], perm=[1, 0]),
         helper.make_node("Add", ["x", "t"], ["y"])]
save("weight_slice", nodes, [x], [w, const("starts", [2]), const("ends", [4]),
                                  const("axes", [0])])
