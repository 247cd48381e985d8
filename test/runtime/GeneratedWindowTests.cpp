//===- GeneratedWindowTests.cpp - generated conv and slices vs the interpreter //
//
// The loop nests with affine indexing maps: convolutions and both their
// gradients on every geometry the backend tests share (groups, strides,
// dilations, asymmetric padding, padding wider than the window, taps that
// only read padding, 1 to 3 spatial dims), and slices, their gradients and
// concatenations, which must move elements exactly.
//
//===----------------------------------------------------------------------===//
#include "GeneratedKernelHarness.h"
#include "WindowCases.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace trainc;
using namespace trainc::rttest;

namespace {

/// f32 products summed in f32 against the interpreter's doubles: the
/// round-off grows like the square root of the number of terms.
double sumTolerance(double terms) {
  return 2e-6 * std::max(1.0, std::sqrt(terms / 16));
}

double product(const Shape &shape, size_t from) {
  double result = 1.0;
  for (size_t d = from; d < shape.size(); ++d)
    result *= static_cast<double>(shape[d]);
  return result;
}

} // namespace

TEST_CASE("generated conv and its gradients match the interpreter",
          "[generated][conv]") {
  for (const ConvCase &c : convCases()) {
    if (c.dtype != DType::F32)
      continue;
    INFO(c.describe());
    std::vector<OpCase> ops = c.ops(/*bias=*/true);
    double taps = product(c.weight, 1);
    checkGenerated(ops[0], sumTolerance(taps), 1e-6);
    checkGenerated(ops[1], sumTolerance(taps / c.weight[1] * c.weight[0]),
                   1e-6);
    Shape output = c.output();
    checkGenerated(ops[2], sumTolerance(output[0] * product(output, 2)),
                   1e-6);
    // Without a bias.
    checkGenerated(c.ops(/*bias=*/false)[0], sumTolerance(taps), 1e-6);
  }
}

TEST_CASE("generated conv_matrix moves taps exactly and its gradient sums "
          "them",
          "[generated][conv]") {
  // 3x3 taps with padding 1 over 2x2 planes (ResNet-18's layer3 at 32 px,
  // with 40 channels: no multiple of a vector), stride 2 to one position,
  // 1-d and 3-d.
  struct MatrixCase {
    Shape weight, input, output, strides, pads;
  };
  for (const MatrixCase &m :
       {MatrixCase{{6, 40, 3, 3}, {2, 2}, {2, 2}, {1, 1}, {1, 1}},
        MatrixCase{{4, 3, 3, 3}, {2, 2}, {1, 1}, {2, 2}, {1, 1}},
        MatrixCase{{3, 2, 5}, {3}, {2}, {2}, {2}},
        MatrixCase{
            {2, 3, 3, 3, 3}, {2, 2, 1}, {2, 2, 1}, {1, 1, 1}, {1, 1, 1}}}) {
    INFO("weight " << formatShape(m.weight) << " over "
                   << formatShape(m.input));
    double outputs = product(m.output, 0), inputs = product(m.input, 0);
    Shape matrix = {m.weight[0] * static_cast<int64_t>(outputs),
                    m.weight[1] * static_cast<int64_t>(inputs)};
    std::vector<Attr> attributes = {
        ints("input_spatial", m.input), ints("output_spatial", m.output),
        ints("strides", m.strides), ints("pads", m.pads)};
    checkGeneratedBits({"graph.conv_matrix",
                        {randomTensor(DType::F32, m.weight)},
                        {{DType::F32, matrix}},
                        attributes});
    attributes.push_back(ints("weight_shape", m.weight));
    checkGenerated({"graph.conv_matrix_backward",
                    {randomTensor(DType::F32, matrix)},
                    {{DType::F32, m.weight}},
                    attributes},
                   sumTolerance(outputs), 1e-6);
  }
}

