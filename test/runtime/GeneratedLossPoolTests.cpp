//===- GeneratedLossPoolTests.cpp - generated losses and pooling ----------===//
//
// The loss kernels (and their input check) and max pooling of the
// `generated` backend against the reference interpreter
// (GeneratedKernelHarness.h).
//
//===----------------------------------------------------------------------===//
#include "GeneratedKernelHarness.h"
#include "WindowCases.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace trainc;
using namespace trainc::rttest;

// Losses sum in f32 in the schedule's order and use the polynomial exp and
// log; the interpreter sums in double. The class losses below (at most a few
// thousand terms per sum) agree within 2e-6 relative; 1e-5, as for the
// reductions above, leaves margin and still catches a wrong or missing term.
// Except where the prediction is confident (2 classes, logits 12 apart):
// the loss log(1 + e^-12) and the gradient p - 1 are differences of numbers
// near 1, which f32 (here as in PyTorch) knows to an ulp of 1. Softmax
// cross-entropy is therefore also allowed a few ulps of 1 times the
// incoming gradient (at most 2) in absolute terms: far below any wrong or
// missing term (of the order of g/N).
constexpr double kNearOneUlps = 4 * 2 * 1.1920929e-7;
TEST_CASE("generated class losses and their gradients match the interpreter",
          "[generated]") {
  // Classes 1 (the class dimension dropped), 2, 10 and 1000; a batch of 1
  // and odd ones; spatial dims (with a unit one); the 33x1000 and 64x1000
  // nests are split across threads.
  for (const Shape &shape :
       {Shape{5, 1}, Shape{7, 2}, Shape{1, 10}, Shape{64, 10}, Shape{33, 1000},
        Shape{64, 1000}, Shape{3, 10, 4, 5}, Shape{2, 3, 1, 7},
        Shape{1, 4, 9}}) {
    Shape labelsShape = labelShape(shape);
    HostTensor logits = randomTensor(DType::F32, shape, -6.0, 6.0);
    for (std::optional<int64_t> ignore :
         {std::optional<int64_t>(), std::optional<int64_t>(-100),
          std::optional<int64_t>(1)}) {
      HostTensor y = classLabels(DType::I64, labelsShape, shape[1], ignore);
      for (const char *reduction : {"mean", "sum", "none"}) {
        Shape lossShape =
            std::string(reduction) == "none" ? labelsShape : Shape();
        HostTensor gradLoss = randomTensor(DType::F32, lossShape, 0.5, 2.0);
        std::vector<Attr> common = {string("reduction", reduction)};
        if (ignore)
          common.push_back(integer("ignore_index", *ignore));
        INFO(formatShape(shape) << " " << reduction << " ignore "
                                << (ignore ? std::to_string(*ignore) : "-"));
        for (double smoothing : {0.0, 0.1}) {
          std::vector<Attr> attributes = common;
          attributes.push_back(real("label_smoothing", smoothing));
          checkGenerated({"graph.softmax_cross_entropy",
                          {logits, y},
                          {{DType::F32, lossShape}},
                          attributes},
                         1e-5, kNearOneUlps);
          checkGenerated({"graph.softmax_cross_entropy_backward",
                          {gradLoss, logits, y},
                          {{DType::F32, shape}},
                          attributes},
                         1e-5, kNearOneUlps);
        }
        checkGenerated(
            {"graph.nll_loss", {logits, y}, {{DType::F32, lossShape}}, common},
            1e-5);
        checkGenerated({"graph.nll_loss_backward",
                        {gradLoss, logits, y},
                        {{DType::F32, shape}},
                        common},
                       1e-5);
      }
    }
  }
}

TEST_CASE("generated class losses of an all-ignored batch match the "
          "interpreter",
          "[generated]") {
  // The mean over no element is 0/0 = NaN, as in the reference (and
  // PyTorch); the gradient is 0 everywhere.
  HostTensor logits = randomTensor(DType::F32, {6, 5});
  HostTensor y = tensor(DType::I64, {6}, std::vector<double>(6, -100.0));
  HostTensor one = tensor(DType::F32, {}, {1.0});
  for (const char *reduction : {"mean", "sum"}) {
    std::vector<Attr> attributes = {string("reduction", reduction),
                                    integer("ignore_index", -100)};
    for (const char *op : {"softmax_cross_entropy", "nll_loss"}) {
      std::string name = std::string("graph.") + op;
      checkGenerated({name, {logits, y}, {{DType::F32, {}}}, attributes}, 0.0);
      checkGenerated({name + "_backward",
                      {one, logits, y},
                      {{DType::F32, {6, 5}}},
                      attributes},
                     0.0);
    }
  }
}

