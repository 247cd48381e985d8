//===- NeuralTests.cpp - matmul, gemm, conv, pooling, normalization -------===//
#include "RuntimeTestSupport.h"
#include "WindowCases.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace trainc;
using namespace trainc::rttest;

TEST_CASE("matmul with numpy semantics on both backends", "[neural]") {
  struct Case {
    Shape lhs, rhs, result;
  };
  std::vector<Case> cases = {
      {{3, 4}, {4, 5}, {3, 5}},
      {{4}, {4, 5}, {5}},
      {{3, 4}, {4}, {3}},
      {{4}, {4}, {}},
      {{2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}},
      {{7, 3, 4}, {4, 6}, {7, 3, 6}},
      {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}},
      {{3, 0}, {0, 4}, {3, 4}},
      {{64, 784}, {784, 256}, {64, 256}},
      {{256, 64}, {64, 300}, {256, 300}},
  };
  for (DType dtype : {DType::F32, DType::F64})
    for (const Case &c : cases) {
      OpCase op{"graph.matmul",
                {randomTensor(dtype, c.lhs), randomTensor(dtype, c.rhs)},
                {{dtype, c.result}},
                {}};
      // f32 round-off grows like the square root of the number of terms
      // summed. OpenBLAS's SkylakeX kernel (on a Sapphire Rapids) was 1.04x
      // a fixed 1e-5 away on one of the 16384 sums of 784 products, and
      // within 1e-7 times the sum of the terms' magnitudes, as f32 may be.
      double terms = static_cast<double>(c.lhs.back());
      double tolerance = 1e-5 * std::max(1.0, std::sqrt(terms / 64));
      // dnnl: f32, no empty operands.
      if (dtype == DType::F32 && op.inputs[0].numElements() > 0 &&
          op.inputs[1].numElements() > 0)
        checkOp(op, {"reference", "openblas", "dnnl"}, tolerance);
      else
        checkOp(op, {"reference", "openblas"}, tolerance);
    }
}

namespace {
/// `x` with its last two dims swapped.
HostTensor swapLastTwo(const HostTensor &x) {
  HostTensor y = x;
  size_t rank = x.shape.size();
  int64_t rows = x.shape[rank - 2], columns = x.shape[rank - 1];
  std::swap(y.shape[rank - 2], y.shape[rank - 1]);
  int64_t plane = rows * columns;
  for (int64_t p = 0; p < x.numElements() / std::max<int64_t>(1, plane); ++p)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < columns; ++j)
        y.data[p * plane + j * rows + i] = x.data[p * plane + i * columns + j];
  return y;
}
} // namespace

TEST_CASE("matmul reads operands stored transposed (lhs_perm, rhs_perm)",
          "[neural]") {
  // What --trainc-fold-transposes leaves: the product reads a transpose's
  // input. Shared rhs (one folded GEMM), batches below and above 4 (the
  // two loops), 2-D.
  struct Case {
    Shape lhs, rhs, result;
  };
  for (const Case &c : std::vector<Case>{{{5, 7}, {7, 3}, {5, 3}},
                                          {{2, 5, 7}, {2, 7, 3}, {2, 5, 3}},
                                          {{6, 5, 7}, {6, 7, 3}, {6, 5, 3}},
                                          {{6, 5, 7}, {7, 3}, {6, 5, 3}}})
    for (bool transposeLhs : {false, true})
      for (bool transposeRhs : {false, true}) {
        HostTensor lhs = randomTensor(DType::F32, c.lhs);
        HostTensor rhs = randomTensor(DType::F32, c.rhs);
        RuntimeRun expected =
            runKernel({"graph.matmul", {lhs, rhs}, {{DType::F32, c.result}}},
                      "reference");
        REQUIRE(expected.ok);
        OpCase stored{"graph.matmul",
                      {transposeLhs ? swapLastTwo(lhs) : lhs,
                       transposeRhs ? swapLastTwo(rhs) : rhs},
                      {{DType::F32, c.result}}};
        auto perm = [](size_t rank) {
          Shape p;
          for (size_t d = 0; d < rank; ++d)
            p.push_back(int64_t(d));
          std::swap(p[rank - 2], p[rank - 1]);
          return p;
        };
        if (transposeLhs)
          stored.attributes.push_back(ints("lhs_perm", perm(c.lhs.size())));
        if (transposeRhs)
          stored.attributes.push_back(ints("rhs_perm", perm(c.rhs.size())));
        for (const char *backend : {"openblas", "dnnl"}) {
          INFO(backend << " lhs " << formatShape(c.lhs) << " rhs "
                       << formatShape(c.rhs) << " transposed " << transposeLhs
                       << transposeRhs);
          RuntimeRun actual = runKernel(stored, backend);
          REQUIRE(actual.ok);
          checkClose(actual.outputs[0], expected.outputs[0], 1e-5);
        }
      }
  // OpenBLAS reads transposes of the last two dims only.
  OpCase batchMoved{"graph.matmul",
                    {randomTensor(DType::F32, {2, 5, 7}),
                     randomTensor(DType::F32, {2, 7, 3})},
                    {{DType::F32, {2, 5, 3}}},
                    {ints("lhs_perm", {1, 0, 2})}};
  RuntimeRun refused = runKernel(batchMoved, "openblas");
  CHECK_FALSE(refused.ok);
  CHECK(refused.error.find("lhs_perm must swap the last two dims") !=
        std::string::npos);
}