TEST_CASE("generated slice and slice_backward move elements exactly",
          "[generated][slice]") {
  for (DType dtype : {DType::F32, DType::I64, DType::I1}) {
    for (const SliceCase &s : sliceCases()) {
      INFO("starts " << formatShape(s.starts) << " steps "
                     << formatShape(s.steps));
      HostTensor x = dtype == DType::F32
                         ? randomTensor(dtype, {4, 5, 6})
                         : randomIntegers(dtype, {4, 5, 6}, 0, 1);
      std::vector<Attr> attributes = {ints("starts", s.starts),
                                      ints("ends", s.ends),
                                      ints("steps", s.steps)};
      checkGeneratedBits({"graph.slice", {x}, {{dtype, s.shape}}, attributes});
      if (dtype != DType::F32) // gradients are floats
        continue;
      attributes.push_back(ints("input_shape", {4, 5, 6}));
      checkGeneratedBits({"graph.slice_backward",
                          {randomTensor(dtype, s.shape)},
                          {{dtype, {4, 5, 6}}},
                          attributes});
    }
  }
  // A wide slice along the last axis (vectorized, rows split over threads)
  // and the attention heads' split of a [16, 64, 384] projection.
  HostTensor wide = randomTensor(DType::F32, {64, 300});
  checkGeneratedBits({"graph.slice",
                      {wide},
                      {{DType::F32, {64, 290}}},
                      {ints("starts", {0, 7}), ints("ends", {64, 297}),
                       ints("steps", {1, 1})}});
  HostTensor qkv = randomTensor(DType::F32, {16, 64, 384});
  checkGeneratedBits({"graph.slice",
                      {qkv},
                      {{DType::F32, {16, 64, 128}}},
                      {ints("starts", {0, 0, 128}), ints("ends", {16, 64, 256}),
                       ints("steps", {1, 1, 1})}});
  checkGeneratedBits({"graph.slice_backward",
                      {randomTensor(DType::F32, {16, 64, 128})},
                      {{DType::F32, {16, 64, 384}}},
                      {ints("input_shape", {16, 64, 384}),
                       ints("starts", {0, 0, 256}), ints("ends", {16, 64, 384}),
                       ints("steps", {1, 1, 1})}});
  // One position of each trailing dim, leading dims whole (a convolution
  // weight's live centre tap, a corner tap, one column): written in one
  // pass as [rows, taps].
  struct TapCase {
    Shape full, starts, ends;
  };
  for (const TapCase &t : {TapCase{{8, 4, 3, 3}, {0, 0, 1, 1}, {8, 4, 2, 2}},
                           TapCase{{8, 4, 3, 3}, {0, 0, 2, 0}, {8, 4, 3, 1}},
                           TapCase{{6, 5}, {0, 3}, {6, 4}}}) {
    INFO("tap gradient into " << formatShape(t.full) << " from "
                              << formatShape(t.starts));
    Shape part;
    for (size_t d = 0; d < t.full.size(); ++d)
      part.push_back(t.ends[d] - t.starts[d]);
    checkGeneratedBits(
        {"graph.slice_backward",
         {randomTensor(DType::F32, part)},
         {{DType::F32, t.full}},
         {ints("input_shape", t.full), ints("starts", t.starts),
          ints("ends", t.ends), ints("steps", Shape(t.full.size(), 1))}});
  }
}

TEST_CASE("a generated slice with perm writes the transposed window",
          "[generated][slice]") {
  // --trainc-fold-slice-transposes' launch for the Transformer's keys: the
  // window [128:256] of a [64, 16, 384] projection, viewed as 4 heads of
  // 32 and transposed to [64, 64, 32] (head-major), read on the refined
  // source [64, 16, 12, 32].
  HostTensor y = randomTensor(DType::F32, {64, 16, 384});
  GeneratedRun run = runGenerated(
      {"graph.slice",
       {y},
       {{DType::F32, {64, 64, 32}}},
       {ints("source_shape", {64, 16, 12, 32}), ints("starts", {0, 0, 4, 0}),
        ints("ends", {64, 16, 8, 32}), ints("steps", {1, 1, 1, 1}),
        ints("perm", {1, 2, 0, 3})}});
  REQUIRE(run.outputs.size() == 1);
  const std::vector<double> &out = run.outputs[0].data;
  REQUIRE(out.size() == 64 * 64 * 32);
  size_t wrong = 0;
  for (int64_t bh = 0; bh < 64; ++bh)
    for (int64_t s = 0; s < 64; ++s)
      for (int64_t d = 0; d < 32; ++d) {
        int64_t b = bh / 4, h = bh % 4;
        double expected = y.data[(s * 16 + b) * 384 + 128 + h * 32 + d];
        wrong += out[(bh * 64 + s) * 32 + d] != expected;
      }
  CHECK(wrong == 0);
}

