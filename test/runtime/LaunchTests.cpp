//===- LaunchTests.cpp - descriptors, errors, coverage, determinism -------===//
#include "RuntimeTestSupport.h"
#include "WindowCases.h"

#include "lib/Runtime/Launch.h"

#include <catch2/catch.hpp>

#include <omp.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

using namespace trainc;
using namespace trainc::rttest;
using Catch::Matchers::Contains;

namespace {

/// The error of running `text` (empty when the kernel succeeded).
std::string errorOf(const std::string &text,
                    const std::vector<HostTensor> &inputs = {}) {
  RuntimeRun run = runDescriptor(text, inputs);
  return run.ok ? std::string() : run.error;
}

/// Every op mnemonic of the graph dialect's .td files.
std::set<std::string> graphOps() {
  std::set<std::string> ops;
  for (const char *file : {"GraphOps.td", "TrainingOps.td"}) {
    std::ifstream stream(std::string(TRAINC_SOURCE_DIR) + "/dialects/graph/" +
                         file);
    REQUIRE(stream);
    std::stringstream text;
    text << stream.rdbuf();
    std::string contents = text.str();
    std::regex def(R"re(def\s+Graph_\w+Op\s*:\s*Graph_\w+<"([a-z0-9_]+)")re");
    for (std::sregex_iterator it(contents.begin(), contents.end(), def), end;
         it != end; ++it)
      ops.insert("graph." + (*it)[1].str());
  }
  return ops;
}

} // namespace

TEST_CASE("every graph op has a reference kernel", "[launch]") {
  std::set<std::string> ops = graphOps();
  CHECK(ops.size() >= 68); // every def of the two .td files
  for (const std::string &op : ops) {
    INFO(op);
    // Dropout becomes graph.random_mask in autodiff; an all-reduce is
    // communication, the mpi backend's (bucketed by the kernel dialect).
    if (op == "graph.dropout" || op == "graph.all_reduce")
      CHECK_FALSE(rt::findKernel(op, "reference"));
    else
      CHECK(rt::findKernel(op, "reference"));
  }
  CHECK(rt::findKernel("runtime.copy", "reference"));
  for (const char *op :
       {"graph.matmul", "graph.gemm", "graph.conv", "graph.conv_backward_input",
        "graph.conv_backward_weight"})
    CHECK(rt::findKernel(op, "openblas"));
  for (const char *op :
       {"graph.matmul", "graph.gemm", "graph.conv", "graph.conv_backward_input",
        "graph.conv_backward_weight", "graph.max_pool", "graph.avg_pool",
        "graph.max_pool_backward", "graph.avg_pool_backward",
        "graph.batch_norm_training", "graph.batch_norm_inference",
        "graph.batch_norm_training_backward"})
    CHECK(rt::findKernel(op, "dnnl").prepare);
  // Nothing registered that the dialect does not define.
  for (const auto &[op, backend] : rt::registeredKernels()) {
    INFO(op << " on " << backend);
    CHECK((ops.count(op) || op == "runtime.copy"));
  }
  CHECK_FALSE(rt::findKernel("graph.conv", "cudnn"));
  CHECK_FALSE(rt::findKernel("graph.nope", "reference"));
}

