//===- TensorTests.cpp - data movement, constants, random_mask, copy ------===//
#include "RuntimeTestSupport.h"
#include "WindowCases.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace trainc;
using namespace trainc::rttest;

namespace {

HostTensor someTensor(DType dtype, const Shape &shape) {
  if (dtype == DType::F32 || dtype == DType::F64)
    return randomTensor(dtype, shape);
  int64_t bound = dtype == DType::I1 ? 1 : dtype == DType::I8 ? 100 : 1000;
  return randomIntegers(dtype, shape, dtype == DType::I1 ? 0 : -bound, bound);
}

const std::vector<DType> kTypes = {DType::F32, DType::F64, DType::I64,
                                   DType::I32, DType::I8,  DType::I1};

} // namespace

TEST_CASE("reshape with 0 and -1 entries", "[tensor]") {
  for (DType dtype : kTypes) {
    HostTensor x = someTensor(dtype, {2, 3, 4});
    checkOp(
        {"graph.reshape", {x}, {{dtype, {6, 4}}}, {ints("shape", {-1, 4})}});
    checkOp(
        {"graph.reshape", {x}, {{dtype, {2, 12}}}, {ints("shape", {0, -1})}});
    checkOp({"graph.reshape",
             {x},
             {{dtype, {2, 3, 2, 2}}},
             {ints("shape", {0, 0, 2, 2})}});
    checkOp({"graph.reshape", {x}, {{dtype, {24}}}, {ints("shape", {24})}});
  }
}