TEST_CASE("a generated concat with perms writes each input transposed",
          "[generated][slice]") {
  // --trainc-fold-concat-transposes' launch for the Transformer's gradient
  // of its packed projection: three [64, 64, 32] head gradients (B * H,
  // S, D), each transposed to [S, B * H, D] and concatenated along E of
  // [64, 16, 384] (S, B, 3E), on the refined output [64, 16, 12, 32].
  std::vector<HostTensor> heads;
  for (int i = 0; i < 3; ++i)
    heads.push_back(randomTensor(DType::F32, {64, 64, 32}));
  GeneratedRun run = runGenerated(
      {"graph.concat",
       heads,
       {{DType::F32, {64, 16, 384}}},
       {integer("axis", 2), ints("output_shape", {64, 16, 12, 32}),
        ints("source_shapes", {16, 4, 64, 32, 16, 4, 64, 32, 16, 4, 64, 32}),
        ints("perms", {2, 0, 1, 3, 2, 0, 1, 3, 2, 0, 1, 3})}});
  REQUIRE(run.outputs.size() == 1);
  const std::vector<double> &out = run.outputs[0].data;
  REQUIRE(out.size() == 64 * 16 * 384);
  size_t wrong = 0;
  for (int64_t s = 0; s < 64; ++s)
    for (int64_t b = 0; b < 16; ++b)
      for (int64_t e = 0; e < 384; ++e) {
        int64_t part = e / 128, h = e % 128 / 32, d = e % 32;
        double expected = heads[part].data[((b * 4 + h) * 64 + s) * 32 + d];
        wrong += out[(s * 16 + b) * 384 + e] != expected;
      }
  CHECK(wrong == 0);
}

TEST_CASE("generated concat moves elements exactly", "[generated][slice]") {
  for (DType dtype : {DType::F32, DType::I64})
    for (int64_t axis = 0; axis < 3; ++axis) {
      Shape a = {2, 3, 40}, b = a, c = a;
      b[axis] = 1;
      c[axis] = 5;
      Shape shape = a;
      shape[axis] = a[axis] + 1 + 5;
      auto make = [&](const Shape &s) {
        return dtype == DType::F32 ? randomTensor(dtype, s)
                                   : randomIntegers(dtype, s, -100, 100);
      };
      checkGeneratedBits({"graph.concat",
                          {make(a), make(b), make(c)},
                          {{dtype, shape}},
                          {integer("axis", axis)}});
    }
  // An empty part.
  checkGeneratedBits({"graph.concat",
                      {randomTensor(DType::F32, {3, 7}),
                       randomTensor(DType::F32, {3, 0})},
                      {{DType::F32, {3, 7}}},
                      {integer("axis", 1)}});
}

TEST_CASE("generated max and average pooling and their gradients match the "
          "interpreter",
          "[generated][pool]") {
  for (const PoolCase &c : poolCases()) {
    if (c.dtype != DType::F32)
      continue;
    INFO(c.describe());
    double taps = product(c.kernel, 0);
    Shape maxOutput = c.output(true);
    // Few distinct values too: many ties, resolved by window order.
    for (HostTensor x : {randomTensor(c.dtype, c.input),
                         randomIntegers(c.dtype, c.input, -1, 1)}) {
      checkGenerated({"graph.max_pool", {x}, {{c.dtype, maxOutput}},
                      c.attributes(true)},
                     0.0);
      checkGenerated({"graph.max_pool_backward",
                      {randomTensor(c.dtype, maxOutput), x},
                      {{c.dtype, c.input}},
                      c.attributes(true)},
                     sumTolerance(taps));
    }
    if (!c.undilated())
      continue;
    Shape avgOutput = c.output(false);
    checkGenerated({"graph.avg_pool",
                    {randomTensor(c.dtype, c.input)},
                    {{c.dtype, avgOutput}},
                    c.attributes(false)},
                   sumTolerance(taps), 1e-7);
    std::vector<Attr> attributes = c.attributes(false);
    attributes.push_back(ints("input_shape", c.input));
    checkGenerated({"graph.avg_pool_backward",
                    {randomTensor(c.dtype, avgOutput)},
                    {{c.dtype, c.input}},
                    attributes},
                   sumTolerance(taps), 1e-7);
  }
}