TEST_CASE("dnnl matmul adds a bias given as a third input", "[neural]") {
  // What --trainc-fuse-activations leaves of matmul + add: the bias along
  // the last dim, [N] or [1, N], on one product, a batched one and one
  // read transposed; the reference product plus the bias on the host.
  struct Case {
    Shape lhs, rhs, bias;
    bool rhsTransposed;
  };
  for (const Case &c : std::vector<Case>{{{5, 7}, {7, 3}, {3}, false},
                                         {{4, 5, 7}, {7, 6}, {1, 6}, false},
                                         {{2, 5, 7}, {2, 7, 3}, {3}, false},
                                         {{6, 5, 7}, {3, 7}, {3}, true}}) {
    HostTensor lhs = randomTensor(DType::F32, c.lhs);
    HostTensor rhs = randomTensor(DType::F32, c.rhs);
    HostTensor bias = randomTensor(DType::F32, c.bias);
    HostTensor logicalRhs = c.rhsTransposed ? swapLastTwo(rhs) : rhs;
    Shape result = c.lhs;
    result.back() = logicalRhs.shape.back();
    RuntimeRun expected =
        runKernel({"graph.matmul", {lhs, logicalRhs}, {{DType::F32, result}}},
                  "reference");
    REQUIRE(expected.ok);
    HostTensor withBias = expected.outputs[0];
    int64_t n = result.back();
    for (int64_t i = 0; i < withBias.numElements(); ++i)
      withBias.data[i] = float(withBias.data[i] + bias.data[i % n]);
    OpCase fused{"graph.matmul", {lhs, rhs, bias}, {{DType::F32, result}}};
    if (c.rhsTransposed)
      fused.attributes.push_back(ints("rhs_perm", {1, 0}));
    INFO("lhs " << formatShape(c.lhs) << " rhs " << formatShape(c.rhs));
    RuntimeRun actual = runKernel(fused, "dnnl");
    REQUIRE(actual.ok);
    checkClose(actual.outputs[0], withBias, 1e-5);
  }
  OpCase wrongBias{"graph.matmul",
                   {randomTensor(DType::F32, {5, 7}),
                    randomTensor(DType::F32, {7, 3}),
                    randomTensor(DType::F32, {5})},
                   {{DType::F32, {5, 3}}}};
  RuntimeRun refused = runKernel(wrongBias, "dnnl");
  CHECK_FALSE(refused.ok);
  CHECK(refused.error.find("bias") != std::string::npos);
}

