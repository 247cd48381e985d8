//===- Passes.td - operator dialect passes ---------------------------------===//
#ifndef TRAINC_KERNEL_PASSES_TD
#define TRAINC_KERNEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToKernelPass : Pass<"trainc-lower-to-kernel", "mlir::ModuleOp"> {
  let summary = "Graph functions to kernel launches on buffers";
  let description = [{
    Rewrites each function named in `functions` (by default @train_step and
    @eval, with every call inlined beforehand) from value-semantic graph ops
    into `kernel.launch`es on memrefs, and erases the other functions.

    * Arguments become buffers of the same shape. A result that replaces an
      argument (`graph.updates`) is written into that argument's buffer: in
      place when an optimizer update (or a batch norm in training, for its
      running statistics) is the last reader of its state, otherwise by a
      final `runtime.copy`. Every other result (the loss,
      @eval's outputs) becomes an extra output argument the caller provides.
    * Each graph op becomes one launch writing fresh `kernel.alloc` buffers;
      `graph.constant` becomes `kernel.constant`; `graph.reshape` and
      `graph.identity` become a `kernel.view` of their operand's buffer (an
      update writes its state in place only after every read through such
      views).
  }];
  let dependentDialects = ["::trainc::kernel::KernelDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "functions to lower (default: train_step, eval)">,
  ];
}

