#!/usr/bin/python3
"""Writes torch_cases.json: PyTorch's answers for the interpreter's backward
kernels, losses and optimizer updates (test/unit/TorchCaseTests.cpp).

Each case is a small MLIR function of graph ops plus its inputs and the
outputs PyTorch computes for the same math. Inputs are float32 values (the
MLIR functions use f32); PyTorch computes in float64 from them, so the only
differences left are the interpreter's float rounding of each op's result.

Run with Debian's python3 (torch 1.13):
    /usr/bin/python3 test/interpreter/make_torch_cases.py > test/interpreter/torch_cases.json
"""
import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(20240611)
CASES = []


# --- MLIR text -------------------------------------------------------------

def ttype(shape, dtype="f32"):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtype}>"


def dtype_of(t):
    return "i64" if t.dtype == torch.int64 else "f32"


def attr_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{value:.17e} : f64"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "array<i64" + (": " + ", ".join(str(v) for v in value) if value else "") + ">"
    raise TypeError(value)


def attrs_text(attrs):
    if not attrs:
        return ""
    return " {" + ", ".join(f"{k} = {attr_text(v)}" for k, v in attrs.items()) + "}"


class Function:
    """Builds `func.func @main` one graph op at a time."""

    def __init__(self, inputs):
        self.inputs = inputs  # tensors
        self.lines = []
        self.types = {}
        for i, t in enumerate(inputs):
            self.types[f"%a{i}"] = ttype(list(t.shape), dtype_of(t))
        self.count = 0

    def arg(self, i):
        return f"%a{i}"

    def op(self, name, operands, attrs, result_types):
        name_base = f"%v{self.count}"
        self.count += 1
        results = ([name_base] if len(result_types) == 1 else
                   [f"{name_base}#{i}" for i in range(len(result_types))])
        lhs = name_base if len(result_types) == 1 else f"{name_base}:{len(result_types)}"
        operand_types = ", ".join(self.types[o] for o in operands)
        result_text = (result_types[0] if len(result_types) == 1 else
                       "(" + ", ".join(result_types) + ")")
        self.lines.append(f"  {lhs} = graph.{name} {', '.join(operands)}{attrs_text(attrs)}"
                          f" : ({operand_types}) -> {result_text}")
        for r, t in zip(results, result_types):
            self.types[r] = t
        return results if len(results) > 1 else results[0]

    def unary(self, name, operand, attrs):
        """An op with the unary syntax `graph.NAME %x {attrs} : type`."""
        result = f"%v{self.count}"
        self.count += 1
        self.lines.append(f"  {result} = graph.{name} {operand}{attrs_text(attrs)}"
                          f" : {self.types[operand]}")
        self.types[result] = self.types[operand]
        return result

    def constant_step(self, step):
        name = f"%v{self.count}"
        self.count += 1
        self.lines.append(f"  {name} = graph.constant dense<{step}> : tensor<i64>")
        self.types[name] = "tensor<i64>"
        return name

    def text(self, results):
        args = ", ".join(f"%a{i}: {self.types[f'%a{i}']}" for i in range(len(self.inputs)))
        types = ", ".join(self.types[r] for r in results)
        body = "\n".join(self.lines)
        return (f"func.func @main({args}) -> ({types}) {{\n{body}\n"
                f"  return {', '.join(results)} : {types}\n}}")


def tensor_json(t, digits):
    """Integers exactly; floats to `digits` significant digits (9 give a
    float32 input back exactly; outputs need far fewer than 1e-5 allows)."""
    t = t.detach()
    values = t.reshape(-1).tolist()
    if t.dtype != torch.int64:
        values = [float(f"{v:.{digits}g}") for v in values]
    return {"dtype": dtype_of(t), "shape": list(t.shape), "data": values}


def add_case(name, function, results, outputs):
    CASES.append({
        "name": name,
        "mlir": function.text(results),
        "inputs": [tensor_json(t, 9) for t in function.inputs],
        "outputs": [tensor_json(t, 10) for t in outputs],
    })


def f32(t):
    """`t` rounded to float32 (what the f32 MLIR function receives), as
    float64 for PyTorch's computation."""
    return t.float().double()


def rand(*shape):
    """Normal float32 values of `shape` (possibly a scalar), as float64."""
    return f32(torch.randn(tuple(shape)))


def f32type(t):
    return ttype(list(t.shape))


# --- forward ops ONNX 1.12's node tests lack ---------------------------------

def gelu_cases():
    for name, tanh in [("gelu_exact", False), ("gelu_tanh", True)]:
        x = f32(rand(3, 4) * 3)
        y = F.gelu(x, approximate="tanh" if tanh else "none")
        f = Function([x])
        r = f.unary("gelu", f.arg(0), {"tanh_approximation": tanh})
        add_case(name, f, [r], [y])