TEST_CASE("generated depthwise convolutions run bf16 and f16 exactly",
          "[generated][conv]") {
  // --amp's low floats: small integers, whose products and sums are exact
  // in f32, so that the one rounding of each output (the weight
  // gradient's sums accumulate in an f32 scratch) is the interpreter's.
  for (const ConvCase &c : convCases()) {
    if (c.dtype != DType::F32 || c.weight[1] != 1 || c.group != c.weight[0])
      continue;
    INFO(c.describe());
    for (DType low : {DType::BF16, DType::F16}) {
      HostTensor x = randomIntegers(low, c.input, -4, 4);
      HostTensor w = randomIntegers(low, c.weight, -4, 4);
      HostTensor dy = randomIntegers(low, c.output(), -4, 4);
      std::vector<Attr> inputAttributes = c.attributes(),
                        weightAttributes = c.attributes();
      inputAttributes.push_back(ints("input_shape", c.input));
      weightAttributes.push_back(ints("weight_shape", c.weight));
      checkGenerated(
          {"graph.conv", {x, w}, {{low, c.output()}}, c.attributes()}, 0.0);
      checkGenerated({"graph.conv_backward_input",
                      {dy, w},
                      {{low, c.input}},
                      inputAttributes},
                     0.0);
      checkGenerated({"graph.conv_backward_weight",
                      {dy, x},
                      {{low, c.weight}},
                      weightAttributes},
                     0.0);
    }
  }
}

TEST_CASE("generated max pooling and its gradient run bf16 and f16 exactly",
          "[generated][pool]") {
  // --amp's low floats: the maximum is exact in any precision, and the
  // gradient adds overlapping windows in f32 before one rounding.
  for (const PoolCase &c : poolCases()) {
    if (c.dtype != DType::F32)
      continue;
    INFO(c.describe());
    Shape maxOutput = c.output(true);
    for (DType low : {DType::BF16, DType::F16}) {
      HostTensor x = randomIntegers(low, c.input, -8, 8);
      checkGenerated(
          {"graph.max_pool", {x}, {{low, maxOutput}}, c.attributes(true)}, 0.0);
      checkGenerated({"graph.max_pool_backward",
                      {randomIntegers(low, maxOutput, -8, 8), x},
                      {{low, c.input}},
                      c.attributes(true)},
                     0.0);
    }
  }
}

