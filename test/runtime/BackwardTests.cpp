//===- BackwardTests.cpp - conv, pooling, norm, gather, slice gradients ---===//
#include "RuntimeTestSupport.h"
#include "WindowCases.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace trainc;
using namespace trainc::rttest;

TEST_CASE("conv_backward_input and conv_backward_weight on every backend",
          "[backward][conv]") {
  for (const ConvCase &c : convCases()) {
    INFO(c.describe());
    HostTensor gradOutput = randomTensor(c.dtype, c.output());
    std::vector<Attr> attributes = c.attributes();
    attributes.push_back(ints("input_shape", c.input));
    checkOp({"graph.conv_backward_input",
             {gradOutput, randomTensor(c.dtype, c.weight)},
             {{c.dtype, c.input}},
             attributes},
            c.backends());
    attributes = c.attributes();
    attributes.push_back(ints("weight_shape", c.weight));
    // Each weight gradient element sums N * output-plane products, whose
    // f32 round-off grows like the square root of their count (the CNN's
    // first conv at batch 4: 3136 products, errors up to 3e-5 relative).
    Shape output = c.output();
    double products = static_cast<double>(output[0]);
    for (size_t d = 2; d < output.size(); ++d)
      products *= static_cast<double>(output[d]);
    checkOp({"graph.conv_backward_weight",
             {gradOutput, randomTensor(c.dtype, c.input)},
             {{c.dtype, c.weight}},
             attributes},
            c.backends(), 1e-5 * std::max(1.0, std::sqrt(products / 256)));
  }
}

TEST_CASE("max_pool_backward routes to the first maximum", "[backward][pool]") {
  for (const PoolCase &c : poolCases()) {
    INFO(c.describe());
    std::vector<Attr> attributes = c.attributes(true);
    Shape output = c.output(true);
    // Few distinct values: many ties, resolved by window order.
    for (HostTensor x : {randomTensor(c.dtype, c.input),
                         randomIntegers(c.dtype, c.input, -1, 1)})
      checkOp({"graph.max_pool_backward",
               {randomTensor(c.dtype, output), x},
               {{c.dtype, c.input}},
               attributes},
              c.backends(true));
  }
}

TEST_CASE("avg_pool_backward divides like the forward", "[backward][pool]") {
  for (const PoolCase &c : poolCases()) {
    if (!c.undilated())
      continue;
    INFO(c.describe());
    std::vector<Attr> attributes = c.attributes(false);
    attributes.push_back(ints("input_shape", c.input));
    checkOp({"graph.avg_pool_backward",
             {randomTensor(c.dtype, c.output(false))},
             {{c.dtype, c.input}},
             attributes},
            c.backends(false));
  }
}

TEST_CASE("batch_norm_training_backward", "[backward][norm]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (const Shape &shape : {Shape{8, 3}, Shape{4, 5, 6}, Shape{6, 4, 5, 5},
                               Shape{32, 16, 14, 14}}) {
      int64_t c = shape[1];
      checkOp(
          {"graph.batch_norm_training_backward",
           {randomTensor(dtype, shape), randomTensor(dtype, shape, -2.0, 3.0),
            randomTensor(dtype, {c}, 0.5, 1.5)},
           {{dtype, shape}, {dtype, {c}}, {dtype, {c}}},
           {real("epsilon", 1e-5)}},
          dtype == DType::F32 ? std::vector<std::string>{"reference", "dnnl"}
                              : std::vector<std::string>{"reference"});
    }
}

TEST_CASE("layer_norm_backward", "[backward][norm]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (const Shape &shape : {Shape{4, 6}, Shape{3, 4, 5}, Shape{32, 20, 300}})
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size());
           ++axis) {
        Shape normalized(shape.begin() + axis, shape.end());
        checkOp(
            {"graph.layer_norm_backward",
             {randomTensor(dtype, shape), randomTensor(dtype, shape, -2.0, 3.0),
              randomTensor(dtype, normalized, 0.5, 1.5)},
             {{dtype, shape}, {dtype, normalized}, {dtype, normalized}},
             {integer("axis", axis), real("epsilon", 1e-5)}});
      }
}

TEST_CASE("gather_backward adds repeated indices", "[backward]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (DType indexType : {DType::I64, DType::I32})
      for (int64_t axis = 0; axis < 3; ++axis) {
        Shape dataShape = {4, 5, 600};
        int64_t size = dataShape[axis];
        HostTensor indices = randomIntegers(indexType, {3, 4}, -size, size - 1);
        Shape shape(dataShape.begin(), dataShape.begin() + axis);
        shape.insert(shape.end(), {3, 4});
        shape.insert(shape.end(), dataShape.begin() + axis + 1,
                     dataShape.end());
        checkOp({"graph.gather_backward",
                 {randomTensor(dtype, shape), indices},
                 {{dtype, dataShape}},
                 {ints("data_shape", dataShape), integer("axis", axis)}});
      }
  // An embedding's gradient with many repeats.
  HostTensor tokens = randomIntegers(DType::I64, {32, 20}, 0, 49);
  checkOp({"graph.gather_backward",
           {randomTensor(DType::F32, {32, 20, 64}), tokens},
           {{DType::F32, {50, 64}}},
           {ints("data_shape", {50, 64}), integer("axis", 0)}});
}

TEST_CASE("slice_backward places the gradient into zeros", "[backward]") {
  struct Slice {
    Shape starts, ends, steps, shape;
  };
  std::vector<Slice> slices = {
      {{1, 0, 2}, {3, 5, 6}, {1, 2, 3}, {2, 3, 2}},
      {{3, 4, 5}, {0, 1, -1}, {-2, -2, -4}, {2, 2, 2}},
      {{2, 0, 0}, {2, 5, 6}, {1, 1, 1}, {0, 5, 6}},
  };
  for (DType dtype : {DType::F32, DType::F64})
    for (const Slice &s : slices)
      checkOp({"graph.slice_backward",
               {randomTensor(dtype, s.shape)},
               {{dtype, {4, 5, 6}}},
               {ints("input_shape", {4, 5, 6}), ints("starts", s.starts),
                ints("ends", s.ends), ints("steps", s.steps)}});
}

TEST_CASE("max pooling with NaN and -inf inputs", "[backward][pool]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // 1x1x4x4 with NaNs (two in one window), -inf windows and ties.
  HostTensor x = tensor(DType::F32, {1, 1, 4, 4},
                        {nan, 1, 2, 2,     //
                         3, nan, -inf, 2,  //
                         -inf, -inf, 5, 5, //
                         -inf, -inf, 5, 1});
  for (const PoolCase &c :
       {PoolCase{
            DType::F32, {1, 1, 4, 4}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
        PoolCase{
            DType::F32, {1, 1, 4, 4}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
        PoolCase{
            DType::F32, {1, 1, 4, 4}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}}}) {
    INFO(c.describe());
    checkOp({"graph.max_pool",
             {x},
             {{c.dtype, c.output(true)}},
             c.attributes(true)});
    checkOp({"graph.max_pool_backward",
             {randomTensor(c.dtype, c.output(true)), x},
             {{c.dtype, c.input}},
             c.attributes(true)});
  }
}