TEST_CASE("malformed descriptors are parse errors", "[launch][errors]") {
  std::string error;
  CHECK_FALSE(rt::parseLaunch(nullptr, error));
  CHECK_THAT(error, Contains("null"));
  CHECK_FALSE(rt::parseLaunch("", error));
  CHECK_THAT(error, Contains("empty"));
  CHECK_FALSE(rt::parseLaunch("graph.add;backend", error));
  CHECK_THAT(error, Contains("graph.add"));
  CHECK_FALSE(rt::parseLaunch("graph.add;in=q32:2;out=f32:2", error));
  CHECK_THAT(error, Contains("q32:2"));
  CHECK_FALSE(rt::parseLaunch("graph.add;in=f32:2xa;out=f32:2", error));
  CHECK_THAT(error, Contains("2xa"));
  CHECK_FALSE(rt::parseLaunch("graph.add;in=f32:2x-1;out=f32:2", error));
  CHECK_FALSE(rt::parseLaunch("graph.add;in=f32:2x;out=f32:2", error));
  CHECK_FALSE(rt::parseLaunch("graph.add;in=f32;out=f32:2", error));
  // Sizes whose byte count overflows.
  CHECK_FALSE(rt::parseLaunch(
      "graph.neg;in=f32:4611686018427387904x2;out=f32:2", error));
  CHECK_FALSE(rt::parseLaunch("graph.neg;in=f32:99999999999999999999;out=f32:2",
                              error));
  CHECK_THAT(error, Contains("bad dimension"));
  auto scalar =
      rt::parseLaunch("graph.neg;backend=reference;in=f32:;out=f32:", error);
  REQUIRE(scalar);
  CHECK(scalar->inputs.at(0).shape.empty());
  CHECK(scalar->inputs.at(0).numElements() == 1);
}

TEST_CASE("kernels reject bad launches with a message naming the op",
          "[launch][errors]") {
  struct Bad {
    std::string descriptor, message;
  };
  std::vector<Bad> cases = {
      // Missing or malformed attributes.
      {"graph.conv;backend=reference;in=f32:1x1x4x4|f32:1x1x3x3;"
       "out=f32:1x1x2x2;pads=0,0,0,0;dilations=1,1;group=1",
       "missing attribute 'strides'"},
      {"graph.conv;backend=openblas;in=f32:1x1x4x4|f32:1x1x3x3;"
       "out=f32:1x1x2x2;strides=1,x;pads=0,0,0,0;dilations=1,1;group=1",
       "'strides' is not a list of integers"},
      {"graph.softmax;backend=reference;in=f32:2x3;out=f32:2x3",
       "missing attribute 'axis'"},
      {"graph.softmax;backend=reference;in=f32:2x3;out=f32:2x3;axis=2",
       "out of range"},
      {"graph.leaky_relu;backend=reference;in=f32:2;out=f32:2;alpha=abc",
       "not a number"},
      {"graph.max_pool;backend=reference;in=f32:1x1x4x4;out=f32:1x1x2x2;"
       "kernel_shape=2,2;strides=2,2;pads=0,0,0,0;dilations=1,1;ceil_mode=yes",
       "not a boolean"},
      {"graph.batch_norm_training;backend=reference;in=f32:2x3|f32:3|f32:3|"
       "f32:3|f32:3;out=f32:2x3|f32:3|f32:3;epsilon=1e-5",
       "missing attribute 'momentum'"},
      {"graph.cast;backend=reference;in=f32:2;out=i32:2", "'to'"},
      // Operand counts.
      {"graph.add;backend=reference;in=f32:2;out=f32:2", "expected 2 inputs"},
      {"graph.add;backend=reference;in=f32:2|f32:2;out=", "expected 1 outputs"},
      {"graph.conv;backend=openblas;in=f32:1x1x4x4|f32:1x1x3x3|f32:1|f32:1;"
       "out=f32:1x1x2x2;strides=1,1;pads=0,0,0,0;dilations=1,1;group=1",
       "expected 2..3 inputs"},
      {"graph.sgd_update;backend=reference;in=f32:2|f32:2|f32:|i64:;"
       "out=f32:2|f32:2",
       "momentum buffer"},
      {"graph.adam_update;backend=reference;in=f32:2|f32:2;out=f32:2",
       "inputs"},
      // Shapes and types.
      {"graph.add;backend=reference;in=f32:2x3|f32:4;out=f32:2x3",
       "do not broadcast"},
      {"graph.add;backend=reference;in=f32:2x3|f32:3;out=f32:3x2",
       "output 0 has shape [3, 2], expected [2, 3]"},
      {"graph.add;backend=reference;in=f32:3|i64:3;out=f32:3",
       "different element types"},
      {"graph.exp;backend=reference;in=i64:3;out=i64:3", "not supported"},
      {"graph.relu;backend=reference;in=f16:3;out=f16:3", "not supported"},
      {"graph.matmul;backend=openblas;in=f32:2x3|f32:4x5;out=f32:2x5",
       "contraction sizes differ"},
      {"graph.conv;backend=openblas;in=f32:1x4x4x4|f32:2x3x3x3;"
       "out=f32:1x2x2x2;strides=1,1;pads=0,0,0,0;dilations=1,1;group=2",
       "does not match input"},
      {"graph.conv;backend=reference;in=f32:1x1x2x2|f32:1x1x3x3;"
       "out=f32:1x1x1x1;strides=1,1;pads=0,0,0,0;dilations=1,1;group=1",
       "does not fit"},
      {"graph.max_pool;backend=reference;in=f32:1x1x4x4;out=f32:1x1x2x2;"
       "kernel_shape=2;strides=2,2;pads=0,0,0,0;dilations=1,1",
       "do not match 2 spatial dims"},
      {"graph.reshape;backend=reference;in=f32:2x3;out=f32:5;shape=5",
       "cannot reshape"},
      {"graph.transpose;backend=reference;in=f32:2x3;out=f32:3x2;perm=1,1",
       "not a permutation"},
      {"graph.slice;backend=reference;in=f32:4;out=f32:2;starts=3;ends=9;"
       "steps=1",
       "not normalized"},
      {"graph.random_mask;backend=reference;in=i64:|i64:;out=f32:4;shape=4;"
       "element_type=f32;ratio=1;stream=0",
       "ratio must be in [0, 1)"},
      {"graph.softmax_cross_entropy;backend=reference;in=f32:2x3|i64:3;out="
       "f32:",
       "do not match scores"},
      {"graph.softmax_cross_entropy;backend=reference;in=f32:2x3|i64:2;"
       "out=f32:;reduction=avg",
       "unknown reduction 'avg'"},
      {"graph.constant;backend=reference;in=;out=f32:3;value=1,2",
       "value has 2"},
      {"runtime.copy;backend=reference;in=f32:3;out=f32:4", "bytes"},
  };
  for (const Bad &bad : cases) {
    INFO(bad.descriptor);
    std::string error = errorOf(bad.descriptor);
    REQUIRE_FALSE(error.empty());
    std::string op = bad.descriptor.substr(0, bad.descriptor.find(';'));
    CHECK_THAT(error, Contains(op + ": "));
    CHECK_THAT(error, Contains(bad.message));
  }
}

