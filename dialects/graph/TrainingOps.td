//===- TrainingOps.td - backward kernels, losses, optimizers, RNG ---------===//
//
// Ops that exist for training: the backward kernels of ops whose gradient
// is a computation of its own (convolution, pooling, normalization, gather,
// slice), the losses, the optimizer updates and the dropout mask. Gradients
// of everything else are built from forward graph ops (GraphGradients*.cpp).
// Inference in TrainingOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_GRAPH_TRAINING_OPS_TD
#define TRAINC_GRAPH_TRAINING_OPS_TD

//===----------------------------------------------------------------------===//
// Backward kernels
//===----------------------------------------------------------------------===//

class Graph_BackwardOp<string mnemonic, list<Trait> traits = []>
    : Graph_FunctionalOp<mnemonic, !listconcat(traits,
                                               [Pure, Graph_NonDifferentiable])>;

def Graph_ConvBackwardInputOp : Graph_FunctionalOp<"conv_backward_input", [Graph_CustomCost, Graph_CastLow, Pure, Graph_Differentiable]> {
  let summary = "Gradient of graph.conv with respect to its input";
  let description = [{
    The transposed convolution of `grad_output` with `weight`, producing a
    tensor of `input_shape` (the forward input's shape; needed because
    strided convolutions lose rows): the convolution of `input_shape` with
    the same window must give grad_output's shape. It is also ONNX's
    ConvTranspose (weight [C_in, C_out / group, K...]), so unlike the other
    backward kernels it is differentiable: its gradients are a graph.conv
    (for grad_output) and a graph.conv_backward_weight (for weight).
  }];
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       Graph_FloatTensor:$weight,
                       DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group);
  let results = (outs Graph_FloatTensor:$grad_input);
}

def Graph_ConvBackwardWeightOp : Graph_BackwardOp<"conv_backward_weight", [Graph_CustomCost, Graph_CastLow]> {
  let summary = "Gradient of graph.conv with respect to its weight";
  let description = [{
    Correlates the forward `input` with `grad_output` into a tensor of
    `weight_shape`. The bias gradient is a plain reduce_sum of grad_output.
  }];
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       Graph_FloatTensor:$input,
                       DenseI64ArrayAttr:$weight_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group);
  let results = (outs Graph_FloatTensor:$grad_weight);
}

def Graph_MaxPoolBackwardOp : Graph_BackwardOp<"max_pool_backward", [Graph_CustomCost, Graph_CastFollow]> {
  let summary = "Gradient of graph.max_pool";
  let description = [{
    Routes each output gradient to the first maximal element of its window
    in the forward `input` (the element PyTorch's indices select), adding
    where windows overlap.
  }];
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       Graph_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Graph_FloatTensor:$grad_input);
}

def Graph_AvgPoolBackwardOp : Graph_BackwardOp<"avg_pool_backward", [Graph_CustomCost, Graph_CastFp32]> {
  let summary = "Gradient of graph.avg_pool";
  let description = [{
    Spreads each output gradient evenly over its window (divided by the
    same count the forward divided by), into a tensor of `input_shape`.
  }];
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Graph_FloatTensor:$grad_input);
}

def Graph_BatchNormTrainingBackwardOp
    : Graph_BackwardOp<"batch_norm_training_backward", [Graph_CastActivations]> {
  let summary = "Gradient of graph.batch_norm_training (batch statistics)";
  let description = [{
    Recomputes the batch mean and biased variance of `input` and returns
    the gradients of the input, scale and bias. The running statistics get
    no gradient.
  }];
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$grad_input,
                      Graph_FloatTensor:$grad_scale,
                      Graph_FloatTensor:$grad_bias);
}

def Graph_LayerNormBackwardOp : Graph_BackwardOp<"layer_norm_backward", [Graph_CastActivations]> {
  let summary = "Gradient of graph.layer_norm";
  let description = [{
    Recomputes the statistics over dims [axis, rank) and returns the
    gradients of the input, scale and bias (bias gradient even when the
    forward had no bias; it is then unused).
  }];
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$grad_input,
                      Graph_FloatTensor:$grad_scale,
                      Graph_FloatTensor:$grad_bias);
}

