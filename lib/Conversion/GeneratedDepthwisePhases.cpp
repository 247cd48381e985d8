//===- GeneratedDepthwisePhases.cpp - strided depthwise input gradients ---===//
//
// A depthwise convolution's input gradient with stride s, by phases.
// Input position h = s*i + r (phase r) receives only the taps t with
// t = r + p (mod s), from dy[i + (r + p - t) / s]: about K/s of the K
// taps. Instead of every tap over the stride-dilated gradient (s^rank
// times the positions, most of them zero), each phase sums its own taps
// over the undilated gradient padded with zeros, dyp, and weights padded
// with zeros where a phase has fewer taps than another:
//
//   dx[n, c, s*i + r] = sum_q dyp[n, c, i + q] * wp[c, r + a - s*q]
//
// The nest runs over (n, c, r0, ..., i0, ..., r_last, i_last), the phases
// of the outer dims outside their positions (a phase's taps stay in
// registers over its rows). A tile holds every phase of a vector of
// positions along the last dim and is written to dx (seen as [N, C, E0,
// s0, ..., E_last, s_last]) transposed, so the phases interleave in
// registers and dx is stored contiguously. Channels-last planes (rows
// shorter than half a vector) run a vector of channels at a time instead.
// The taps a position sums are the dilated form's nonzero ones in the same
// order, plus products of zero weights: the same sums for finite
// gradients.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/DepthwiseNests.h"

#include <limits>