# --- matmul (ONNX's node tests have no 1-D or broadcast cases) --------------

def matmul_cases():
    for name, a, b in [("matmul_vector_matrix", (4,), (4, 3)),
                       ("matmul_matrix_vector", (2, 4), (4,)),
                       ("matmul_vector_vector", (5,), (5,)),
                       ("matmul_batch_broadcast", (2, 1, 3, 4), (5, 4, 2)),
                       ("matmul_batched_vector", (3, 2, 4), (4,))]:
        x, y = rand(*a), rand(*b)
        z = torch.matmul(x, y)
        f = Function([x, y])
        r = f.op("matmul", [f.arg(0), f.arg(1)], {}, [f32type(z)])
        add_case(name, f, [r], [z])


# --- convolution --------------------------------------------------------------

def conv_cases():
    configs = [
        # name, x shape, w shape, stride, (pads begin, pads end), dilation, groups
        ("conv2d_groups_stride_dilation", (2, 4, 5, 6), (6, 2, 3, 2), (2, 1), ((1, 0), (1, 0)), (1, 2), 2),
        ("conv2d_asymmetric_pads", (1, 2, 5, 5), (3, 2, 3, 3), (2, 2), ((1, 0), (2, 1)), (1, 1), 1),
        ("conv1d_stride_dilation", (2, 3, 9), (2, 3, 3), (2,), ((2,), (1,)), (2,), 1),
        ("conv2d_depthwise", (1, 3, 4, 4), (3, 1, 2, 2), (1, 1), ((0, 1), (1, 0)), (1, 1), 3),
    ]
    for name, xs, ws, stride, (pb, pe), dilation, groups in configs:
        x = rand(*xs).requires_grad_()
        w = rand(*ws).requires_grad_()
        b = rand(ws[0]).requires_grad_()
        # PyTorch pads symmetrically: asymmetric pads go through F.pad
        # (which takes the last dim first).
        pad = []
        for i in reversed(range(len(pb))):
            pad += [pb[i], pe[i]]
        conv = {1: F.conv1d, 2: F.conv2d}[len(xs) - 2]
        y = conv(F.pad(x, pad), w, b, stride=stride, dilation=dilation, groups=groups)
        g = rand(*y.shape)
        y.backward(g)
        pads = list(pb) + list(pe)
        attrs = {"strides": list(stride), "pads": pads, "dilations": list(dilation), "group": groups}

        f = Function([x, w, b])
        r = f.op("conv", [f.arg(0), f.arg(1), f.arg(2)], attrs, [f32type(y)])
        add_case(f"{name}_forward", f, [r], [y])

        f = Function([g, w])
        r = f.op("conv_backward_input", [f.arg(0), f.arg(1)],
                 {"input_shape": list(xs), **attrs}, [f32type(x)])
        add_case(f"{name}_backward_input", f, [r], [x.grad])

        f = Function([g, x])
        r = f.op("conv_backward_weight", [f.arg(0), f.arg(1)],
                 {"weight_shape": list(ws), **attrs}, [f32type(w)])
        add_case(f"{name}_backward_weight", f, [r], [w.grad])


# --- pooling ----------------------------------------------------------------