TEST_CASE("gemm with transposes, alpha, beta and a broadcast c", "[neural]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (bool transA : {false, true})
      for (bool transB : {false, true})
        for (const Shape &cShape :
             {Shape{}, Shape{6}, Shape{5, 1}, Shape{5, 6}, Shape{1}}) {
          int64_t m = 5, k = 7, n = 6;
          HostTensor a =
              randomTensor(dtype, transA ? Shape{k, m} : Shape{m, k});
          HostTensor b =
              randomTensor(dtype, transB ? Shape{n, k} : Shape{k, n});
          std::vector<Attr> attributes = {
              flag("trans_a", transA), flag("trans_b", transB),
              real("alpha", 0.75), real("beta", -1.5)};
          OpCase op{"graph.gemm", {a, b}, {{dtype, {m, n}}}, attributes};
          if (!cShape.empty() || transA) // a case without c
            op.inputs.push_back(randomTensor(dtype, cShape));
          checkOp(op, dtype == DType::F32
                          ? std::vector<std::string>{"reference", "openblas",
                                                     "dnnl"}
                          : std::vector<std::string>{"reference", "openblas"});
        }
  // alpha = beta = 1 with a row c: dnnl adds c as its bias.
  for (const Shape &cShape : {Shape{6}, Shape{1, 6}, Shape{1}, Shape{}})
    for (bool transB : {false, true}) {
      HostTensor a = randomTensor(DType::F32, {5, 7});
      HostTensor b = randomTensor(DType::F32, transB ? Shape{6, 7} : Shape{7, 6});
      checkOp({"graph.gemm",
               {a, b, randomTensor(DType::F32, cShape)},
               {{DType::F32, {5, 6}}},
               {flag("trans_b", transB)}},
              {"reference", "openblas", "dnnl"});
        }
  // Defaults (alpha = beta = 1, no transposes) at the MLP's size.
  HostTensor x = randomTensor(DType::F32, {64, 784});
  HostTensor w = randomTensor(DType::F32, {256, 784});
  HostTensor bias = randomTensor(DType::F32, {256});
  checkOp({"graph.gemm",
           {x, w, bias},
           {{DType::F32, {64, 256}}},
           {flag("trans_b", true)}},
          {"reference", "openblas", "dnnl"});
}

TEST_CASE("conv in 1, 2 and 3 dims with strides, pads, dilations and groups",
          "[neural][conv]") {
  for (const ConvCase &c : convCases())
    for (bool bias : {true, false}) {
      INFO(c.describe() << (bias ? " with bias" : ""));
      OpCase op{
          "graph.conv",
          {randomTensor(c.dtype, c.input), randomTensor(c.dtype, c.weight)},
          {{c.dtype, c.output()}},
          c.attributes()};
      if (bias)
        op.inputs.push_back(randomTensor(c.dtype, {c.weight[0]}));
      checkOp(op, c.backends());
    }
}

TEST_CASE("conv_matrix and its gradient over small planes", "[neural][conv]") {
  // (weight, input plane, output plane, strides, pads): 3x3 taps with
  // padding 1 over 2x2 planes, stride 2 to one position, 1-d, 3-d, and a
  // 3x4 kernel over a 2x3 plane.
  struct MatrixCase {
    Shape weight, input, output, strides, pads;
  };
  for (const MatrixCase &m :
       {MatrixCase{{5, 3, 3, 3}, {2, 2}, {2, 2}, {1, 1}, {1, 1}},
        MatrixCase{{4, 3, 3, 3}, {2, 2}, {1, 1}, {2, 2}, {1, 1}},
        MatrixCase{{3, 2, 5}, {3}, {2}, {2}, {2}},
        MatrixCase{{2, 3, 3, 3, 3}, {2, 2, 1}, {2, 2, 1}, {1, 1, 1}, {1, 1, 1}},
        MatrixCase{{2, 2, 3, 4}, {2, 3}, {2, 2}, {1, 1}, {1, 1}}})
    for (DType dtype : {DType::F32, DType::F64}) {
      INFO("weight " << formatShape(m.weight) << " over "
                     << formatShape(m.input));
      int64_t outputs = 1, inputs = 1;
      for (size_t d = 0; d < m.input.size(); ++d) {
        outputs *= m.output[d];
        inputs *= m.input[d];
      }
      Shape matrix = {m.weight[0] * outputs, m.weight[1] * inputs};
      std::vector<Attr> attributes = {
          ints("input_spatial", m.input), ints("output_spatial", m.output),
          ints("strides", m.strides), ints("pads", m.pads)};
      checkOp({"graph.conv_matrix",
               {randomTensor(dtype, m.weight)},
               {{dtype, matrix}},
               attributes});
      attributes.push_back(ints("weight_shape", m.weight));
      checkOp({"graph.conv_matrix_backward",
               {randomTensor(dtype, matrix)},
               {{dtype, m.weight}},
               attributes});
    }
}

