//===- DepthwiseNests.h - what the depthwise builders share -----*- C++ -*-===//
//
// Helpers of the depthwise convolution kernels (GeneratedDepthwiseKernels.cpp)
// that the strided input gradients by phases (GeneratedDepthwisePhases.cpp)
// use as well. Internal to lib/Conversion.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_CONVERSION_DEPTHWISENESTS_H
#define TRAINC_LIB_CONVERSION_DEPTHWISENESTS_H

#include "lib/Conversion/ConvGeometry.h"

namespace trainc::conversion::depthwise {

/// [N, C, spatial...] for a depthwise convolution's C = G channels.
SmallVector<int64_t> channelsShape(const ConvGeometry &g,
                                   ArrayRef<int64_t> spatial);

/// The body sum_t x[t] * x[taps + t], from x[2 * taps] when `fromLast`
/// (a bias) or from zero.
SmallVector<Value> tapSum(OpBuilder &b, Location loc, ValueRange x,
                          int64_t taps, bool fromLast);

/// Gives `nest`, over (c, ...) of buffers stored channels-last, one vector
/// of channels per tile, the other dimensions looping inside it.
void vectorOfChannels(KernelBuilder &kb, loop::NestOp nest);

/// Gives `nest`, over (n, c, ...) of phases and positions, the vector
/// tile `tile` (phases along positions), split across threads along the
/// batch or the channels only (the dims its tiles leave whole).
void vectorizePhases(loop::NestOp nest, ArrayRef<int64_t> tile);

/// A nest that copies each element of `source` to `target` at `write` (a
/// permutation of `source`'s dims, with offsets and steps).
void copyTo(KernelBuilder &kb, Value source, Value target, AffineMap write);

/// `source` [N, C, D...] in a new zeroed scratch [N, extents..., C], at
/// position d * step + offset of each spatial dim.
Value channelsLastCopy(KernelBuilder &kb, const ConvGeometry &g, Value source,
                       ArrayRef<int64_t> extents, ArrayRef<int64_t> offsets,
                       ArrayRef<int64_t> steps);

/// output[n, c, p...] = result[n, p..., c].
void copyFromChannelsLast(KernelBuilder &kb, const ConvGeometry &g,
                          Value result, Value output);

/// A strided input gradient by phases (GeneratedDepthwisePhases.cpp),
/// channels-last or not; failure, with nothing built, where the geometry
/// does not split into phases (the caller then builds the dilated form).
LogicalResult buildPhasedInputGradient(KernelBuilder &kb, const ConvGeometry &g,
                                       Value gradOutput, Value weight,
                                       bool channelsLast);

} // namespace trainc::conversion::depthwise

#endif // TRAINC_LIB_CONVERSION_DEPTHWISENESTS_H
