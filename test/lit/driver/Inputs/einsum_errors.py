"""Writes models the importer refuses with a message naming the node:
Einsum with an ellipsis, with a diagonal, with mismatched sizes, and Mod
of tensors computed at run time (attention.test)."""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, node, inputs, output_shape):
    graph = helper.make_graph(
        [node], name,
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