namespace trainc::conversion::depthwise {
namespace {

/// One spatial dim of a phased input gradient.
struct GradientPhases {
  int64_t positions; // E = H / s, positions per phase
  int64_t taps;      // taps per phase (q = 0 .. taps-1)
  int64_t lead;      // zeros before dy in dyp
  int64_t padded;    // dyp's extent
  int64_t weightLead;
  int64_t weightExtent;
  int64_t first; // the padded weight index of (r = 0, q = 0)
};

std::optional<GradientPhases> gradientPhases(const ConvGeometry &g,
                                             unsigned k) {
  int64_t s = g.strides[k], p = g.padsBegin[k], kernel = g.kernel[k];
  if (g.dilations[k] != 1 || g.input[k] % s != 0)
    return std::nullopt;
  // e = (r + p - t) / s, the offset of tap t in phase r.
  int64_t low = std::numeric_limits<int64_t>::max();
  int64_t high = std::numeric_limits<int64_t>::min();
  for (int64_t r = 0; r < s; ++r)
    for (int64_t t = 0; t < kernel; ++t)
      if ((r + p - t) % s == 0) {
        low = std::min(low, (r + p - t) / s);
        high = std::max(high, (r + p - t) / s);
      }
  if (low > high || low > 0) // no tap, or dy's first rows never read
    return std::nullopt;
  GradientPhases phases;
  phases.positions = g.input[k] / s;
  phases.taps = high - low + 1;
  phases.lead = -low;
  phases.padded =
      std::max(phases.positions + phases.taps - 1, g.output[k] + phases.lead);
  // Tap q of phase r is t = r + p + s * (lead - q).
  int64_t lowest = p + s * (phases.lead - phases.taps + 1);
  int64_t highest = s - 1 + p + s * phases.lead;
  phases.weightLead = std::max<int64_t>(0, -lowest);
  phases.weightExtent = std::max(kernel, highest + 1) + phases.weightLead;
  phases.first = p + s * phases.lead + phases.weightLead;
  return phases;
}

/// dx by phases (above), or failure (nothing built) where the geometry
/// does not split into phases of whole vectors.
/// Every spatial dim's phases, if the convolution is strided and each dim
/// splits into phases.
std::optional<SmallVector<GradientPhases>>
inputGradientPhases(const ConvGeometry &g) {
  if (llvm::all_of(g.strides, [](int64_t s) { return s == 1; }))
    return std::nullopt;
  SmallVector<GradientPhases> phases;
  for (unsigned k = 0; k < g.rank(); ++k) {
    std::optional<GradientPhases> dim = gradientPhases(g, k);
    if (!dim)
      return std::nullopt;
    phases.push_back(*dim);
  }
  return phases;
}

/// The nest over `domain` that writes `output` (dx's phased view, [N, C,
/// E0, s0, ...], or channels-last [N, E0, s0, ..., C]) with every tap q
/// of each phase: dyp at (n, i + q...) times the padded weight wp at
/// (r + first - s*q...), the channel first or, with `channelsLast`, last
/// in each. `position(k)` and `phase(k)` are the domain's i and r of
/// spatial dim k.
loop::NestOp phaseTapNest(KernelBuilder &kb, const ConvGeometry &g,
                          ArrayRef<GradientPhases> phases,
                          ArrayRef<int64_t> domain, AffineExpr batch,
                          AffineExpr channel,
                          llvm::function_ref<AffineExpr(unsigned)> position,
                          llvm::function_ref<AffineExpr(unsigned)> phase,
                          bool channelsLast, Value dyp, Value wp,
                          Value output) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank(), n = domain.size();
  // The channel, first or last, around `dims`.
  auto withChannel = [&](SmallVector<AffineExpr> dims, bool afterBatch) {
    dims.insert(channelsLast ? dims.end() : dims.begin() + afterBatch, channel);
    return mapOf(context, n, dims);
  };
  SmallVector<int64_t> tapExtents;
  for (const GradientPhases &dim : phases)
    tapExtents.push_back(dim.taps);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps, weightMaps;
  forEachTap(tapExtents, [&](ArrayRef<int64_t> q) {
    SmallVector<AffineExpr> read = {batch}, tap;
    for (unsigned k = 0; k < rank; ++k) {
      read.push_back(position(k) + q[k]);
      tap.push_back(phase(k) + phases[k].first - g.strides[k] * q[k]);
    }
    inputs.push_back(dyp);
    maps.push_back(withChannel(read, /*afterBatch=*/true));
    weightMaps.push_back(withChannel(tap, /*afterBatch=*/false));
  });
  int64_t taps = weightMaps.size();
  inputs.append(taps, wp);
  llvm::append_range(maps, weightMaps);
  SmallVector<AffineExpr> write = {batch};
  for (unsigned k = 0; k < rank; ++k)
    write.append({position(k), phase(k)});
  maps.push_back(withChannel(write, /*afterBatch=*/true));
  return kb.nest(domain, SmallVector<bool>(n, false), inputs, {output}, maps,
                 [&](OpBuilder &b, Location loc, ValueRange x) {
                   return tapSum(b, loc, x, taps, /*fromLast=*/false,
                                 /*lastTapFirst=*/true);
                 });
}

LogicalResult phasedInputGradient(KernelBuilder &kb, const ConvGeometry &g,
                                  ArrayRef<GradientPhases> phases,
                                  Value gradOutput, Value weight) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  // A tile: every phase of `lanes` positions along the last dim, whole.
  int64_t last = phases.back().positions, lanes = last;
  while (lanes > kb.vectorLanes || last % lanes != 0)
    lanes /= 2;
  if (lanes < loop::kMinVectorExtent)
    return failure();

  // dx seen as [N, C, E0, s0, ...]; the domain swaps the last pair.
  SmallVector<int64_t> view = {g.batch, g.group}, domain = {g.batch, g.group};
  SmallVector<int64_t> dypShape = {g.batch, g.group}, dypOffsets = {0, 0};
  SmallVector<int64_t> wpShape = {g.group}, wpOffsets = {0};
  auto phaseDim = [&](unsigned k) { return 2 + k + (k + 1 == rank) * k; };
  auto positionDim = [&](unsigned k) {
    return k + 1 == rank ? 2 * rank + 1 : 1 + rank + k;
  };
  domain.resize(2 + 2 * rank);
  for (auto [k, dim] : llvm::enumerate(phases)) {
    view.append({dim.positions, g.strides[k]});
    domain[phaseDim(k)] = g.strides[k];
    domain[positionDim(k)] = dim.positions;
    dypShape.push_back(dim.padded);
    dypOffsets.push_back(dim.lead);
    wpShape.push_back(dim.weightExtent);
    wpOffsets.push_back(dim.weightLead);
  }
  Value gradInput = kb.output(0, view);
  Value dyp = placedCopy(kb, gradOutput, dypShape, dypOffsets);
  // The padded weight is private scratch: LLVM may keep a channel's taps
  // in registers over the rows of a phase (the domain's i0 .. i_last-1).
  Value wp = kb.privateScratch(
      wpShape, cast<MemRefType>(weight.getType()).getElementType());
  zeroFill(kb, wp);
  copyTo(kb, weight, wp, offsetIdentity(context, wpOffsets));

