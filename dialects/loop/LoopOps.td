//===- LoopOps.td - the loop dialect ------------------------------------===//
//
// Generated kernels as loop nests whose schedule is kept apart from the
// computation (TVM/Halide's compute + schedule, onnx-mlir's Krnl). A
// `loop.nest` says *what* is computed: an iteration domain, how each
// buffer is indexed by it, and a scalar body. Its `schedule` says *how*:
// which dimension is split across threads, the tile sizes, and whether the
// innermost tile is vectorized. --trainc-lower-loop-nests applies the
// schedule with upstream tiling (scf) and masked vectorization (linalg).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_LOOP_OPS_TD
#define TRAINC_LOOP_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Loop_Dialect : Dialect {
  let name = "loop";
  let cppNamespace = "::trainc::loop";
  let summary = "Loop nests with a schedule: trainc's generated kernels";
  let description = [{
    A generated kernel is a `func.func` carrying the unit attribute
    `loop.kernel` whose body is a sequence of `loop.nest` ops on its memref
    arguments. Nests run in order; each one is split across threads on its
    own (the runtime's parallel-for over GNU OpenMP), so a nest may read what
    an earlier nest of the same kernel wrote.

    Generated code cannot fail while it runs, but a kernel may check its
    inputs: with `loop.check = #loop.check<...>` on the function, the caller
    reads a status the nests computed after the kernel has run and fails
    the step with the check's message when it is non-zero.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
}

class Loop_Op<string mnemonic, list<Trait> traits = []>
    : Op<Loop_Dialect, mnemonic, traits>;

def Loop_ScheduleAttr : AttrDef<Loop_Dialect, "Schedule"> {
  let mnemonic = "schedule";
  let summary = "How a loop nest runs: threads, tiles, vectors";
  let description = [{
    * `parallel`: the domain dimension whose tiles are distributed over the
      threads, or -1 when the nest runs on the calling thread. It must be a
      parallel iterator indexing every output, so threads write disjoint
      elements and results do not depend on the thread count.
    * `tile`: the tile size of every domain dimension (1 ≤ size); the nest
      becomes loops over tiles, in domain order, around one tile.
    * `vectorize`: the tile is computed on vectors of the tile's shape, with
      masks for the partial tiles at the domain's edges. Nests whose maps
      sum dimensions (windows) are not vectorized: they run as scalar loops.

    The parallel dimension may not be summed with others in any map, nor
    step backwards: each block of it is a view of every buffer.
  }];
  let parameters = (ins "int64_t":$parallel,
                        ArrayRefParameter<"int64_t">:$tile,
                        "bool":$vectorize);
  // A custom list, so that a rank-0 nest's `tile = []` parses back.
  let assemblyFormat = [{
    `<` `parallel` `=` $parallel `,` `tile` `=` custom<TileSizes>($tile) `,`
    `vectorize` `=` $vectorize `>`
  }];
}

def Loop_CheckAttr : AttrDef<Loop_Dialect, "Check"> {
  let mnemonic = "check";
  let summary = "An input check of a loop kernel, reported after it runs";
  let description = [{
    On a `loop.kernel` function, as `loop.check`. Argument `status` of the
    function is a `memref<i64>` that the kernel's nests set to 0 when its
    inputs are valid and to a non-zero value describing the first invalid
    one otherwise (e.g. the out-of-range class label of a loss). After the
    kernel has run, the caller fails with `message`, in which `{}` stands
    for the status, when the status is not 0. The kernel's outputs are then
    unspecified, but it has read and written only its own buffers.

    ```mlir
    func.func private @k(...) attributes {loop.kernel,
        loop.check = #loop.check<status = 3, message = "label {} is not a class index in [0, 10)">}
    ```
  }];
  let parameters = (ins "int64_t":$status, StringRefParameter<>:$message);
  let assemblyFormat = [{
    `<` `status` `=` $status `,` `message` `=` $message `>`
  }];
}

def Loop_NestOp : Loop_Op<"nest", [AttrSizedOperandSegments]> {
  let summary = "A perfect loop nest over a rectangular domain";
  let description = [{
    Runs `body` once for every point of the iteration domain `domain`
    (extent per dimension). `indexing_maps` gives, per operand (inputs, then
    outputs), the element each point touches, with as many results as the
    buffer's rank (a rank-0 buffer is the same element everywhere). Each
    result is a linear function of the dimensions with integer
    coefficients: `d1` reads along a dimension, `d1 + 3` or `d1 * -2 + 9`
    a shifted or strided slice of the axis, `d2 * 2 + d5` a convolution's
    window. Every point must stay in bounds (the verifier checks the whole
    domain), so generated code never needs a bounds check. An output's
    results each use one dimension of their own (times a non-zero step,
    plus an offset), so that distinct points of the parallel dimensions
    write distinct elements, or sum reduction dimensions only: a scatter
    that accumulates in the schedule's order (`dx[o * 2 + k] += ...` for
    a window's gradient). The body receives the
    input elements and the current output elements and yields the new
    output elements. `iterators` marks each dimension `parallel` or
    `reduction`; along reduction dimensions an output accumulates, so it must
    be initialized by an earlier nest. The order of a reduction is fixed by
    the schedule alone.

    `wrapping_inputs` lists inputs whose reads may leave an axis as long as
    they stay inside the buffer: their bounds are checked on the row-major
    offset of the element, not axis by axis, so a read one column before a
    row lands at the end of the row before it. Each result of their maps is
    one dimension of its own times a positive step, plus an offset, or a
    constant. The body must not use what such a read gives where it left an
    axis (a depthwise convolution selects zero there, with `loop.index`,
    instead of reading a zero-padded copy of its input).

    ```mlir
    loop.nest ins(%x, %b : memref<64x10xf32>, memref<10xf32>)
              outs(%y : memref<64x10xf32>)
              domain = [64, 10]
              schedule = #loop.schedule<parallel = -1, tile = [1, 16], vectorize = true>
              attributes {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                           affine_map<(d0, d1) -> (d1)>,
                                           affine_map<(d0, d1) -> (d0, d1)>],
                          iterators = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %c: f32, %out: f32):
      %s = arith.addf %a, %c : f32
      loop.yield %s : f32
    }
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeMemRef>:$inputs,
                       Variadic<AnyStaticShapeMemRef>:$outputs,
                       DenseI64ArrayAttr:$domain,
                       AffineMapArrayAttr:$indexing_maps,
                       StrArrayAttr:$iterators,
                       Loop_ScheduleAttr:$schedule,
                       OptionalAttr<DenseI64ArrayAttr>:$wrapping_inputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `outs` `(` $outputs `:` type($outputs) `)`
    `domain` `=` $domain `schedule` `=` $schedule
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// How many blocks of the parallel dimension the threads share (1 when
    /// the nest is not parallel).
    int64_t getNumBlocks();
    /// Whether dimension `dim` is a reduction.
    bool isReduction(unsigned dim);
    /// Whether input `i` is listed in `wrapping_inputs`.
    bool isWrapping(unsigned i);
  }];
}

def Loop_IndexOp : Loop_Op<"index", [Pure, HasParent<"NestOp">]> {
  let summary = "The current point's index along a domain dimension";
  let description = [{
    Inside the body of a `loop.nest`: the index of the current point along
    domain dimension `dim` (which must be a dimension of the nest's domain),
    counted from 0 over the whole domain whatever the schedule (blocks
    split across threads and tiles see the same indices). It lets a body
    compare a position with data, where an indexing map cannot say it: a
    gather such as `logits[n, label[n]]` is written as a reduction over the
    class dimension of `select(index == label, x, 0)`.

    ```mlir
    ^bb0(%x: f32, %label: i64, %out: f32):
      %c = loop.index 1 : index
      %ci = arith.index_cast %c : index to i64
      %hit = arith.cmpi eq, %ci, %label : i64
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict `:` type($result)";
  let builders = [OpBuilder<(ins "int64_t":$dim), [{
    build($_builder, $_state, $_builder.getIndexType(),
          $_builder.getI64IntegerAttr(dim));
  }]>];
  let hasVerifier = 1;
}

def Loop_YieldOp : Loop_Op<"yield", [Pure, Terminator, HasParent<"NestOp">]> {
  let summary = "The new output elements of one point of a loop nest";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // TRAINC_LOOP_OPS_TD
