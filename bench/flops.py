"""Floating-point operations of one training step, from the forward graph
`trainc compile MODEL --batch N --emit graph` prints (static shapes).

Counts the dense ops only: graph.gemm and graph.matmul (2 M N K) and
graph.conv (2 x batch x output channels x input channels per group x the
(output position, kernel tap) pairs that read the input rather than its
padding: the multiply-adds oneDNN and trainc do; a 3x3 kernel over a 1x1
plane reads its centre tap only);
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


def array_attr(attrs, name, default):
    found = re.search(name + r" = array<i64(?:: ([^>]*))?>", attrs)
    if not found:
        return default
    return [int(v) for v in (found.group(1) or "").split(",") if v.strip()]


def reading_taps(input_plane, kernel, output_plane, attrs):
    """(output position, tap) pairs of a convolution's window that read
    the input, not its padding (the product over the spatial dims)."""
    rank = len(kernel)
    strides = array_attr(attrs, "strides", [1] * rank)
    dilations = array_attr(attrs, "dilations", [1] * rank)
    pads = array_attr(attrs, "pads", [0] * 2 * rank)
    pairs = 1
    for d in range(rank):
        pairs *= sum(1 for o in range(output_plane[d]) for k in range(kernel[d])
                     if 0 <= o * strides[d] - pads[d] + k * dilations[d] < input_plane[d])
    return pairs


def dense_ops(graph_text):
    """(flops of the forward op, its product operands) for every dense op."""
    for match in DENSE_OP.finditer(graph_text):
        op = match.group(1)
        operands = [shape(t) for t in re.findall(r"tensor<([^>]*)>", match.group("operands"))]
        result = shape(match.group("result"))
        a = operands[0]
        attrs = match.group("attrs") or ""
        if op == "gemm":
            flops = 2 * math.prod(result) * (a[0] if "trans_a = true" in attrs else a[1])
        elif op == "matmul":
            flops = 2 * math.prod(result) * a[-1]
        else:  # conv: weight is Cout x Cin/group x kernel...
            weight = operands[1]
            group = re.search(r"group = (\d+)", attrs)
            per_group = weight[1] or a[1] // int(group.group(1) if group else 1)
            flops = (2 * result[0] * result[1] * per_group *
                     reading_taps(a[2:], weight[2:], result[2:], attrs))
        names = VALUE.findall(graph_text[match.end(1):match.start("operands") - 1])
        yield flops, names[:2]


def forward_flops(graph_text):
    """Dense-op flops of the forward function in `graph_text`."""
    return sum(flops for flops, _ in dense_ops(graph_text))


def training_flops(graph_text):
    depends = needs_gradient(graph_text)
    return sum(flops * (1 + sum(name.split("#")[0] in depends for name in operands))
               for flops, operands in dense_ops(graph_text))