TEST_CASE("generated class losses take i32 labels", "[generated]") {
  for (const Shape &shape : {Shape{7, 2}, Shape{64, 10}, Shape{3, 10, 4, 5}}) {
    HostTensor logits = randomTensor(DType::F32, shape, -6.0, 6.0);
    Shape labelsShape = labelShape(shape);
    HostTensor y = classLabels(DType::I32, labelsShape, shape[1], -100);
    HostTensor gradLoss = randomTensor(DType::F32, {}, 0.5, 2.0);
    std::vector<Attr> attributes = {string("reduction", "mean"),
                                    integer("ignore_index", -100)};
    INFO(formatShape(shape));
    checkGenerated({"graph.softmax_cross_entropy",
                    {logits, y},
                    {{DType::F32, {}}},
                    attributes},
                   1e-5, kNearOneUlps);
    checkGenerated({"graph.softmax_cross_entropy_backward",
                    {gradLoss, logits, y},
                    {{DType::F32, shape}},
                    attributes},
                   1e-5, kNearOneUlps);
    checkGenerated(
        {"graph.nll_loss", {logits, y}, {{DType::F32, {}}}, attributes}, 1e-5);
  }
}

TEST_CASE("generated class losses report the reference's error for a label "
          "out of range",
          "[generated]") {
  // Out of range: negative, C and beyond, but not ignore_index; the first
  // one in element order is reported, as by the reference kernel.
  Shape shape = {4, 10, 3};
  HostTensor logits = randomTensor(DType::F32, shape);
  for (DType labelType : {DType::I64, DType::I32})
  for (const auto &[bad, second] : {std::pair(int64_t(10), int64_t(-3)),
                                    std::pair(int64_t(-1), int64_t(12)),
                                    std::pair(int64_t(1000), int64_t(10))}) {
    HostTensor y = classLabels(labelType, labelShape(shape), 10, -100);
    y.data[4] = double(bad);
    y.data[9] = double(second);
    for (const char *op :
         {"softmax_cross_entropy", "softmax_cross_entropy_backward", "nll_loss",
          "nll_loss_backward"}) {
      std::string name = std::string("graph.") + op;
      bool backward = name.find("_backward") != std::string::npos;
      std::vector<HostTensor> inputs = {logits, y};
      if (backward)
        inputs.insert(inputs.begin(), tensor(DType::F32, {}, {1.0}));
      OpCase c{name,
               inputs,
               {{DType::F32, backward ? shape : Shape()}},
               {integer("ignore_index", -100)}};
      RuntimeRun reference = runKernel(c, "reference");
      REQUIRE_FALSE(reference.ok);
      GeneratedRun generated = runGenerated(c);
      REQUIRE(generated.checkFailure);
      CHECK(*generated.checkFailure == reference.error);
      ++comparedCases();
    }
  }
}

TEST_CASE("generated pointwise losses match the interpreter", "[generated]") {
  // Sums of 90000 terms in f32 (the interpreter's in double) differ by a
  // little more than 1e-5 relative: 1e-4.
  for (const Shape &shape :
       {Shape{}, Shape{1}, Shape{7}, Shape{4, 5, 6}, Shape{300, 300}}) {
    HostTensor prediction = randomTensor(DType::F32, shape, -4.0, 4.0);
    HostTensor target = randomTensor(DType::F32, shape, 0.0, 1.0);
    for (const char *op : {"mse_loss", "l1_loss", "bce_with_logits_loss"})
      for (const char *reduction : {"mean", "sum", "none"})
        checkGenerated(
            {std::string("graph.") + op,
             {prediction, target},
             {{DType::F32, std::string(reduction) == "none" ? shape : Shape()}},
             {string("reduction", reduction)}},
            1e-4);
  }
}

TEST_CASE("generated loss sums accumulate in f64", "[generated]") {
  // 360,000 terms: an f32 running sum drifts by more than 1e-5 relative;
  // the f64 sum, rounded once, is within the per-element rounding of the
  // interpreter's double sum (the terms themselves are f32 operations).
  HostTensor prediction = randomTensor(DType::F32, {600, 600}, -4.0, 4.0);
  HostTensor target = randomTensor(DType::F32, {600, 600}, 0.0, 1.0);
  for (const char *op : {"mse_loss", "l1_loss", "bce_with_logits_loss"})
    for (const char *reduction : {"mean", "sum"})
      checkGenerated({std::string("graph.") + op,
                      {prediction, target},
                      {{DType::F32, Shape()}},
                      {string("reduction", reduction)}},
                     2e-7);
}

