//===- GeneratedKernelTests.cpp - generated kernels vs the interpreter ----===//
//
// Elementwise ops, casts, reductions, softmax, layer and batch norm, data
// movement and optimizer updates of the `generated` backend against the
// reference interpreter (GeneratedKernelHarness.h), on shapes chosen to hit
// tails, broadcasting, unit dimensions, every reduction axis and
// transposes. Losses and pooling: GeneratedLossPoolTests.cpp.
//
//===----------------------------------------------------------------------===//
#include "GeneratedKernelHarness.h"
#include "WindowCases.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace trainc;
using namespace trainc::rttest;

TEST_CASE("generated unary kernels match the interpreter", "[generated]") {
  for (const Shape &shape : kShapes) {
    HostTensor any = randomTensor(DType::F32, shape, -4.0, 4.0);
    HostTensor positive = randomTensor(DType::F32, shape, 0.05, 6.0);
    for (const char *op : {"neg", "abs", "relu", "sigmoid", "tanh", "erf",
                           "exp", "identity", "sin", "cos", "softplus"})
      checkGenerated({std::string("graph.") + op, {any}, {{DType::F32, shape}}});
    for (const char *op : {"sqrt", "log", "reciprocal"})
      checkGenerated(
          {std::string("graph.") + op, {positive}, {{DType::F32, shape}}});
    checkGenerated({"graph.leaky_relu", {any}, {{DType::F32, shape}},
                    {real("alpha", 0.2)}});
    checkGenerated({"graph.gelu", {any}, {{DType::F32, shape}}});
    checkGenerated({"graph.gelu", {any}, {{DType::F32, shape}},
                    {flag("tanh_approximation", true)}});
    checkGenerated({"graph.clip", {any}, {{DType::F32, shape}},
                    {real("min", -1.5), real("max", 0.5)}});
  }
}

TEST_CASE("generated erf is within 2.5e-7 of erf everywhere", "[generated]") {
  // --trainc-approximate-math's two-piece erf on every 1/1024 of [-6, 6]
  // (both pieces, the switch at |x| = 1, the clamp at 4), tiny values, and
  // the special ones. The bound is absolute near 1 (GELU's 1 + erf(x)
  // cancels there) and relative near 0: 2.5e-7 (|b| + 0.05), against erf
  // in double rounded to f32 (half an ulp: up to 6e-8 relative).
  HostTensor x{DType::F32, {}, {}};
  for (int i = -6 * 1024; i <= 6 * 1024; ++i)
    x.data.push_back(i / 1024.0);
  for (double tiny : {1e-30, -1e-30, 1e-10, 3e-5, -2e-3})
    x.data.push_back(tiny);
  for (double special :
       {-0.0, std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(), std::nan("")})
    x.data.push_back(special);
  x.shape = {int64_t(x.data.size())};
  checkGenerated({"graph.erf", {x}, {{DType::F32, x.shape}}}, 2.5e-7);
  // -0 keeps its sign.
  checkGeneratedBits({"graph.erf",
                      {HostTensor{DType::F32, {1}, {-0.0}}},
                      {{DType::F32, {1}}}});
}

TEST_CASE("generated casts are exact", "[generated]") {
  // bf16 and f16 too: --amp's casts (computed in f32 registers).
  const DType types[] = {DType::F32, DType::F64, DType::BF16, DType::F16,
                         DType::I64, DType::I32, DType::I1};
  for (const Shape &shape : {Shape{}, Shape{7}, Shape{64, 33}}) {
    for (DType from : types) {
      bool isFloat = from == DType::F32 || from == DType::F64 ||
                     from == DType::BF16 || from == DType::F16;
      // Floats with zeros, halves and values past f32's integer range;
      // integers past 2^24 (their f32 rounding goes through double).
      int64_t bound = from == DType::I1    ? 1
                      : from == DType::I32 ? int64_t(1) << 30
                                           : int64_t(1) << 40;
      HostTensor input = isFloat ? randomTensor(from, shape, -3.0, 3.0)
                                 : randomIntegers(from, shape,
                                                  from == DType::I1 ? 0 : -bound,
                                                  bound);
      if (isFloat && !input.data.empty())
        input.data[0] = 0.0;
      // Float to integer truncates toward zero and saturates at i64's
      // range (NaN gives 0), then wraps to i32.
      if (isFloat && input.data.size() > 7) {
        const double special[] = {std::nan(""), 1e30, -1e30, 2.5, -2.5,
                                  3e9, -0.75};
        std::copy(std::begin(special), std::end(special),
                  input.data.begin() + 1);
      }
      for (DType to : types) {
        // bf16 and f16 convert to and from floats of 32 bits or less
        // only, and from bools (--amp's masks, as in ReLU6's gradient).
        auto low = [](DType t) { return t == DType::BF16 || t == DType::F16; };
        auto narrowFloat = [&](DType t) { return low(t) || t == DType::F32; };
        if ((low(from) || low(to)) &&
            !((narrowFloat(from) || from == DType::I1) && narrowFloat(to)))
          continue;
        checkGenerated({"graph.cast", {input}, {{to, shape}}, {type("to", to)}},
                       0.0);
      }
    }
  }
}