TEST_CASE("generated gather and gather_backward match the interpreter",
          "[generated][gather]") {
  for (DType indexType : {DType::I64, DType::I32})
    for (int64_t axis = 0; axis < 3; ++axis) {
      Shape dataShape = {4, 5, 33};
      int64_t size = dataShape[axis];
      // Negative and repeated indices.
      HostTensor indices = randomIntegers(indexType, {3, 4}, -size, size - 1);
      Shape shape(dataShape.begin(), dataShape.begin() + axis);
      shape.insert(shape.end(), {3, 4});
      shape.insert(shape.end(), dataShape.begin() + axis + 1, dataShape.end());
      INFO("axis " << axis);
      checkGeneratedBits({"graph.gather",
                          {randomTensor(DType::F32, dataShape), indices},
                          {{DType::F32, shape}},
                          {integer("axis", axis)}});
      // Repeated indices sum in f32, the interpreter in double.
      checkGenerated({"graph.gather_backward",
                      {randomTensor(DType::F32, shape), indices},
                      {{DType::F32, dataShape}},
                      {ints("data_shape", dataShape), integer("axis", axis)}},
                     1e-6);
    }
  // The Transformer's embedding and its gradient (many repeats), with
  // signed zeros in the table.
  HostTensor tokens = randomIntegers(DType::I64, {16, 64}, 0, 999);
  HostTensor table = randomTensor(DType::F32, {1000, 128});
  table.data[5 * 128 + 3] = -0.0;
  tokens.data[7] = 5;
  checkGeneratedBits({"graph.gather",
                      {table, tokens},
                      {{DType::F32, {16, 64, 128}}},
                      {integer("axis", 0)}});
  checkGenerated({"graph.gather_backward",
                  {randomTensor(DType::F32, {16, 64, 128}), tokens},
                  {{DType::F32, {1000, 128}}},
                  {ints("data_shape", {1000, 128}), integer("axis", 0)}},
                 1e-6);
}

TEST_CASE("generated gather_elements and its gradient match the interpreter",
          "[generated][gather]") {
  Shape dataShape = {4, 5, 33};
  for (DType indexType : {DType::I64, DType::I32})
    for (int64_t axis = 0; axis < 3; ++axis) {
      Shape shape = {3, 4, 17};
      shape[axis] = 6;
      int64_t size = dataShape[axis];
      HostTensor indices = randomIntegers(indexType, shape, -size, size - 1);
      INFO("axis " << axis);
      HostTensor data = randomTensor(DType::F32, dataShape);
      data.data[1] = -0.0;
      checkGeneratedBits({"graph.gather_elements",
                          {data, indices},
                          {{DType::F32, shape}},
                          {integer("axis", axis)}});
      // Repeated indices sum in f32, the interpreter in double.
      checkGenerated({"graph.gather_elements_backward",
                      {randomTensor(DType::F32, shape), indices},
                      {{DType::F32, dataShape}},
                      {ints("data_shape", dataShape), integer("axis", axis)}},
                     1e-6);
    }
}

TEST_CASE("generated gather reports the reference's error for an index out "
          "of range",
          "[generated][gather]") {
  for (int64_t bad : {5, -6, 100}) {
    HostTensor indices = tensor(DType::I64, {4}, {1, -5, double(bad), 7});
    for (bool backward : {false, true}) {
      OpCase c = backward
                     ? OpCase{"graph.gather_backward",
                              {randomTensor(DType::F32, {4, 3}), indices},
                              {{DType::F32, {5, 3}}},
                              {ints("data_shape", {5, 3}), integer("axis", 0)}}
                     : OpCase{"graph.gather",
                              {randomTensor(DType::F32, {5, 3}), indices},
                              {{DType::F32, {4, 3}}},
                              {integer("axis", 0)}};
      RuntimeRun reference = runKernel(c, "reference");
      REQUIRE_FALSE(reference.ok);
      GeneratedRun generated = runGenerated(c);
      REQUIRE(generated.checkFailure);
      CHECK(*generated.checkFailure == reference.error);
    }
  }
}

TEST_CASE("generated random_mask draws the reference's Philox masks",
          "[generated][random]") {
  // Negative seeds and steps past 2^32 (every word of the counter and key
  // used), ratios 0 to 0.9, a mask split across threads.
  for (auto [seed, step] : {std::pair<double, double>(1234, 0),
                            std::pair<double, double>(-5, 8589934601.0)})
    for (double ratio : {0.0, 0.25, 0.5, 0.9})
      for (const Shape &shape : {Shape{4, 8}, Shape{64, 1000}, Shape{7}}) {
        INFO("seed " << seed << " step " << step << " ratio " << ratio);
        checkGeneratedBits(
            {"graph.random_mask",
             {tensor(DType::I64, {}, {seed}), tensor(DType::I64, {}, {step})},
             {{DType::F32, shape}},
             {ints("shape", shape), type("element_type", DType::F32),
              real("ratio", ratio), integer("stream", 6)}});
      }
}
