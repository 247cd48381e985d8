//===- FoldConcatTransposes.cpp - --trainc-fold-concat-transposes ---------===//
//
// The gradient of attention's head split: the gradients of the queries,
// keys and values, each [B * H, S, D], are transposed back to [S, B * H, D]
// (a copy each), viewed as [S, B, E] and concatenated along E (a copy of
// them all) into the gradient of the packed projection. Where every input
// of a concatenation is written by a generated transpose that nothing else
// reads (directly or through one view), the transposes and the
// concatenation become one generated `graph.concat` launch that reads the
// transposes' inputs and writes each, permuted, into its window of the
// output.
//
// Each input's transposed shape and the concatenation's view of it are
// expressed on their common refinement ([64, 64, 32] and [64, 16, 128] as
// [64, 16, 4, 32]); every input must refine alike but for the axis's
// outermost factor, so that the output is their concatenation along it
// ([64, 16, 12, 32]). Options on the refined dims: `axis`,
// `output_shape`, and per input (flattened) `source_shapes` and `perms`
// (window axis j reads the source's axis perm[j]).
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/BackendRegistry.h"
#include "dialects/kernel/Transforms/Passes.h"
#include "dialects/kernel/Transforms/ShapeRefinement.h"

#include "mlir/IR/Builders.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_FOLDCONCATTRANSPOSESPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

/// One input of the concatenation as a permuted source: the transpose's
/// input, its shape on the refined dims, and which of them each window
/// dim reads.
struct Source {
  LaunchOp transpose;
  ViewOp view; ///< between the transpose and the concatenation, if any
  Value buffer;
  SmallVector<int64_t> shape, perm;
  /// The window's refined dims (the concatenation input's order).
  SmallVector<int64_t> window;
  /// Where the concatenation axis's run starts in `window`.
  unsigned axis = 0;
};

/// Input `read` of `concat` as a permuted source, if a generated
/// transpose alone writes it (through a view or not) and nothing else
/// reads it.
std::optional<Source> sourceOf(LaunchOp concat, Value read, int64_t axis) {
  Source s;
  s.view = read.getDefiningOp<ViewOp>();
  if (s.view && !read.hasOneUse())
    return std::nullopt;
  Value transposed = s.view ? s.view.getSource() : read;
  if (!transposed.getDefiningOp<AllocOp>())
    return std::nullopt;
  Operation *reader = s.view ? s.view.getOperation() : concat.getOperation();
  for (Operation *user : transposed.getUsers()) {
    if (user == reader || isa<AllocOp>(user))
      continue;
    auto launch = dyn_cast<LaunchOp>(user);
    if (!launch || s.transpose || launch.getKernel() != "graph.transpose" ||
        launch.getBackend() != "generated" || launch.getInputs().size() != 1 ||
        launch.getOutputs().size() != 1 ||
        launch.getOutputs()[0] != transposed ||
        llvm::is_contained(launch.getInputs(), transposed))
      return std::nullopt;
    s.transpose = launch;
  }
  if (!s.transpose || !s.transpose->isBeforeInBlock(concat) ||
      (!s.view && llvm::count(concat.getInputs(), read) != 1))
    return std::nullopt;
  s.buffer = s.transpose.getInputs()[0];
  if (writtenBetween(s.buffer, s.transpose, concat))
    return std::nullopt;
  auto perm = s.transpose.getOptions().getAs<DenseI64ArrayAttr>("perm");
  auto transposedType = cast<MemRefType>(transposed.getType());
  auto readType = cast<MemRefType>(read.getType());
  if (!perm || perm.size() != transposedType.getRank())
    return std::nullopt;
  // The transpose's output and the concatenation's input on one list of
  // dims; the window is that list (the concatenation input's order).
  std::optional<Refinement> r =
      refine(transposedType.getShape(), readType.getShape());
  if (!r || axis >= readType.getRank())
    return std::nullopt;
  s.window.assign(r->factors.begin(), r->factors.end());
  s.axis = r->second[axis].front();
  // Source dim k is the transpose's output dim a with perm[a] == k: its
  // run of factors, in order.
  size_t rank = perm.size();
  SmallVector<unsigned> sourceFactors;
  for (size_t k = 0; k < rank; ++k) {
    size_t a =
        llvm::find(perm.asArrayRef(), int64_t(k)) - perm.asArrayRef().begin();
    if (a == rank)
      return std::nullopt;
    for (unsigned f : r->first[a]) {
      sourceFactors.push_back(f);
      s.shape.push_back(r->factors[f]);
    }
  }
  for (unsigned j = 0; j < s.window.size(); ++j)
    s.perm.push_back(llvm::find(sourceFactors, j) - sourceFactors.begin());
  return s;
}

struct FoldConcatTransposesPass
    : trainc::kernel::impl::FoldConcatTransposesPassBase<
          FoldConcatTransposesPass> {
  using Base::Base;

  void runOnOperation() override {
    // The CPU target only: the CUDA target's nests were not measured.
    if (getOperation()->getAttr(kTargetAttrName))
      return;
    SmallVector<LaunchOp> concats;
    getOperation().walk([&](LaunchOp launch) {
      if (launch.getKernel() == "graph.concat" &&
          launch.getOutputs().size() == 1 && !launch.getInputs().empty())
        concats.push_back(launch);
    });
    for (LaunchOp concat : concats)
      fold(concat);
  }

  void fold(LaunchOp concat) {
    auto axisAttr = concat.getOptions().getAs<IntegerAttr>("axis");
    if (!axisAttr || axisAttr.getInt() < 0)
      return;
    SmallVector<Source> sources;
    for (Value read : concat.getInputs()) {
      std::optional<Source> s = sourceOf(concat, read, axisAttr.getInt());
      if (!s)
        return;
      sources.push_back(std::move(*s));
    }
    // Every window alike but for the axis's outermost factor.
    const Source &first = sources.front();
    SmallVector<int64_t> outputShape(first.window);
    outputShape[first.axis] = 0;
    for (const Source &s : sources) {
      if (s.window.size() != first.window.size() || s.axis != first.axis)
        return;
      for (size_t d = 0; d < s.window.size(); ++d)
        if (d != s.axis && s.window[d] != first.window[d])
          return;
      outputShape[first.axis] += s.window[first.axis];
    }
    auto outputType = cast<MemRefType>(concat.getOutputs()[0].getType());
    int64_t count = 1;
    for (int64_t extent : outputShape)
      count *= extent;
    if (count != outputType.getNumElements())
      return;

    MLIRContext *context = &getContext();
    SmallVector<int64_t> shapes, perms;
    SmallVector<Value> buffers;
    for (const Source &s : sources) {
      llvm::append_range(shapes, s.shape);
      llvm::append_range(perms, s.perm);
      buffers.push_back(s.buffer);
    }
    NamedAttrList options;
    options.set("axis",
                IntegerAttr::get(IntegerType::get(context, 64), first.axis));
    options.set("output_shape", DenseI64ArrayAttr::get(context, outputShape));
    options.set("source_shapes", DenseI64ArrayAttr::get(context, shapes));
    options.set("perms", DenseI64ArrayAttr::get(context, perms));
    OpBuilder b(concat);
    auto folded =
        LaunchOp::create(b, concat.getLoc(), buffers, concat.getOutputs(),
                         "graph.concat", options.getDictionary(context));
    folded.setBackend("generated");
    concat.erase();
    for (Source &s : sources) {
      Value transposed = s.transpose.getOutputs()[0];
      if (s.view)
        s.view.erase();
      s.transpose.erase();
      transposed.getDefiningOp()->erase();
    }
  }
};

} // namespace