TEST_CASE("generated binary kernels broadcast like the interpreter",
          "[generated]") {
  for (const auto &[a, b] : kBroadcastShapes) {
    for (const auto &[x, y] : {std::pair(a, b), std::pair(b, a)}) {
      HostTensor lhs = randomTensor(DType::F32, x, -3.0, 3.0);
      HostTensor rhs = randomTensor(DType::F32, y, 0.5, 3.0);
      Shape out = broadcastShape(x, y);
      for (const char *op : {"add", "sub", "mul", "div"})
        checkGenerated({std::string("graph.") + op, {lhs, rhs},
                        {{DType::F32, out}}});
      for (const char *op : {"less", "greater", "equal", "less_equal",
                             "greater_equal"})
        checkGenerated(
            {std::string("graph.") + op, {lhs, rhs}, {{DType::I1, out}}});
      HostTensor mask = randomIntegers(DType::I1, x, 0, 1);
      checkGenerated({"graph.where", {mask, lhs, rhs}, {{DType::F32, out}}});
    }
  }
  // Comparisons of equal values: equal and the non-strict ones hold.
  HostTensor same = randomTensor(DType::F32, {33, 7});
  checkGenerated({"graph.equal", {same, same}, {{DType::I1, {33, 7}}}});
}

TEST_CASE("generated reductions match the interpreter on every axis set",
          "[generated]") {
  const std::vector<std::pair<Shape, std::vector<Shape>>> cases = {
      {{7}, {{0}}},
      {{64, 10}, {{0}, {1}, {0, 1}}},
      {{1, 300}, {{0}, {1}}},
      {{3, 4, 5}, {{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}}},
      {{2, 3, 1, 33}, {{3}, {0, 1}, {2}, {1, 3}}},
      {{128, 1000}, {{0}, {1}}}};
  for (const auto &[shape, axesList] : cases) {
    HostTensor x = randomTensor(DType::F32, shape, -2.0, 2.0);
    for (const Shape &axes : axesList) {
      for (bool keepdims : {true, false}) {
        Shape out;
        for (size_t d = 0; d < shape.size(); ++d) {
          bool reduced = std::find(axes.begin(), axes.end(), int64_t(d)) !=
                         axes.end();
          if (!reduced)
            out.push_back(shape[d]);
          else if (keepdims)
            out.push_back(1);
        }
        for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"})
          checkGenerated({std::string("graph.") + op, {x}, {{DType::F32, out}},
                          {ints("axes", axes), flag("keepdims", keepdims)}},
                         1e-5);
      }
    }
  }
}

TEST_CASE("generated argmax matches the interpreter: ties, NaN, every axis",
          "[generated]") {
  for (const Shape &shape : {Shape{7}, Shape{64, 10}, Shape{3, 1, 7},
                             Shape{2, 5, 33}, Shape{1, 300}}) {
    // Values in {-1, 0, 1}: many ties; then NaNs in some rows.
    HostTensor ties = randomTensor(DType::F32, shape, -1.5, 1.5);
    for (double &value : ties.data)
      value = std::round(value);
    HostTensor nans = ties;
    for (size_t i = 0; i < nans.data.size(); i += 5)
      nans.data[i] = std::numeric_limits<double>::quiet_NaN();
    for (const HostTensor &x : {ties, nans})
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
        for (bool keepdims : {true, false})
          for (bool last : {false, true}) {
            Shape out = shape;
            if (keepdims)
              out[axis] = 1;
            else
              out.erase(out.begin() + axis);
            checkGenerated({"graph.argmax",
                            {x},
                            {{DType::I64, out}},
                            {integer("axis", axis), flag("keepdims", keepdims),
                             flag("select_last_index", last)}});
          }
  }
}