TEST_CASE("kernels check data: indices, labels, integer division",
          "[launch][errors]") {
  HostTensor data = randomTensor(DType::F32, {4, 3});
  CHECK_THAT(errorOf("graph.gather;backend=reference;in=f32:4x3|i64:2;"
                     "out=f32:2x3;axis=0",
                     {data, tensor(DType::I64, {2}, {1, 4})}),
             Contains("index 4 is out of range"));
  CHECK_THAT(errorOf("graph.gather;backend=reference;in=f32:4x3|i32:1;"
                     "out=f32:1x3;axis=0",
                     {data, tensor(DType::I32, {1}, {-5})}),
             Contains("index -5"));
  CHECK_THAT(errorOf("graph.gather_backward;backend=reference;in=f32:2x3|i64:2;"
                     "out=f32:4x3;data_shape=4,3;axis=0",
                     {randomTensor(DType::F32, {2, 3}),
                      tensor(DType::I64, {2}, {0, 7})}),
             Contains("out of range"));
  CHECK_THAT(errorOf("graph.gather;backend=reference;in=f32:4x3|f32:2;"
                     "out=f32:2x3;axis=0",
                     {data, tensor(DType::F32, {2}, {0, 1})}),
             Contains("i32 or i64"));
  CHECK_THAT(errorOf("graph.nll_loss;backend=reference;in=f32:4x3|i64:4;"
                     "out=f32:",
                     {data, tensor(DType::I64, {4}, {0, 1, 3, 2})}),
             Contains("label 3 is not a class index"));
  CHECK(errorOf("graph.nll_loss;backend=reference;in=f32:4x3|i64:4;out=f32:;"
                "ignore_index=3",
                {data, tensor(DType::I64, {4}, {0, 1, 3, 2})})
            .empty());
  CHECK_THAT(errorOf("graph.div;backend=reference;in=i32:3|i32:3;out=i32:3",
                     {tensor(DType::I32, {3}, {1, 2, 3}),
                      tensor(DType::I32, {3}, {1, 0, 3})}),
             Contains("integer division by zero"));
}

