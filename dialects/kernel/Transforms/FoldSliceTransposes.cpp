//===- FoldSliceTransposes.cpp - --trainc-fold-slice-transposes -----------===//
//
// Attention splits one packed projection into its queries, keys and
// values, and each into heads: a slice of the [S, B, 3E] product (a copy),
// a view as [S, B * H, D], a transpose to [B * H, S, D] (a second copy).
// A generated slice read only by a generated transpose (through one such
// view or directly) becomes one launch: the slice with option `perm`,
// which writes the transposed region straight from the product.
//
// The slice selects its window on the dims of its own shape, the
// transpose permutes the dims of the view's; both are expressed on a
// common refinement of the two shapes (e.g. [64, 16, 128] and
// [64, 64, 32] as [64, 16, 4, 32]), the sliced buffer seen alike
// (`source_shape`: [64, 16, 384] as [64, 16, 12, 32], the queries' window
// [.., 0:4, ..]); `perm` permutes the window's refined dims. Where no
// refinement exists, or a window does not fall on whole factors of it,
// the two launches stay. Runs last before --trainc-kernel-to-loop, so
// that no pass that reads a slice's options sees one with `perm`.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/BackendRegistry.h"
#include "dialects/kernel/Transforms/Passes.h"
#include "dialects/kernel/Transforms/ShapeRefinement.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace trainc::kernel {
#define GEN_PASS_DEF_FOLDSLICETRANSPOSESPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

ArrayRef<int64_t> ints(LaunchOp launch, StringRef name) {
  auto array = launch.getOptions().getAs<DenseI64ArrayAttr>(name);
  return array ? array.asArrayRef() : ArrayRef<int64_t>();
}

bool isGenerated(LaunchOp launch, StringRef kernel) {
  return launch.getKernel() == kernel && launch.getBackend() == "generated" &&
         launch.getInputs().size() == 1 && launch.getOutputs().size() == 1;
}

struct FoldSliceTransposesPass
    : trainc::kernel::impl::FoldSliceTransposesPassBase<
          FoldSliceTransposesPass> {
  using Base::Base;

  void runOnOperation() override {
    // The CPU target only: the CUDA target's nests were not measured.
    if (getOperation()->getAttr(kTargetAttrName))
      return;
    SmallVector<LaunchOp> transposes;
    getOperation().walk([&](LaunchOp launch) {
      if (isGenerated(launch, "graph.transpose"))
        transposes.push_back(launch);
    });
    for (LaunchOp transpose : transposes)
      fold(transpose);
  }

  /// The slice that alone writes `sliced`, read by nothing but `reader`
  /// (the transpose, or the view it reads); null otherwise.
  static LaunchOp onlySliceWriting(Value sliced, Operation *reader) {
    LaunchOp slice;
    for (Operation *user : sliced.getUsers()) {
      if (user == reader)
        continue;
      auto launch = dyn_cast<LaunchOp>(user);
      if (!launch || slice || !isGenerated(launch, "graph.slice") ||
          launch.getOutputs()[0] != sliced || !ints(launch, "perm").empty())
        return LaunchOp();
      slice = launch;
    }
    return slice;
  }

  void fold(LaunchOp transpose) {
    Value read = transpose.getInputs()[0];
    auto view = read.getDefiningOp<ViewOp>();
    if (view && !read.hasOneUse())
      return;
    Value sliced = view ? view.getSource() : read;
    auto alloc = sliced.getDefiningOp<AllocOp>();
    Operation *reader = view ? view.getOperation() : transpose.getOperation();
    LaunchOp slice = alloc ? onlySliceWriting(sliced, reader) : LaunchOp();
    if (!slice || !slice->isBeforeInBlock(transpose) ||
        (!view && llvm::count(transpose.getInputs(), sliced) != 1))
      return;
    Value source = slice.getInputs()[0];
    if (writtenBetween(source, slice, transpose))
      return;
    auto sourceType = cast<MemRefType>(source.getType());
    auto slicedType = cast<MemRefType>(sliced.getType());
    auto readType = cast<MemRefType>(read.getType());
    ArrayRef<int64_t> starts = ints(slice, "starts"),
                      steps = ints(slice, "steps");
    ArrayRef<int64_t> perm = ints(transpose, "perm");
    size_t rank = slicedType.getRank();
    if (starts.size() != rank || steps.size() != rank ||
        sourceType.getRank() != int64_t(rank) ||
        perm.size() != size_t(readType.getRank()) ||
        llvm::any_of(steps, [](int64_t step) { return step != 1; }))
      return;
    std::optional<Refinement> r =
        refine(slicedType.getShape(), readType.getShape());
    if (!r)
      return;

    // The source viewed on the refinement: dim k of the slice's window is
    // its run of factors f1..fm; the source's dim k is refined as
    // [size / (f2..fm), f2, ..., fm], the window starting at
    // start / (f2..fm) of the first.
    SmallVector<int64_t> sourceShape, windowStarts;
    for (size_t k = 0; k < rank; ++k) {
      ArrayRef<unsigned> run = r->first[k];
      int64_t inner = 1;
      for (unsigned f : run.drop_front())
        inner *= r->factors[f];
      int64_t size = sourceType.getDimSize(k);
      if (size % inner != 0 || starts[k] % inner != 0)
        return;
      sourceShape.push_back(size / inner);
      windowStarts.push_back(starts[k] / inner);
      for (unsigned f : run.drop_front()) {
        sourceShape.push_back(r->factors[f]);
        windowStarts.push_back(0);
      }
    }
    // Output axis a of the transpose reads the view's dim perm[a]: the
    // factors of that dim, in order.
    SmallVector<int64_t> refinedPerm;
    for (int64_t axis : perm)
      llvm::append_range(refinedPerm, r->second[axis]);

    // The launch reads and writes the same buffers; its options are on the
    // refined dims, the source seen as `source_shape`.
    OpBuilder b(transpose);
    MLIRContext *context = &getContext();
    SmallVector<int64_t> ends, ones(windowStarts.size(), 1);
    for (auto [start, f] : llvm::zip(windowStarts, r->factors))
      ends.push_back(start + f);
    NamedAttrList options;
    options.set("source_shape", DenseI64ArrayAttr::get(context, sourceShape));
    options.set("starts", DenseI64ArrayAttr::get(context, windowStarts));
    options.set("ends", DenseI64ArrayAttr::get(context, ends));
    options.set("steps", DenseI64ArrayAttr::get(context, ones));
    options.set("perm", DenseI64ArrayAttr::get(context, refinedPerm));
    auto folded = LaunchOp::create(b, slice.getLoc(), ValueRange{source},
                                   transpose.getOutputs(), "graph.slice",
                                   options.getDictionary(context));
    folded.setBackend("generated");
    transpose.erase();
    if (view)
      view.erase();
    slice.erase();
    alloc.erase();
  }
};

} // namespace
