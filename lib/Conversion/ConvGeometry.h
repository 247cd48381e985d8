//===- ConvGeometry.h - what the convolution builders share ----*- C++ -*-===//
//
// The geometry of a convolution launch, read once from its attributes, for
// the general window kernels (GeneratedConvKernels.cpp) and the depthwise
// ones (GeneratedDepthwiseKernels.cpp). Internal to lib/Conversion.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_CONVERSION_CONVGEOMETRY_H
#define TRAINC_LIB_CONVERSION_CONVGEOMETRY_H

#include "lib/Conversion/KernelBuilder.h"

namespace trainc::conversion {

/// The shapes of a convolution, with channels split by group.
struct ConvGeometry {
  int64_t batch = 0, group = 1, groupChannels = 0, groupOutputs = 0;
  /// Per spatial dim.
  SmallVector<int64_t> input, kernel, output, strides, padsBegin, dilations;
  /// The padded input's extents: as far as the windows reach.
  SmallVector<int64_t> padded;

  size_t rank() const { return input.size(); }
  /// [N, G, C/G, D...], [G, M/G, C/G, K...], [N, G, M/G, O...] and the
  /// padded input [N, G, C/G, Dp...].
  SmallVector<int64_t> inputShape() const { return withSpatial(input, true); }
  SmallVector<int64_t> paddedShape() const { return withSpatial(padded, true); }
  SmallVector<int64_t> outputShape() const {
    return withSpatial(output, false);
  }
  SmallVector<int64_t> weightShape() const {
    SmallVector<int64_t> shape = {group, groupOutputs, groupChannels};
    llvm::append_range(shape, kernel);
    return shape;
  }

private:
  SmallVector<int64_t> withSpatial(ArrayRef<int64_t> spatial,
                                   bool channels) const {
    SmallVector<int64_t> shape = {batch, group,
                                  channels ? groupChannels : groupOutputs};
    llvm::append_range(shape, spatial);
    return shape;
  }
};

/// Reads the launch's window attributes for input [N, C, D...], weight
/// [M, C/group, K...] and output [N, M, O...].
FailureOr<ConvGeometry> convGeometry(KernelBuilder &kb, ArrayRef<int64_t> input,
                                     ArrayRef<int64_t> weight,
                                     ArrayRef<int64_t> output);

/// One input and one output channel per group (MobileNet's 3x3 layers).
inline bool isDepthwise(const ConvGeometry &g) {
  return g.groupChannels == 1 && g.groupOutputs == 1;
}

/// Where an input gradient's convolution reads dy: dilated by the strides
/// and placed at (K-1)*d - padBegin + shift along each spatial dim, in a
/// buffer of extents `shape` (shift moves it right when the padding is
/// wider than the window).
struct DilatedGradient {
  SmallVector<int64_t> shape, offsets, shifts;
};
DilatedGradient dilatedGradient(const ConvGeometry &g);

/// The depthwise kernels (GeneratedDepthwiseKernels.cpp).
LogicalResult buildDepthwiseConv(KernelBuilder &kb, const ConvGeometry &g);
LogicalResult buildDepthwiseConvBackwardInput(KernelBuilder &kb,
                                              const ConvGeometry &g);
LogicalResult buildDepthwiseConvBackwardWeight(KernelBuilder &kb,
                                               const ConvGeometry &g);

} // namespace trainc::conversion

#endif