def pool_cases():
    max_configs = [
        # name, x shape, kernel, stride, padding, dilation, ceil
        ("max_pool_overlapping", (1, 2, 5, 5), (3, 3), (1, 1), (1, 1), (1, 1), False),
        ("max_pool_ceil", (2, 1, 6, 5), (3, 2), (2, 2), (1, 0), (1, 1), True),
        ("max_pool_dilated_ceil", (1, 2, 7, 6), (2, 2), (2, 3), (1, 1), (2, 1), True),
        ("max_pool_1d", (2, 2, 8), (3,), (2,), (1,), (1,), True),
    ]
    for name, xs, kernel, stride, padding, dilation, ceil in max_configs:
        # Small integers make ties, which must go to the first maximum.
        x = torch.randint(0, 3, xs).double().requires_grad_()
        pool = {1: F.max_pool1d, 2: F.max_pool2d}[len(xs) - 2]
        y = pool(x, kernel, stride, padding, dilation, ceil_mode=ceil)
        g = rand(*y.shape)
        y.backward(g)
        attrs = {"kernel_shape": list(kernel), "strides": list(stride),
                 "pads": list(padding) * 2, "dilations": list(dilation), "ceil_mode": ceil}
        f = Function([x])
        r = f.op("max_pool", [f.arg(0)], attrs, [f32type(y)])
        add_case(f"{name}_forward", f, [r], [y])
        f = Function([g, x])
        r = f.op("max_pool_backward", [f.arg(0), f.arg(1)], attrs, [f32type(x)])
        add_case(f"{name}_backward", f, [r], [x.grad])

    avg_configs = [
        # name, x shape, kernel, stride, padding, count_include_pad, ceil
        ("avg_pool_include_pad", (1, 2, 5, 5), (3, 3), (2, 2), (1, 1), True, False),
        ("avg_pool_exclude_pad", (1, 2, 5, 5), (3, 3), (2, 2), (1, 1), False, False),
        ("avg_pool_ceil_include_pad", (2, 1, 6, 5), (3, 2), (2, 2), (1, 1), True, True),
        ("avg_pool_ceil_exclude_pad", (2, 1, 6, 5), (3, 2), (2, 2), (1, 1), False, True),
        ("avg_pool_ceil_no_pad", (1, 1, 5, 5), (2, 2), (2, 2), (0, 0), True, True),
        ("avg_pool_1d_ceil_include_pad", (1, 2, 7), (3,), (3,), (1,), True, True),
    ]
    for name, xs, kernel, stride, padding, include, ceil in avg_configs:
        x = rand(*xs).requires_grad_()
        pool = {1: F.avg_pool1d, 2: F.avg_pool2d}[len(xs) - 2]
        y = pool(x, kernel, stride, padding, ceil_mode=ceil, count_include_pad=include)
        g = rand(*y.shape)
        y.backward(g)
        attrs = {"kernel_shape": list(kernel), "strides": list(stride),
                 "pads": list(padding) * 2, "count_include_pad": include, "ceil_mode": ceil}
        f = Function([x])
        r = f.op("avg_pool", [f.arg(0)], attrs, [f32type(y)])
        add_case(f"{name}_forward", f, [r], [y])
        f = Function([g])
        r = f.op("avg_pool_backward", [f.arg(0)], {"input_shape": list(xs), **attrs},
                 [f32type(x)])
        add_case(f"{name}_backward", f, [r], [x.grad])


# --- normalization -------------------------------------------------------------

def normalization_cases():
    for name, xs in [("batch_norm_4d", (3, 2, 2, 3)), ("batch_norm_2d", (5, 3))]:
        x = rand(*xs).requires_grad_()
        channels = xs[1]
        scale = rand(channels).requires_grad_()
        bias = rand(channels).requires_grad_()
        running_mean, running_var = rand(channels), f32(rand(channels).abs() + 0.5)
        mean_in, var_in = running_mean.clone(), running_var.clone()
        eps, torch_momentum = 1e-5, 0.1
        y = F.batch_norm(x, running_mean, running_var, scale, bias, training=True,
                         momentum=torch_momentum, eps=eps)
        g = rand(*xs)
        y.backward(g)
        # ONNX's momentum convention: torch's 0.1 is 0.9.
        f = Function([x, scale, bias, mean_in, var_in])
        r = f.op("batch_norm_training", [f.arg(i) for i in range(5)],
                 {"epsilon": eps, "momentum": 1.0 - torch_momentum},
                 [f32type(x), f32type(scale), f32type(scale)])
        add_case(f"{name}_training_forward", f, r, [y, running_mean, running_var])

        f = Function([g, x, scale])
        r = f.op("batch_norm_training_backward", [f.arg(0), f.arg(1), f.arg(2)],
                 {"epsilon": eps}, [f32type(x), f32type(scale), f32type(scale)])
        add_case(f"{name}_training_backward", f, r, [x.grad, scale.grad, bias.grad])

    for name, xs, axis in [("layer_norm_last_two", (2, 3, 4), 1),
                           ("layer_norm_last", (3, 5), 1)]:
        x = rand(*xs).requires_grad_()
        normalized = list(xs[axis:])
        scale = rand(*normalized).requires_grad_()
        bias = rand(*normalized).requires_grad_()
        eps = 1e-5
        y = F.layer_norm(x, normalized, scale, bias, eps)
        g = rand(*xs)
        y.backward(g)
        f = Function([x, scale, bias])
        r = f.op("layer_norm", [f.arg(0), f.arg(1), f.arg(2)],
                 {"axis": axis, "epsilon": eps}, [f32type(x)])
        add_case(f"{name}_forward", f, [r], [y])
        f = Function([g, x, scale])
        r = f.op("layer_norm_backward", [f.arg(0), f.arg(1), f.arg(2)],
                 {"axis": axis, "epsilon": eps}, [f32type(x), f32type(scale), f32type(scale)])
        add_case(f"{name}_backward", f, r, [x.grad, scale.grad, bias.grad])


