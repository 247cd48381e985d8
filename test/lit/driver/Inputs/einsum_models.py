"""Writes small Einsum, Mod and ScatterND models (attention.test; fuzz
seeds): ones that import (a batched product, a known Mod feeding a Reshape,
a known ScatterND added to the input), and ones the importer refuses with
a message naming the node (Einsum with an ellipsis, with a diagonal, with
mismatched sizes; Mod of tensors computed at run time)."""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, node, inputs, output_shape):
    nodes = node if isinstance(node, list) else [node]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(out, name + ".onnx"))


save("ellipsis", helper.make_node("Einsum", ["a", "b"], ["y"], equation="...ij,...jk->...ik"),
     [("a", [2, 3, 4]), ("b", [2, 4, 5])], [2, 3, 5])
save("diagonal", helper.make_node("Einsum", ["a"], ["y"], equation="ii->i"),
     [("a", [3, 3])], [3])
save("sizes", helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik"),
     [("a", [2, 3]), ("b", [4, 5])], [2, 5])
save("mod", helper.make_node("Mod", ["a", "b"], ["y"], fmod=1),
     [("a", [2, 3]), ("b", [2, 3])], [2, 3])


def ints(name, values, dims=None):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name, TensorProto.INT64, dims if dims is not None else [len(values)], values))


save("batched", helper.make_node("Einsum", ["a", "b"], ["y"], equation="bhid,bhjd->bhij"),
     [("a", [2, 2, 3, 4]), ("b", [2, 2, 5, 4])], [2, 2, 3, 5])
# shape = [6, 12 % 5 + 2] = [6, 4] (Python's %), then Reshape.
save("known_mod", [ints("num", [6, 12]), ints("den", [7, 5]), ints("two", [0, 2]),
                   helper.make_node("Mod", ["num", "den"], ["rem"]),
                   helper.make_node("Add", ["rem", "two"], ["shape"]),
                   helper.make_node("Reshape", ["x", "shape"], ["y"])],
     [("x", [3, 8])], [6, 4])
save("known_scatter", [
    helper.make_node("Constant", [], ["zeros"], value=helper.make_tensor(
        "zeros", TensorProto.FLOAT, [2, 3], [0.0] * 6)),
    ints("indices", [1, 0], [1, 2]),
    helper.make_node("Constant", [], ["updates"], value=helper.make_tensor(
        "updates", TensorProto.FLOAT, [1], [5.0])),
    helper.make_node("ScatterND", ["zeros", "indices", "updates"], ["mask"]),
    helper.make_node("Add", ["x", "mask"], ["y"])],
    [("x", [2, 3])], [2, 3])