TEST_CASE("max_pool and avg_pool with pads, dilations and ceil_mode",
          "[neural][pool]") {
  for (const PoolCase &c : poolCases()) {
    INFO(c.describe());
    HostTensor x = randomTensor(c.dtype, c.input, -3.0, 3.0);
    checkOp({"graph.max_pool",
             {x},
             {{c.dtype, c.output(true)}},
             c.attributes(true)},
            c.backends(true));
    if (c.undilated())
      checkOp({"graph.avg_pool",
               {x},
               {{c.dtype, c.output(false)}},
               c.attributes(false)},
              c.backends(false));
    // Ties: the first maximum wins (visible only in the backward pass, but
    // the forward must not mind).
    HostTensor ties = randomIntegers(c.dtype, c.input, -1, 1);
    checkOp({"graph.max_pool",
             {ties},
             {{c.dtype, c.output(true)}},
             c.attributes(true)},
            c.backends(true));
  }
}

TEST_CASE("global_avg_pool", "[neural][pool]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (const Shape &shape :
         {Shape{2, 3, 5}, Shape{4, 8, 7, 7}, Shape{2, 3, 2, 3, 4}}) {
      Shape result(shape.size(), 1);
      result[0] = shape[0];
      result[1] = shape[1];
      checkOp({"graph.global_avg_pool",
               {randomTensor(dtype, shape)},
               {{dtype, result}},
               {}});
    }
}

TEST_CASE("batch norm in training and inference mode", "[neural][norm]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (const Shape &shape : {Shape{8, 3}, Shape{4, 5, 6}, Shape{6, 4, 5, 5},
                               Shape{64, 16, 14, 14}}) {
      int64_t c = shape[1];
      HostTensor x = randomTensor(dtype, shape, -2.0, 3.0);
      HostTensor scale = randomTensor(dtype, {c}, 0.5, 1.5);
      HostTensor bias = randomTensor(dtype, {c});
      HostTensor mean = randomTensor(dtype, {c});
      HostTensor var = randomTensor(dtype, {c}, 0.5, 2.0);
      std::vector<std::string> backends = {"reference"};
      if (dtype == DType::F32)
        backends.push_back("dnnl");
      checkOp({"graph.batch_norm_training",
               {x, scale, bias, mean, var},
               {{dtype, shape}, {dtype, {c}}, {dtype, {c}}},
               {real("epsilon", 1e-5), real("momentum", 0.9)}},
              backends);
      checkOp({"graph.batch_norm_inference",
               {x, scale, bias, mean, var},
               {{dtype, shape}},
               {real("epsilon", 1e-3)}},
              backends);
    }
}

TEST_CASE("layer norm over trailing dims, with and without bias",
          "[neural][norm]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (const Shape &shape : {Shape{4, 6}, Shape{3, 4, 5}, Shape{32, 20, 64}})
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size());
           ++axis) {
        Shape normalized(shape.begin() + axis, shape.end());
        HostTensor x = randomTensor(dtype, shape, -2.0, 3.0);
        HostTensor scale = randomTensor(dtype, normalized, 0.5, 1.5);
        std::vector<Attr> attributes = {integer("axis", axis),
                                        real("epsilon", 1e-5)};
        checkOp({"graph.layer_norm", {x, scale}, {{dtype, shape}}, attributes});
        checkOp({"graph.layer_norm",
                 {x, scale, randomTensor(dtype, normalized)},
                 {{dtype, shape}},
                 attributes});
      }
}