def FoldTransposesPass : Pass<"trainc-fold-transposes", "mlir::ModuleOp"> {
  let summary = "Transposes around oneDNN and OpenBLAS matmuls become swapped operands";
  let description = [{
    Matrix libraries read a matrix transposed for free, but a permutation
    that moves a batch dim sends oneDNN 2.6 to its slow strided batch loop
    (3-5x slower on the Transformer's heads), and a generated transpose
    whose innermost output dim is strided in its input transposes tiles in
    registers, several times slower than a copy keeping that dim. Around
    each `graph.matmul` launch on `dnnl` or `openblas`:

    1. An input written by a `graph.transpose` launch that swaps the last
       two dims is read in place instead, with option `lhs_perm` or
       `rhs_perm`; the transpose and its buffer go when nothing else reads
       them. Not when the transpose's input is written between the two
       launches (an in-place optimizer update).
    2. An input made by a transpose (read by nothing else) with another
       permutation that swaps the last two dims, e.g. `[1, 2, 0]`, is made
       by the transpose that keeps the innermost dim (`[1, 0, 2]`, a
       vectorized copy) and read with its last two dims swapped.
    3. A product read only by a transpose whose innermost output dim is
       the product's rows is computed transposed, `b^T a^T` (operands
       swapped, each one's last-two-dims swap toggled), so that the
       transpose keeps the innermost dim; a transpose left with nothing
       to permute goes and the product is written to its result.
    4. A transpose of the buffer an earlier transpose read, with the same
       permutation and backend, each writing an allocation nothing else
       writes, is not made again when its input is not written in
       between: its readers read the earlier result. Rule 2 makes the
       attention's key and value transposes of the forward pass the ones
       their gradients read (the Transformer: 4 transposes fewer a step).
  }];
  let dependentDialects = ["::trainc::kernel::KernelDialect"];
}

def FoldSliceTransposesPass
    : Pass<"trainc-fold-slice-transposes", "mlir::ModuleOp"> {
  let summary = "A slice read only by a transpose becomes one strided copy";
  let description = [{
    Attention splits a packed projection into queries, keys and values and
    each into heads: a `graph.slice` of the product (a copy), a view as
    heads, a `graph.transpose` (a second copy). Where a generated slice
    with unit steps writes an allocation that nothing but a generated
    transpose reads (directly or through one `kernel.view`), and the
    slice's input is not written between the two, both become one
    generated `graph.slice` launch from the slice's input to the
    transpose's output, with options on a common refinement of the
    sliced shape and the viewed one: `source_shape` (the input seen on
    the refined dims), `starts`, `ends`, `steps` (the window there) and
    `perm` (output axis a reads the window's refined dim perm[a]). A
    window that does not fall on whole refined dims, or shapes with no
    common refinement, leave the launches alone. CPU target only; runs
    right before --trainc-kernel-to-loop, after every pass that reads a
    slice's options.
  }];
  let dependentDialects = ["::trainc::kernel::KernelDialect"];
}

def FoldConcatTransposesPass
    : Pass<"trainc-fold-concat-transposes", "mlir::ModuleOp"> {
  let summary = "A concatenation of transposes becomes one permuting copy";
  let description = [{
    The gradient of attention's head split: each head gradient is
    transposed back, viewed as [S, B, E] and concatenated. Where every
    input of a `graph.concat` launch is written by a generated
    `graph.transpose` that nothing else reads (directly or through one
    `kernel.view`), and no transpose's input is written before the
    concatenation, they become one generated `graph.concat` launch from
    the transposes' inputs to the concatenation's output. Its options are
    on a common refinement of each transpose's output shape and the
    concatenation's view of it, alike for every input but for the axis's
    outermost factor: `axis`, `output_shape`, and per input, flattened,
    `source_shapes` and `perms` (window axis j reads the source's axis
    perm[j]). CPU target only; runs right before --trainc-kernel-to-loop.
  }];
  let dependentDialects = ["::trainc::kernel::KernelDialect"];
}

def FuseActivationsPass : Pass<"trainc-fuse-activations", "mlir::ModuleOp"> {
  let summary = "Bias adds and ReLUs after oneDNN products as epilogues";
  let description = [{
    A `graph.relu` launch whose input is written by a `dnnl` convolution,
    GEMM or matmul launch and read by nothing else becomes that launch's
    post-op (option `post_relu`): oneDNN applies it while the result is
    still in registers, so the pre-activation is never stored and read
    again. oneDNN 2.6 accepts post-ops on forward-training primitives;
    gradients are not fused (backward-data primitives take none). The
    ReLU's own gradient reads its output, not its input, so this applies
    to training graphs.

    Where such a product is rounded to bf16 or f16 before the ReLU (a
    `graph.cast` launch read only by the ReLU: `--amp bf16` on a target
    whose products compute in f32), the ReLU becomes the product's post-op
    and the rounding moves to the ReLU's place, writing its output:
    relu(round(y)) == round(relu(y)), so the stored value is the same.

    First, a `graph.add` of a vector along the last dim (`[N]` or
    `[1, ..., N]`) to the result of a `dnnl` matmul that nothing else
    reads becomes the matmul's third input, oneDNN's bias (the
    Transformer's QKV and FFN biases). The sum is rounded once instead of
    twice. Gradients are unaffected: an add's gradient reads neither
    operand.
  }];
  let dependentDialects = ["::trainc::kernel::KernelDialect"];
  let options = [
    Option<"relus", "relus", "bool", "false",
           "fuse ReLUs too: faster, but oneDNN 2.6's ReLU post-op maps NaN "
           "to 0 where the graph's ReLU keeps it (trainc compile "
           "--relu-epilogues)">
  ];
}

def AssignWeightLayoutsPass
    : Pass<"trainc-assign-weight-layouts", "mlir::ModuleOp"> {
  let summary = "Lets oneDNN keep convolution weights in its blocked layout";
  let description = [{
    oneDNN's convolutions want their weights in a blocked layout that
    depends on the CPU (e.g. `OIhw16i16o`); dense weights are reordered
    into it by every forward and backward-data launch, and the weight
    gradient out of it, every step. A parameter may instead be stored in
    that layout when nothing but `dnnl` convolutions (as their weights
    operand, or the weight gradient's output) and elementwise optimizer
    updates or copies touch it, its gradient and its optimizer state, in
    every function it appears in. Such a parameter and every buffer an
    update or copy connects to it form a layout group: its launches get
    option `weight_layout = ID`, its function arguments (the parameter,
    its optimizer state) the attribute `kernel.layout = ID`, which the
    manifest carries. The session chooses the layout when it opens (the
    group's forward convolution's preference, when it has no padding, so
    sizes stay the same) and converts at its boundary (initial weights,
    parameters read or written, checkpoints, export).
  }];
  let dependentDialects = ["::trainc::kernel::KernelDialect"];
}
def WindowUpdatesPass : Pass<"trainc-window-updates", "mlir::ModuleOp"> {
  let summary = "Optimizer updates read a zero-padded gradient's window";
  let description = [{
    `--trainc-drop-dead-taps` writes the weight gradient of a convolution
    with dead taps as `graph.slice_backward` of its live taps' gradient:
    zeros elsewhere. An optimizer update (SGD, Adam, Adagrad) of the
    generated backend that reads such a gradient, written by a
    `graph.slice_backward` with unit steps that nothing else reads, reads
    the window instead: the padding launch and its buffer are erased and
    the update gets the option `gradient_starts` (the slice's starts), with
    which its kernel updates the window from the gradient and every other
    element with a zero gradient (momentum and weight decay still apply).
    With `--data-parallel` the gradient's `graph.all_reduce` between the
    two then averages the window alone (the average of zeros is zero).
    The kernel pads the window a chunk of rows at a time (2^18 elements,
    or a 16th of a larger parameter) into a scratch buffer its update
    reads while cached. The same values,
    bit for bit; ResNet-18 on 32x32 images no longer stores a 9.4 MB
    gradient, mostly zeros, for each of its last 3x3 weights (the buffer
    that was the peak of its smallest arena under `--memory-budget`).
  }];
}
def ScheduleUpdatesPass : Pass<"trainc-schedule-updates", "mlir::ModuleOp"> {
  let summary = "Runs each optimizer update as soon as its gradient is ready";
  let description = [{
    The training graph computes every gradient before it updates any
    parameter, so each gradient is written, evicted from the cache, and
    read back from memory by its update, and every gradient buffer lives
    until the end of the step. Each optimizer update launch (SGD, Adam,
    Adagrad) moves up to right after the last operation it depends on: a
    launch writing a buffer it uses, reading or writing a buffer it writes
    (through views), or defining a value it uses; any operation other than
    kernel allocs, views, constants and launches stays a barrier. The
    values computed are the same; the gradient is read while it may still
    be cached and its buffer dies early (a smaller arena).
  }];
}
def KeepWeightCopiesPass
    : Pass<"trainc-keep-weight-copies", "mlir::ModuleOp"> {
  let summary = "Keeps the low-precision copy (or live taps) of each weight across steps";
  let description = [{
    Under `--amp bf16` (or fp16) `@train_step` casts each f32 master
    weight to the products' precision as it starts, reading every weight
    that the previous step's optimizer update just wrote. Here that copy
    is persistent instead: the casts of a parameter (role `parameter`,
    written by one launch, its update, and cast before it) become a new
    argument of role `weight_copy` (`graph.name` the parameter's name plus
    `.bf16` or `.f16`, `graph.copy_of` the parameter's), and a cast of the
    parameter into it runs after the update and after the last launch
    that reads this step's copy. When nothing in between forbids it the
    update moves down to that cast, so that `--trainc-fuse-elementwise`
    makes them one pass over the weight. The function
    `@refresh_weight_copies(parameters..., copies...)` casts every
    parameter into its copy: the runtime runs it before a step after the
    parameters changed from outside (a session opened, a checkpoint
    loaded, a parameter set). The same values, bit for bit.

    A parameter without casts whose live taps are sliced
    (`--trainc-drop-dead-taps`: generated `graph.slice`, unit steps) and
    whose generated update reads the gradient of the same window
    (`gradient_starts`, in place) keeps the slice the same way, in f32
    too: argument `NAME.window`, written by the update itself (option
    `window_copy`: its last output, a chunk of rows at a time while the
    chunk is in the cache), or by a slice after the update where the
    update cannot move below the copy's last reader; the refresh slices
    it.
  }];
}
def CompactWindowUpdatesPass
    : Pass<"trainc-compact-window-updates", "mlir::ModuleOp"> {
  let summary = "Updates a weight whose dead taps never change on its live taps alone";
  let description = [{
    After `--trainc-keep-weight-copies`: an optimizer update that writes
    the copy of its window (`window_copy`: the live taps of a convolution
    weight whose other taps read only padding) and leaves an element of
    zero gradient and zero state as it is (no weight decay: SGD, Adam,
    AdamW, Adagrad) runs on the copy alone. The update reads and writes
    the copy instead of the parameter, without `gradient_starts` and
    `window_copy`; its optimizer state arguments (which nothing else uses)
    shrink to the window's shape; `@eval` reads the copy where it sliced
    the same window; and the copy gets `graph.window_starts`: the
    parameter argument keeps the dead taps (which never change: zero
    gradient, zero state), the copy the live ones, and the runtime reads
    the parameter as the two together (trainc_get_parameter, checkpoints,
    ONNX export). Left alone when anything else in `@train_step` uses the
    parameter or its state, or `@eval` reads more of the parameter than
    that window. The same values, bit for bit.
  }];
}
def BucketAllReducesPass : Pass<"trainc-bucket-all-reduces", "mlir::ModuleOp"> {
  let summary = "Gradient all-reduces in buckets, overlapped with the backward pass";
  let description = [{
    Data-parallel training (`--trainc-autodiff data-parallel=true`) averages
    every gradient over the job's processes: one `graph.all_reduce` launch
    per gradient. This pass groups them into buckets of at least
    `bucket-bytes` (the last one smaller), in the order the backward pass
    computes the gradients, as PyTorch's DistributedDataParallel does, and
    replaces each bucket with two launches of the same backend (`mpi`):

    * `comm.all_reduce_start(gradients...) -> (staging)` packs the
      gradients into one staging buffer and starts a non-blocking
      all-reduce of it; it runs right after the launch that computes the
      bucket's last gradient.
    * `comm.all_reduce_wait(staging) -> (averaged...)` waits for it and
      writes each gradient's mean; it runs after the next bucket has
      started (the last bucket's right after its own start), so that each
      bucket is on the network while the backward pass computes the next,
      and the launches that read the means (the optimizer's updates) run
      right after it.

    A bucket of one gradient that nothing else reads after its all-reduce
    (a large weight's gradient) is reduced in place: `start(g) -> (g)`,
    `wait(g) -> (g)`, the updates reading `g`; no staging buffer, no copy.

    Both carry `bucket` (its index) and `reduction`. The launches are
    list-scheduled by these priorities within the order constraints of
    their buffers (a launch moves past another unless both touch a buffer
    and one writes it), so every launch reads what it read before. Runs
    before --trainc-plan-memory: the staging buffer is live from the start
    to the wait, while the collective owns it.
  }];
  let dependentDialects = ["::trainc::kernel::KernelDialect"];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "1048576",
           "bytes of gradients per bucket (a bucket closes once it has at "
           "least this many)">,
  ];
}

def ScheduleMemoryPass : Pass<"trainc-schedule-memory", "mlir::ModuleOp"> {
  let summary = "Reorders launches to lower the arena's peak";
  let description = [{
    The order autodiff emits is not the one that needs the least memory: a
    large weight gradient (a padded convolution's, say) may be computed
    while every activation saved for the layers behind it is still live.
    In each function this pass list-schedules the launches: a launch may
    move past another unless both touch the same buffer (through views) and
    one of them writes it; among the launches that are ready, the one that
    adds the fewest live bytes (the arena buffers it is the first to use,
    minus those it is the last to use) runs next, ties in the original
    order. That choice may run a launch early because it adds few bytes
    even when its result is read much later, so each order (and the
    original) is also tried with every launch that frees nothing moved down
    to just before its first reader. The order of the lowest peak of live
    arena bytes is kept if that peak is lower than the original order's
    (ResNet-18 at batch 32 with `--amp bf16`: 17.2 -> 15.3 MB; its f32 step
    is unchanged). Allocs and views move with the first
    launch that uses them; nothing is recomputed and every launch computes
    the same values. A function holding any op other than kernel
    constants, allocs, views and launches is left as it is.
  }];
}
def DispatchPass : Pass<"trainc-dispatch", "mlir::ModuleOp"> {
  let summary = "Chooses the backend of every kernel launch";
  let description = [{
    Sets `backend` on each `kernel.launch` from the dispatch registry
    (BackendRegistry.cpp): the applicable backend of highest priority, or the one
    an override `KERNEL=BACKEND` names (an impossible override is an error
    saying why). `*=BACKEND` chooses BACKEND for every launch it can run and
    leaves the others to the registry (how the differential tests force one
    backend on every op it accepts).

    Some rules depend on the target: the pass records `vector-lanes` (f32
    lanes of the target's vectors, 16 with AVX-512, 8 with AVX2) on the
    module as `kernel.vector_lanes`, where the registry and `--tune` read
    it. With `target=cuda` it records `kernel.target = "cuda"`, and only
    the backends that run on a GPU are chosen: `cublas` (matrix products)
    and `generated`; the CPU target never chooses `cublas`.
  }];
  let options = [
    ListOption<"overrides", "overrides", "std::string",
               "KERNEL=BACKEND choices, e.g. graph.conv=reference, or "
               "*=BACKEND wherever BACKEND can run">,
    Option<"vectorLanes", "vector-lanes", "int64_t", "16",
           "f32 lanes of the target's vectors (16 with AVX-512, 8 with AVX2)">,
    Option<"target", "target", "std::string", "\"cpu\"",
           "cpu, or cuda: the cublas and generated backends only">,
  ];
}

def PlanMemoryPass : Pass<"trainc-plan-memory", "mlir::ModuleOp"> {
  let summary = "Places every intermediate buffer in one static arena";
  let description = [{
    Liveness over each function's launch order: a `kernel.alloc` lives from
    its definition to its last use (or its views' last use). Two
    placements at 64-byte-aligned offsets are computed and the smaller
    arena kept: first-fit in launch order among the buffers live at each
    definition, and largest buffer first, each into the smallest gap
    between the placed buffers it shares a launch with (TFLite's greedy by
    size). Each alloc gets its `offset` and the function its
    `kernel.arena_size`.
  }];
}

#endif // TRAINC_KERNEL_PASSES_TD