TEST_CASE("every kernel survives a launch with nothing it expects",
          "[launch][errors]") {
  // No attributes, scalar operands: each kernel must fail cleanly (or
  // succeed) without touching memory it does not own.
  for (const auto &[op, backend] : rt::registeredKernels())
    for (int inputs : {0, 1, 2, 3, 6})
      for (int outputs : {0, 1, 3}) {
        std::string text = op + ";backend=" + backend + ";in=";
        for (int i = 0; i < inputs; ++i)
          text += std::string(i ? "|" : "") + (i == 1 ? "i64:" : "f32:");
        text += ";out=";
        for (int i = 0; i < outputs; ++i)
          text += std::string(i ? "|" : "") + "f32:";
        INFO(text);
        RuntimeRun run = runDescriptor(text, {});
        if (!run.ok)
          CHECK_THAT(run.error, Contains(op + ": "));
        CHECK_THAT(run.error, !Contains("past the end"));
      }
}

//===----------------------------------------------------------------------===//
// Determinism
//===----------------------------------------------------------------------===//

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);

TEST_CASE("conv and GEMM paths give the same bits on 1 and 2 threads",
          "[determinism]") {
  // Whoever set OpenBLAS's own threads, the kernels run it on one.
  openblas_set_num_threads(2);
  std::vector<ConvCase> cases = {
      {DType::F32,
       {16, 32, 14, 14},
       {64, 32, 3, 3},
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1},
      {DType::F32,
       {2, 8, 30, 30},
       {8, 4, 3, 3},
       {2, 1},
       {1, 1, 1, 1},
       {1, 1},
       2},
      {DType::F32,
       {1, 16, 40, 40},
       {16, 16, 1, 1},
       {1, 1},
       {0, 0, 0, 0},
       {1, 1},
       1},
      {DType::F32,
       {1, 3, 64, 64},
       {8, 3, 5, 5},
       {1, 1},
       {2, 2, 2, 2},
       {1, 1},
       1},
      // Small output planes: one GEMM over all images (ResNet-18's
      // last stages at CIFAR size).
      {DType::F32,
       {32, 128, 2, 2},
       {256, 128, 3, 3},
       {2, 2},
       {1, 1, 1, 1},
       {1, 1},
       1},
      {DType::F32,
       {32, 64, 2, 2},
       {64, 64, 3, 3},
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1},
  };
  for (const ConvCase &c : cases) {
    INFO(c.describe());
    for (const OpCase &op : c.ops())
      for (const char *backend : {"openblas", "reference"})
        checkDeterministic(op, backend);
  }
  for (const auto &[a, b, result] :
       std::vector<std::tuple<Shape, Shape, Shape>>{
           {{64, 784}, {784, 256}, {64, 256}},
           {{784, 64}, {64, 256}, {784, 256}},
           {{8, 128, 64}, {8, 64, 128}, {8, 128, 128}},
           {{2, 300, 200}, {200, 100}, {2, 300, 100}}})
    for (const char *backend : {"openblas", "reference"})
      checkDeterministic(
          {"graph.matmul",
           {randomTensor(DType::F32, a), randomTensor(DType::F32, b)},
           {{DType::F32, result}},
           {}},
          backend);
  checkDeterministic(
      {"graph.gemm",
       {randomTensor(DType::F32, {512, 64}),
        randomTensor(DType::F32, {256, 512}), randomTensor(DType::F32, {256})},
       {{DType::F32, {64, 256}}},
       {flag("trans_a", true), flag("trans_b", true)}},
      "openblas");
  CHECK(openblas_get_num_threads() == 1);
}

