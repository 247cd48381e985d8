//===- DnnlTests.cpp - the oneDNN backend: refusals, threads, speed -------===//
//
// The dnnl kernels are compared with the interpreter in NeuralTests.cpp and
// BackwardTests.cpp, next to the other backends. Here: what they refuse
// (the dispatch predicates reject the same launches), their determinism,
// and a benchmark against OpenBLAS at the reference models' shapes.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestSupport.h"
#include "WindowCases.h"

#include <catch2/catch.hpp>

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <map>

using namespace trainc;
using namespace trainc::rttest;
using Catch::Matchers::Contains;

namespace {

/// Whether oneDNN 2.6 runs bf16 primitives on this CPU: with AVX-512 and
/// up only (on AVX2-only CPUs, such as a Zen 3, or under
/// DNNL_MAX_CPU_ISA=AVX2, it creates none, and the dispatch never chooses
/// dnnl for bf16 there).
bool dnnlRunsBf16() {
  auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (isa & core) == core;
}

/// A batch-norm training step's three kernels on [N, C, ...].
std::vector<OpCase> batchNormOps(const Shape &shape) {
  int64_t c = shape[1];
  HostTensor x = randomTensor(DType::F32, shape, -2.0, 3.0);
  HostTensor scale = randomTensor(DType::F32, {c}, 0.5, 1.5);
  HostTensor bias = randomTensor(DType::F32, {c});
  HostTensor var = randomTensor(DType::F32, {c}, 0.5, 2.0);
  return {{"graph.batch_norm_training",
           {x, scale, bias, bias, var},
           {{DType::F32, shape}, {DType::F32, {c}}, {DType::F32, {c}}},
           {real("epsilon", 1e-5), real("momentum", 0.9)}},
          {"graph.batch_norm_inference",
           {x, scale, bias, bias, var},
           {{DType::F32, shape}},
           {real("epsilon", 1e-5)}},
          {"graph.batch_norm_training_backward",
           {randomTensor(DType::F32, shape), x, scale},
           {{DType::F32, shape}, {DType::F32, {c}}, {DType::F32, {c}}},
           {real("epsilon", 1e-5)}}};
}

/// max_pool and its gradient.
std::vector<OpCase> maxPoolOps(const PoolCase &c) {
  HostTensor x = randomTensor(c.dtype, c.input);
  return {{"graph.max_pool", {x}, {{c.dtype, c.output(true)}},
           c.attributes(true)},
          {"graph.max_pool_backward",
           {randomTensor(c.dtype, c.output(true)), x},
           {{c.dtype, c.input}},
           c.attributes(true)}};
}

OpCase gemm(int64_t m, int64_t k, int64_t n, bool transA, bool transB,
            bool withC) {
  OpCase op{"graph.gemm",
            {randomTensor(DType::F32, transA ? Shape{k, m} : Shape{m, k}),
             randomTensor(DType::F32, transB ? Shape{n, k} : Shape{k, n})},
            {{DType::F32, {m, n}}},
            {flag("trans_a", transA), flag("trans_b", transB)}};
  if (withC)
    op.inputs.push_back(randomTensor(DType::F32, {n}));
  return op;
}

OpCase matmul(const Shape &a, const Shape &b, const Shape &result) {
  return {"graph.matmul",
          {randomTensor(DType::F32, a), randomTensor(DType::F32, b)},
          {{DType::F32, result}},
          {}};
}

} // namespace

