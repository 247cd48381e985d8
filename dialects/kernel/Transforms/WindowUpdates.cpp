//===- WindowUpdates.cpp - --trainc-window-updates ------------------------===//
//
// --trainc-drop-dead-taps gives a convolution weight whose taps read only
// padding the gradient of its live taps placed into zeros
// (graph.slice_backward), and the optimizer update reads that full-size
// gradient: ResNet-18 on 32x32 images writes 9.4 MB of zeros for each of
// its last 3x3 weights, and the buffer was the peak of the smallest arena
// --memory-budget could reach. Here an update of the generated backend
// whose gradient is such a zero-padded window reads the window itself: the
// slice_backward launch and its buffer go, and the update's option
// `gradient_starts` says where the window sits in the parameter (its
// kernel pads the window a chunk of rows at a time into a small scratch
// buffer that its update reads while cached; GeneratedOptimizerKernels.cpp).
// The same values, bit for bit. In data-parallel training the gradient's
// all-reduce averages the window alone (zeros average to zero).
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/Transforms/LaunchGraph.h"
#include "dialects/kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace trainc::kernel {
#define GEN_PASS_DEF_WINDOWUPDATESPASS
#include "dialects/kernel/Transforms/Passes.h.inc"
} // namespace trainc::kernel

using namespace mlir;
using namespace trainc::kernel;

namespace {

/// The gradient operand of every optimizer update (param, grad, ...).
constexpr unsigned kGradientInput = 1;
/// The most window elements per row of the parameter an update reads.
constexpr int64_t kMaxWindowTaps = 16;

/// The zero-padding slice_backward, with unit steps, that alone writes
/// `gradient` for `reader`, or null.
LaunchOp paddingOf(Value gradient, LaunchOp reader) {
  LaunchOp writer = soleWriter(gradient, reader);
  if (!writer || writer.getKernel() != "graph.slice_backward" ||
      writer.getBackend() != "generated" || writer.getInputs().size() != 1)
    return {};
  auto steps = writer.getOptions().getAs<DenseI64ArrayAttr>("steps");
  auto starts = writer.getOptions().getAs<DenseI64ArrayAttr>("starts");
  auto window = cast<MemRefType>(writer.getInputs()[0].getType());
  auto full = cast<MemRefType>(gradient.getType());
  if (!steps || !starts || window.getElementType() != full.getElementType() ||
      window.getRank() != full.getRank() || starts.size() != full.getRank() ||
      steps.size() != full.getRank() || window.getNumElements() == 0 ||
      llvm::any_of(steps.asArrayRef(), [](int64_t step) { return step != 1; }))
    return {};
  // The kernel reads the window's part of each row of the parameter (the
  // dims after the leading ones the window covers whole) once per element
  // of that part and selects among them per element: a few live taps of a
  // convolution weight, not a block of rows.
  int64_t perRow = 1;
  bool leading = true;
  for (auto [start, extent, whole] :
       llvm::zip(starts.asArrayRef(), window.getShape(), full.getShape())) {
    if (start < 0 || start + extent > whole)
      return {};
    leading = leading && start == 0 && extent == whole;
    if (!leading)
      perRow *= extent;
  }
  return perRow <= kMaxWindowTaps ? writer : LaunchOp();
}

struct WindowUpdatesPass
    : trainc::kernel::impl::WindowUpdatesPassBase<WindowUpdatesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<LaunchOp> updates;
    getOperation().walk([&](LaunchOp launch) {
      if (isOptimizerUpdate(launch) && launch.getBackend() == "generated" &&
          !launch.getOptions().get("gradient_starts"))
        updates.push_back(launch);
    });
    for (LaunchOp update : updates)
      fold(update);
  }

  /// Reads the window instead of its padding, directly or (data-parallel
  /// training) through the gradient's all-reduce, which then averages the
  /// window alone: the average of zeros is zero.
  void fold(LaunchOp update) {
    Value gradient = update.getInputs()[kGradientInput];
    LaunchOp allReduce = soleWriter(gradient, update);
    if (allReduce && allReduce.getKernel() == "graph.all_reduce" &&
        allReduce.getInputs().size() == 1) {
      LaunchOp padding = paddingOf(allReduce.getInputs()[0], allReduce);
      if (!padding)
        return;
      Value window = padding.getInputs()[0];
      OpBuilder b(allReduce);
      Value averaged =
          AllocOp::create(b, allReduce.getLoc(),
                          cast<MemRefType>(window.getType()), IntegerAttr());
      allReduce.getInputsMutable()[0].assign(window);
      allReduce.getOutputsMutable()[0].assign(averaged);
      update.getInputsMutable()[kGradientInput].assign(averaged);
      setStarts(update, padding);
      erase(padding);
      gradient.getDefiningOp()->erase();
      return;
    }
    LaunchOp padding = paddingOf(gradient, update);
    if (!padding)
      return;
    update.getInputsMutable()[kGradientInput].assign(padding.getInputs()[0]);
    setStarts(update, padding);
    erase(padding);
  }

  void setStarts(LaunchOp update, LaunchOp padding) {
    NamedAttrList options(update.getOptions());
    options.set("gradient_starts", padding.getOptions().get("starts"));
    update.setOptionsAttr(options.getDictionary(&getContext()));
  }

  /// Erases the padding launch and its buffer.
  static void erase(LaunchOp padding) {
    Operation *full = padding.getOutputs()[0].getDefiningOp();
    padding.erase();
    full->erase();
  }
};

} // namespace
