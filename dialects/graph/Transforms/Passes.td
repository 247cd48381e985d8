//===- Passes.td - graph dialect passes ------------------------------------===//
#ifndef TRAINC_GRAPH_PASSES_TD
#define TRAINC_GRAPH_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"trainc-autodiff", "mlir::ModuleOp"> {
  let summary = "Builds the training step from @forward (reverse-mode autodiff, loss, optimizer)";
  let description = [{
    Reads `@forward` (as imported from ONNX) and adds three functions:

    * `@gradients(inputs, labels, parameters, state, constants, step, seed)
      -> (loss, one gradient per parameter, updated state)`: the forward
      pass with the loss appended, then the reverse sweep. Every op on the
      path from a parameter to the loss builds its operand gradients
      through GradientOpInterface; gradients of values used more than once
      are summed. Dropout becomes `graph.random_mask` times its input, so
      the backward pass reuses the mask drawn for (seed, step, dropout).
      BatchNorm in training mode returns its updated running statistics.
    * `@train_step(inputs, labels, parameters, state, constants,
      optimizer state, step, seed, learning_rate) -> (loss, parameters',
      state', optimizer state', step')`: calls `@gradients`, optionally
      clips the gradients by their global norm, and applies one optimizer
      update op per parameter. Each result's `graph.updates` names the
      argument it replaces (buffer donation).
    * `@eval(inputs, parameters, state, constants) -> outputs`: inference:
      BatchNorm on the running statistics, no dropout.

    A model of several outputs (auxiliary classifiers) needs
    `output-weights`: the loss is the weighted sum of the loss on each
    output, against the same labels; an output of weight 0 is left out.

    Every argument and result carries `graph.name` and `graph.role`. A
    parameter the loss does not depend on gets no gradient and is not
    updated (as torch.optim skips parameters whose grad is None). If any op
    on the path to the loss has no gradient, the pass fails with one error
    listing every such op and its ONNX node.
  }];
  let dependentDialects = ["::trainc::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"loss", "loss", "std::string", "\"auto\"",
           "auto (the model's scalar output if it has one, else "
           "softmax-cross-entropy) | softmax-cross-entropy | nll | mse | l1 | "
           "bce-with-logits | model">,
    Option<"reduction", "reduction", "std::string", "\"mean\"",
           "mean | sum">,
    Option<"labelSmoothing", "label-smoothing", "double", "0.0",
           "label smoothing of softmax-cross-entropy, in [0, 1]">,
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "class label that contributes no loss (softmax-cross-entropy, nll)">,
    ListOption<"outputWeights", "output-weights", "double",
               "a model of several outputs: the weight of the loss on each "
               "(the loss is their weighted sum, against the same labels)">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd | adam | adamw | adagrad">,
    Option<"learningRate", "lr", "double", "0.01",
           "default learning rate (the runtime may change it per step)">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "weight decay; negative means the optimizer's default (0.01 for "
           "adamw, 0 otherwise)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam/AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam/AdamW beta2">,
    Option<"epsilon", "epsilon", "double", "-1.0",
           "epsilon; negative means the optimizer's default (1e-8 for "
           "adam/adamw, 1e-10 for adagrad)">,
    Option<"lrDecay", "lr-decay", "double", "0.0", "Adagrad learning-rate decay">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "clip the gradients to this global L2 norm (0 = off)">,
    Option<"lossScaling", "loss-scaling", "std::string", "\"none\"",
           "none | dynamic (scale the loss, skip steps whose gradients are "
           "not finite, adapt the scale as torch.cuda.amp.GradScaler; for "
           "--amp fp16)">,
    Option<"initialLossScale", "initial-loss-scale", "double", "65536.0",
           "the loss scale of the first step (dynamic loss scaling)">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval",
           "int64_t", "2000",
           "finite steps in a row after which the loss scale doubles">,
    Option<"dataParallel", "data-parallel", "bool", "false",
           "average every gradient over the processes of a data-parallel "
           "job (graph.all_reduce) before the optimizer reads it">,
  ];
}

