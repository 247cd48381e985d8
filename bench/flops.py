"""Floating-point operations of one training step, from the forward graph
`trainc compile MODEL --batch N --emit graph` prints (static shapes).

Counts the dense ops only: graph.gemm and graph.matmul (2 M N K) and
graph.conv (2 x output elements x input channels per group x kernel area);
elementwise ops, normalization, pooling, softmax and the optimizer are left
out. A training step counts each dense op's forward once more for each of
its two product operands that needs a gradient, one that depends on a
parameter: 3x for a layer after the first (input and weight gradients), 2x
for a first layer, whose input gradient no framework computes (the MLP's
first layer is most of its products)."""
import math
import re

DENSE_OP = re.compile(
    r"graph\.(gemm|matmul|conv) [^{:]*(?P<attrs>\{[^}]*\})?\s*:\s*\((?P<operands>[^)]*)\)\s*->\s*"
    r"tensor<(?P<result>[^>]*)>")


def shape(tensor_type):
    """'64x784xf32' -> [64, 784] (a dynamic size is None)."""
    return [None if d == "?" else int(d) for d in tensor_type.split("x")[:-1]]


PARAMETER = re.compile(r'(%arg\d+): tensor<[^>]*> \{[^}]*graph\.role = "parameter"')
ASSIGNMENT = re.compile(
    r"^\s*(?P<results>%\w+(?::\d+)?(?:, %\w+)*) = [\w.]+(?P<operands>[^{:]*)", re.M)
VALUE = re.compile(r"%[\w]+")


def needs_gradient(graph_text):
    """The forward's values that depend on a parameter, by SSA name."""
    depends = set(PARAMETER.findall(graph_text))
    for match in ASSIGNMENT.finditer(graph_text):
        if depends.intersection(VALUE.findall(match.group("operands"))):
            depends.update(VALUE.findall(match.group("results")))
    return depends


def dense_ops(graph_text):
    """(flops of the forward op, its product operands) for every dense op."""
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
        names = VALUE.findall(graph_text[match.end(1):match.start("operands") - 1])
        yield 2 * math.prod(result) * k, names[:2]


def forward_flops(graph_text):
    """Dense-op flops of the forward function in `graph_text`."""
    return sum(flops for flops, _ in dense_ops(graph_text))


def training_flops(graph_text):
    depends = needs_gradient(graph_text)
    return sum(flops * (1 + sum(name.split("#")[0] in depends for name in operands))
               for flops, operands in dense_ops(graph_text))
