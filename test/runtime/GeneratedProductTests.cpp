//===- GeneratedProductTests.cpp - generated products vs the interpreter --===//
//
// matmul (batch broadcasting, 1-D promotion) and gemm (every transpose,
// alpha, beta, every broadcast of c) of the `generated` backend, plus the
// smaller fallbacks: global_avg_pool, not, pow, integer add/sub/mul. The
// products sum in f32 where the interpreter sums in double, hence the
// tolerances.
//
//===----------------------------------------------------------------------===//
#include "GeneratedKernelHarness.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace trainc;
using namespace trainc::rttest;

TEST_CASE("generated matmul matches the interpreter", "[generated]") {
  // lhs, rhs, output: tails, 1-D promotion, broadcast batch dims.
  const std::vector<std::array<Shape, 3>> cases = {
      {Shape{5, 7}, Shape{7, 3}, Shape{5, 3}},
      {Shape{33, 17}, Shape{17, 65}, Shape{33, 65}},
      {Shape{64, 784}, Shape{784, 256}, Shape{64, 256}},
      {Shape{7}, Shape{7, 3}, Shape{3}},
      {Shape{5, 7}, Shape{7}, Shape{5}},
      {Shape{7}, Shape{7}, Shape{}},
      {Shape{2, 3, 5, 7}, Shape{7, 4}, Shape{2, 3, 5, 4}},
      {Shape{3, 1, 5, 7}, Shape{1, 4, 7, 6}, Shape{3, 4, 5, 6}},
      {Shape{16, 64, 32}, Shape{16, 32, 64}, Shape{16, 64, 64}},
      {Shape{1, 5, 7}, Shape{3, 7, 2}, Shape{3, 5, 2}},
      {Shape{4, 1, 9}, Shape{4, 9, 1}, Shape{4, 1, 1}}};
  for (const auto &[lhsShape, rhsShape, outShape] : cases) {
    HostTensor lhs = randomTensor(DType::F32, lhsShape);
    HostTensor rhs = randomTensor(DType::F32, rhsShape);
    checkGenerated({"graph.matmul", {lhs, rhs}, {{DType::F32, outShape}}},
                   1e-5);
  }
}

TEST_CASE("generated gemm matches the interpreter", "[generated]") {
  for (auto [m, k, n] : {std::array<int64_t, 3>{33, 17, 65},
                         std::array<int64_t, 3>{1, 1, 1},
                         std::array<int64_t, 3>{64, 300, 10},
                         std::array<int64_t, 3>{5, 1, 8}}) {
    for (bool transA : {false, true}) {
      for (bool transB : {false, true}) {
        HostTensor a = randomTensor(DType::F32, transA ? Shape{k, m} : Shape{m, k});
        HostTensor b = randomTensor(DType::F32, transB ? Shape{n, k} : Shape{k, n});
        std::vector<Attr> attrs = {flag("trans_a", transA),
                                   flag("trans_b", transB)};
        INFO("m " << m << " k " << k << " n " << n << " transA " << transA
                  << " transB " << transB);
        checkGenerated({"graph.gemm", {a, b}, {{DType::F32, {m, n}}}, attrs},
                       1e-5);
        std::vector<Attr> scaled = attrs;
        scaled.push_back(real("alpha", 0.5));
        scaled.push_back(real("beta", 2.0));
        for (const Shape &cShape : {Shape{m, n}, Shape{n}, Shape{1, n},
                                    Shape{m, 1}, Shape{}}) {
          HostTensor c = randomTensor(DType::F32, cShape);
          checkGenerated({"graph.gemm", {a, b, c}, {{DType::F32, {m, n}}},
                          attrs},
                         1e-5);
          checkGenerated({"graph.gemm", {a, b, c}, {{DType::F32, {m, n}}},
                          scaled},
                         1e-5);
        }
        checkGenerated({"graph.gemm", {a, b}, {{DType::F32, {m, n}}},
                        {flag("trans_a", transA), flag("trans_b", transB),
                         real("alpha", -1.5)}},
                       1e-5);
      }
    }
  }
}