def DropDeadTapsPass : Pass<"trainc-drop-dead-taps", "mlir::ModuleOp"> {
  let summary = "Convolution taps that only ever read padding are dropped";
  let description = [{
    With static shapes, a convolution's kernel taps that read the padding
    for every output position contribute nothing (the reference skips
    padding taps) and get a zero gradient. A 3x3 convolution with padding 1
    over a 1x1 plane (ResNet-18's last stage on 32x32 images) uses only its
    centre tap: 8/9 of its weight is read, reordered and multiplied by
    zeros on every step. This pass rewrites, in every function,

    * `graph.conv(x, w)` and `graph.conv_backward_input(dy, w)` to the
      same op on `graph.slice(w)`, the hull of the live taps, with the
      padding that keeps each tap reading the same input element;
    * `graph.conv_backward_weight(dy, x)` to `graph.slice_backward` (zeros
      for the dropped taps) of the weight gradient of the sliced kernel.

    With --amp the weight is the low-precision cast of an f32 parameter,
    and the parameter's gradient the cast of the weight gradient: the
    parameter is sliced before its cast, and the narrow gradient cast
    before its zeros are placed, so that only live taps are converted
    (ResNet-18 at batch 32 with --amp bf16: @train_step's arena 19.8 ->
    17.0 MB, @eval's 5.4 -> 4.2 MB).

    The parameters keep their shape: optimizers, checkpoints and the
    exported model see the full kernel. A convolution whose live taps
    cannot be written with non-negative padding is left as it is.
  }];
  let dependentDialects = ["::trainc::graph::GraphDialect"];
}

def ConvsAsProductsPass : Pass<"trainc-convs-as-products", "mlir::ModuleOp"> {
  let summary = "Convolutions whose kernel covers the input plane, or over planes every tap reaches, become matrix products";
  let description = [{
    A convolution (group 1, no padding) whose kernel spans its whole input
    plane has a one-position output plane: each output is the dot product
    of a flattened input image with a flattened filter. With static
    channel and spatial dims and K = C * D1 * ... * Dk, this pass
    rewrites, in every function,

    * `graph.conv(x, w, b)` to `graph.gemm` of x as [N, K] by w as [M, K]
      (`trans_b`) plus the bias, reshaped to [N, M, 1, ...];
    * `graph.conv_backward_input(dy, w)` to `graph.matmul` of dy as
      [N, M] by w as [M, K], reshaped to the input's shape;
    * `graph.conv_backward_weight(dy, x)` to `graph.gemm` of dy as [N, M]
      (`trans_a`) by x as [N, K], reshaped to the weight's shape.

    The reshapes are views. Dilation is irrelevant where a kernel dim is
    1, and the stride always is. After `--trainc-drop-dead-taps`,
    ResNet-18's last stage on 32x32 images is such convolutions (3x3 over
    1x1 planes reads the centre tap; 3x3 stride 2 over 2x2 planes reads
    a 2x2 window), where oneDNN 2.6's convolutions reach 45-85 GFLOP/s
    and its GEMMs several times that.

    A convolution (group 1, dilation 1, f32) over planes so small that
    every output position reads every input position through a tap
    inside the kernel (3x3 windows with padding 1 over 2x2 planes) is a
    product too, of its weight's matrix W [M * O..., C * D...]
    (`graph.conv_matrix`: row (m, o), column (c, i) holds the tap
    i - o * stride + pad of filter (m, c)), where the matrix is at most
    twice the weight:

    * `graph.conv(x, w, b)` to `graph.gemm` of x as [N, C * D...] by W
      (`trans_b`) plus the bias at each output position;
    * `graph.conv_backward_input(dy, w)` to `graph.matmul` of dy as
      [N, M * O...] by W (the forward's W, after CSE);
    * `graph.conv_backward_weight(dy, x)` to `graph.conv_matrix_backward`
      (each tap's sum over the entries that hold it) of dy' x (`trans_a`).

    The products do the convolution's multiply-adds, no more. ResNet-18's
    third stage on 32x32 images (256 channels, batch 32, Zen 4, 2
    threads): oneDNN 2.6's convolutions take 0.75, 0.53 and 0.82 ms in
    the three directions, its GEMMs of the same multiply-adds 0.44,
    0.39 and 0.33 ms, the matrix and its gradient about 0.25 ms each.
    Only for a static batch of at least 32: at 16 the GEMMs save 0.23 ms
    of the convolutions' 1.01, less than the matrix costs. The matrix is
    kept from the forward pass to the input gradient (ResNet-18 at batch
    32: arena 18.4 -> 31.0 MB), unless `--memory-budget` has
    `--trainc-remat-elementwise` build it again there.
  }];
  let dependentDialects = ["::trainc::graph::GraphDialect"];
}

def MaskPooledGradientsPass
    : Pass<"trainc-mask-pooled-gradients", "mlir::ModuleOp"> {
  let summary = "A ReLU's gradient mask after a max pooling's gradient moves before it";
  let description = [{
    Autodiff of relu followed by max_pool gives
    `where(greater(y, 0), max_pool_backward(g, y), 0)` (y the pool's
    input, the ReLU's output; the mask may read the ReLU's input x, whose
    sign is y's): the full-size gradient is written by the pooling's
    gradient and read and written again by the mask. `max_pool_backward`
    sends each window's gradient to an element whose value is the
    window's maximum, its pooled value p, so this pass rewrites it, in
    every function, to
    `max_pool_backward(where(greater(p, 0), g, 0), y)` with
    `p = max_pool(y)` (the forward's, once CSE has run): the mask runs on
    the pooled gradient, a window's size smaller.

    The result is the same, bit for bit, where the forward pooling and its
    gradient agree on which element is a window's maximum (the
    interpreter's do, ties and NaNs included). Where a window holds a NaN
    and the two kernels disagree about it, the element the gradient goes
    to may differ; those gradients are NaN anyway downstream.
  }];
  let dependentDialects = ["::trainc::graph::GraphDialect"];
}

def AmpPass : Pass<"trainc-amp", "mlir::ModuleOp"> {
  let summary = "Automatic mixed precision by each op's cast class";
  let description = [{
    Gives every float value of each function a precision by the cast class
    its op declares (CastClass.td): `CastLow` ops (convolutions, matmul,
    gemm) run in `precision` (bf16 or f16), their f32 operands cast down;
    `CastFp32` ops (softmax, losses, normalization, exp/log/pow/erf,
    accumulating reductions, optimizer updates) run in f32, their low
    operands cast up; `CastFollow` ops run low when any float operand is
    low; `CastFixed` ops (cast, constant) keep their types. Casts are made
    once per value, before its first user, and shared; a value that
    is the exact widening of one of the wanted type is replaced by its
    source. The function's results keep their types.

    `trainc compile --amp` runs it on `@forward` before
    `--trainc-autodiff`, so the backward pass has its forward ops'
    precisions and every parameter's gradient is cast back to f32 before
    the optimizer: parameters and optimizer state stay f32 (master
    weights) and each step makes one low copy of each weight. It runs
    again after autodiff, so that ops only the reverse sweep builds get
    their own class (a bias gradient's sum accumulates in f32); ops of
    other dialects (calls) keep their types.

    `products` says where `CastLow` ops compute. `low`: in `precision`.
    `rounded` (f16 on CPU, where no library multiplies in f16): their
    operands are rounded to `precision` and widened again, they compute in
    f32, and their users read the result rounded, as if the product had
    been low. `f32` (bf16 on CPUs without native bf16 products, such as
    AVX2-only ones): activations are still stored in `precision`, halving
    the arena, but a product widens them and multiplies in f32 with the
    f32 parameters (no weight copies); its result is rounded for storage
    unless every user computes in f32 anyway (a weight gradient goes to
    the optimizer as it is).
  }];
  let dependentDialects = ["::trainc::graph::GraphDialect"];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"",
           "the low precision: bf16 | fp16">,
    Option<"products", "products", "std::string", "\"low\"",
           "where CastLow ops compute: low (in the low precision: the "
           "target multiplies in it) | rounded (in f32 on operands rounded "
           "to it, results rounded: f16 on CPU) | f32 (in f32 on f32 "
           "parameters and widened activations, results stored low: bf16 "
           "storage on CPUs without bf16 products)">
  ];
}

def ReciprocalDivisorsPass
    : Pass<"trainc-reciprocal-divisors", "mlir::ModuleOp"> {
  let summary = "Float divisions by a constant become multiplications";
  let description = [{
    `div(x, c)` with `c` a float `graph.constant` (one value, any shape
    that broadcasts) becomes `mul(x, 1/c)`, the reciprocal rounded once to
    the element type, when that is a normal number. A vector division
    costs several multiplications: exported GELUs divide by sqrt(2),
    attention divides its queries by sqrt(d), and their gradients divide
    again. The product is within about 1 ulp of the quotient, and exact
    when the reciprocal is (a power of two); XLA's algebraic simplifier
    does the same, and PyTorch's GELU kernel multiplies by `M_SQRT1_2`.
    Integer divisions are left alone.
  }];
  let dependentDialects = ["::trainc::graph::GraphDialect"];
}

def MergeSliceGradientsPass
    : Pass<"trainc-merge-slice-gradients", "mlir::ModuleOp"> {
  let summary = "Sums of gradients of adjacent slices become concatenations";
  let description = [{
    A tensor cut into adjacent slices, such as a fused QKV projection split
    into queries, keys and values, gets its gradient as a sum of
    `graph.slice_backward`s, each a full-size tensor of zeros around one
    slice's gradient. In every function this pass rewrites

    * `add(slice_backward(x, r1), slice_backward(y, r2))`, unit steps, the
      two ranges equal but on one axis where `r1` ends where `r2` begins,
      each slice_backward read only by the add, to
      `slice_backward(concat(x, y), r1 + r2)`;
    * a `slice_backward` of the whole tensor to its gradient;
    * `concat(concat(a, b), c)` along one axis, the inner one read only by
      the outer, to `concat(a, b, c)`.

    The Transformer's QKV gradient, three zero-filled tensors added
    together, becomes one concatenation.
  }];
  let dependentDialects = ["::trainc::graph::GraphDialect"];
}

def RematElementwisePass
    : Pass<"trainc-remat-elementwise", "mlir::ModuleOp"> {
  let summary = "Cheap arithmetic is recomputed where the backward pass reads it";
  let description = [{
    Autodiff keeps every forward value a gradient formula reads. GELU's
    forward, as PyTorch exports it (h = x + b; s = h / sqrt 2;
    e = erf(s) + 1; y = h * e * 0.5), thereby stores s next to h and e: a
    full-size tensor written in the forward pass and read back in the
    backward one, though it is one division of h, which the gradient reads
    anyway.

    For a float `add`, `sub`, `mul`, `div` or `neg`, or a cast between
    floats (`--amp`'s f32 copy of a bf16 value, which erf reads), whose
    result a far
    such op reads (an op that does not fuse with elementwise ops, such as
    a matmul or a reduction, runs in between), the reader gets its own
    copy, placed right before it, when the copy's operands are there
    anyway: constants, arguments, values read near that point (by it,
    after it, or by an op it fuses with), or values recomputable from such
    by a chain of at most 4 of these ops. No buffer lives longer than
    before. Transcendental functions are not recomputed: erf's polynomial
    costs more than reading its value back (GELU's gradient with erf
    recomputed took 0.29 against 0.20 ms per launch).
    `--trainc-fuse-elementwise` then fuses the copies into the backward
    kernel and the originals into the forward one, which no longer writes
    them.

    An exact widening (`--amp`'s f32 copy of a bf16 activation that an f32
    product reads, `--amp bf16-storage`) is also recomputed for a far
    reader that fuses with nothing (the product's weight gradient), as a
    kernel of its own: storing the copy would keep twice the activation's
    bytes alive between the passes. Runs after CSE, which would merge the
    copies back.

    With `functions=true`, the elementwise functions (exp, erf, tanh,
    sigmoid, sqrt, abs, relu, sin, cos, softplus) are recomputed too, on
    the same terms: GELU's e = erf(s) + 1 is then recomputed from h in its
    gradient's kernel instead of stored, a full-size buffer less between
    the passes for more arithmetic in the backward kernel.
    `trainc compile --memory-budget` runs it so when the budget binds
    (the Transformer's arena at batch 16: 24.1 -> 19.9 MB).

    With `parameters=true`, copies of the function's arguments (slices,
    casts, reshapes, transposes and weight matrices of them, or chains of
    these, such as `--trainc-drop-dead-taps`' slice of a weight's live
    taps, `--amp`'s bf16 copy of a weight or `--trainc-convs-as-products`'
    `graph.conv_matrix`) are recomputed for every far reader, as a
    kernel of their own: they read the arguments again, which stay in
    memory anyway, instead of keeping the copy alive from the forward
    convolution to its input gradient. `--memory-budget` runs it so too:
    ResNet-18 at batch 32, whose 5 MB of live-tap slices sat at the
    arena's peak, reaches 13.8 MB instead of 14.2.
  }];
  let options = [
    Option<"functions", "functions", "bool", "false",
           "Recompute the elementwise functions (erf, exp, tanh, sigmoid, "
           "...) too">,
    Option<"parameters", "parameters", "bool", "false",
           "Recompute copies of the function's arguments (a weight's "
           "live-tap slice, its bf16 copy) for every far reader">,
  ];
  let dependentDialects = ["::trainc::graph::GraphDialect"];
}

def RematPass : Pass<"trainc-remat", "mlir::ModuleOp"> {
  let summary = "Recomputes saved values in the backward pass to lower the peak";
  let description = [{
    Lowers the peak of live bytes of one function (`@gradients`, where the
    forward and backward passes meet) to `target` by recomputing values
    the backward pass reads from the forward one, greedily: each step
    finds the op where the live bytes peak, and among the values live
    across it recomputes the one that frees the most bytes per recomputed
    flop (`CostOpInterface`), right before its first reader after the
    peak. A value is recomputed from operands that are there anyway
    (arguments, constants, values read at or after that point) or are
    recomputed with it, so a chain (a convolution, its batch norm and its
    ReLU) comes back from the block's input; every later reader of a
    chain value reads the recomputed one. The clones compute what the
    originals did, so the results are the same bit for bit.

    `solver=ilp` chooses by an integer program instead (RematIlp.cpp,
    solved by CBC): the fewest recomputed flops that meet the target, or
    the lowest peak and then the fewest flops; a value may be recomputed
    several times, at any time the backward pass reads it. `solver=best`
    (the default) runs both and keeps the plan that meets the target with
    fewer flops, or else the lower peak.

    Liveness is the graph's: a value lives from its op to its last reader,
    a reshape views its input, a returned gradient dies where it is made
    (its update runs right after it), arguments and constants take no
    arena space. Kernel fusion makes the planned arena differ;
    `trainc compile --memory-budget` checks the planned arena and lowers
    the target where it is over. The function gets a `graph.remat`
    attribute: the target, the peak before and after, and the recomputed
    ops and flops.
  }];
  let dependentDialects = ["::trainc::graph::GraphDialect"];
  let options = [
    Option<"target", "target", "int64_t", "0",
           "the peak of live bytes to reach (0: as low as recomputation "
           "gets it)">,
    Option<"functionName", "function", "std::string", "\"gradients\"",
           "the function to rematerialize">,
    Option<"maxSteps", "max-steps", "int64_t", "100000",
           "the greedy: at most this many recomputations">,
    Option<"solver", "solver", "std::string", "\"best\"",
           "greedy, ilp (an integer program solved by CBC; the greedy "
           "where it finds no solution in time) or best (both, keeping "
           "the one that meets the target with fewer flops, else the "
           "lower peak)">,
    Option<"nodes", "nodes", "int64_t", "700",
           "ilp, best: CBC's branch-and-bound node limit per solve (the "
           "limit that binds on the reference models: the same plan on "
           "every machine)">,
    Option<"seconds", "seconds", "double", "30",
           "ilp, best: CBC's time limit per solve, a safety net for large "
           "graphs (where it binds, the plan depends on the machine's "
           "speed; graph.remat records ilp_timed_out)">
  ];
}

#endif // TRAINC_GRAPH_PASSES_TD
