//===- Passes.td - conversions between trainc's dialects -----------------===//
#ifndef TRAINC_CONVERSION_PASSES_TD
#define TRAINC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def KernelToLoopPass : Pass<"trainc-kernel-to-loop", "mlir::ModuleOp"> {
  let summary = "Generated-backend launches to loop-nest kernels";
  let description = [{
    For every `kernel.launch` whose backend is `generated`, builds a
    `loop.kernel` function of `loop.nest`s that computes it (one builder per
    graph op family, GeneratedKernels.cpp), gives each nest its default
    schedule, and sets the launch's `callee`. Buffers the kernel needs
    besides its outputs become `kernel.alloc`s passed as the launch's
    `scratch`, so the memory planner places them; a kernel that indexes
    one such buffer in two shapes gets a `kernel.view` of it as a further
    scratch operand (its argument's `loop.view_of` names the first). The kernel function sees
    each buffer in the shape that suits it (unit dimensions dropped,
    contiguous dimensions merged): same element type and element count,
    since only its address crosses the call.
  }];
  let options = [
    Option<"vectorLanes", "vector-lanes", "int64_t", "16",
           "f32 lanes of the target's vector registers (16: AVX-512, 8: "
           "AVX2); nests get innermost tiles of up to 4 vectors">
  ];
  let dependentDialects = ["::trainc::loop::LoopDialect",
                           "::trainc::kernel::KernelDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::func::FuncDialect"];
}

def FuseElementwisePass : Pass<"trainc-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Chains of generated elementwise kernels as one loop nest";
  let description = [{
    A generated elementwise kernel (one `loop.nest`, every dimension
    parallel) whose output feeds the next generated elementwise kernel is
    computed inside that kernel instead: one nest runs the producer's
    body, then the consumer's on the producer's values. An intermediate
    nothing else reads disappears, with its write and read; one that later
    launches read (a value saved for the backward pass) becomes an output
    of the fused nest, so it is still written but never read back. A
    ReLU's gradient, `where(x > 0, dy, 0)`, becomes one pass over memory
    instead of two plus a mask; GELU's forward as PyTorch exports it
    (add, div, erf, add, mul, mul, keeping two values for its gradient)
    one pass writing three buffers; longer chains fuse step by step.

    The two nests must cover the same number of points and index the
    intermediates identically; when their domains differ in shape (one was
    collapsed further), the fused nest takes the less collapsed domain, and
    the other nest's buffers, all read or written whole (identity maps or
    scalars), are viewed in it. Not fused: kernels with an input check,
    bodies that read `loop.index`, producers whose inputs are written
    between the two launches, and producers with an output used by another
    launch between the two (the fused launch, at the consumer's place,
    would write it too late; launches before the producer do not count,
    so GELU's gradient, which updates the forward's saved value in place,
    fuses with the cast and the add after it).

    A widening cast (bf16 or f16 to f32) that other launches read too is
    not made an output of the fused nest: the fused nest widens the
    narrower input again, and the cast stays for its other readers, which
    may fuse it in turn; the last one takes it whole. Under `--amp bf16`,
    softmax's gradient reads its bf16 incoming gradient in the reduction
    and in the elementwise nest after it, and the f32 copy is never
    stored.

    A function argument written in place (an optimizer update of its
    parameter) and read by the very next launch fuses the same way, the
    argument staying an output: with `--trainc-keep-weight-copies` the
    update and the cast into the weight's low-precision copy are one pass
    over the weight.

    A consumer of several nests (a reduction: a fill, then the reducing
    nest) takes an elementwise producer of one output that nothing else
    reads: the one nest that reads it, whole, computes the producer's body
    first, and the other nests stay. Softmax's gradient, `y * (g - sum(g *
    y))`, reads g and y once for the sum instead of storing `g * y` and
    reading it back.

    An elementwise consumer launched right after a producer of several
    nests (a batch norm: its statistics, then one elementwise nest that
    normalizes) is computed in the one nest that writes its input, whole;
    the producer's other nests stay. The input is still written where
    other launches read it (a clip's, which its gradient reads) and not at
    all where only the consumer did (a ReLU's): a batch norm and its ReLU
    are one pass over the activations instead of two. Not when the
    consumer reads or writes another of the producer's operands.
  }];
  let options = [
    Option<"vectorLanes", "vector-lanes", "int64_t", "16",
           "f32 lanes of the target's vector registers (16: AVX-512, 8: "
           "AVX2); nests get innermost tiles of up to 4 vectors">
  ];
  let dependentDialects = ["::trainc::loop::LoopDialect",
                           "::trainc::kernel::KernelDialect",
                           "::mlir::func::FuncDialect"];
}

def ReuseBuffersPass : Pass<"trainc-reuse-buffers", "mlir::ModuleOp"> {
  let summary = "Elementwise kernels write over an input that dies there";
  let description = [{
    A generated elementwise kernel (one `loop.nest`, every dimension
    parallel, outputs written without being read) reads each element of an
    input read whole at the point where it writes the same element of an
    output. When such an input's buffer (an alloc, through views) has the
    output's element type and size, is touched by no other operand of the
    launch and by nothing after it, the output's `kernel.alloc` is replaced
    by the input (a `kernel.view` of it where the shapes differ): the
    output is written in place, and the arena plans one buffer where it
    planned two. Runs on the final launch order, before
    `--trainc-plan-memory`. Off under `trainc compile --check-numerics`,
    which reads a launch's inputs after it to tell where a NaN started.
  }];
}

def DedupeKernelsPass : Pass<"trainc-dedupe-kernels", "mlir::ModuleOp"> {
  let summary = "One loop kernel per distinct body";
  let description = [{
    Launches of the same op on the same shapes get identical `loop.kernel`
    functions (ResNet-18's repeated blocks: 220 kernels, many alike), and
    each one is lowered, optimized and compiled on its own. This pass keeps
    the first of every set of kernels that print the same apart from their
    name, points every launch at it and erases the others.
  }];
  let dependentDialects = ["::trainc::kernel::KernelDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // TRAINC_CONVERSION_PASSES_TD