TEST_CASE("generated global_avg_pool, not, and, is_nan and pow match the "
          "interpreter",
          "[generated]") {
  for (const Shape &shape : {Shape{2, 3, 5, 7}, Shape{32, 512, 1, 1},
                             Shape{4, 3, 33}, Shape{1, 2, 3, 4, 5}}) {
    HostTensor x = randomTensor(DType::F32, shape);
    Shape out(shape.size(), 1);
    out[0] = shape[0];
    out[1] = shape[1];
    checkGenerated({"graph.global_avg_pool", {x}, {{DType::F32, out}}}, 1e-5);
  }
  HostTensor mask = randomIntegers(DType::I1, {3, 37}, 0, 1);
  checkGenerated({"graph.not", {mask}, {{DType::I1, {3, 37}}}}, 0.0);
  // Masks broadcast both ways (an attention mask and a padding mask).
  HostTensor rows = randomIntegers(DType::I1, {3, 1}, 0, 1);
  checkGenerated({"graph.and", {mask, rows}, {{DType::I1, {3, 37}}}}, 0.0);
  checkGenerated({"graph.and",
                  {randomIntegers(DType::I1, {4, 1, 33}, 0, 1),
                   randomIntegers(DType::I1, {5, 1}, 0, 1)},
                  {{DType::I1, {4, 5, 33}}}},
                 0.0);
  HostTensor values = randomTensor(DType::F32, {5, 33});
  for (size_t i : {0, 7, 31, 32, 100, 164})
    values.data[i] = std::nan("");
  values.data[1] = std::numeric_limits<double>::infinity();
  values.data[2] = -std::numeric_limits<double>::infinity();
  checkGenerated({"graph.is_nan", {values}, {{DType::I1, {5, 33}}}}, 0.0);
  // Negative bases with integral exponents, fractional exponents of
  // positive bases, broadcasting.
  HostTensor base = randomTensor(DType::F32, {5, 33}, -3.0, 3.0);
  HostTensor integral = randomIntegers(DType::F32, {33}, -3, 3);
  checkGenerated({"graph.pow", {base, integral}, {{DType::F32, {5, 33}}}});
  HostTensor positive = randomTensor(DType::F32, {5, 33}, 0.1, 4.0);
  HostTensor exponent = randomTensor(DType::F32, {5, 33}, -2.0, 2.0);
  checkGenerated({"graph.pow", {positive, exponent}, {{DType::F32, {5, 33}}}});
}

TEST_CASE("generated integer add, sub, mul, comparisons and where match the "
          "interpreter",
          "[generated]") {
  // Results that fit the type (and, for i64, a double: the harness holds
  // values as doubles, and the interpreter saturates where the runtime's
  // kernels wrap, so overflow has no common answer to test).
  for (DType dtype : {DType::I64, DType::I32}) {
    int64_t big = dtype == DType::I64 ? (int64_t(1) << 25) : (int64_t(1) << 15);
    HostTensor a = randomIntegers(dtype, {7, 33}, -big, big);
    HostTensor b = randomIntegers(dtype, {33}, -big, big);
    for (const char *op : {"add", "sub", "mul"})
      checkGenerated({std::string("graph.") + op, {a, b}, {{dtype, {7, 33}}}},
                     0.0);
  }
  // Comparisons (signed) and selects of integers.
  for (DType dtype : {DType::I64, DType::I32}) {
    HostTensor a = randomIntegers(dtype, {7, 33}, -3, 3);
    HostTensor b = randomIntegers(dtype, {33}, -3, 3);
    for (const char *op :
         {"equal", "less", "greater", "less_equal", "greater_equal"})
      checkGenerated(
          {std::string("graph.") + op, {a, b}, {{DType::I1, {7, 33}}}}, 0.0);
    HostTensor mask = randomIntegers(DType::I1, {7, 33}, 0, 1);
    checkGenerated({"graph.where", {mask, a, b}, {{dtype, {7, 33}}}}, 0.0);
  }
  HostTensor step = tensor(DType::I64, {}, {41});
  HostTensor one = tensor(DType::I64, {}, {1});
  checkGenerated({"graph.add", {step, one}, {{DType::I64, {}}}}, 0.0);
}
