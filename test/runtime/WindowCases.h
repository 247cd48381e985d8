//===- WindowCases.h - conv, pooling and slice geometries the tests share -*- C++ -*-===//
#ifndef TRAINC_TEST_RUNTIME_WINDOWCASES_H
#define TRAINC_TEST_RUNTIME_WINDOWCASES_H

#include "RuntimeTestSupport.h"

namespace trainc::rttest {

/// ONNX / PyTorch output size of one windowed dim.
inline int64_t windowSize(int64_t input, int64_t kernel, int64_t stride,
                          int64_t padBegin, int64_t padEnd, int64_t dilation,
                          bool ceilMode) {
  int64_t room = input + padBegin + padEnd - (dilation * (kernel - 1) + 1);
  int64_t size = (ceilMode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceilMode && (size - 1) * stride >= input + padBegin)
    --size;
  return size;
}

struct ConvCase {
  DType dtype = DType::F32;
  Shape input, weight, strides, pads, dilations;
  int64_t group = 1;

  Shape output() const {
    Shape shape = {input[0], weight[0]};
    size_t rank = input.size() - 2;
    for (size_t d = 0; d < rank; ++d)
      shape.push_back(windowSize(input[d + 2], weight[d + 2], strides[d],
                                 pads[d], pads[d + rank], dilations[d], false));
    return shape;
  }
  std::vector<Attr> attributes() const {
    return {ints("strides", strides), ints("pads", pads),
            ints("dilations", dilations), integer("group", group)};
  }
  /// graph.conv (with a bias when asked), graph.conv_backward_input and
  /// graph.conv_backward_weight of this geometry on random data.
  std::vector<OpCase> ops(bool bias = true) const {
    std::vector<Attr> inputAttributes = attributes(),
                      weightAttributes = attributes();
    inputAttributes.push_back(ints("input_shape", input));
    weightAttributes.push_back(ints("weight_shape", weight));
    HostTensor x = randomTensor(dtype, input), w = randomTensor(dtype, weight);
    HostTensor gradOutput = randomTensor(dtype, output());
    OpCase forward{"graph.conv", {x, w}, {{dtype, output()}}, attributes()};
    if (bias)
      forward.inputs.push_back(randomTensor(dtype, {weight[0]}));
    return {forward,
            {"graph.conv_backward_input",
             {gradOutput, w},
             {{dtype, input}},
             inputAttributes},
            {"graph.conv_backward_weight",
             {gradOutput, x},
             {{dtype, weight}},
             weightAttributes}};
  }
  /// Every backend with a conv kernel that runs this case (dnnl: f32).
  std::vector<std::string> backends() const {
    if (dtype == DType::F32)
      return {"reference", "openblas", "dnnl"};
    return {"reference", "openblas"};
  }
  std::string describe() const {
    return "input " + formatShape(input) + " weight " + formatShape(weight) +
           " strides " + formatShape(strides) + " pads " + formatShape(pads) +
           " dilations " + formatShape(dilations) + " group " +
           std::to_string(group);
  }
};

inline std::vector<ConvCase> convCases() {
  using D = DType;
  return {
      {D::F32, {2, 3, 7, 8}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::F32, {2, 3, 9, 8}, {4, 3, 3, 2}, {2, 2}, {0, 1, 2, 0}, {1, 1}, 1},
      {D::F32, {2, 2, 9, 9}, {3, 2, 3, 3}, {1, 2}, {2, 2, 2, 1}, {2, 2}, 1},
      {D::F32, {2, 4, 6, 7}, {6, 2, 3, 3}, {1, 1}, {1, 0, 1, 2}, {1, 1}, 2},
      {D::F32, {3, 4, 8, 8}, {4, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 4},
      {D::F32, {2, 5, 6, 7}, {3, 5, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
      {D::F32, {2, 6, 6, 7}, {4, 3, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2},
      {D::F32, {2, 5, 7, 7}, {3, 5, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
      {D::F32, {2, 3, 10}, {4, 3, 3}, {2}, {1, 2}, {2}, 1},
      {D::F32,
       {1, 2, 4, 5, 6},
       {3, 2, 2, 3, 2},
       {1, 2, 1},
       {0, 1, 1, 1, 0, 0},
       {1, 1, 2},
       1},
      {D::F32, {1, 3, 40, 40}, {8, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::F32, {1, 8, 20, 20}, {8, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
      {D::F32, {1, 1, 2, 2}, {2, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::F32, {4, 1, 28, 28}, {32, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::F32,
       {4, 32, 14, 14},
       {64, 32, 3, 3},
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1},
      {D::F32, {10, 3, 9, 9}, {5, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::F64, {2, 4, 6, 7}, {6, 2, 3, 3}, {2, 1}, {1, 0, 1, 2}, {1, 2}, 2},
      // Output planes of at most 16 positions (openblas: one GEMM over all
      // images), with kernel taps that read only padding: 8 of 9 at 1x1,
      // 5 of 9 from 2x2 to 1x1, 2 of 3 dilated in 1D.
      {D::F32, {4, 8, 1, 1}, {6, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::F32, {3, 6, 2, 2}, {8, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 2},
      {D::F32, {2, 3, 2}, {4, 3, 3}, {1}, {3, 3}, {3}, 1},
      {D::F32, {5, 4, 2, 2}, {4, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::F64, {2, 4, 1, 1}, {4, 2, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
      // Depthwise (one input and one output channel per group: the
      // generated per-tap kernels): 3x3 same, 5x5 strided with asymmetric
      // padding, dilated, padding wider than the window, MobileNet's small
      // planes, 1 and 3 spatial dims; then a channel multiplier of 2 (not
      // depthwise: the general kernels).
      {D::F32, {2, 6, 7, 9}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6},
      {D::F32, {2, 5, 9, 8}, {5, 1, 5, 5}, {2, 2}, {2, 1, 2, 3}, {1, 1}, 5},
      {D::F32, {1, 4, 11, 10}, {4, 1, 3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 4},
      {D::F32, {2, 3, 3, 3}, {3, 1, 3, 3}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 3},
      {D::F32, {8, 24, 2, 2}, {24, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 24},
      {D::F32, {4, 16, 4, 4}, {16, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 16},
      {D::F32, {2, 3, 10}, {3, 1, 3}, {3}, {1, 0}, {2}, 3},
      {D::F32,
       {1, 2, 5, 4, 6},
       {2, 1, 2, 3, 3},
       {1, 2, 1},
       {0, 1, 1, 1, 0, 1},
       {1, 1, 2},
       2},
      {D::F32, {2, 3, 6, 6}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 3},
      // Stride 1, read unpadded (GeneratedDepthwiseBorders.cpp): channels
      // in tiles of 4 and a last tile of 3 (9 channels) with asymmetric
      // padding, a dilated rank-1 window padded on one side, a 1x3x3 window
      // over 3 spatial dims, rows of 16 over 12 channels (tiles of 4
      // only), and rows of 28 (MobileNet's at 224 px), whose weight
      // gradient keeps rows of 32 sums (2 vectors with AVX-512, 4 with AVX2).
      {D::F32, {1, 9, 5, 12}, {9, 1, 3, 3}, {1, 1}, {0, 2, 2, 1}, {1, 1}, 9},
      {D::F32, {2, 7, 20}, {7, 1, 3}, {1}, {2, 0}, {2}, 7},
      {D::F32,
       {1, 5, 4, 5, 9},
       {5, 1, 1, 3, 3},
       {1, 1, 1},
       {0, 1, 1, 0, 1, 1},
       {1, 1, 1},
       5},
      {D::F32, {3, 12, 6, 16}, {12, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 12},
      {D::F32, {2, 5, 6, 28}, {5, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 5},
      // Strided depthwise input gradients by phases (even planes, rows of
      // at least 4 per phase): MobileNet's 3x3/2, 5x5/2 with asymmetric
      // padding (rows of 20: tiles of 4), no padding (the gradient read
      // from one row before it), a stride along one dim only, stride 3, a
      // rank-1 convolution: rows of vectors; 4x4 planes of 16 channels
      // (here and among MobileNet's small planes above) run channels-last
      // on AVX-512.
      {D::F32, {2, 4, 16, 16}, {4, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 4},
      {D::F32, {2, 3, 12, 40}, {3, 1, 5, 5}, {2, 2}, {2, 1, 2, 3}, {1, 1}, 3},
      {D::F32, {2, 4, 8, 32}, {4, 1, 3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 4},
      {D::F32, {2, 3, 5, 32}, {3, 1, 3, 3}, {1, 2}, {1, 1, 1, 1}, {1, 1}, 3},
      {D::F32, {1, 4, 9, 24}, {4, 1, 3, 3}, {3, 3}, {1, 1, 1, 1}, {1, 1}, 4},
      {D::F32, {2, 4, 32}, {4, 1, 3}, {2}, {1, 1}, {1}, 4},
      // EfficientNet's 5x5/2 over 4x4 planes.
      {D::F32, {2, 16, 4, 4}, {16, 1, 5, 5}, {2, 2}, {2, 2, 2, 2}, {1, 1}, 16},
  };
}

struct PoolCase {
  DType dtype = DType::F32;
  Shape input, kernel, strides, pads, dilations;
  bool ceilMode = false, countIncludePad = false;

  Shape output(bool isMax) const {
    Shape shape = {input[0], input[1]};
    size_t rank = input.size() - 2;
    for (size_t d = 0; d < rank; ++d)
      shape.push_back(windowSize(input[d + 2], kernel[d], strides[d], pads[d],
                                 pads[d + rank], isMax ? dilations[d] : 1,
                                 ceilMode));
    return shape;
  }
  std::vector<Attr> attributes(bool isMax) const {
    std::vector<Attr> result = {ints("kernel_shape", kernel),
                                ints("strides", strides), ints("pads", pads),
                                flag("ceil_mode", ceilMode)};
    if (isMax)
      result.push_back(ints("dilations", dilations));
    else
      result.push_back(flag("count_include_pad", countIncludePad));
    return result;
  }
  /// Whether oneDNN computes this case exactly as the graph op: f32, no
  /// window entirely in the padding, and (average counting the padding)
  /// no window past the end padding.
  bool dnnlExact(bool isMax) const {
    if (dtype != DType::F32)
      return false;
    size_t rank = input.size() - 2;
    Shape out = output(isMax);
    for (size_t d = 0; d < rank; ++d) {
      int64_t dilation = isMax ? dilations[d] : 1;
      for (int64_t o = 0; o < out[d + 2]; ++o) {
        int64_t start = o * strides[d] - pads[d];
        bool inside = false;
        for (int64_t k = 0; k < kernel[d]; ++k)
          inside |= start + k * dilation >= 0 &&
                    start + k * dilation < input[d + 2];
        if (!inside ||
            (!isMax && countIncludePad &&
             start + kernel[d] > input[d + 2] + pads[d + rank]))
          return false;
      }
    }
    return true;
  }
  /// The backends to compare on this case.
  std::vector<std::string> backends(bool isMax) const {
    if (dnnlExact(isMax))
      return {"reference", "dnnl"};
    return {"reference"};
  }
  /// Average pooling has no dilations.
  bool undilated() const {
    for (int64_t dilation : dilations)
      if (dilation != 1)
        return false;
    return true;
  }
  std::string describe() const {
    return "input " + formatShape(input) + " kernel " + formatShape(kernel) +
           " strides " + formatShape(strides) + " pads " + formatShape(pads) +
           " dilations " + formatShape(dilations) +
           (ceilMode ? " ceil_mode" : "") +
           (countIncludePad ? " count_include_pad" : "");
  }
};

inline std::vector<PoolCase> poolCases() {
  using D = DType;
  std::vector<PoolCase> cases = {
      {D::F32, {2, 3, 6, 6}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {D::F32, {2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
      {D::F32, {2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true},
      {D::F32, {1, 2, 5, 8}, {2, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, true, true},
      {D::F32, {1, 2, 5, 5}, {2, 2}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true},
      {D::F32, {1, 2, 5, 5}, {2, 2}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
      {D::F32, {1, 2, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {2, 2}},
      {D::F32, {1, 2, 9, 9}, {3, 2}, {2, 3}, {2, 1, 1, 0}, {2, 3}, true},
      {D::F32, {2, 3, 11}, {3}, {2}, {1, 1}, {1}, true},
      {D::F32, {2, 3, 11}, {3}, {2}, {1, 0}, {1}, false, true},
      {D::F32,
       {1, 2, 4, 5, 6},
       {2, 2, 3},
       {2, 1, 2},
       {0, 1, 0, 1, 0, 1},
       {1, 1, 1}},
      {D::F32,
       {1, 2, 4, 5, 6},
       {2, 2, 3},
       {2, 1, 2},
       {0, 1, 0, 1, 0, 1},
       {1, 1, 1},
       true,
       true},
      {D::F32, {2, 3, 6, 6}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, true},
      {D::F32, {8, 32, 28, 28}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      // More taps than the generated max pooling gradient unrolls (27):
      // its nests over positions and taps.
      {D::F32, {1, 2, 9, 9}, {6, 5}, {2, 1}, {1, 1, 2, 2}, {1, 1}, true},
      // Windows entirely in the padding: -inf for max, 0/0 for avg.
      {D::F32, {1, 1, 3, 3}, {2, 2}, {1, 1}, {2, 2, 2, 2}, {1, 1}},
      {D::F32, {1, 1, 3, 3}, {2, 2}, {1, 1}, {2, 2, 2, 2}, {1, 1}, false, true},
      {D::F64, {2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true},
  };
  return cases;
}

/// A slice of a [4, 5, 6] tensor: normalized starts, ends and steps, and
/// the result's shape.
struct SliceCase {
  Shape starts, ends, steps, shape;
};

/// Positive, negative, strided and empty ranges.
inline std::vector<SliceCase> sliceCases() {
  return {
      {{0, 0, 0}, {4, 5, 6}, {1, 1, 1}, {4, 5, 6}},
      {{1, 0, 2}, {3, 5, 6}, {1, 2, 3}, {2, 3, 2}},
      {{3, 4, 5}, {-1, -1, -1}, {-1, -1, -1}, {4, 5, 6}},
      {{3, 4, 5}, {0, 1, -1}, {-2, -2, -4}, {2, 2, 2}},
      {{2, 0, 0}, {2, 5, 6}, {1, 1, 1}, {0, 5, 6}},
      {{0, 1, 0}, {4, 2, 6}, {3, 1, 5}, {2, 1, 2}},
      {{1, 2, 1}, {4, 5, 6}, {1, 1, 1}, {3, 3, 5}},
  };
}

} // namespace trainc::rttest

#endif // TRAINC_TEST_RUNTIME_WINDOWCASES_H