# --- gather ------------------------------------------------------------------

def gather_cases():
    for name, ds, indices, axis in [
            ("gather_backward_repeated_rows", (5, 3), [[0, 2, 0], [4, -1, 2]], 0),
            ("gather_backward_axis1", (2, 4, 3), [3, -4, 3, 1], 1)]:
        data = rand(*ds).requires_grad_()
        index = torch.tensor(indices, dtype=torch.int64)
        positive = torch.where(index < 0, index + ds[axis], index)
        out = torch.index_select(data, axis, positive.reshape(-1))
        shape = list(ds[:axis]) + list(index.shape) + list(ds[axis + 1:])
        out = out.reshape(shape)
        g = rand(*shape)
        out.backward(g)
        f = Function([data, index])
        r = f.op("gather", [f.arg(0), f.arg(1)], {"axis": axis}, [ttype(shape)])
        add_case(f"{name.replace('_backward', '')}_forward", f, [r], [out])
        f = Function([g, index])
        r = f.op("gather_backward", [f.arg(0), f.arg(1)],
                 {"data_shape": list(ds), "axis": axis}, [f32type(data)])
        add_case(name, f, [r], [data.grad])


# --- losses ------------------------------------------------------------------

def class_loss_cases():
    configs = [
        # name, logits shape, labels, ignore_index, smoothing
        ("nc", (4, 5), [1, 4, -100, 0], -100, 0.0),
        ("nc_smoothing", (4, 5), [1, 4, 2, 0], None, 0.1),
        ("nc_smoothing_ignore", (4, 5), [3, 2, 3, 0], 3, 0.2),
        ("ncd", (2, 3, 2, 2), [[[0, 2], [1, 1]], [[2, -1], [0, 2]]], -1, 0.0),
        ("ncd_smoothing_ignore", (2, 3, 2, 2), [[[0, 2], [1, 1]], [[2, 1], [0, 2]]], 1, 0.3),
    ]
    for name, ls, labels, ignore, smoothing in configs:
        label = torch.tensor(labels, dtype=torch.int64)
        for reduction in ["mean", "sum", "none"]:
            logits = rand(*ls).requires_grad_()
            kwargs = {"reduction": reduction, "label_smoothing": smoothing}
            if ignore is not None:
                kwargs["ignore_index"] = ignore
            loss = F.cross_entropy(logits, label, **kwargs)
            g = rand(*loss.shape)
            loss.backward(g)
            attrs = {"reduction": reduction, "label_smoothing": smoothing}
            if ignore is not None:
                attrs["ignore_index"] = ignore
            f = Function([logits, label])
            r = f.op("softmax_cross_entropy", [f.arg(0), f.arg(1)], attrs, [f32type(loss)])
            add_case(f"softmax_cross_entropy_{name}_{reduction}", f, [r], [loss])
            f = Function([g, logits, label])
            r = f.op("softmax_cross_entropy_backward", [f.arg(0), f.arg(1), f.arg(2)], attrs,
                     [f32type(logits)])
            add_case(f"softmax_cross_entropy_backward_{name}_{reduction}", f, [r], [logits.grad])

            if smoothing != 0.0:
                continue
            log_probs = f32(F.log_softmax(rand(*ls), dim=1).detach())
            log_probs.requires_grad_()
            nll_kwargs = {"reduction": reduction}
            nll_attrs = {"reduction": reduction}
            if ignore is not None:
                nll_kwargs["ignore_index"] = ignore
                nll_attrs["ignore_index"] = ignore
            loss = F.nll_loss(log_probs, label, **nll_kwargs)
            g = rand(*loss.shape)
            loss.backward(g)
            f = Function([log_probs, label])
            r = f.op("nll_loss", [f.arg(0), f.arg(1)], nll_attrs, [f32type(loss)])
            add_case(f"nll_loss_{name}_{reduction}", f, [r], [loss])
            f = Function([g, log_probs, label])
            r = f.op("nll_loss_backward", [f.arg(0), f.arg(1), f.arg(2)], nll_attrs,
                     [f32type(log_probs)])
            add_case(f"nll_loss_backward_{name}_{reduction}", f, [r], [log_probs.grad])


def pointwise_loss_cases():
    for op, function in [("mse_loss", F.mse_loss), ("l1_loss", F.l1_loss),
                         ("bce_with_logits_loss", F.binary_cross_entropy_with_logits)]:
        for reduction in ["mean", "sum", "none"]:
            prediction = f32(rand(3, 4) * 3)
            target = (torch.rand(3, 4) if op == "bce_with_logits_loss" else torch.randn(3, 4))
            target = f32(target)
            loss = function(prediction, target, reduction=reduction)
            f = Function([prediction, target])
            r = f.op(op, [f.arg(0), f.arg(1)], {"reduction": reduction}, [f32type(loss)])
            add_case(f"{op}_{reduction}", f, [r], [loss])


