//===- Passes.td - loop dialect passes -----------------------------------===//
#ifndef TRAINC_LOOP_PASSES_TD
#define TRAINC_LOOP_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerLoopNestsPass : Pass<"trainc-lower-loop-nests", "mlir::ModuleOp"> {
  let summary = "Applies each loop nest's schedule: tiles, vectors, blocks";
  let description = [{
    Every `loop.nest` of a `loop.kernel` function becomes a function of its
    own,

        func.func @KERNEL_nestN(%begin: index, %end: index, <the kernel's buffers>)

    that computes blocks [%begin, %end) of the nest's parallel dimension (a
    nest without one is called with 0, 1). The body is a `linalg.generic`
    over views of the block, tiled with the schedule's tile sizes by
    upstream's `scf::tileUsingSCF`; each tile is vectorized by
    `linalg::vectorize` with the tile's sizes as vector sizes, or becomes
    scalar loops when the schedule says so. The tile loop of the vector's
    innermost dimension (the last one tiled by more than 1: usually the
    domain's innermost) is peeled (`scf::peelForLoopAndSimplifyBounds`):
    its full tiles have a constant extent and their vectors need no mask
    once canonicalized; only the last, partial tile is masked (a masked
    store is a single instruction on AVX-512, slow microcoded `vmaskmovps`
    on AVX2). A vector along another dimension (tile `[16, 1, 1]`: a
    vector of channels stored channels-last, the loops over the other
    dimensions inside it) is computed by linalg in the tile's shape,
    `vector<16x1x1xf32>`, which the LLVM lowering unrolls lane by lane;
    upstream's unit-dimension patterns recast its arithmetic on
    `vector<16xf32>`. A tile written transposed (an output map that
    swaps the vector's dimension with another tiled one: the phases of a
    strided depthwise input gradient, interleaved along dx's rows) is
    transposed in registers and stored as one contiguous vector
    (upstream's transfer permutation and flattening patterns), not row by
    row. Likewise a tile read transposed whose last two dimensions are the
    buffer's last two swapped, reading its rows whole (the phases of a
    strided depthwise input, split from its rows): one contiguous load,
    then the transpose in registers, instead of a load per element; those
    patterns rewrite only such reads (and what they become). A kernel argument marked `llvm.noalias` (private
    scratch: `kPrivateScratchAttrName`) keeps the mark on every nest
    function, so that LLVM may keep values of it in registers across
    loops (a reduction's sums). `loop.index`
    becomes `linalg.index` plus the block's start along the parallel
    dimension (tiling adds each tile's start), so it counts over the whole
    domain. Buffers of `i1` are passed as `i8` (the runtime stores a boolean
    in a byte). The `loop.kernel` functions are erased (the code generator
    lowers copies, and reads each kernel's `loop.check` from the original).

    A loop whose full unrolling would exceed `kMaxUnrolledOps` operations
    (vector operations counted per 16-lane register) is marked
    `loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>`
    (`!llvm.loop` `llvm.loop.unroll.disable` metadata in the end): LLVM's O3 otherwise
    unrolls constant-trip-count nests level by level into one block of
    thousands of loads and stores, which its instruction selection takes
    seconds to compile and which runs no faster than the loop. Loops within
    the budget stay LLVM's to unroll.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::affine::AffineDialect", "::mlir::math::MathDialect",
    "::mlir::ub::UBDialect", "::mlir::LLVM::LLVMDialect"];
}

def LoopToGPUPass : Pass<"trainc-loop-to-gpu", "mlir::ModuleOp"> {
  let summary = "Each loop nest as a GPU kernel (the CUDA target)";
  let description = [{
    The GPU sibling of `--trainc-lower-loop-nests`: every `loop.nest` of a
    `loop.kernel` function becomes

        gpu.func @KERNEL_nestN(<the kernel's buffers>) kernel

    in `gpu.module @trainc_kernels` (the module becomes a
    `gpu.container_module`). The nest's CPU schedule is ignored
    (`gpuSchedule` in LoopToGPU.h decides; the code generator launches the
    kernel with the same answer). Its thread dimensions are the parallel
    dimensions every output indexes on an axis of its own (`c * d + k`,
    `c != 0`), so distinct points write distinct elements; a nest whose
    output is also read through another map has none.

    By default a thread computes one point of them (the linear thread id
    `block_id.x * block + thread_id.x`, innermost dimension fastest, so
    that neighbouring threads touch neighbouring elements; threads past
    the last point do nothing) and loops over the other dimensions in
    domain order (`scf.for`), reductions included. An output indexed by
    thread dimensions only (an element of a matrix product) is loaded once,
    carried through the loops as a value and stored once. Blocks of
    `min(points, block-size)` threads.

    A nest with fewer than 16384 points that loops over at least 64 others
    per point (a bias gradient, a loss, batch-norm statistics) is a block
    reduction when every output is indexed by thread dimensions only and
    accumulated as `combine(current, x)` with `combine` one of `addf`,
    `addi`, `maximumf`, `maxnumf`, `minimumf`, `minnumf`: a block per
    point, of 32 to `block-size` threads (the warps the loop domain
    fills); thread `t` takes the loop points `t, t + block, ...`
    (linearized, innermost fastest), runs the body with the current
    output replaced by the neutral element (so it yields `x` alone) and
    accumulates; `gpu.all_reduce` combines the threads' results, which
    thread 0 combines with the output. The sum is reassociated, as the
    CPU's vectorized reductions are.

    Nests over an empty domain become empty kernels that are never
    launched. `loop.index` becomes the point's index; buffers of `i1` are
    passed as `i8`. The `loop.kernel` functions are erased.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256",
           "Threads per block">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::math::MathDialect"];
}

def WidenLowFloatsPass : Pass<"trainc-widen-low-floats", "mlir::ModuleOp"> {
  let summary = "bf16 and f16 elements computed in f32 registers";
  let description = [{
    In every `loop.nest` body, low-float (bf16, f16) elements are widened
    to f32 once where they enter, the body's arithmetic runs in f32, and
    each result is rounded once where it is stored: the generated kernels
    of `--amp` load and store half the bytes and compute as in f32, and a
    fused chain rounds once rather than after each op. A rounding the body
    states (`arith.truncf` to a low type, a `graph.cast` inside a fused
    nest) is kept and widened again for its readers. Runs before
    `--trainc-lower-loop-nests`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ApproximateMathPass : Pass<"trainc-approximate-math", "mlir::ModuleOp"> {
  let summary = "exp, log, tanh, erf, ... as polynomials that vectorize";
  let description = [{
    Rewrites f32 `math` ops (scalar or vector) into upstream's polynomial
    approximations (`populateMathPolynomialApproximationPatterns`), so a
    vectorized GELU or softmax stays in vector registers instead of calling
    libm once per lane. `math.erf` instead becomes two polynomials
    computed side by side and one selected (|x| < 1: x P(x^2); beyond:
    1 - erfc as a polynomial in |x|, which keeps GELU's 1 + erf(x) accurate
    for x < -2): at most 1.3e-7 from erf, no division, half the
    instructions of upstream's three-interval approximation.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def ExpandBf16Pass : Pass<"trainc-expand-bf16", "mlir::ModuleOp"> {
  let summary = "bf16 arithmetic in f32, and bf16 conversions as integer arithmetic";
  let description = [{
    Arithmetic on bf16 values (a max pooling's `arith.maximumf`, exact in
    any precision) is widened to f32 and rounded back (upstream's
    `arith-emulate-unsupported-floats`); then every `arith.extf` from bf16
    and `arith.truncf` to bf16 (scalars and vectors) becomes integer
    arithmetic: a shift for the widening, round to nearest even (NaN kept
    quiet) for the narrowing (upstream's `populateExpandBFloat16Patterns`).
    Without it, LLVM narrows to bf16 with a call to `__truncsfbf2` per
    element on CPUs without AVX512-BF16 (the AVX2-only Zen 3), which
    neither libgcc 12 nor the runtime provides, so such a kernel would not
    link. With `native-narrowing` (the target has AVX512-BF16) the
    conversions are left to LLVM, which narrows with `vcvtneps2bf16`: one
    instruction per vector instead of eight integer operations and a
    compare. The bits are the same but for f32 denormals, which that
    instruction flushes to zero (on a Zen 4: ResNet-18's bf16 ReLU and
    batch-norm kernels 10-50 % faster, the Transformer's step 3 %).
  }];
  let options = [
    Option<"nativeNarrowing", "native-narrowing", "bool", "false",
           "Leave conversions to and from bf16 to LLVM (targets with "
           "AVX512-BF16)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def Bf16AccessesAsI16Pass
    : Pass<"trainc-bf16-accesses-as-i16", "mlir::ModuleOp"> {
  let summary = "Loads and stores of bf16 vectors move 16-bit integers";
  let description = [{
    Rewrites `llvm.load`, `llvm.store`, `llvm.intr.masked.load` and
    `llvm.intr.masked.store` of bf16 vectors into the same operations on
    i16 vectors, with bitcasts around them; the bits are the same. On a CPU
    without AVX512 (the AVX2-only Zen 3) LLVM has no instructions for bf16
    vectors, and two things went wrong with them there:

    * A masked access (a nest's last, partial vector of each row) was split
      into one access per lane, bf16 lanes promoted to f32, so each stored
      lane called `__truncsfbf2`, which nothing links.
    * A narrowing to bf16 (`--trainc-expand-bf16`'s integer rounding, whose
      NaN case is a select of i16 values) was stored as a bf16 vector, so
      LLVM's instcombine moved the bitcast before the select, and a select
      of bf16 vectors is split into one compare and branch per lane: an
      f32 -> bf16 cast of 131072 elements took 77 us instead of 12 (one
      thread, AVX2 code on a Zen 4). Stored as i16, the select stays one
      vector blend.

    Runs after `convert-vector-to-llvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ExpandViewsPass : Pass<"trainc-expand-views", "mlir::ModuleOp"> {
  let summary = "Views (subview, expand/collapse_shape) as strided metadata, one sweep";
  let description = [{
    Upstream's `expand-strided-metadata` patterns (a view becomes
    `memref.reinterpret_cast` of its source's `extract_strided_metadata`,
    with the offsets and strides as `affine.apply`), applied by the greedy
    driver without region simplification. The kernels' regions are
    already simple (`--canonicalize` ran after the nests were lowered), and
    upstream's pass simplified every region of the module on each of its
    sweeps: on DenseNet-121's 2,264 loop nests it took 1.0-1.35 s per
    compile thread.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def ScalarsToLLVMPass : Pass<"trainc-scalars-to-llvm", "mlir::ModuleOp"> {
  let summary = "affine.apply, memref, math, arith, ub, func and cf to LLVM in one conversion";
  let description = [{
    The generated kernels' last conversion, after `convert-vector-to-llvm`
    and `--trainc-expand-views`: upstream's patterns of `lower-affine`
    (the views' offsets), `finalize-memref-to-llvm`, `convert-math-to-llvm`,
    `convert-arith-to-llvm`, `convert-ub-to-llvm`, `convert-func-to-llvm`
    (bare-pointer calling convention: a kernel's memref arguments are
    pointers) and `convert-cf-to-llvm` (with `cf.assert`), applied by one
    dialect conversion with one type converter, as upstream's
    `convert-to-llvm` does. Seven passes each walked every operation of
    the module and checked its legality: on DenseNet-121's 2,264 loop
    nests they took 2.9 s per compile thread, most of it for operations
    that were not theirs to convert.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def UnmaskReductionsPass : Pass<"trainc-unmask-reductions", "mlir::ModuleOp"> {
  let summary = "Masked vector reductions as selects of the neutral element";
  let description = [{
    A tile at the edge of a reduction is vectorized with a mask:

        vector.mask %m { vector.multi_reduction <add>, %x, %acc [1] }

    Upstream lowers that to a vector-predicated reduction
    (`llvm.vp.reduce.fadd`), which is strictly ordered: one add after the
    other across the tile. This pass replaces the lanes outside the mask by
    the reduction's neutral element (-0.0 for add, 1 for mul, -inf for
    max, +inf for min) and reduces without a mask:

        %y = arith.select %m, %x, dense<-0.0>
        vector.multi_reduction <add>, %y, %acc [1]

    which the LLVM lowering turns into a tree (`reassociate-fp-reductions`).
    The result is exact for the lanes inside the mask; other kinds stay
    masked.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // TRAINC_LOOP_PASSES_TD