// Max pooling and its gradient only move values: the generated kernels
// must give the interpreter's bits (the gradients route dy + 0, as the
// reference; the inputs here have no -0). Windows that tile the input
// (what the generated kernels cover): 1 to 4 spatial dims, a last window
// dim of 2 (pairs of taps) and not, kernels of 1, a batch or a channel of
// 1, an empty batch, the CNN's pools (split across threads). Inputs are
// ReLU'd small integers, so most windows have ties (whole windows of 0),
// and plain random numbers.
TEST_CASE("generated max pooling and its gradient are exact, ties included",
          "[generated]") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{64, 32, 28, 28}, {2, 2}}, {{64, 64, 14, 14}, {2, 2}},
      {{2, 3, 9, 9}, {3, 3}},     {{1, 5, 6, 8}, {3, 2}},
      {{3, 1, 8, 6}, {2, 3}},     {{2, 3, 5, 7}, {1, 1}},
      {{1, 1, 2, 2}, {2, 2}},     {{5, 4, 10, 1}, {2, 1}},
      {{2, 3, 12}, {2}},          {{3, 2, 12}, {3}},
      {{1, 1, 70}, {1}},          {{2, 2, 4, 6, 8}, {2, 2, 2}},
      {{1, 2, 6, 6, 6}, {3, 1, 2}}, {{2, 1, 3, 4, 9}, {1, 2, 3}},
      {{2, 2, 2, 4, 2, 6}, {2, 2, 1, 2}}, {{0, 3, 4, 4}, {2, 2}}};
  for (const auto &[input, kernel] : cases) {
    size_t rank = kernel.size();
    PoolCase pool{DType::F32, input, kernel, kernel, Shape(2 * rank, 0),
                  Shape(rank, 1)};
    HostTensor ties = randomIntegers(DType::F32, input, -3, 2);
    for (double &value : ties.data)
      value = std::max(value, 0.0);
    for (const HostTensor &x :
         {ties, randomTensor(DType::F32, input, -2.0, 2.0)}) {
      INFO(formatShape(input) << " kernel " << formatShape(kernel));
      checkGeneratedBits({"graph.max_pool",
                          {x},
                          {{DType::F32, pool.output(true)}},
                          pool.attributes(true)});
      checkGeneratedBits({"graph.max_pool_backward",
                          {randomTensor(DType::F32, pool.output(true)), x},
                          {{DType::F32, input}},
                          pool.attributes(true)});
    }
  }
}

TEST_CASE("generated max pooling takes NaN over numbers and -0 as 0",
          "[generated]") {
  // Windows of 2x2 taps, row-major: a NaN among numbers, two NaNs (the
  // gradient goes to the last), all -inf, zeros of both signs, a +inf tie;
  // the gradient -0 becomes 0. The forward's maximum of -0 and 0 is 0 (the
  // reference's is the first one): values are compared, not signs.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> windows[] = {{1, nan, 3, 2},   {nan, 1, 2, nan},
                                   {-inf, -inf, -inf, -inf},
                                   {-0.0, 0, 0, -0.0}, {0, -0.0, -1, -2},
                                   {inf, 5, inf, 1}};
  for (bool pairs : {true, false}) {
    // With pairs, each window is one row of two tap pairs; without, the
    // taps of the window's last dim are 4 in a row (a 1x4 window).
    Shape input = pairs ? Shape{1, 1, 2, 12} : Shape{1, 1, 1, 24};
    Shape kernel = pairs ? Shape{2, 2} : Shape{1, 4};
    HostTensor x = tensor(DType::F32, input, std::vector<double>(24));
    for (auto [w, taps] : llvm::enumerate(windows))
      for (int t = 0; t < 4; ++t) {
        int64_t index = pairs ? (t / 2) * 12 + 2 * w + t % 2 : 4 * w + t;
        x.data[index] = taps[t];
      }
    PoolCase pool{DType::F32, input, kernel, kernel, {0, 0, 0, 0}, {1, 1}};
    HostTensor dy = randomTensor(DType::F32, pool.output(true), 1.0, 2.0);
    dy.data[3] = -0.0;
    checkGenerated(
        {"graph.max_pool", {x}, {{DType::F32, dy.shape}}, pool.attributes(true)},
        0.0);
    checkGeneratedBits({"graph.max_pool_backward",
                        {dy, x},
                        {{DType::F32, input}},
                        pool.attributes(true)});
  }
}