# --- optimizers --------------------------------------------------------------

def optimizer_case(name, op, make_optimizer, lr, attrs, state_names):
    """Three steps of torch.optim vs three chained graph updates."""
    param = rand(2, 3)
    grads = [rand(2, 3) for _ in range(3)]
    torch_param = param.clone().requires_grad_()
    optimizer = make_optimizer([torch_param], lr)
    for grad in grads:
        optimizer.zero_grad()
        torch_param.grad = grad.clone()
        optimizer.step()
    states = [torch.zeros(2, 3, dtype=torch.float64) for _ in state_names]
    learning_rate = torch.tensor(lr, dtype=torch.float64)
    f = Function([param] + grads + states + [learning_rate])
    t = f32type(param)
    current = f.arg(0)
    state = [f.arg(4 + i) for i in range(len(states))]
    lr_arg = f.arg(4 + len(states))
    for step in range(3):
        step_value = f.constant_step(step)
        if op == "sgd_update":
            operands = [current, f.arg(1 + step), lr_arg, step_value] + state
        else:
            operands = [current, f.arg(1 + step)] + state + [lr_arg, step_value]
        results = f.op(op, operands, attrs, [t] * (1 + len(states)))
        if isinstance(results, str):
            results = [results]
        current, state = results[0], list(results[1:])
    expected = [torch_param.detach()]
    torch_state = optimizer.state[torch_param]
    expected += [torch_state[s] for s in state_names]
    add_case(f"{name}_three_steps", f, [current] + state, expected)


def optimizer_cases():
    optimizer_case("sgd_plain", "sgd_update",
                   lambda p, lr: torch.optim.SGD(p, lr=lr), 0.125, {}, [])
    optimizer_case("sgd_weight_decay", "sgd_update",
                   lambda p, lr: torch.optim.SGD(p, lr=lr, weight_decay=0.01), 0.125,
                   {"weight_decay": 0.01}, [])
    optimizer_case("sgd_momentum_dampening", "sgd_update",
                   lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9, dampening=0.25,
                                                 weight_decay=0.01), 0.125,
                   {"momentum": 0.9, "dampening": 0.25, "weight_decay": 0.01},
                   ["momentum_buffer"])
    optimizer_case("sgd_nesterov", "sgd_update",
                   lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.8, nesterov=True,
                                                 weight_decay=0.05), 0.125,
                   {"momentum": 0.8, "nesterov": True, "weight_decay": 0.05},
                   ["momentum_buffer"])
    optimizer_case("adam", "adam_update",
                   lambda p, lr: torch.optim.Adam(p, lr=lr, betas=(0.9, 0.99), eps=1e-6,
                                                  weight_decay=0.1), 0.0625,
                   {"beta1": 0.9, "beta2": 0.99, "epsilon": 1e-6, "weight_decay": 0.1},
                   ["exp_avg", "exp_avg_sq"])
    optimizer_case("adamw", "adam_update",
                   lambda p, lr: torch.optim.AdamW(p, lr=lr, betas=(0.8, 0.999), eps=1e-8,
                                                   weight_decay=0.01), 0.0625,
                   {"beta1": 0.8, "beta2": 0.999, "epsilon": 1e-8, "weight_decay": 0.01,
                    "decoupled": True},
                   ["exp_avg", "exp_avg_sq"])
    optimizer_case("adagrad", "adagrad_update",
                   lambda p, lr: torch.optim.Adagrad(p, lr=lr, lr_decay=0.01,
                                                     weight_decay=0.1, eps=1e-10), 0.25,
                   {"lr_decay": 0.01, "epsilon": 1e-10, "weight_decay": 0.1},
                   ["sum"])


def main():
    gelu_cases()
    matmul_cases()
    conv_cases()
    pool_cases()
    normalization_cases()
    gather_cases()
    class_loss_cases()
    pointwise_loss_cases()
    optimizer_cases()
    # One line per case keeps the file small and its diffs readable.
    sys.stdout.write('{"generator": "test/interpreter/make_torch_cases.py",\n')
    sys.stdout.write(f' "torch": "{torch.__version__}",\n "cases": [\n')
    sys.stdout.write(",\n".join(json.dumps(case, separators=(",", ":")) for case in CASES))
    sys.stdout.write("\n]}\n")


if __name__ == "__main__":
    main()
