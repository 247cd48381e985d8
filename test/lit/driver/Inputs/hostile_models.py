"""Writes ONNX models a careless or hostile user might hand trainc, into the
directory given as the only argument: shapes whose sizes overflow or that
MLIR would take for dynamic ones, and attributes out of range."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, inputs, inits=()):
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, name, inputs, [y], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def x(shape):
    return helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)


# An initializer whose element count wraps around 2^64 to 0, with no data:
# 0 bytes "fill" it.
wrap = TensorProto()
wrap.name = "w"
wrap.data_type = TensorProto.FLOAT
wrap.dims.extend([2**62, 4])
save("wrapping_initializer", [helper.make_node("Add", ["x", "w"], ["y"])],
     [x([2, 4])], [wrap])
w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
save("negative_dim", [helper.make_node("MatMul", ["x", "w"], ["y"])], [x([2, -5])], [w])
save("zero_dim", [helper.make_node("MatMul", ["x", "w"], ["y"])], [x([2, 0])], [w])
save("huge_dim", [helper.make_node("Relu", ["x"], ["y"])], [x([2, 2**62])])
# A Reshape to a huge static shape (the target is data).
target = numpy_helper.from_array(np.array([2**31, 2**31, 2], np.int64), "shape")
save("huge_reshape",
     [helper.make_node("Expand", ["x", "shape"], ["y"])], [x([1, 1, 2])], [target])
# Attributes out of range or of the wrong type.
xg = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
wg = numpy_helper.from_array(np.ones((3, 4), np.float32), "w")
save("gemm_trans_b_7", [helper.make_node("Gemm", ["x", "w"], ["y"], transB=7)], [xg], [wg])
save("gemm_trans_b_string",
     [helper.make_node("Gemm", ["x", "w"], ["y"], transB="yes")], [xg], [wg])
# Kernels that make a NaN or an infinity from finite numbers
# (--check-numerics): the square root of a negative product, and exp of a
# large one.
ws = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
xs = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
save("sqrt_of_product",
     [helper.make_node("MatMul", ["x", "w"], ["p"]),
      helper.make_node("Sqrt", ["p"], ["y"])], [xs], [ws])
save("exp_of_product",
     [helper.make_node("MatMul", ["x", "w"], ["p"]),
      helper.make_node("Exp", ["p"], ["y"])], [xs], [ws])
# A ResNet-style max pool (3x3, stride 2, padded): its NaN must reach the
# output (oneDNN's pooling never selects NaN).
xp = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 6, 6])
yp = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 9])
pool_graph = helper.make_graph(
    [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3],
                      strides=[2, 2], pads=[1, 1, 1, 1]),
     helper.make_node("Flatten", ["p"], ["y"])], "max_pool_3x3s2", [xp], [yp])
with open(os.path.join(out, "max_pool_3x3s2.onnx"), "wb") as f:
    f.write(helper.make_model(
        pool_graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
# A Reshape of a known (shape arithmetic) tensor to a target of another
# element count: 4 values into [2, 3].
known = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
    np.array([1, 2, 3, 4], np.int64)))
target6 = helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(
    np.array([2, 3], np.int64)))
save("reshape_known_mismatch",
     [known, target6, helper.make_node("Reshape", ["c", "t"], ["r"]),
      helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)], [])