TEST_CASE("generated softmax and log_softmax match on every axis",
          "[generated]") {
  for (const Shape &shape :
       {Shape{10}, Shape{64, 10}, Shape{3, 1, 7}, Shape{2, 4, 64, 64},
        Shape{5, 130}}) {
    HostTensor x = randomTensor(DType::F32, shape, -6.0, 6.0);
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
      for (const char *op : {"softmax", "log_softmax"})
        checkGenerated({std::string("graph.") + op, {x}, {{DType::F32, shape}},
                        {integer("axis", axis)}},
                       1e-5);
  }
}

TEST_CASE("generated layer_norm and its gradient match the interpreter", "[generated]") {
  for (const auto &[shape, axis] :
       {std::pair(Shape{16, 64, 128}, int64_t(2)), std::pair(Shape{3, 5, 7}, int64_t(1)),
        std::pair(Shape{3, 5, 7}, int64_t(2)), std::pair(Shape{4, 1}, int64_t(1)),
        std::pair(Shape{2, 1, 300}, int64_t(0)), std::pair(Shape{100}, int64_t(0))}) {
    HostTensor x = randomTensor(DType::F32, shape, -3.0, 5.0);
    Shape normalized(shape.begin() + axis, shape.end());
    HostTensor scale = randomTensor(DType::F32, normalized, 0.5, 1.5);
    HostTensor bias = randomTensor(DType::F32, normalized);
    std::vector<Attr> attributes = {integer("axis", axis), real("epsilon", 1e-5)};
    checkGenerated({"graph.layer_norm", {x, scale, bias}, {{DType::F32, shape}},
                    attributes},
                   1e-5);
    checkGenerated({"graph.layer_norm", {x, scale}, {{DType::F32, shape}},
                    attributes},
                   1e-5);
    HostTensor dy = randomTensor(DType::F32, shape);
    checkGenerated({"graph.layer_norm_backward",
                    {dy, x, scale},
                    {{DType::F32, shape},
                     {DType::F32, normalized},
                     {DType::F32, normalized}},
                    attributes},
                   1e-5);
  }
}

/// Batch norm in training (momentum `momentum`) and its gradient, and with
/// `inference` batch norm with running statistics, on x of `shape` drawn
/// from [low, high), against the interpreter within `tolerance`.
static void checkBatchNorm(const Shape &shape, double low, double high,
                           double momentum, double tolerance, bool inference) {
  int64_t c = shape[1];
  HostTensor x = randomTensor(DType::F32, shape, low, high);
  HostTensor scale = randomTensor(DType::F32, {c}, 0.5, 1.5);
  HostTensor bias = randomTensor(DType::F32, {c});
  HostTensor mean = randomTensor(DType::F32, {c});
  HostTensor var = randomTensor(DType::F32, {c}, 0.5, 2.0);
  Result tensorResult{DType::F32, shape}, channelResult{DType::F32, {c}};
  checkGenerated({"graph.batch_norm_training",
                  {x, scale, bias, mean, var},
                  {tensorResult, channelResult, channelResult},
                  {real("epsilon", 1e-5), real("momentum", momentum)}},
                 tolerance);
  if (inference)
    checkGenerated({"graph.batch_norm_inference",
                    {x, scale, bias, mean, var},
                    {tensorResult},
                    {real("epsilon", 1e-3)}},
                   tolerance);
  checkGenerated({"graph.batch_norm_training_backward",
                  {randomTensor(DType::F32, shape), x, scale},
                  {tensorResult, channelResult, channelResult},
                  {real("epsilon", 1e-5)}},
                 tolerance);
}

