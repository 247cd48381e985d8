//===- DropDeadTaps.cpp - --trainc-drop-dead-taps -------------------------===//
//
// Convolutions over planes so small that some kernel taps only ever read
// padding (see Passes.td) become convolutions of the live taps: the
// weight is sliced to the hull [lo, hi) of its live taps per spatial dim,
// and the padding shrinks so that new tap k - lo reads what tap k read:
// padBegin' = padBegin - lo * dilation, padEnd' such that the output keeps
// its size. The weight gradient of the sliced kernel is placed back into
// zeros (graph.slice_backward), the gradient the dropped taps have.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"

#include <cstdint>

#include "mlir/IR/Builders.h"

namespace trainc::graph {
#define GEN_PASS_DEF_DROPDEADTAPSPASS
#include "dialects/graph/Transforms/Passes.h.inc"
} // namespace trainc::graph

using namespace mlir;
using namespace trainc::graph;

namespace {

/// A convolution over only its live taps.
struct LiveTaps {
  /// Per spatial dim: the hull [lo, hi) of the taps that read the input.
  SmallVector<int64_t> lo, hi;
  /// The new `pads` (begins, then ends).
  SmallVector<int64_t> pads;
};

/// The live taps of a convolution of spatial extents `input` by a kernel
/// of `kernel` taps into `output`, or nullopt if every tap is live, none
/// is, or the narrower convolution would need negative padding.
std::optional<LiveTaps> liveTaps(ArrayRef<int64_t> input,
                                 ArrayRef<int64_t> kernel,
                                 ArrayRef<int64_t> output,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> pads,
                                 ArrayRef<int64_t> dilations) {
  size_t rank = input.size();
  if (kernel.size() != rank || output.size() != rank ||
      strides.size() != rank || pads.size() != 2 * rank ||
      dilations.size() != rank)
    return std::nullopt;
  LiveTaps live;
  SmallVector<int64_t> padsEnd;
  bool narrower = false;
  // Taps times positions searched, at most: real kernels are a few taps
  // wide; a model with a window too large to search keeps its taps.
  constexpr int64_t kMaxSearch = int64_t(1) << 24;
  using Wide = __int128;
  for (size_t d = 0; d < rank; ++d) {
    if (kernel[d] <= 0 || output[d] <= 0 ||
        Wide(kernel[d]) * output[d] > kMaxSearch)
      return std::nullopt;
    int64_t lo = kernel[d], hi = 0;
    for (int64_t k = 0; k < kernel[d]; ++k)
      for (int64_t o = 0; o < output[d]; ++o) {
        // In 128 bits: strides, dilations and pads are a model's data.
        Wide position = Wide(o) * strides[d] + Wide(k) * dilations[d] - pads[d];
        if (position >= 0 && position < input[d]) {
          lo = std::min(lo, k);
          hi = std::max(hi, k + 1);
          break;
        }
      }
    if (lo >= hi)
      return std::nullopt;
    Wide padBegin = Wide(pads[d]) - Wide(lo) * dilations[d];
    // The smallest end padding that gives `output` positions again.
    Wide padEnd = Wide(output[d] - 1) * strides[d] +
                  Wide(hi - lo - 1) * dilations[d] + 1 - input[d] - padBegin;
    if (padBegin < 0 || padEnd < 0 || padBegin > INT64_MAX ||
        padEnd > INT64_MAX)
      return std::nullopt;
    narrower |= lo > 0 || hi < kernel[d];
    live.lo.push_back(lo);
    live.hi.push_back(hi);
    live.pads.push_back(static_cast<int64_t>(padBegin));
    padsEnd.push_back(static_cast<int64_t>(padEnd));
  }
  if (!narrower)
    return std::nullopt;
  llvm::append_range(live.pads, padsEnd);
  return live;
}

ArrayRef<int64_t> staticShape(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() ? type.getShape() : ArrayRef<int64_t>();
}

/// The slice of a weight of `shape` ([M, C/group, K...]) to the live taps.
struct TapSlice {
  SmallVector<int64_t> starts, ends, steps;
};
TapSlice tapSlice(ArrayRef<int64_t> shape, const LiveTaps &live) {
  TapSlice slice;
  slice.starts = {0, 0};
  slice.ends = {shape[0], shape[1]};
  llvm::append_range(slice.starts, live.lo);
  llvm::append_range(slice.ends, live.hi);
  slice.steps.assign(shape.size(), 1);
  return slice;
}

/// The live taps of a convolution given its input, weight and output
/// shapes ([N, C, D...], [M, C/group, K...], [N, M, O...]).
std::optional<LiveTaps> liveTapsOf(ArrayRef<int64_t> input,
                                   ArrayRef<int64_t> weight,
                                   ArrayRef<int64_t> output,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> pads,
                                   ArrayRef<int64_t> dilations) {
  if (input.size() < 3 || weight.size() != input.size() ||
      output.size() != input.size())
    return std::nullopt;
  return liveTaps(input.drop_front(2), weight.drop_front(2),
                  output.drop_front(2), strides, pads, dilations);
}

/// The weight sliced to its live taps. A cast weight (--amp's low copy of
/// an f32 parameter) is sliced before its cast, so that only the live taps
/// are rounded (ResNet-18's last stage at 32 px: 1 tap of 9).
Value sliceWeight(OpBuilder &b, Location loc, Value weight,
                  const LiveTaps &live) {
  if (auto cast = weight.getDefiningOp<CastOp>())
    return CastOp::create(b, loc, sliceWeight(b, loc, cast.getInput(), live),
                          cast.getTo());
  TapSlice slice = tapSlice(staticShape(weight), live);
  return SliceOp::create(b, loc, weight, slice.starts, slice.ends,
                         slice.steps);
}

/// The weight gradient of the live taps `narrow` placed back into the
/// full kernel's zeros, as `gradWeight` was used: where its only user
/// casts it (--amp: the low-precision gradient back to the f32 of its
/// parameter), the narrow gradient is cast instead, and the zeros are
/// placed in the cast's type.
void replaceWeightGradient(OpBuilder &b, Location loc, Value gradWeight,
                           Value narrow, const TapSlice &slice) {
  ArrayRef<int64_t> shape = staticShape(gradWeight);
  CastOp cast;
  if (gradWeight.hasOneUse())
    cast = dyn_cast<CastOp>(*gradWeight.getUsers().begin());
  if (cast) {
    b.setInsertionPoint(cast);
    Value narrowCast = CastOp::create(b, loc, narrow, cast.getTo());
    cast.getOutput().replaceAllUsesWith(SliceBackwardOp::create(
        b, loc, narrowCast, shape, slice.starts, slice.ends, slice.steps));
    cast.erase();
    return;
  }
  gradWeight.replaceAllUsesWith(SliceBackwardOp::create(
      b, loc, narrow, shape, slice.starts, slice.ends, slice.steps));
}

/// Rewrites one op if it has dead taps; whether it did.
bool dropDeadTaps(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  if (auto conv = dyn_cast<ConvOp>(op)) {
    std::optional<LiveTaps> live = liveTapsOf(
        staticShape(conv.getInput()), staticShape(conv.getWeight()),
        staticShape(conv.getOutput()), conv.getStrides(), conv.getPads(),
        conv.getDilations());
    if (!live)
      return false;
    conv.getWeightMutable().assign(sliceWeight(b, loc, conv.getWeight(), *live));
    conv.setPads(live->pads);
    return true;
  }
  if (auto grad = dyn_cast<ConvBackwardInputOp>(op)) {
    std::optional<LiveTaps> live = liveTapsOf(
        grad.getInputShape(), staticShape(grad.getWeight()),
        staticShape(grad.getGradOutput()), grad.getStrides(), grad.getPads(),
        grad.getDilations());
    if (!live)
      return false;
    grad.getWeightMutable().assign(sliceWeight(b, loc, grad.getWeight(), *live));
    grad.setPads(live->pads);
    return true;
  }
  auto grad = dyn_cast<ConvBackwardWeightOp>(op);
  if (!grad)
    return false;
  ArrayRef<int64_t> weight = grad.getWeightShape();
  std::optional<LiveTaps> live = liveTapsOf(
      staticShape(grad.getInput()), weight, staticShape(grad.getGradOutput()),
      grad.getStrides(), grad.getPads(), grad.getDilations());
  if (!live)
    return false;
  TapSlice slice = tapSlice(weight, *live);
  SmallVector<int64_t> narrowShape = {weight[0], weight[1]};
  for (auto [lo, hi] : llvm::zip(live->lo, live->hi))
    narrowShape.push_back(hi - lo);
  Value narrow = ConvBackwardWeightOp::create(
      b, loc, grad.getGradOutput(), grad.getInput(), narrowShape,
      grad.getStrides(), live->pads, grad.getDilations(), grad.getGroup());
  replaceWeightGradient(b, loc, grad.getGradWeight(), narrow, slice);
  grad.erase();
  return true;
}

struct DropDeadTapsPass
    : trainc::graph::impl::DropDeadTapsPassBase<DropDeadTapsPass> {
  void runOnOperation() override {
    for (Operation *op : convolutionOps(getOperation()))
      dropDeadTaps(op);
  }
};

} // namespace