TEST_CASE("parallel reference kernels give the same bits on 1 and 2 threads",
          "[determinism]") {
  Shape shape = {64, 32, 28, 28};
  HostTensor x = randomTensor(DType::F32, shape);
  HostTensor c32 = randomTensor(DType::F32, {32}, 0.5, 1.5);
  checkDeterministic(
      {"graph.batch_norm_training",
       {x, c32, c32, c32, c32},
       {{DType::F32, shape}, {DType::F32, {32}}, {DType::F32, {32}}},
       {real("epsilon", 1e-5), real("momentum", 0.9)}},
      "reference");
  checkDeterministic(
      {"graph.batch_norm_training_backward",
       {x, x, c32},
       {{DType::F32, shape}, {DType::F32, {32}}, {DType::F32, {32}}},
       {real("epsilon", 1e-5)}},
      "reference");
  PoolCase pool{DType::F32, shape, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}};
  checkDeterministic({"graph.max_pool",
                      {x},
                      {{DType::F32, pool.output(true)}},
                      pool.attributes(true)},
                     "reference");
  checkDeterministic({"graph.max_pool_backward",
                      {randomTensor(DType::F32, pool.output(true)), x},
                      {{DType::F32, shape}},
                      pool.attributes(true)},
                     "reference");
  for (const Shape &axes : {Shape{0, 2, 3}, Shape{0, 1, 2, 3}, Shape{1}})
    checkDeterministic(
        {"graph.reduce_sum",
         {x},
         {{DType::F32, axes.size() == 4   ? Shape{1, 1, 1, 1}
                       : axes.size() == 3 ? Shape{1, 32, 1, 1}
                                          : Shape{64, 1, 28, 28}}},
         {ints("axes", axes)}},
        "reference");
  HostTensor logits = randomTensor(DType::F32, {4096, 100});
  HostTensor labels = randomIntegers(DType::I64, {4096}, 0, 99);
  checkDeterministic({"graph.softmax_cross_entropy",
                      {logits, labels},
                      {{DType::F32, {}}},
                      {real("label_smoothing", 0.1)}},
                     "reference");
  checkDeterministic({"graph.softmax_cross_entropy_backward",
                      {tensor(DType::F32, {}, {1.0}), logits, labels},
                      {{DType::F32, {4096, 100}}},
                      {}},
                     "reference");
  checkDeterministic({"graph.mse_loss", {x, x}, {{DType::F32, {}}}, {}},
                     "reference");
  HostTensor rows = randomTensor(DType::F32, {512, 256});
  checkDeterministic(
      {"graph.layer_norm_backward",
       {rows, rows, randomTensor(DType::F32, {256})},
       {{DType::F32, {512, 256}}, {DType::F32, {256}}, {DType::F32, {256}}},
       {integer("axis", 1), real("epsilon", 1e-5)}},
      "reference");
}

//===----------------------------------------------------------------------===//
// Speed (hidden: run with `trainc-runtime-tests [bench]`)
//===----------------------------------------------------------------------===//

