"""Floating-point operations of one training step, from the forward graph
`trainc compile MODEL --batch N --emit graph` prints (static shapes).

Counts the dense ops only: graph.gemm and graph.matmul (2 M N K) and
graph.conv (2 x output elements x input channels per group x kernel area);
elementwise ops, normalization, pooling, softmax and the optimizer are left
out. A training step is taken as 3x the forward count (forward, gradient of
the input, gradient of the weight, each as large as the forward), the usual
approximation; it overcounts slightly where no input gradient is needed
(the first layer, the embedding)."""
import math
import re

DENSE_OP = re.compile(
    r"graph\.(gemm|matmul|conv) [^{:]*(?P<attrs>\{[^}]*\})?\s*:\s*\((?P<operands>[^)]*)\)\s*->\s*"
    r"tensor<(?P<result>[^>]*)>")


def shape(tensor_type):
    """'64x784xf32' -> [64, 784] (a dynamic size is None)."""
    return [None if d == "?" else int(d) for d in tensor_type.split("x")[:-1]]


def forward_flops(graph_text):
    """Dense-op flops of the forward function in `graph_text`."""
    total = 0
    for match in DENSE_OP.finditer(graph_text):
        op = match.group(1)
        operands = [shape(t) for t in re.findall(r"tensor<([^>]*)>", match.group("operands"))]
        result = shape(match.group("result"))
        a = operands[0]
        attrs = match.group("attrs") or ""
        if op == "gemm":
            k = a[0] if "trans_a = true" in attrs else a[1]
        elif op == "matmul":
            k = a[-1]
        else:  # conv: weight is Cout x Cin/group x kernel...
            weight = operands[1]
            group = re.search(r"group = (\d+)", attrs)
            per_group = weight[1] or a[1] // int(group.group(1) if group else 1)
            k = per_group * math.prod(weight[2:])
        total += 2 * math.prod(result) * k
    return total


def training_flops(graph_text):
    return 3 * forward_flops(graph_text)