// Shapes: no spatial dims, 1 and 3 spatial dims, a batch of 1, one
// channel, unit spatial dims, spatial sizes that are no multiple of the
// vector width, and ResNet-sized ones whose nests are split over channels
// (sums) and over the batch (the data passes), and planes smaller than a
// vector (2x2, 2x3, 1x3), whose passes run over [N, C * P].
// Tolerance 1e-5: the generated sums accumulate in f32 (a tree per vector
// tile, then tile after tile), the interpreter's in double. The worst seen
// is 1.9e-6 (a scale gradient over 256 rows of 200 channels).
TEST_CASE("generated batch norm and its gradient match the interpreter",
          "[generated]") {
  for (const Shape &shape :
       {Shape{6, 3}, Shape{256, 200}, Shape{4, 5, 7}, Shape{3, 6, 1, 37},
        Shape{1, 3, 5, 5}, Shape{8, 1, 9, 9}, Shape{5, 4, 1, 1},
        Shape{16, 40, 13, 13}, Shape{32, 64, 16, 16}, Shape{2, 3, 15, 15, 15},
        // Planes smaller than a vector: passes over [N, C * P].
        Shape{32, 256, 2, 2}, Shape{8, 3, 2, 3}, Shape{6, 4, 1, 3}})
    checkBatchNorm(shape, -2.0, 3.0, 0.9, 1e-5, /*inference=*/true);
}

// Batch norm's statistics sum each channel's elements and their raw
// squares in f64 in one pass, the variance their difference
// (squares - sum^2 / count): on channels whose mean is thousands of their
// standard deviations (values 1000 +- 1 and -3000 +- 1) the batch
// variance (the new running variance, with momentum 0), the normalized
// output and the gradient still match the interpreter's two-pass double
// statistics. The tolerance is the f32 mean's: its rounding (half an ulp
// of 3000, 1.2e-4) moves x - mean by up to 2e-4 of the standard
// deviation, 3e-4 of an output up to 4 (checkClose's floor is 0.05 of
// that); raw squares summed in f32 would miss the variance by tens of
// percent.
TEST_CASE("batch norm statistics of channels far from zero mean",
          "[generated][norm]") {
  for (auto [shape, low, high] :
       {std::tuple{Shape{8, 16, 9, 9}, 999.0, 1001.0},
        std::tuple{Shape{32, 64, 2, 2}, -3001.0, -2999.0},
        std::tuple{Shape{64, 5}, 999.0, 1001.0}})
    checkBatchNorm(shape, low, high, 0.0, 2e-3, /*inference=*/false);
}

// Issue 22: a channel's statistic sums N*H*W values; in f32 that sum
// carries several times PyTorch's rounding noise (a running mean whose
// exact value is 0 came out at 5x PyTorch fp32's). The generated kernel
// accumulates in f64: on batches whose channels sum to exactly 0 (every
// sample followed by its negation) the running mean stays exactly 0, on
// each backend, where an f32 sum in any order leaves rounding noise. So
// does the gradient's sum(dy).
TEST_CASE("batch norm statistics of an exactly zero-mean batch are exact",
          "[generated][norm]") {
  // Output `output` of `op` is exactly 0 everywhere, generated and
  // reference.
  auto zeroOnBothBackends = [](const OpCase &op, size_t output) {
    GeneratedRun generated = runGenerated(op);
    for (double value : generated.outputs[output].data)
      CHECK(value == 0.0);
    RuntimeRun reference = runKernel(op, "reference");
    REQUIRE(reference.ok);
    for (double value : reference.outputs[output].data)
      CHECK(value == 0.0);
  };
  for (const Shape &shape : {Shape{8, 3, 17, 17}, Shape{32, 64, 16, 16},
                             Shape{64, 5}, Shape{32, 64, 2, 2}}) {
    // Magnitudes in [1, 3): full 24-bit mantissas, whose sums an f32
    // accumulator rounds and an f64 one (38 bits at most here) does not.
    HostTensor x = randomTensor(DType::F32, shape, -2.0, 2.0);
    int64_t half = x.numElements() / 2;
    for (int64_t i = 0; i < half; ++i) {
      double value = x.data[i] < 0 ? x.data[i] - 1.0 : x.data[i] + 1.0;
      x.data[i] = static_cast<float>(value);
      x.data[half + i] = -x.data[i];
    }
    int64_t c = shape[1];
    Result tensorResult{DType::F32, shape}, channelResult{DType::F32, {c}};
    HostTensor zeros = randomTensor(DType::F32, {c}, 0.0, 0.0);
    OpCase op{"graph.batch_norm_training",
              {x, randomTensor(DType::F32, {c}, 0.5, 1.5),
               randomTensor(DType::F32, {c}), zeros,
               randomTensor(DType::F32, {c}, 0.5, 2.0)},
              {tensorResult, channelResult, channelResult},
              {real("epsilon", 1e-5), real("momentum", 0.9)}};
    INFO(x.numElements() / c << " values per channel");
    zeroOnBothBackends(op, 1); // the batch mean

    // The gradient's sum(dy) likewise (PyTorch sums it in double across
    // the batch): with that batch as dy, the bias gradient is exactly 0.
    OpCase backward{"graph.batch_norm_training_backward",
                    {x, randomTensor(DType::F32, shape),
                     randomTensor(DType::F32, {c}, 0.5, 1.5)},
                    {tensorResult, channelResult, channelResult},
                    {real("epsilon", 1e-5)}};
    zeroOnBothBackends(backward, 2); // the bias gradient
  }
}