def Graph_GatherBackwardOp : Graph_BackwardOp<"gather_backward", [Graph_CastFp32]> {
  let summary = "Gradient of graph.gather: scatter-add into zeros";
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       Graph_IndexTensor:$indices,
                       DenseI64ArrayAttr:$data_shape, I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$grad_data);
}

def Graph_GatherElementsBackwardOp
    : Graph_BackwardOp<"gather_elements_backward", [Graph_CastFp32]> {
  let summary = "Gradient of graph.gather_elements: scatter-add into zeros";
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       Graph_IndexTensor:$indices,
                       DenseI64ArrayAttr:$data_shape, I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$grad_data);
}

def Graph_ConvMatrixBackwardOp : Graph_BackwardOp<"conv_matrix_backward", [Graph_CastFp32]> {
  let summary = "Gradient of graph.conv_matrix: each tap's sum over the entries that read it";
  let description = [{
    grad_output: [M * O1 * .. * Ok, C * D1 * .. * Dk] (graph.conv_matrix's
    result); the result has `weight_shape` [M, C, K1..Kk] and sums, for
    each tap, the entries (m, o), (c, i) with i - o * stride + pad = tap
    (the convolution's weight gradient from the product's), in the order
    of o.
  }];
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       DenseI64ArrayAttr:$weight_shape,
                       DenseI64ArrayAttr:$input_spatial,
                       DenseI64ArrayAttr:$output_spatial,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads);
  let results = (outs Graph_FloatTensor:$grad_weight);
}

def Graph_SliceBackwardOp : Graph_BackwardOp<"slice_backward", [Graph_CastFollow]> {
  let summary = "Gradient of graph.slice: grad_output placed into zeros";
  let arguments = (ins Graph_FloatTensor:$grad_output,
                       DenseI64ArrayAttr:$input_shape,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Graph_FloatTensor:$grad_input);
}

//===----------------------------------------------------------------------===//
// Randomness
//===----------------------------------------------------------------------===//