  unsigned n = domain.size();
  loop::NestOp nest = phaseTapNest(
      kb, g, phases, domain, affineDim(context, 0), affineDim(context, 1),
      [&](unsigned k) { return affineDim(context, positionDim(k)); },
      [&](unsigned k) { return affineDim(context, phaseDim(k)); },
      /*channelsLast=*/false, dyp, wp, gradInput);
  SmallVector<int64_t> tile(n, 1);
  tile[positionDim(rank - 1)] = lanes;
  tile[phaseDim(rank - 1)] = g.strides[rank - 1];
  vectorizePhases(nest, tile);
  return success();
}

/// dx by phases, channels-last (planes of rows shorter than half a
/// vector): over (c, r..., n, i...), a vector of channels at a time, each
/// phase's taps (weights padded with zeros, [K'..., C], private) staying in
/// registers over the batch and the phase's positions; the result
/// [N, H..., C] is copied back to dx [N, C, H...].
void channelsLastPhases(KernelBuilder &kb, const ConvGeometry &g,
                        ArrayRef<GradientPhases> phases, Value gradOutput,
                        Value weight) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  SmallVector<int64_t> extents, leads, ones(rank, 1), wpShape, wpOffsets;
  SmallVector<int64_t> domain = {g.group};
  for (const GradientPhases &dim : phases) {
    extents.push_back(dim.padded);
    leads.push_back(dim.lead);
    wpShape.push_back(dim.weightExtent);
    wpOffsets.push_back(dim.weightLead);
  }
  llvm::append_range(domain, g.strides);
  domain.push_back(g.batch);
  for (const GradientPhases &dim : phases)
    domain.push_back(dim.positions);
  Value dyp = channelsLastCopy(kb, g, gradOutput, extents, leads, ones);
  wpShape.push_back(g.group);
  wpOffsets.push_back(0);
  Value wp = kb.privateScratch(
      wpShape, cast<MemRefType>(weight.getType()).getElementType());
  zeroFill(kb, wp);
  // wp[t + lead..., c] = w[c, t...].
  SmallVector<AffineExpr> placed;
  for (unsigned k = 0; k < rank; ++k)
    placed.push_back(affineDim(context, 1 + k) + wpOffsets[k]);
  placed.push_back(affineDim(context, 0));
  copyTo(kb, weight, wp, mapOf(context, rank + 1, placed));

  // The result [N, H..., C], written as [N, E0, s0, ..., C] (h = s*i + r).
  Value gradInput = kb.output(0, channelsShape(g, g.input));
  SmallVector<int64_t> shape = {g.batch}, phased = {g.batch};
  llvm::append_range(shape, g.input);
  shape.push_back(g.group);
  for (auto [k, dim] : llvm::enumerate(phases))
    phased.append({dim.positions, g.strides[k]});
  phased.push_back(g.group);
  Value result =
      kb.scratch(shape, cast<MemRefType>(gradInput.getType()).getElementType());
  vectorOfChannels(
      kb, phaseTapNest(
              kb, g, phases, domain, affineDim(context, 1 + rank),
              affineDim(context, 0),
              [&](unsigned k) { return affineDim(context, 2 + rank + k); },
              [&](unsigned k) { return affineDim(context, 1 + k); },
              /*channelsLast=*/true, dyp, wp, kb.scratchView(result, phased)));
  copyFromChannelsLast(kb, g, result, gradInput);
}

} // namespace

LogicalResult buildPhasedInputGradient(KernelBuilder &kb, const ConvGeometry &g,
                                       Value gradOutput, Value weight,
                                       bool channelsLast) {
  std::optional<SmallVector<GradientPhases>> phases = inputGradientPhases(g);
  if (!phases)
    return failure();
  if (!channelsLast)
    return phasedInputGradient(kb, g, *phases, gradOutput, weight);
  channelsLastPhases(kb, g, *phases, gradOutput, weight);
  return success();
}

} // namespace trainc::conversion::depthwise
