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
/// (a bias) or from zero, one fused multiply-add per tap: from tap 0 on,
/// or from the last tap on when `lastTapFirst` (an input gradient, whose
/// tap t reads the flipped weight K-1-t: the weight's taps in row-major
/// order). That is oneDNN's order for both, which PyTorch's CPU
/// convolutions run, so the sums are theirs bit for bit.
SmallVector<Value> tapSum(OpBuilder &b, Location loc, ValueRange x,
                          int64_t taps, bool fromLast, bool lastTapFirst);

/// The dims of a domain from `first` on, as expressions.
SmallVector<AffineExpr> dimsFrom(MLIRContext *context, unsigned first,
                                 unsigned count);

/// The maps of every tap's operands over a nest, appended to `maps` and
/// `inputs`: `read(tap)` for `source`, then w[c, t] (flipped: K-1-t) for
/// `weight`, tap by tap (row-major order).
void appendTapOperands(const ConvGeometry &g, unsigned numDims, AffineExpr c,
                       Value source,
                       llvm::function_ref<AffineMap(ArrayRef<int64_t>)> read,
                       Value weight, bool flipped, SmallVector<Value> &inputs,
                       SmallVector<AffineMap> &maps, bool channelsLast = false);

/// The taps of `g`'s window.
int64_t tapCount(const ConvGeometry &g);

/// Tiles of 4 (or 2) rows and a vector of columns for a nest over (n, c,
/// rows..., columns) whose points are sums of taps.
void rowTile(KernelBuilder &kb, loop::NestOp nest);

/// The forward convolution, or the input gradient, of stride 1 and up to
/// 9 taps over the unpadded input (or output gradient), reads outside the
/// plane taken as zero (GeneratedDepthwiseBorders.cpp); failure, with
/// nothing built, where that does not apply (strides, fewer than 3
/// channels, more taps, a tap reaching past a plane's length).
LogicalResult unpaddedTaps(KernelBuilder &kb, const ConvGeometry &g,
                           Value input, Value weight, Value bias,
                           Value output);
LogicalResult unpaddedGradientTaps(KernelBuilder &kb, const ConvGeometry &g,
                                   Value gradOutput, Value weight,
                                   Value gradInput);

/// Whether a weight gradient may read its input unpadded
/// (maskedWeightSums): stride 1, and unpaddedTaps' conditions.
bool unpaddedWeightGradient(const ConvGeometry &g);

/// A weight gradient's sums over the unpadded input [N, C, D...]: sums[c,
/// t..., (o_last when `rowWidth` > 0)] += dy[n, c, o] * x[n, c, o + t*d -
/// pad] over the batch and the plane (the rows' sums, or whole ones), reads
/// outside the plane taken as zero, where unpaddedWeightGradient holds.
/// Rows of sums are `rowWidth` wide, at least the output's rows: the
/// positions past a row's end (whole vectors of sums, for registers) read
/// the next row and hold sums that are never read.
void maskedWeightSums(KernelBuilder &kb, const ConvGeometry &g,
                      Value gradOutput, Value input, Value sums,
                      int64_t rowWidth);

/// Gives a weight gradient's nest over (c, n, rows..., columns) a whole row
/// per vector tile, so that its sums' addresses (a row of sums) do not move.
void wholeRowTile(loop::NestOp nest, int64_t width);

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