TEST_CASE("transpose with every permutation of a 3-D tensor", "[tensor]") {
  std::vector<Shape> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                              {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (DType dtype : kTypes)
    for (const Shape &inputShape : {Shape{2, 3, 4}, Shape{64, 33, 40}})
      for (const Shape &perm : perms) {
        HostTensor x = someTensor(dtype, inputShape);
        Shape shape;
        for (int64_t axis : perm)
          shape.push_back(inputShape[axis]);
        checkOp(
            {"graph.transpose", {x}, {{dtype, shape}}, {ints("perm", perm)}});
      }
  HostTensor x = someTensor(DType::F32, {2, 1, 3, 1, 4});
  checkOp({"graph.transpose",
           {x},
           {{DType::F32, {4, 1, 3, 2, 1}}},
           {ints("perm", {4, 3, 2, 0, 1})}});
}

TEST_CASE("expand broadcasts against the target shape", "[tensor]") {
  for (DType dtype : kTypes) {
    checkOp({"graph.expand",
             {someTensor(dtype, {3, 1})},
             {{dtype, {2, 3, 4}}},
             {ints("shape", {2, 1, 4})}});
    checkOp({"graph.expand",
             {someTensor(dtype, {1, 5})},
             {{dtype, {4, 5}}},
             {ints("shape", {4, 1})}});
    checkOp({"graph.expand",
             {someTensor(dtype, {})},
             {{dtype, {300, 200}}},
             {ints("shape", {300, 200})}});
  }
}

TEST_CASE("concat along every axis", "[tensor]") {
  for (DType dtype : kTypes)
    for (int64_t axis = 0; axis < 3; ++axis) {
      Shape a = {2, 3, 4}, b = a, c = a;
      b[axis] = 1;
      c[axis] = 5;
      Shape shape = a;
      shape[axis] = a[axis] + 1 + 5;
      checkOp(
          {"graph.concat",
           {someTensor(dtype, a), someTensor(dtype, b), someTensor(dtype, c)},
           {{dtype, shape}},
           {integer("axis", axis)}});
    }
  HostTensor x = someTensor(DType::F32, {3, 7});
  checkOp({"graph.concat", {x}, {{DType::F32, {3, 7}}}, {integer("axis", 1)}});
  // An empty operand.
  checkOp({"graph.concat",
           {x, someTensor(DType::F32, {3, 0})},
           {{DType::F32, {3, 7}}},
           {integer("axis", 1)}});
}

TEST_CASE("slice with positive, negative and empty ranges", "[tensor]") {
  for (DType dtype : kTypes)
    for (const SliceCase &s : sliceCases()) {
      HostTensor x = someTensor(dtype, {4, 5, 6});
      checkOp({"graph.slice",
               {x},
               {{dtype, s.shape}},
               {ints("starts", s.starts), ints("ends", s.ends),
                ints("steps", s.steps)}});
    }
}

TEST_CASE("gather along every axis with negative and repeated indices",
          "[tensor]") {
  for (DType dtype : kTypes)
    for (DType indexType : {DType::I64, DType::I32})
      for (int64_t axis = 0; axis < 3; ++axis) {
        Shape dataShape = {4, 5, 6};
        HostTensor data = someTensor(dtype, dataShape);
        int64_t size = dataShape[axis];
        HostTensor indices = randomIntegers(indexType, {2, 3}, -size, size - 1);
        Shape shape(dataShape.begin(), dataShape.begin() + axis);
        shape.insert(shape.end(), {2, 3});
        shape.insert(shape.end(), dataShape.begin() + axis + 1,
                     dataShape.end());
        checkOp({"graph.gather",
                 {data, indices},
                 {{dtype, shape}},
                 {integer("axis", axis)}});
        HostTensor scalar = tensor(indexType, {}, {-1});
        Shape scalarShape(dataShape.begin(), dataShape.begin() + axis);
        scalarShape.insert(scalarShape.end(), dataShape.begin() + axis + 1,
                           dataShape.end());
        checkOp({"graph.gather",
                 {data, scalar},
                 {{dtype, scalarShape}},
                 {integer("axis", axis)}});
      }
  // An embedding table.
  HostTensor table = someTensor(DType::F32, {1000, 64});
  HostTensor tokens = randomIntegers(DType::I64, {32, 20}, 0, 999);
  checkOp({"graph.gather",
           {table, tokens},
           {{DType::F32, {32, 20, 64}}},
           {integer("axis", 0)}});
}

TEST_CASE("gather_elements and its gradient along every axis", "[tensor]") {
  // Indices smaller than the data off the axis, longer along it, negative
  // and repeated.
  Shape dataShape = {4, 5, 6};
  for (DType indexType : {DType::I64, DType::I32})
    for (int64_t axis = 0; axis < 3; ++axis) {
      Shape shape = {3, 4, 5};
      shape[axis] = 7;
      int64_t size = dataShape[axis];
      HostTensor indices = randomIntegers(indexType, shape, -size, size - 1);
      for (DType dtype : kTypes)
        checkOp({"graph.gather_elements",
                 {someTensor(dtype, dataShape), indices},
                 {{dtype, shape}},
                 {integer("axis", axis)}});
      for (DType dtype : {DType::F32, DType::F64})
        checkOp({"graph.gather_elements_backward",
                 {someTensor(dtype, shape), indices},
                 {{dtype, dataShape}},
                 {ints("data_shape", dataShape), integer("axis", axis)}});
    }
}

TEST_CASE("constant writes its value attribute", "[tensor]") {
  // The interpreter reads `value` as a dense elements attribute; the
  // runtime's descriptor carries the same numbers comma-separated.
  Attr value{"value",
             "value = dense<[[1.5, -2.0, 0.25], [3.0, 1.0e-3, -7.5]]> "
             ": tensor<2x3xf32>",
             "1.5,-2,0.25,3,0.001,-7.5"};
  checkOp({"graph.constant", {}, {{DType::F32, {2, 3}}}, {value}});
  Attr splat{"value", "value = dense<4> : tensor<3x2xi64>", "4"};
  checkOp({"graph.constant", {}, {{DType::I64, {3, 2}}}, {splat}});
  Attr ints64{"value", "value = dense<[-9007199254740993, 5]> : tensor<2xi64>",
              "-9007199254740993,5"};
  RuntimeRun run = runKernel(
      {"graph.constant", {}, {{DType::I64, {2}}}, {ints64}}, "reference");
  REQUIRE(run.ok);
  int64_t first;
  std::memcpy(&first, run.bytes[0].data(), sizeof first);
  CHECK(first == -9007199254740993LL); // exact beyond 2^53
  Attr flags{"value", "value = dense<[true, false, true]> : tensor<3xi1>",
             "1,0,1"};
  checkOp({"graph.constant", {}, {{DType::I1, {3}}}, {flags}});
  Attr scalar{"value", "value = dense<2.5> : tensor<f64>", "2.5"};
  checkOp({"graph.constant", {}, {{DType::F64, {}}}, {scalar}});
}

TEST_CASE("random_mask draws the interpreter's Philox mask", "[tensor]") {
  for (double ratio : {0.0, 0.1, 0.5, 0.9})
    for (DType dtype : {DType::F32, DType::F64}) {
      HostTensor seed = tensor(DType::I64, {}, {-5});
      HostTensor step = tensor(DType::I64, {}, {double((1LL << 33) + 9)});
      OpCase c{"graph.random_mask",
               {seed, step},
               {{dtype, {64, 300}}},
               {ints("shape", {64, 300}), type("element_type", dtype),
                real("ratio", ratio), integer("stream", 6)}};
      checkOp(c, {"reference"}, 0.0);
      checkDeterministic(c, "reference");
    }
}

TEST_CASE("runtime.copy copies bytes of any dtype", "[tensor]") {
  for (DType dtype : kTypes) {
    HostTensor x = someTensor(dtype, {3, 5});
    OpCase c{"runtime.copy", {x}, {{dtype, {3, 5}}}, {}};
    RuntimeRun run = runKernel(c, "reference");
    REQUIRE(run.ok);
    checkClose(run.outputs[0], x, 0.0);
  }
  // Shapes may differ as long as the byte counts agree.
  HostTensor x = someTensor(DType::F32, {2, 6});
  RuntimeRun run = runDescriptor("runtime.copy;backend=reference;in=f32:2x6;"
                                 "out=i32:12",
                                 {x});
  CHECK(run.ok);
  RuntimeRun bad = runDescriptor("runtime.copy;backend=reference;in=f32:2x6;"
                                 "out=f32:11",
                                 {x});
  CHECK_FALSE(bad.ok);
  CHECK_THAT(bad.error, Catch::Contains("runtime.copy"));
}