TEST_CASE("dnnl refuses what oneDNN would compute differently",
          "[dnnl][errors]") {
  // f64, 4 spatial dims, a max-pool window in the padding only, an average
  // counting the padding past the end padding (ceil_mode), empty tensors.
  PoolCase paddingOnly{
      DType::F32, {1, 1, 3, 3}, {2, 2}, {1, 1}, {2, 2, 2, 2}, {1, 1}};
  PoolCase pastEnd{DType::F32, {1, 2, 6, 6}, {3, 3}, {2, 2},
                   {0, 0, 0, 0}, {1, 1}, true, true};
  HostTensor x = randomTensor(DType::F32, paddingOnly.input);
  std::vector<std::pair<OpCase, std::string>> cases = {
      {ConvCase{DType::F64, {2, 3, 5, 5}, {4, 3, 3, 3}, {1, 1},
                {1, 1, 1, 1}, {1, 1}, 1}.ops()[0],
       "f64 is not supported by the dnnl backend"},
      {ConvCase{DType::F32, {1, 2, 3, 3, 3, 3}, {2, 2, 1, 1, 1, 1},
                {1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 1}, 1}.ops()[2],
       "1 to 3 spatial dims"},
      {{"graph.max_pool",
        {x},
        {{DType::F32, paddingOnly.output(true)}},
        paddingOnly.attributes(true)},
       "entirely in the padding"},
      {{"graph.avg_pool",
        {randomTensor(DType::F32, pastEnd.input)},
        {{DType::F32, pastEnd.output(false)}},
        pastEnd.attributes(false)},
       "crosses the end padding"},
      {matmul({3, 0}, {0, 4}, {3, 4}), "no empty tensors"},
  };
  for (const auto &[op, message] : cases) {
    INFO(descriptor(op, "dnnl"));
    RuntimeRun run = runKernel(op, "dnnl");
    CHECK_FALSE(run.ok);
    CHECK_THAT(run.error, Contains(op.op + ": ") && Contains(message));
    // The reference kernel runs them all.
    CHECK(runKernel(op, "reference").ok);
  }
}

TEST_CASE("dnnl max pooling outputs NaN where the reference does",
          "[dnnl][pool]") {
  // oneDNN never selects NaN; the dnnl kernel's host step sets the windows
  // that hold one to NaN, as the reference kernel (and PyTorch) output
  // them. Overlapping, padded 3x3/2 windows (ResNet's stem pool), f32 and
  // bf16, NaN at a corner, an edge and inside.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {DType::F32, DType::BF16}) {
    if (dtype == DType::BF16 && !dnnlRunsBf16()) {
      WARN("bf16 skipped: oneDNN runs no bf16 primitives on this CPU");
      continue;
    }
    PoolCase c{dtype, {2, 3, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}};
    HostTensor x = randomTensor(dtype, c.input);
    for (int64_t at : {0L, 9L * 4 + 8, 81L + 9 * 4 + 4, 5L * 81 + 80})
      x.data[at] = nan;
    OpCase op{
        "graph.max_pool", {x}, {{dtype, c.output(true)}}, c.attributes(true)};
    INFO(descriptor(op, "dnnl"));
    // The reference kernel runs f32 (a max of bf16 values is one of them).
    OpCase f32 = op;
    f32.inputs[0].dtype = f32.results[0].dtype = DType::F32;
    RuntimeRun reference = runKernel(f32, "reference");
    RuntimeRun dnnl = runKernel(op, "dnnl");
    REQUIRE(reference.ok);
    REQUIRE(dnnl.ok);
    const std::vector<double> &want = reference.outputs[0].data;
    const std::vector<double> &got = dnnl.outputs[0].data;
    REQUIRE(want.size() == got.size());
    int64_t nans = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("output " << i);
      nans += std::isnan(want[i]);
      CHECK(std::isnan(got[i]) == std::isnan(want[i]));
      if (!std::isnan(want[i]))
        CHECK(got[i] == want[i]);
    }
    CHECK(nans >= 4);
  }
}