// --amp: bf16 and f16 activations with f32 parameters and statistics. The
// kernels compute in f32 and round each stored activation once; the
// interpreter computes in double and rounds once, so a stored value may
// differ by one unit in the last place (bf16: 2^-8 relative), f32
// statistics and parameter gradients by f32 noise.
TEST_CASE("generated batch and layer norm take low-precision activations",
          "[generated]") {
  for (DType low : {DType::BF16, DType::F16}) {
    for (const Shape &shape : {Shape{8, 3, 5, 5}, Shape{32, 64, 4, 4}}) {
      int64_t c = shape[1];
      HostTensor x = randomTensor(low, shape, -2.0, 3.0);
      HostTensor scale = randomTensor(DType::F32, {c}, 0.5, 1.5);
      HostTensor bias = randomTensor(DType::F32, {c});
      HostTensor mean = randomTensor(DType::F32, {c});
      HostTensor var = randomTensor(DType::F32, {c}, 0.5, 2.0);
      Result tensorResult{low, shape}, channelResult{DType::F32, {c}};
      checkGenerated({"graph.batch_norm_training",
                      {x, scale, bias, mean, var},
                      {tensorResult, channelResult, channelResult},
                      {real("epsilon", 1e-5), real("momentum", 0.9)}},
                     1e-2);
      checkGenerated({"graph.batch_norm_training_backward",
                      {randomTensor(low, shape), x, scale},
                      {tensorResult, channelResult, channelResult},
                      {real("epsilon", 1e-5)}},
                     1e-2);
    }
    Shape shape = {4, 16, 128};
    Shape normalized = {128};
    HostTensor x = randomTensor(low, shape, -3.0, 5.0);
    HostTensor scale = randomTensor(DType::F32, normalized, 0.5, 1.5);
    HostTensor bias = randomTensor(DType::F32, normalized);
    std::vector<Attr> attributes = {integer("axis", 2), real("epsilon", 1e-5)};
    checkGenerated(
        {"graph.layer_norm", {x, scale, bias}, {{low, shape}}, attributes},
        1e-2);
    checkGenerated(
        {"graph.layer_norm_backward",
         {randomTensor(low, shape), x, scale},
         {{low, shape}, {DType::F32, normalized}, {DType::F32, normalized}},
         attributes},
        1e-2);
  }
}

