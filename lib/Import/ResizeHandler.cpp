//===- ResizeHandler.cpp - ONNX Resize as gathers and weighted sums -------===//
//
// Resize is separable: each resized axis in turn, every output position o
// reads a few input positions (taps) around its source coordinate x(o)
// with weights that depend only on the shapes. So each axis becomes, per
// tap, a graph.gather of constant indices along the axis times a constant
// weight per output position, summed over the taps:
//
//   nearest  one tap, x rounded by nearest_mode, weight 1
//   linear   floor(x) and floor(x) + 1, weights 1 - r and r (r = x - floor x)
//   cubic    floor(x) - 1 .. floor(x) + 2, Keys' weights with cubic_coeff_a
//
// Tap indices are clamped to the axis (ONNX's edge padding), or, with
// exclude_outside, taps outside get weight 0 and the others are
// renormalized. The gradient is the gathers' (scatter-adds) times the same
// weights, as PyTorch's upsampling backward computes it.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"

#include <cmath>

using namespace mlir;

namespace trainc::import {
namespace {

/// The source coordinate of output position `o` on an axis of `in` input
/// and `out` output elements, `scale` the axis's scale (out / in when the
/// model gives sizes).
std::optional<double> sourceCoordinate(llvm::StringRef mode, int64_t o,
                                       int64_t in, int64_t out, double scale) {
  if (mode == "half_pixel")
    return (o + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") {
    // The resized length before flooring (ONNX's reference and test data):
    // a downsampling scale of 0.6 on 4 elements stretches over 2.4.
    double length = in * scale;
    return length == 1 ? 0.0 : o * double(in - 1) / (length - 1);
  }
  if (mode == "asymmetric")
    return o / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (o + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    double adjustment = out / (scale * in), center = in / 2.0;
    return center * (1 - adjustment) + (o + 0.5) / scale - 0.5;
  }
  return std::nullopt;
}

/// Keys' cubic convolution weights of the taps at floor(x) - 1 .. + 2.
std::array<double, 4> cubicWeights(double r, double a) {
  auto near = [a](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };
  auto far = [a](double t) {
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  };
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

struct Taps {
  /// indices[t][o], weights[t][o]: tap t of output position o.
  std::vector<std::vector<int64_t>> indices;
  std::vector<std::vector<double>> weights;
};

/// The taps of every output position of one axis, or an error message.
std::string axisTaps(NodeImporter &n, int64_t in, int64_t out, double scale,
                     Taps &taps) {
  std::string mode = n.getString("mode", "nearest");
  std::string transform =
      n.getString("coordinate_transformation_mode", "half_pixel");
  std::string rounding = n.getString("nearest_mode", "round_prefer_floor");
  bool excludeOutside = n.getBool("exclude_outside", false);
  double a = n.getFloat("cubic_coeff_a", -0.75);
  size_t count = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  taps.indices.assign(count, std::vector<int64_t>(out));
  taps.weights.assign(count, std::vector<double>(out));
  for (int64_t o = 0; o < out; ++o) {
    std::optional<double> x = sourceCoordinate(transform, o, in, out, scale);
    if (!x)
      return "coordinate_transformation_mode '" + transform +
             "' is not supported (half_pixel, pytorch_half_pixel, "
             "align_corners, asymmetric, tf_half_pixel_for_nn, "
             "half_pixel_symmetric)";
    double base = std::floor(*x), r = *x - base;
    std::vector<int64_t> index(count);
    std::vector<double> weight(count);
    if (mode == "nearest") {
      double rounded;
      if (rounding == "round_prefer_floor")
        rounded = r == 0.5 ? base : std::round(*x);
      else if (rounding == "round_prefer_ceil")
        rounded = r == 0.5 ? base + 1 : std::round(*x);
      else if (rounding == "floor")
        rounded = base;
      else if (rounding == "ceil")
        rounded = std::ceil(*x);
      else
        return "nearest_mode '" + rounding + "' is not supported";
      index[0] = static_cast<int64_t>(rounded);
      weight[0] = 1;
    } else if (mode == "linear") {
      index = {static_cast<int64_t>(base), static_cast<int64_t>(base) + 1};
      weight = {1 - r, r};
    } else {
      std::array<double, 4> w = cubicWeights(r, a);
      for (int t = 0; t < 4; ++t) {
        index[t] = static_cast<int64_t>(base) - 1 + t;
        weight[t] = w[t];
      }
    }
    double kept = 0;
    for (size_t t = 0; t < count; ++t) {
      bool outside = index[t] < 0 || index[t] >= in;
      if (excludeOutside && outside && mode != "nearest")
        weight[t] = 0;
      kept += weight[t];
      taps.indices[t][o] = std::clamp<int64_t>(index[t], 0, in - 1);
    }
    for (size_t t = 0; t < count; ++t)
      taps.weights[t][o] =
          excludeOutside && mode != "nearest" ? weight[t] / kept : weight[t];
  }
  return "";
}

/// `x` resized along `axis` to `out` elements.
FailureOr<Value> resizeAxis(NodeImporter &n, Value x, int64_t axis, int64_t out,
                            double scale) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t in = type.getDimSize(axis);
  Taps taps;
  if (std::string error = axisTaps(n, in, out, scale, taps); !error.empty())
    return n.error(error);
  OpBuilder &b = n.builder();
  auto indexType = RankedTensorType::get({out}, b.getI64Type());
  SmallVector<int64_t> weightShape(type.getRank(), 1);
  weightShape[axis] = out;
  Value result;
  for (size_t t = 0; t < taps.indices.size(); ++t) {
    auto indices = n.create<graph::ConstantOp>(
        {}, {n.namedAttr("value", DenseElementsAttr::get(
                                      indexType, ArrayRef(taps.indices[t])))});
    if (failed(indices))
      return failure();
    auto gathered =
        n.create<graph::GatherOp>({x, *indices}, {n.i64Attr("axis", axis)});
    if (failed(gathered))
      return failure();
    Value term = *gathered;
    bool identity =
        llvm::all_of(taps.weights[t], [](double w) { return w == 1; });
    if (!identity) {
      KnownTensor weights{
          type.getElementType(),
          weightShape,
          {},
          SmallVector<double>(taps.weights[t].begin(), taps.weights[t].end())};
      auto weightValues = n.create<graph::ConstantOp>(
          {}, {n.namedAttr("value", weights.toAttr())});
      if (failed(weightValues))
        return failure();
      auto weighted = n.create<graph::MulOp>({term, *weightValues});
      if (failed(weighted))
        return failure();
      term = *weighted;
    }
    if (!result) {
      result = term;
      continue;
    }
    auto sum = n.create<graph::AddOp>({result, term});
    if (failed(sum))
      return failure();
    result = *sum;
  }
  return result;
}

LogicalResult importResize(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  if (!isa<FloatType>(type->getElementType()))
    return n.error("only float inputs are supported");
  std::string mode = n.getString("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return n.error("mode '" + mode + "' is not a Resize mode");
  if (n.getString("coordinate_transformation_mode", "half_pixel") ==
      "tf_crop_and_resize")
    return n.error("coordinate_transformation_mode 'tf_crop_and_resize' is "
                   "not supported");
  if (n.getBool("antialias", false))
    return n.error("antialias is not supported");
  if (n.getString("keep_aspect_ratio_policy", "stretch") != "stretch")
    return n.error("keep_aspect_ratio_policy '" +
                   n.getString("keep_aspect_ratio_policy", "stretch") +
                   "' is not supported (stretch)");
  int64_t rank = type->getRank();
  SmallVector<int64_t> axes = n.getInts("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  for (int64_t &axis : axes) {
    auto normalized = n.normalizeAxis(axis, rank);
    if (failed(normalized))
      return failure();
    axis = *normalized;
  }
  // Scales (input 2) or sizes (input 3), one per axis, known at import.
  SmallVector<double> scales;
  SmallVector<int64_t> sizes;
  const KnownTensor *scaleValues = n.hasInput(2) ? n.known(2) : nullptr;
  if (scaleValues && scaleValues->numElements() > 0) {
    if (!scaleValues->isFloat())
      return n.error("scales must be floats");
    scales.assign(scaleValues->floats.begin(), scaleValues->floats.end());
  } else if (n.hasInput(3)) {
    auto given = n.knownInts(3, "Resize sizes");
    if (failed(given))
      return failure();
    sizes = *given;
  } else {
    return n.error("needs scales or sizes known at import time");
  }
  size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axes.size())
    return n.error(std::string(scales.empty() ? "sizes" : "scales") + " has " +
                   std::to_string(given) + " entries for " +
                   std::to_string(axes.size()) + " axes");
  // Every output size first, so that the whole result is bounded before
  // any constant is built.
  struct AxisResize {
    int64_t axis, out;
    double scale;
  };
  SmallVector<AxisResize> resizes;
  SmallVector<int64_t> shape(type->getShape());
  for (auto [k, axis] : llvm::enumerate(axes)) {
    int64_t in = type->getDimSize(axis);
    double scale;
    int64_t out;
    if (!scales.empty()) {
      scale = scales[k];
      if (!(scale > 0) || !std::isfinite(scale) ||
          in * scale >= double(int64_t(1) << 30))
        return n.error("scale " + std::to_string(scale) + " of axis " +
                       std::to_string(axis) + " is out of range");
      out = static_cast<int64_t>(std::floor(in * scale));
    } else {
      out = sizes[k];
      if (out <= 0 || out >= (int64_t(1) << 30))
        return n.error("size " + std::to_string(out) + " of axis " +
                       std::to_string(axis) + " is out of range");
      scale = double(out) / double(in);
    }
    if (out <= 0)
      return n.error("axis " + std::to_string(axis) +
                     " would have no elements");
    if (out == in && scale == 1.0)
      continue;
    if (axis == 0)
      return n.error("resizing the batch axis is not supported");
    shape[axis] = out;
    resizes.push_back({static_cast<int64_t>(axis), out, scale});
  }
  if (std::string bad = checkShape(shape, 8); !bad.empty())
    return n.error("the resized tensor would have " + bad);
  Value result = *n.input(0);
  for (const AxisResize &resize : resizes) {
    auto resized = resizeAxis(n, result, resize.axis, resize.out, resize.scale);
    if (failed(resized))
      return failure();
    result = *resized;
  }
  n.setOutput(0, result);
  return success();
}

} // namespace

void registerResizeHandler(HandlerTable &table) {
  table["Resize"] = importResize;
}

} // namespace trainc::import