TEST_CASE("dnnl bf16 convolution gradients agree with the f32 reference",
          "[dnnl][conv][bf16]") {
  // bf16 operands (exact in f32), the reference on the same values in f32;
  // dnnl sums in f32 and rounds each result once to bf16 (8 bits). One
  // group with output planes of at most 16 positions: the weight gradient
  // is one matmul over gathered operands (all taps live; 1 and 4 of 9
  // live, zeroed elsewhere; 1-D; a 1x1 window). Larger planes and groups:
  // oneDNN's direct convolutions; a 3-channel stem's weight gradient on
  // AMX: f32 on widened operands.
  if (!dnnlRunsBf16()) {
    WARN("skipped: oneDNN runs no bf16 primitives on this CPU");
    return;
  }
  using D = DType;
  std::vector<ConvCase> cases = {
      {D::BF16, {8, 16, 2, 2}, {24, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::BF16, {6, 8, 4, 4}, {16, 8, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::BF16, {4, 8, 1, 1}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::BF16, {3, 6, 2, 2}, {8, 6, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::BF16, {4, 6, 3}, {5, 6, 3}, {1}, {1, 1}, {1}, 1},
      {D::BF16, {4, 8, 2, 3}, {8, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
      {D::BF16, {2, 8, 8, 8}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {D::BF16, {4, 8, 2, 2}, {8, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
      {D::BF16, {4, 3, 16, 16}, {8, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1},
  };
  for (const ConvCase &c : cases)
    for (const OpCase &op : c.ops(false)) {
      INFO(c.describe() << "\n" << descriptor(op, "dnnl"));
      OpCase f32 = op;
      for (HostTensor &input : f32.inputs)
        input.dtype = D::F32;
      f32.results[0].dtype = D::F32;
      RuntimeRun reference = runKernel(f32, "reference");
      RuntimeRun dnnl = runKernel(op, "dnnl");
      REQUIRE(reference.ok);
      INFO(dnnl.error);
      REQUIRE(dnnl.ok);
      HostTensor want = reference.outputs[0];
      want.dtype = D::BF16;
      checkClose(dnnl.outputs[0], want, 1e-2);
    }
}

TEST_CASE("dnnl bf16 convolutions over small planes: bias and a fused ReLU",
          "[dnnl][conv][bf16]") {
  // Output planes of at most 4 positions run as one matmul over all
  // images (batchedConv): its bias is a broadcast row and the ReLU of
  // --trainc-fuse-activations a post-op, applied after the bias. All taps
  // live, 1 of 9 live, and stride 2.
  if (!dnnlRunsBf16()) {
    WARN("skipped: oneDNN runs no bf16 primitives on this CPU");
    return;
  }
  using D = DType;
  for (const ConvCase &c : {ConvCase{D::BF16,
                                     {8, 16, 2, 2},
                                     {24, 16, 3, 3},
                                     {1, 1},
                                     {1, 1, 1, 1},
                                     {1, 1},
                                     1},
                            ConvCase{D::BF16,
                                     {4, 8, 1, 1},
                                     {16, 8, 3, 3},
                                     {1, 1},
                                     {1, 1, 1, 1},
                                     {1, 1},
                                     1},
                            ConvCase{D::BF16,
                                     {3, 6, 4, 4},
                                     {8, 6, 3, 3},
                                     {2, 2},
                                     {1, 1, 1, 1},
                                     {1, 1},
                                     1}})
    for (bool relu : {false, true}) {
      OpCase op = c.ops(true)[0];
      if (relu)
        op.attributes.push_back(flag("post_relu", true));
      OpCase f32 = c.ops(true)[0];
      for (size_t i = 0; i < f32.inputs.size(); ++i) {
        f32.inputs[i] = op.inputs[i];
        f32.inputs[i].dtype = D::F32;
      }
      f32.results[0].dtype = D::F32;
      INFO(c.describe() << (relu ? " + relu" : "") << "\n"
                        << descriptor(op, "dnnl"));
      RuntimeRun reference = runKernel(f32, "reference");
      RuntimeRun dnnl = runKernel(op, "dnnl");
      REQUIRE(reference.ok);
      INFO(dnnl.error);
      REQUIRE(dnnl.ok);
      HostTensor want = reference.outputs[0];
      want.dtype = D::BF16;
      if (relu)
        for (double &value : want.data)
          value = std::max(value, 0.0);
      checkClose(dnnl.outputs[0], want, 1e-2);
    }
}

TEST_CASE("dnnl kernels give the same bits every run at one thread count",
          "[dnnl][determinism]") {
  std::vector<OpCase> ops;
  for (const ConvCase &c :
       {ConvCase{DType::F32, {16, 32, 14, 14}, {64, 32, 3, 3}, {1, 1},
                 {1, 1, 1, 1}, {1, 1}, 1},
        ConvCase{DType::F32, {8, 3, 32, 32}, {16, 3, 7, 7}, {2, 2},
                 {3, 3, 3, 3}, {1, 1}, 1},
        ConvCase{DType::F32, {4, 8, 30, 30}, {8, 4, 3, 3}, {2, 1},
                 {1, 1, 1, 1}, {1, 1}, 2}})
    for (const OpCase &op : c.ops())
      ops.push_back(op);
  for (const OpCase &op : batchNormOps({32, 16, 14, 14}))
    ops.push_back(op);
  for (const OpCase &op : maxPoolOps({DType::F32, {8, 32, 28, 28}, {3, 3},
                                      {2, 2}, {1, 1, 1, 1}, {1, 1}}))
    ops.push_back(op);
  ops.push_back(gemm(64, 784, 256, false, true, true));
  ops.push_back(gemm(256, 64, 784, true, false, false));
  ops.push_back(matmul({8, 128, 64}, {8, 64, 128}, {8, 128, 128}));
  int saved = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (const OpCase &op : ops) {
      INFO(descriptor(op, "dnnl") << " on " << threads << " thread(s)");
      // Each run prepares its own primitives, as each session does.
      RuntimeRun first = runKernel(op, "dnnl");
      RuntimeRun second = runKernel(op, "dnnl");
      REQUIRE(first.ok);
      REQUIRE(second.ok);
      for (size_t i = 0; i < first.bytes.size(); ++i)
        CHECK(first.bytes[i] == second.bytes[i]);
    }
  }
  omp_set_num_threads(saved);
}

//===----------------------------------------------------------------------===//
// Speed (hidden: run with `trainc-runtime-tests "[dnnl][bench]"`)
//===----------------------------------------------------------------------===//

TEST_CASE("dnnl against OpenBLAS and the reference at the models' shapes",
          "[.][bench][dnnl]") {
  struct Case {
    std::string name;
    OpCase op;
    std::vector<std::string> backends;
  };
  std::vector<Case> cases;
  auto addConv = [&](const std::string &name, const ConvCase &c) {
    const char *suffix[] = {" fwd", " bwd-data", " bwd-weights"};
    std::vector<OpCase> ops = c.ops();
    for (size_t i = 0; i < ops.size(); ++i)
      cases.push_back({name + suffix[i], ops[i], {"openblas", "dnnl"}});
  };
  using D = DType;
  addConv("cnn conv1 64x1x28x28 k3", {D::F32, {64, 1, 28, 28}, {32, 1, 3, 3},
                                      {1, 1}, {1, 1, 1, 1}, {1, 1}, 1});
  addConv("cnn conv2 64x32x14x14 k3", {D::F32, {64, 32, 14, 14},
                                       {64, 32, 3, 3}, {1, 1}, {1, 1, 1, 1},
                                       {1, 1}, 1});
  addConv("cnn_bn conv2 8x8x16x16 k3s2", {D::F32, {8, 8, 16, 16},
                                         {16, 8, 3, 3}, {2, 2}, {1, 1, 1, 1},
                                         {1, 1}, 1});
  addConv("resnet18 stem 32x3x32x32 k7s2", {D::F32, {32, 3, 32, 32},
                                            {64, 3, 7, 7}, {2, 2},
                                            {3, 3, 3, 3}, {1, 1}, 1});
  addConv("resnet18 32x64x8x8 k3", {D::F32, {32, 64, 8, 8}, {64, 64, 3, 3},
                                    {1, 1}, {1, 1, 1, 1}, {1, 1}, 1});
  addConv("resnet18 32x128x4x4 k3", {D::F32, {32, 128, 4, 4},
                                     {128, 128, 3, 3}, {1, 1}, {1, 1, 1, 1},
                                     {1, 1}, 1});
  addConv("resnet18 32x256x2x2 k3", {D::F32, {32, 256, 2, 2},
                                     {256, 256, 3, 3}, {1, 1}, {1, 1, 1, 1},
                                     {1, 1}, 1});
  addConv("resnet18 32x512x1x1 k3", {D::F32, {32, 512, 1, 1},
                                     {512, 512, 3, 3}, {1, 1}, {1, 1, 1, 1},
                                     {1, 1}, 1});
  addConv("resnet18 32x64x8x8 k3s2", {D::F32, {32, 64, 8, 8},
                                      {128, 64, 3, 3}, {2, 2}, {1, 1, 1, 1},
                                      {1, 1}, 1});
  addConv("resnet18 32x256x2x2 k3s2", {D::F32, {32, 256, 2, 2},
                                       {512, 256, 3, 3}, {2, 2}, {1, 1, 1, 1},
                                       {1, 1}, 1});
  addConv("resnet18 32x128x4x4 k1s2", {D::F32, {32, 128, 4, 4},
                                       {256, 128, 1, 1}, {2, 2},
                                       {0, 0, 0, 0}, {1, 1}, 1});
  std::vector<std::string> gemmBackends = {"openblas", "dnnl"};
  cases.push_back({"mlp gemm 64x784x256 tB+c", gemm(64, 784, 256, false, true,
                                                    true), gemmBackends});
  cases.push_back({"mlp gemm 256x64x784 tA", gemm(256, 64, 784, true, false,
                                                  false), gemmBackends});
  cases.push_back({"cnn gemm 64x3136x128 tB+c", gemm(64, 3136, 128, false,
                                                     true, true), gemmBackends});
  cases.push_back({"cnn gemm 128x64x3136 tA", gemm(128, 64, 3136, true, false,
                                                   false), gemmBackends});
  cases.push_back({"transformer gemm 1024x128x128 tB+c",
                   gemm(1024, 128, 128, false, true, true), gemmBackends});
  cases.push_back({"transformer matmul 16x64x128 * 128x512",
                   matmul({16, 64, 128}, {128, 512}, {16, 64, 512}),
                   gemmBackends});
  cases.push_back({"transformer matmul 64x64x32 * 64x32x64",
                   matmul({64, 64, 32}, {64, 32, 64}, {64, 64, 64}),
                   gemmBackends});
  std::vector<std::string> others = {"reference", "dnnl"};
  for (const OpCase &op : maxPoolOps({D::F32, {64, 32, 28, 28}, {2, 2},
                                      {2, 2}, {0, 0, 0, 0}, {1, 1}}))
    cases.push_back({"cnn " + op.op + " 64x32x28x28 k2s2", op, others});
  for (const OpCase &op : maxPoolOps({D::F32, {32, 64, 16, 16}, {3, 3},
                                      {2, 2}, {1, 1, 1, 1}, {1, 1}}))
    cases.push_back({"resnet18 " + op.op + " 32x64x16x16 k3s2", op, others});
  for (const OpCase &op : batchNormOps({32, 64, 8, 8}))
    cases.push_back({"resnet18 " + op.op + " 32x64x8x8", op, others});
  for (const OpCase &op : batchNormOps({32, 512, 1, 1}))
    cases.push_back({"resnet18 " + op.op + " 32x512x1x1", op, others});

  // Interleaved rounds, the best of each: this machine is shared.
  for (int threads : {1, 2})
    for (const Case &c : cases) {
      std::map<std::string, double> best;
      for (int round = 0; round < 3; ++round)
        for (const std::string &backend : c.backends) {
          double seconds = timeKernel(c.op, backend, threads, 5);
          best[backend] =
              best.count(backend) ? std::min(best[backend], seconds) : seconds;
        }
      std::string line = c.name + ", " + std::to_string(threads) + " thr:";
      for (const std::string &backend : c.backends)
        line += " " + backend + " " + std::to_string(best[backend] * 1e3) +
                " ms";
      WARN(line);
    }
}