TEST_CASE("generated data movement is exact", "[generated]") {
  HostTensor x = randomTensor(DType::F32, {4, 5, 6});
  checkGenerated({"graph.reshape", {x}, {{DType::F32, {20, 6}}},
                  {ints("shape", {20, 6})}},
                 0.0);
  for (const Shape &perm :
       {Shape{0, 1, 2}, Shape{2, 1, 0}, Shape{1, 0, 2}, Shape{0, 2, 1},
        Shape{2, 0, 1}}) {
    Shape out = {x.shape[perm[0]], x.shape[perm[1]], x.shape[perm[2]]};
    checkGenerated({"graph.transpose", {x}, {{DType::F32, out}},
                    {ints("perm", perm)}},
                   0.0);
  }
  // Transposes keeping the innermost dim move their rows in blocks of 4 x
  // 2 (loop::defaultSchedule), partial at the edges: bf16 rows of one
  // vector, f32 rows of two, a 4-D permutation, a parallel one. Those
  // moving it transpose tiles in registers, partial ones masked.
  struct Permuted {
    DType dtype;
    Shape shape, perm;
  };
  for (const Permuted &c :
       {Permuted{DType::BF16, {6, 9, 32}, {1, 0, 2}},
        Permuted{DType::F32, {7, 3, 32}, {1, 0, 2}},
        Permuted{DType::F32, {2, 3, 5, 16}, {0, 2, 1, 3}},
        Permuted{DType::BF16, {3, 5, 2, 8}, {2, 0, 1, 3}},
        Permuted{DType::F32, {64, 66, 16}, {1, 0, 2}},
        // The innermost dim moves: tiles transposed in registers.
        Permuted{DType::F32, {37, 21}, {1, 0}},
        Permuted{DType::BF16, {3, 20, 18}, {0, 2, 1}},
        Permuted{DType::F32, {5, 6, 33}, {2, 0, 1}},
        Permuted{DType::BF16, {2, 5, 7, 9}, {0, 2, 3, 1}},
        Permuted{DType::F16, {64, 64, 32}, {1, 2, 0}}}) {
    HostTensor input = randomTensor(c.dtype, c.shape);
    Shape out;
    for (int64_t axis : c.perm)
      out.push_back(c.shape[axis]);
    checkGenerated(
        {"graph.transpose", {input}, {{c.dtype, out}}, {ints("perm", c.perm)}},
        0.0);
  }
  HostTensor big = randomTensor(DType::F32, {128, 384});
  checkGenerated({"graph.transpose", {big}, {{DType::F32, {384, 128}}},
                  {ints("perm", {1, 0})}},
                 0.0);
  HostTensor row = randomTensor(DType::F32, {1, 7});
  checkGenerated({"graph.expand", {row}, {{DType::F32, {5, 7}}},
                  {ints("shape", {5, 7})}},
                 0.0);
  HostTensor mask = randomIntegers(DType::I1, {3, 9}, 0, 1);
  checkGenerated({"graph.identity", {mask}, {{DType::I1, {3, 9}}}}, 0.0);
}

TEST_CASE("generated sgd_update is bit-identical to the interpreter",
          "[generated]") {
  for (int64_t count : {int64_t(1), int64_t(100), int64_t(200704)}) {
    HostTensor param = randomTensor(DType::F32, {count});
    HostTensor grad = randomTensor(DType::F32, {count});
    HostTensor buffer = randomTensor(DType::F32, {count});
    HostTensor rate = tensor(DType::F32, {}, {0.05});
    for (int64_t step : {int64_t(0), int64_t(3)}) {
      HostTensor stepTensor = tensor(DType::I64, {}, {double(step)});
      checkGenerated({"graph.sgd_update",
                      {param, grad, rate, stepTensor},
                      {{DType::F32, {count}}},
                      {real("weight_decay", 0.01)}},
                     0.0);
      for (bool nesterov : {false, true})
        checkGenerated({"graph.sgd_update",
                        {param, grad, rate, stepTensor, buffer},
                        {{DType::F32, {count}}, {DType::F32, {count}}},
                        {real("momentum", 0.9), real("dampening", 0.1),
                         flag("nesterov", nesterov),
                         real("weight_decay", 0.001)}},
                       0.0);
    }
  }
}

TEST_CASE("generated adam_update is bit-identical to the interpreter",
          "[generated]") {
  for (int64_t count : {int64_t(1), int64_t(1000), int64_t(100000)}) {
    HostTensor param = randomTensor(DType::F32, {count});
    HostTensor grad = randomTensor(DType::F32, {count});
    HostTensor m = randomTensor(DType::F32, {count}, -0.1, 0.1);
    HostTensor v = randomTensor(DType::F32, {count}, 0.0, 0.01);
    HostTensor rate = tensor(DType::F32, {}, {0.001});
    for (int64_t step : {int64_t(0), int64_t(7)})
      for (bool decoupled : {false, true})
        for (bool onnx : {false, true})
          checkGenerated({"graph.adam_update",
                          {param, grad, m, v, rate,
                           tensor(DType::I64, {}, {double(step)})},
                          {{DType::F32, {count}},
                           {DType::F32, {count}},
                           {DType::F32, {count}}},
                          {real("weight_decay", 0.01),
                           flag("decoupled", decoupled),
                           flag("onnx_convention", onnx)}},
                         0.0);
  }
}

