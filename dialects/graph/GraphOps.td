//===- GraphOps.td - graph dialect operations ----------------------------===//
//
// One op per ONNX operator family. Each op's `description` is its
// reference documentation (docs/dialects/graph.md is generated from it).
// Shape/type inference for each op lives in C++ (ElementwiseOps.cpp,
// TensorOps.cpp, NeuralOps.cpp); folders in GraphFolds.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_GRAPH_OPS_TD
#define TRAINC_GRAPH_OPS_TD

include "dialects/graph/GraphBase.td"

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_Op<"constant", [Graph_CastFixed, ConstantLike, Pure,
                                             Graph_NonDifferentiable]> {
  let summary = "A small constant tensor (shape values, ONNX Constant nodes)";
  let description = [{
    Holds the value of an ONNX `Constant` node or of an integer initializer
    that is used as data. Model weights are never constants: they are
    arguments of `@forward` (see the dialect description).
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

def Graph_IdentityOp : Graph_UnaryOp<"identity", Graph_Tensor,
                                 [Graph_CustomCost, Graph_CastFollow, Graph_Differentiable]> {
  let summary = "Identity (ONNX Identity)";
  let hasFolder = 1;
}
def Graph_NegOp : Graph_UnaryOp<"neg", Graph_Tensor,
                                 [Graph_CastFollow, Graph_Differentiable]> {
  let summary = "Elementwise negation";
  let hasFolder = 1;
}
def Graph_AbsOp : Graph_UnaryOp<"abs", Graph_Tensor,
                                 [Graph_CastFollow, Graph_Differentiable]> {
  let summary = "Elementwise absolute value";
}
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", Graph_FloatTensor,
                                 [Graph_CastFp32, Graph_Differentiable]> {
  let summary = "Elementwise square root";
}
def Graph_ExpOp : Graph_UnaryOp<"exp", Graph_FloatTensor,
                                 [Graph_CastFp32, Graph_Differentiable]> {
  let summary = "Elementwise e^x";
}
def Graph_LogOp : Graph_UnaryOp<"log", Graph_FloatTensor,
                                 [Graph_CastFp32, Graph_Differentiable]> {
  let summary = "Elementwise natural logarithm";
}
def Graph_TanhOp : Graph_UnaryOp<"tanh", Graph_FloatTensor,
                                 [Graph_CastFollow, Graph_Differentiable]> {
  let summary = "Elementwise hyperbolic tangent";
}
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", Graph_FloatTensor,
                                 [Graph_CastFollow, Graph_Differentiable]> {
  let summary = "Elementwise logistic function 1 / (1 + e^-x)";
}
def Graph_ReluOp : Graph_UnaryOp<"relu", Graph_FloatTensor,
                                 [Graph_CastFollow, Graph_Differentiable]> {
  let summary = "Elementwise max(x, 0)";
}
def Graph_ErfOp : Graph_UnaryOp<"erf", Graph_FloatTensor,
                                 [Graph_CastFp32, Graph_Differentiable]> {
  let summary = "Elementwise Gauss error function";
}
def Graph_SinOp : Graph_UnaryOp<"sin", Graph_FloatTensor,
                                 [Graph_CastFp32, Graph_Differentiable]> {
  let summary = "Elementwise sine (radians)";
}
def Graph_CosOp : Graph_UnaryOp<"cos", Graph_FloatTensor,
                                 [Graph_CastFp32, Graph_Differentiable]> {
  let summary = "Elementwise cosine (radians)";
}
def Graph_SoftplusOp : Graph_UnaryOp<"softplus", Graph_FloatTensor,
                                 [Graph_CastFp32, Graph_Differentiable]> {
  let summary = "Elementwise log(1 + e^x) (ONNX Softplus)";
  let description = [{
    Computed as max(x, 0) + log1p(e^-|x|), which neither overflows for
    large x nor loses the result to rounding for very negative x (PyTorch's
    `softplus` returns x itself above 20, where the two agree in f32). The
    gradient is sigmoid(x).
  }];
}
def Graph_ReciprocalOp : Graph_UnaryOp<"reciprocal", Graph_FloatTensor,
                                 [Graph_CastFp32, Graph_Differentiable]> {
  let summary = "Elementwise 1 / x";
}

def Graph_LeakyReluOp : Graph_UnaryOp<"leaky_relu", Graph_FloatTensor,
                                       [Graph_CastFollow, Graph_Differentiable]> {
  let summary = "Elementwise x >= 0 ? x : alpha * x";
  let arguments = (ins Graph_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.01">:$alpha);
}

def Graph_GeluOp : Graph_UnaryOp<"gelu", Graph_FloatTensor,
                                  [Graph_CastFollow, Graph_Differentiable]> {
  let summary = "GELU, exact (erf) or tanh approximation (ONNX Gelu-20)";
  let arguments = (ins Graph_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "false">:$tanh_approximation);
}

def Graph_ClipOp : Graph_UnaryOp<"clip", Graph_FloatTensor,
                                  [Graph_CastFollow, Graph_Differentiable]> {
  let summary = "Elementwise clamp to [min, max]; a missing bound is open";
  let arguments = (ins Graph_FloatTensor:$input,
                       OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
}

def Graph_DropoutOp : Graph_UnaryOpBase<"dropout", Graph_FloatTensor, [Graph_CastFollow]> {
  let summary = "Training-mode dropout with keep probability 1 - ratio";
  let description = [{
    Zeroes each element with probability `ratio` and scales the rest by
    1 / (1 - ratio). Not `Pure`: two dropouts of the same value draw
    different masks, so they must never be merged. The mask comes from
    trainc's counter-based RNG keyed by (seed, step, op): --trainc-autodiff
    rewrites it into `graph.random_mask` times the input, so the backward
    pass reuses the mask. A ratio of 0 folds away.
  }];
  // Not Pure: see the description.
  let arguments = (ins Graph_FloatTensor:$input, F64Attr:$ratio);
  let hasFolder = 1;
}

def Graph_CastOp : Graph_FunctionalOp<"cast", [Graph_CastFixed, Pure, Graph_Differentiable]> {
  let summary = "Elementwise conversion to the element type `to`";
  let arguments = (ins Graph_Tensor:$input, TypeAttr:$to);
  let results = (outs Graph_Tensor:$output);
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary with broadcasting
//===----------------------------------------------------------------------===//

class Graph_ArithOp<string mnemonic>
    : Graph_BroadcastOp<mnemonic, Graph_Tensor, Graph_Tensor,
                        [Graph_CastFollow, Graph_Differentiable]> {
  let description = [{
    Elementwise with ONNX multidirectional (numpy) broadcasting. Both
    operands have the same element type.
  }];
  let hasFolder = 1;
}
def Graph_AddOp : Graph_ArithOp<"add"> { let summary = "lhs + rhs"; }
def Graph_SubOp : Graph_ArithOp<"sub"> { let summary = "lhs - rhs"; }
def Graph_MulOp : Graph_ArithOp<"mul"> { let summary = "lhs * rhs"; }
def Graph_DivOp : Graph_ArithOp<"div"> {
  let summary = "lhs / rhs (integer division truncates)";
}

def Graph_PowOp : Graph_BroadcastOp<"pow", Graph_Tensor, Graph_Tensor,
                                     [Graph_CastFp32, Graph_Differentiable]> {
  let summary = "lhs ^ rhs with broadcasting; result has lhs's element type";
}

class Graph_CompareOp<string mnemonic>
    : Graph_BroadcastOp<mnemonic, Graph_Tensor, Graph_BoolTensor,
                        [Graph_CastFollow, Graph_NonDifferentiable]> {
  let description = [{
    Elementwise comparison with broadcasting; the result is `i1`.
  }];
  let hasFolder = 1;
}
def Graph_EqualOp : Graph_CompareOp<"equal"> { let summary = "lhs == rhs"; }
def Graph_LessOp : Graph_CompareOp<"less"> { let summary = "lhs < rhs"; }
def Graph_GreaterOp : Graph_CompareOp<"greater"> { let summary = "lhs > rhs"; }
def Graph_LessEqualOp : Graph_CompareOp<"less_equal"> {
  let summary = "lhs <= rhs";
}
def Graph_GreaterEqualOp : Graph_CompareOp<"greater_equal"> {
  let summary = "lhs >= rhs";
}

def Graph_NotOp : Graph_UnaryOp<"not", Graph_BoolTensor,
                                 [Graph_CastFollow, Graph_NonDifferentiable]> {
  let summary = "Elementwise logical negation";
}

def Graph_AndOp : Graph_BroadcastOp<"and", Graph_BoolTensor, Graph_BoolTensor,
                                    [Graph_CastFollow, Graph_NonDifferentiable]> {
  let summary = "Elementwise logical and, with broadcasting";
}

def Graph_IsNaNOp : Graph_FunctionalOp<"is_nan", [Graph_CastFollow, Pure,
                                                  Graph_NonDifferentiable]> {
  let summary = "Whether each element is a NaN (`i1`)";
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_BoolTensor:$output);
}

def Graph_WhereOp : Graph_FunctionalOp<"where", [Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "condition ? lhs : rhs, all three broadcast together";
  let arguments = (ins Graph_BoolTensor:$condition, Graph_Tensor:$lhs,
                       Graph_Tensor:$rhs);
  let results = (outs Graph_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Reductions and normalizing activations
//===----------------------------------------------------------------------===//

class Graph_ReduceOp<string mnemonic, list<Trait> traits>
    : Graph_FunctionalOp<mnemonic,
                         !listconcat(traits, [Pure, Graph_Differentiable])> {
  let description = [{
    Reduces over `axes` (sorted, non-negative, unique; the importer turns
    ONNX's "no axes" into the full list). `keepdims` keeps reduced
    dimensions as size 1.
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Graph_Tensor:$output);
}
def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", [Graph_CastFp32]> { let summary = "Sum"; }
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean", [Graph_CastFp32]> {
  let summary = "Arithmetic mean";
}
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", [Graph_CastFollow]> { let summary = "Max"; }

def Graph_ArgMaxOp : Graph_FunctionalOp<"argmax", [Graph_CastFp32, Pure,
                                                  Graph_NonDifferentiable]> {
  let summary = "Index of the largest element along `axis` (ONNX ArgMax)";
  let description = [{
    An `i64` index along the single, non-negative `axis`, which `keepdims`
    keeps as size 1. A NaN counts as larger than any number (numpy's and
    PyTorch's argmax); among equal largest elements the first wins, or the
    last with `select_last_index`. Not differentiable: an index, such as a
    prediction for an accuracy, carries no gradient.
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs Graph_IndexTensor:$output);
}

class Graph_SoftmaxLikeOp<string mnemonic>
    : Graph_UnaryOp<mnemonic, Graph_FloatTensor,
                    [Graph_CastFp32, Graph_Differentiable]> {
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$axis);
  let description = [{ Normalizes along the single, non-negative `axis`. }];
}
def Graph_SoftmaxOp : Graph_SoftmaxLikeOp<"softmax"> {
  let summary = "exp(x) / sum(exp(x)) along axis";
}
def Graph_LogSoftmaxOp : Graph_SoftmaxLikeOp<"log_softmax"> {
  let summary = "x - log(sum(exp(x))) along axis";
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Graph_ReshapeOp : Graph_FunctionalOp<"reshape", [Graph_CustomCost, Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "Reshape with ONNX's batch-relative 0 / -1 entries";
  let description = [{
    `shape` follows ONNX Reshape (allowzero = 0): an entry 0 copies the
    input's dimension at the same index, one entry -1 is inferred from the
    element count. The importer writes 0/-1 wherever the ONNX graph derived
    a dimension from the batch size, so the IR never bakes the batch in.
    ONNX Flatten, Squeeze and Unsqueeze import as this op.
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Graph_Tensor:$output);
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_FunctionalOp<"transpose", [Graph_CustomCost, Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "Permutes dimensions: output dim i is input dim perm[i]";
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Graph_Tensor:$output);
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Graph_ExpandOp : Graph_FunctionalOp<"expand", [Graph_CustomCost, Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "Broadcasts input against `shape` (ONNX Expand)";
  let description = [{
    The result shape is the multidirectional broadcast of the input shape
    and `shape`; an entry 1 keeps the input's dimension, which is how a
    batch-derived dimension stays batch-relative.
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Graph_Tensor:$output);
  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_FunctionalOp<"concat", [Graph_CustomCost, Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "Concatenates along the non-negative `axis`";
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Graph_Tensor:$output);
  let hasFolder = 1;
}

def Graph_SliceOp : Graph_FunctionalOp<"slice", [Graph_CustomCost, Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "Strided slice with one normalized (start, end, step) per dim";
  let description = [{
    `starts`, `ends` and `steps` have one entry per dimension, already
    clamped as ONNX Slice prescribes: 0 <= start <= dim for positive steps,
    and the result dimension is ceil((end - start) / step), at least 0.
    Negative steps walk backwards (start in [0, dim - 1], end >= -1).
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Graph_Tensor:$output);
  let hasFolder = 1;
}

def Graph_GatherOp : Graph_FunctionalOp<"gather", [Graph_CustomCost, Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "Gathers slices of data along `axis` at `indices` (Embedding)";
  let description = [{
    Result shape: data.shape[:axis] + indices.shape + data.shape[axis+1:].
    Negative indices count from the end, as in ONNX Gather.
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_Tensor:$output);
  let hasFolder = 1;
}

def Graph_GatherElementsOp
    : Graph_FunctionalOp<"gather_elements", [Graph_CustomCost, Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "Picks one element along `axis` per index (ONNX GatherElements)";
  let description = [{
    `indices` has the data's rank and, but along `axis`, at most its
    extents; the result has the indices' shape:
    `output[p] = data[p with p[axis] = indices[p]]`. Negative indices count
    from the end.
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

def Graph_MatMulOp : Graph_FunctionalOp<"matmul", [Graph_CustomCost, Graph_CastLow, Pure, Graph_Differentiable]> {
  let summary = "Matrix product with numpy semantics (batched, 1-D promotion)";
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs);
  let results = (outs Graph_FloatTensor:$output);
}

def Graph_GemmOp : Graph_FunctionalOp<"gemm", [Graph_CustomCost, Graph_CastLow, Pure, Graph_Differentiable]> {
  let summary = "alpha * op(a) * op(b) + beta * c (ONNX Gemm)";
  let description = [{
    `a` and `b` are 2-D; `op` transposes when `trans_a` / `trans_b` is set.
    The optional `c` broadcasts unidirectionally to [M, N].
  }];
  let arguments = (ins Graph_FloatTensor:$a, Graph_FloatTensor:$b,
                       Optional<Graph_FloatTensor>:$c,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs Graph_FloatTensor:$output);
  let hasFolder = 1;
}

def Graph_ConvOp : Graph_FunctionalOp<"conv", [Graph_CustomCost, Graph_CastLow, Pure, Graph_Differentiable]> {
  let summary = "N-d convolution (NCHW, weights OIHW) with groups";
  let description = [{
    x: [N, C, D1..Dk], weight: [M, C / group, K1..Kk], optional bias [M].
    `pads` holds k begin pads then k end pads; `strides` and `dilations`
    one entry per spatial dim. Auto-padding is resolved by the importer.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$weight,
                       Optional<Graph_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group);
  let results = (outs Graph_FloatTensor:$output);
}

def Graph_ConvMatrixOp : Graph_FunctionalOp<"conv_matrix", [Graph_CustomCost, Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "A convolution's weight as the dense matrix of its map between two small planes";
  let description = [{
    weight: [M, C, K1..Kk]; `input_spatial` [D1..Dk] and `output_spatial`
    [O1..Ok] are the convolution's input and output planes, `strides` and
    `pads` (the k begin pads) its window. The result is
    [M * O1 * .. * Ok, C * D1 * .. * Dk], row (m, o), column (c, i):

      result[(m, o), (c, i)] = weight[m, c, i - o * stride + pad]

    per spatial dim, so that the convolution (group 1, dilation 1) of x
    [N, C, D...] is x as [N, C * D...] times the transposed result. Every
    (o, i) pair must read a tap inside the kernel: the matrix has no zero
    entries, and its products do no more work than the convolution's
    (3x3 windows, padding 1, over 2x2 planes). Built by
    `--trainc-convs-as-products`.
  }];
  let arguments = (ins Graph_FloatTensor:$weight,
                       DenseI64ArrayAttr:$input_spatial,
                       DenseI64ArrayAttr:$output_spatial,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads);
  let results = (outs Graph_FloatTensor:$output);
}

def Graph_MaxPoolOp : Graph_FunctionalOp<"max_pool", [Graph_CustomCost, Graph_CastFollow, Pure, Graph_Differentiable]> {
  let summary = "Max pooling over spatial dims (padding is -inf)";
  let arguments = (ins Graph_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Graph_FloatTensor:$output);
}

def Graph_AvgPoolOp : Graph_FunctionalOp<"avg_pool", [Graph_CustomCost, Graph_CastFp32, Pure, Graph_Differentiable]> {
  let summary = "Average pooling over spatial dims";
  let arguments = (ins Graph_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Graph_FloatTensor:$output);
}

def Graph_GlobalAvgPoolOp : Graph_FunctionalOp<"global_avg_pool", [Graph_CastFp32, Pure, Graph_Differentiable]> {
  let summary = "Mean over all spatial dims, keeping them as size 1";
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$output);
}

def Graph_BatchNormTrainingOp
    : Graph_FunctionalOp<"batch_norm_training", [Graph_CastActivations, Pure, Graph_Differentiable]> {
  let summary = "BatchNormalization in training mode (batch statistics)";
  let description = [{
    Normalizes x: [N, C, ...] with the mean and biased variance over all
    dims but C, then scales and shifts. Also returns the updated running
    statistics: running = momentum * running + (1 - momentum) * batch
    (ONNX's convention for `momentum`; see docs/ARCHITECTURE.md for which
    variance estimate feeds the running variance).
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Graph_FloatTensor:$bias, Graph_FloatTensor:$running_mean,
                       Graph_FloatTensor:$running_var, F64Attr:$epsilon,
                       F64Attr:$momentum);
  let results = (outs Graph_FloatTensor:$output,
                      Graph_FloatTensor:$new_running_mean,
                      Graph_FloatTensor:$new_running_var);
}

def Graph_BatchNormInferenceOp
    : Graph_FunctionalOp<"batch_norm_inference", [Graph_CastFp32, Pure, Graph_Differentiable]> {
  let summary = "BatchNormalization with the running statistics";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Graph_FloatTensor:$bias, Graph_FloatTensor:$mean,
                       Graph_FloatTensor:$var, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$output);
}

def Graph_LayerNormOp : Graph_FunctionalOp<"layer_norm", [Graph_CastActivations, Pure, Graph_Differentiable]> {
  let summary = "LayerNormalization over dims [axis, rank)";
  let description = [{
    scale (and the optional bias) have the shape of the normalized dims.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Optional<Graph_FloatTensor>:$bias, I64Attr:$axis,
                       F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$output);
}

include "dialects/graph/TrainingOps.td"

#endif // TRAINC_GRAPH_OPS_TD