def Graph_RandomMaskOp
    : Graph_FunctionalOp<"random_mask", [Graph_CastFollow, Pure, Graph_NonDifferentiable]> {
  let summary = "Dropout mask from the counter-based RNG";
  let description = [{
    Element i (row-major) is 1 / (1 - ratio) if it is kept and 0 otherwise.
    It is kept iff (u >> 8) * 2^-24 >= ratio, where u is output word 0 of
    Philox-4x32-10 with key {seed lo, seed hi} and counter {i, stream,
    step lo, step hi} (include/trainc/Random.h). The same seed, step and
    stream give the same mask on every run and thread count, and the
    backward pass reuses the forward's mask. `stream` is unique per dropout
    in the model.
  }];
  let arguments = (ins RankedTensorOf<[I64]>:$seed, RankedTensorOf<[I64]>:$step,
                       DenseI64ArrayAttr:$shape, TypeAttr:$element_type,
                       F64Attr:$ratio, I64Attr:$stream);
  let results = (outs Graph_FloatTensor:$mask);
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

class Graph_LossOp<string mnemonic, list<Trait> traits = []>
    : Graph_FunctionalOp<mnemonic, !listconcat(traits, [Graph_CastFp32, Pure])> {
  code reductionDoc = [{
    `reduction` is "mean" (the default; over the non-ignored elements),
    "sum" or "none" (one loss per element, shaped like the labels).
  }];
}

def Graph_SoftmaxCrossEntropyOp
    : Graph_LossOp<"softmax_cross_entropy", [Graph_Differentiable]> {
  let summary = "Cross-entropy of softmax(logits) against class indices";
  let description = [{
    logits: [N, C] or [N, C, d...]; labels: integer class indices [N] or
    [N, d...]. With label smoothing s the target distribution is
    (1 - s) * onehot + s / C. Elements whose label equals `ignore_index`
    contribute nothing and do not count in the mean (PyTorch's
    CrossEntropyLoss). `reduction`: "mean", "sum" or "none".
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IndexTensor:$labels,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$loss);
}

def Graph_SoftmaxCrossEntropyBackwardOp
    : Graph_BackwardOp<"softmax_cross_entropy_backward", [Graph_CastFp32]> {
  let summary = "Gradient of graph.softmax_cross_entropy w.r.t. the logits";
  let arguments = (ins Graph_FloatTensor:$grad_loss,
                       Graph_FloatTensor:$logits, Graph_IndexTensor:$labels,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$grad_logits);
}

def Graph_NllLossOp : Graph_LossOp<"nll_loss", [Graph_Differentiable]> {
  let summary = "Negative log-likelihood of log-probabilities";
  let description = [{
    -log_probs[n, label[n], ...], reduced; shapes and `ignore_index` as in
    graph.softmax_cross_entropy (PyTorch's NLLLoss, ONNX
    NegativeLogLikelihoodLoss).
  }];
  let arguments = (ins Graph_FloatTensor:$log_probs, Graph_IndexTensor:$labels,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$loss);
}

def Graph_NllLossBackwardOp : Graph_BackwardOp<"nll_loss_backward", [Graph_CastFp32]> {
  let summary = "Gradient of graph.nll_loss w.r.t. the log-probabilities";
  let arguments = (ins Graph_FloatTensor:$grad_loss,
                       Graph_FloatTensor:$log_probs, Graph_IndexTensor:$labels,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Graph_FloatTensor:$grad_log_probs);
}

class Graph_PointwiseLossOp<string mnemonic>
    : Graph_LossOp<mnemonic, [Graph_Differentiable]> {
  let arguments = (ins Graph_FloatTensor:$prediction,
                       Graph_FloatTensor:$target,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction);
  let results = (outs Graph_FloatTensor:$loss);
}
def Graph_MseLossOp : Graph_PointwiseLossOp<"mse_loss"> {
  let summary = "Mean squared error (prediction - target)^2";
}
def Graph_L1LossOp : Graph_PointwiseLossOp<"l1_loss"> {
  let summary = "Mean absolute error |prediction - target|";
}
def Graph_BceWithLogitsLossOp : Graph_PointwiseLossOp<"bce_with_logits_loss"> {
  let summary = "Binary cross-entropy of sigmoid(prediction) against target";
  let description = [{
    max(x, 0) - x * t + log(1 + exp(-|x|)), the numerically stable form
    PyTorch's BCEWithLogitsLoss uses.
  }];
}

//===----------------------------------------------------------------------===//
// Optimizer updates (one op per parameter, fused update semantics)
//===----------------------------------------------------------------------===//

class Graph_OptimizerOp<string mnemonic>
    : Graph_FunctionalOp<mnemonic,
                         [Graph_CastFp32, Pure, Graph_NonDifferentiable]>;

def Graph_SgdUpdateOp : Graph_OptimizerOp<"sgd_update"> {
  let summary = "SGD with optional momentum, dampening, Nesterov, L2 decay";
  let description = [{
    With t = `step` (updates done so far, from 0):
      g = grad + weight_decay * param
      buf' = momentum * buf + (t == 0 ? 1 : 1 - dampening) * g
      d = nesterov ? g + momentum * buf' : buf'   (d = g without momentum)
      param' = param - learning_rate * d
    With zero-initialized buffers this is torch.optim.SGD; with ONNX's
    alpha = momentum and beta = 1 - dampening it is ai.onnx.preview.training
    Momentum. Without momentum there is no buffer operand or result.

    Rounded as torch.optim.SGD rounds it, op for op, in the parameter's
    type (f32 for f16 and bf16), the attributes rounded to it: `g` is
    fma(weight_decay, param, grad) (no op without decay); buf' is
    fma(t == 0 ? 1 : 1 - dampening, g, round(momentum * buf)); Nesterov's
    d is fma(momentum, buf', g); param' is fma(-learning_rate, d, param).
    Each fused multiply-add rounds once, as ATen's `add` with an alpha does
    in its vectorized kernels; from a zero buffer, the first step's buf'
    is g (torch's copy of it; but for the sign of a zero gradient).
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                       RankedTensorOf<[AnyFloat]>:$learning_rate,
                       RankedTensorOf<[I64]>:$step,
                       Optional<Graph_FloatTensor>:$momentum_buffer,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs Graph_FloatTensor:$new_param,
                      Optional<Graph_FloatTensor>:$new_momentum_buffer);
}

def Graph_AdamUpdateOp : Graph_OptimizerOp<"adam_update"> {
  let summary = "Adam / AdamW update";
  let description = [{
    With t = `step` (updates done so far, from 0):
      param = decoupled ? param * (1 - lr * weight_decay) : param   (AdamW)
      g = decoupled ? grad : grad + weight_decay * param           (Adam)
      m' = beta1 * m + (1 - beta1) * g;  v' = beta2 * v + (1 - beta2) * g^2
    PyTorch convention (default), k = t + 1:
      param' = param - lr / (1 - beta1^k) * m' / (sqrt(v') / sqrt(1 - beta2^k) + eps)
    ONNX convention (`onnx_convention`, ai.onnx.preview.training Adam):
      r = t > 0 ? lr * sqrt(1 - beta2^t) / (1 - beta1^t) : lr
      param' = param - r * m' / (sqrt(v') + eps)

    The PyTorch convention rounds as torch.optim.Adam and AdamW round it,
    op for op, in the parameter's type (f32 for f16 and bf16), the
    attributes and the scalars below rounded to it: AdamW's param is
    round(param * (1 - lr * weight_decay)), Adam's g fma(weight_decay,
    param, grad) (no op without decay); m' = fma(1 - beta1, g,
    round(beta1 * m)); v' = fma(round((1 - beta2) * g), g, round(beta2 *
    v)); denom = round(round(sqrt(v') / sqrt(1 - beta2^k)) + eps); param'
    = round(param + round(round(-step_size * m') / denom)). The step size
    lr / (1 - beta1^k), the correction sqrt(1 - beta2^k) and 1 - lr *
    weight_decay are computed in double, as Python computes them. The
    ONNX convention computes in double and rounds once.
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                       Graph_FloatTensor:$exp_avg, Graph_FloatTensor:$exp_avg_sq,
                       RankedTensorOf<[AnyFloat]>:$learning_rate,
                       RankedTensorOf<[I64]>:$step,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1e-8">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$decoupled,
                       DefaultValuedAttr<BoolAttr, "false">:$onnx_convention);
  let results = (outs Graph_FloatTensor:$new_param,
                      Graph_FloatTensor:$new_exp_avg,
                      Graph_FloatTensor:$new_exp_avg_sq);
}

def Graph_AdagradUpdateOp : Graph_OptimizerOp<"adagrad_update"> {
  let summary = "Adagrad update";
  let description = [{
    With t = `step` (updates done so far, from 0):
      g = grad + weight_decay * param
      sum' = sum + g^2
      param' = param - lr / (1 + t * lr_decay) * g / (sqrt(sum') + eps)
    (torch.optim.Adagrad and ai.onnx.preview.training Adagrad agree.)

    Rounded as torch.optim.Adagrad rounds it, op for op, in the parameter's
    type (f32 for f16 and bf16), the attributes and the rate rounded to it:
    g is fma(weight_decay, param, grad) (no op without decay); sum' is
    fma(g, g, sum) (ATen's addcmul_, contracted); param' is round(param +
    round(round(-rate * g) / round(sqrt(sum') + eps))), with the rate
    lr / (1 + t * lr_decay) computed in double, as Python computes it.
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                       Graph_FloatTensor:$sum,
                       RankedTensorOf<[AnyFloat]>:$learning_rate,
                       RankedTensorOf<[I64]>:$step,
                       DefaultValuedAttr<F64Attr, "0.0">:$lr_decay,
                       DefaultValuedAttr<F64Attr, "1e-10">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs Graph_FloatTensor:$new_param,
                      Graph_FloatTensor:$new_sum);
}

//===----------------------------------------------------------------------===//
// Communication (data-parallel training)
//===----------------------------------------------------------------------===//

def Graph_AllReduceOp
    : Graph_FunctionalOp<"all_reduce", [Graph_CastFp32, Pure,
                                        Graph_NonDifferentiable]> {
  let summary = "The mean of a tensor over every process of a data-parallel job";
  let description = [{
    `--trainc-autodiff data-parallel=true` averages each gradient over the
    processes of the job (the ranks of the MPI communicator) before the
    optimizer reads it, as PyTorch's DistributedDataParallel does: with
    the loss a mean over each process's batch, N processes of batch B take
    the step one process takes on batch N * B.

    `reduction` is "mean" (the sum divided by the number of processes).
    In the kernel dialect, --trainc-bucket-all-reduces groups these into
    buckets that start when their last gradient is computed and are waited
    for before the first update that reads them. The interpreter is one
    process: there it is the identity.
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction);
  let results = (outs Graph_FloatTensor:$output);
}

#endif // TRAINC_GRAPH_TRAINING_OPS_TD