TEST_CASE("generated adagrad_update is bit-identical to the interpreter",
          "[generated]") {
  for (int64_t count : {int64_t(1), int64_t(1000), int64_t(100000)}) {
    HostTensor param = randomTensor(DType::F32, {count});
    HostTensor grad = randomTensor(DType::F32, {count});
    HostTensor sum = randomTensor(DType::F32, {count}, 0.0, 0.1);
    HostTensor rate = tensor(DType::F32, {}, {0.01});
    for (int64_t step : {int64_t(0), int64_t(7)})
      for (double decay : {0.0, 0.01})
        checkGenerated({"graph.adagrad_update",
                        {param, grad, sum, rate,
                         tensor(DType::I64, {}, {double(step)})},
                        {{DType::F32, {count}}, {DType::F32, {count}}},
                        {real("weight_decay", decay), real("lr_decay", decay),
                         real("epsilon", 1e-10)}},
                       0.0);
  }
}

/// `full` with `window` placed at `starts` and zeros elsewhere (`into`
/// true), or the window at `starts` of `full` (`into` false), for 4-D
/// shapes.
static HostTensor placeWindow(const HostTensor &full, const HostTensor &window,
                              const Shape &starts, bool into) {
  HostTensor result = into ? full : window;
  if (into)
    std::fill(result.data.begin(), result.data.end(), 0.0);
  const Shape &f = full.shape, &w = window.shape;
  for (int64_t a = 0; a < w[0]; ++a)
    for (int64_t b = 0; b < w[1]; ++b)
      for (int64_t i = 0; i < w[2]; ++i)
        for (int64_t j = 0; j < w[3]; ++j) {
          int64_t at = ((a * w[1] + b) * w[2] + i) * w[3] + j;
          int64_t in = (((a + starts[0]) * f[1] + b + starts[1]) * f[2] + i +
                        starts[2]) *
                           f[3] +
                       j + starts[3];
          if (into)
            result.data[in] = window.data[at];
          else
            result.data[at] = full.data[in];
        }
  return result;
}

TEST_CASE("generated windowed updates, and the window copy they write",
          "[generated]") {
  // --trainc-window-updates gives an update the window of a gradient that
  // is zero elsewhere (`gradient_starts`); --trainc-keep-weight-copies
  // makes it also write that window of the updated parameter
  // (`window_copy`). The centre tap, a 2x2 window, and 589,824 elements
  // (3 chunks of rows).
  struct Window {
    Shape full, window, starts;
  };
  for (const Window &w :
       {Window{{8, 4, 3, 3}, {8, 4, 1, 1}, {0, 0, 1, 1}},
        Window{{8, 4, 3, 3}, {8, 4, 2, 2}, {0, 0, 1, 1}},
        Window{{1024, 64, 3, 3}, {1024, 64, 1, 1}, {0, 0, 1, 1}}}) {
    INFO(formatShape(w.full) << " window " << formatShape(w.window));
    HostTensor param = randomTensor(DType::F32, w.full);
    HostTensor grad = randomTensor(DType::F32, w.window);
    HostTensor padded = placeWindow(param, grad, w.starts, true);
    HostTensor state = randomTensor(DType::F32, w.full, 0.0, 0.01);
    HostTensor rate = tensor(DType::F32, {}, {0.05});
    HostTensor step = tensor(DType::I64, {}, {3.0});
    struct Update {
      std::string op;
      std::vector<HostTensor> inputs; // gradient second
      std::vector<Attr> attributes;
      size_t outputs;
    };
    for (const Update &u :
         {Update{"graph.sgd_update",
                 {param, grad, rate, step, state},
                 {real("momentum", 0.9), flag("nesterov", true)},
                 2},
          Update{"graph.adam_update",
                 {param, grad, state, state, rate, step},
                 {flag("decoupled", true), real("weight_decay", 0.01)},
                 3}}) {
      INFO(u.op);
      OpCase reference{u.op, u.inputs, {}, u.attributes};
      reference.inputs[1] = padded;
      reference.results.assign(u.outputs, Result{DType::F32, w.full});
      std::vector<HostTensor> expected = interpretCase(reference);
      for (bool copy : {false, true}) {
        OpCase windowed{u.op, u.inputs, reference.results, u.attributes};
        windowed.attributes.push_back(ints("gradient_starts", w.starts));
        if (copy) {
          windowed.attributes.push_back(flag("window_copy", true));
          windowed.results.push_back({DType::F32, w.window});
        }
        GeneratedRun run = runGenerated(windowed);
        for (size_t i = 0; i < u.outputs; ++i)
          checkClose(run.outputs[i], expected[i], 0.0);
        if (copy)
          checkClose(run.outputs.back(),
                     placeWindow(expected[0], grad, w.starts, false), 0.0);
      }
    }
  }
}