TEST_CASE("conv speed, 64x32x14x14 with 64 3x3 filters", "[.][bench]") {
  ConvCase c{DType::F32, {64, 32, 14, 14}, {64, 32, 3, 3},
             {1, 1},     {1, 1, 1, 1},     {1, 1},
             1};
  double flops = 2.0 * 64 * 64 * 14 * 14 * 32 * 9;
  std::vector<OpCase> cases = c.ops();
  for (const OpCase &op : cases)
    for (const char *backend : {"openblas", "reference"})
      for (int threads : {1, 2}) {
        double seconds = timeKernel(
            op, backend, threads, std::string(backend) == "openblas" ? 20 : 2);
        WARN(op.op << " " << backend << ", " << threads
                   << " thread(s): " << seconds * 1e3 << " ms, "
                   << flops / seconds * 1e-9 << " GFLOP/s");
      }
}

TEST_CASE("reference kernels at LeNet sizes", "[.][bench]") {
  Shape shape = {64, 32, 28, 28};
  HostTensor x = randomTensor(DType::F32, shape);
  HostTensor bias = randomTensor(DType::F32, {1, 32, 1, 1});
  PoolCase pool{DType::F32, shape, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}};
  HostTensor logits = randomTensor(DType::F32, {64, 10});
  HostTensor labels = randomIntegers(DType::I64, {64}, 0, 9);
  HostTensor weights = randomTensor(DType::F32, {3136, 128});
  std::vector<OpCase> cases = {
      {"graph.relu", {x}, {{DType::F32, shape}}, {}},
      {"graph.add", {x, bias}, {{DType::F32, shape}}, {}},
      {"graph.mul", {x, x}, {{DType::F32, shape}}, {}},
      {"graph.greater", {x, x}, {{DType::I1, shape}}, {}},
      {"graph.reduce_sum",
       {x},
       {{DType::F32, {32}}},
       {ints("axes", {0, 2, 3}), flag("keepdims", false)}},
      {"graph.max_pool",
       {x},
       {{DType::F32, pool.output(true)}},
       pool.attributes(true)},
      {"graph.max_pool_backward",
       {randomTensor(DType::F32, pool.output(true)), x},
       {{DType::F32, shape}},
       pool.attributes(true)},
      {"graph.transpose",
       {x},
       {{DType::F32, {64, 28, 28, 32}}},
       {ints("perm", {0, 2, 3, 1})}},
      {"graph.softmax_cross_entropy", {logits, labels}, {{DType::F32, {}}}, {}},
      {"graph.sgd_update",
       {weights, weights, tensor(DType::F32, {}, {0.01}),
        tensor(DType::I64, {}, {3}), weights},
       {{DType::F32, {3136, 128}}, {DType::F32, {3136, 128}}},
       {real("momentum", 0.9)}},
  };
  for (const OpCase &op : cases)
    for (int threads : {1, 2}) {
      double seconds = timeKernel(op, "reference", threads, 10);
      WARN(op.op << ", " << threads << " thread(s): " << seconds * 1e3
                 << " ms");
    }
}

TEST_CASE("GEMM speed at the MLP's sizes", "[.][bench]") {
  struct Product {
    int64_t m, k, n;
    bool transA, transB;
  };
  for (const Product &p :
       {Product{64, 784, 256, false, true}, Product{256, 64, 784, true, false},
        Product{64, 256, 784, false, false},
        Product{1024, 1024, 1024, false, false}}) {
    HostTensor a =
        randomTensor(DType::F32, p.transA ? Shape{p.k, p.m} : Shape{p.m, p.k});
    HostTensor b =
        randomTensor(DType::F32, p.transB ? Shape{p.n, p.k} : Shape{p.k, p.n});
    OpCase op{"graph.gemm",
              {a, b},
              {{DType::F32, {p.m, p.n}}},
              {flag("trans_a", p.transA), flag("trans_b", p.transB)}};
    double flops = 2.0 * p.m * p.n * p.k;
    for (int threads : {1, 2}) {
      double seconds = timeKernel(op, "openblas", threads, 20);
      WARN("gemm " << p.m << "x" << p.k << "x" << p.n << ", " << threads
                   << " thread(s): " << seconds * 1e3 << " ms, "
                   << flops / seconds * 1e-9 << " GFLOP/s");
    }
  }
}
