//===- ElementwiseTests.cpp - unary, binary, compare, cast, reductions ----===//
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace trainc;
using namespace trainc::rttest;

namespace {

OpCase unary(const std::string &op, const HostTensor &x,
             std::vector<Attr> attributes = {}) {
  return {"graph." + op, {x}, {{x.dtype, x.shape}}, std::move(attributes)};
}

OpCase binary(const std::string &op, const HostTensor &a, const HostTensor &b,
              DType resultType) {
  return {
      "graph." + op, {a, b}, {{resultType, broadcastShape(a.shape, b.shape)}}, {}};
}

const std::vector<std::pair<Shape, Shape>> kBroadcastShapes = {
    {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},
    {{2, 1, 4}, {3, 1}},    {{}, {2, 3}},
    {{5, 1}, {1, 6}},       {{3, 1, 2, 1}, {1, 4, 1, 5}},
    {{64, 1024}, {1024}},   {{64, 1, 33}, {64, 40, 1}}};

} // namespace

TEST_CASE("unary float ops match the interpreter", "[elementwise]") {
  for (DType dtype : {DType::F32, DType::F64}) {
    HostTensor any = randomTensor(dtype, {3, 4, 5}, -4.0, 4.0);
    HostTensor positive = randomTensor(dtype, {3, 4, 5}, 0.05, 6.0);
    HostTensor large = randomTensor(dtype, {256, 300}, -5.0, 5.0);
    for (const char *op : {"neg", "abs", "exp", "tanh", "sigmoid", "relu",
                           "erf", "identity", "sin", "cos", "softplus"}) {
      checkOp(unary(op, any));
      checkOp(unary(op, large));
    }
    for (const char *op : {"sqrt", "log", "reciprocal"})
      checkOp(unary(op, positive));
    checkOp(unary("leaky_relu", any));
    checkOp(unary("leaky_relu", large, {real("alpha", 0.2)}));
    checkOp(unary("gelu", any));
    checkOp(unary("gelu", large, {flag("tanh_approximation", true)}));
    checkOp(unary("gelu", any, {flag("tanh_approximation", false)}));
    checkOp(unary("clip", any, {real("min", -0.5), real("max", 1.25)}));
    checkOp(unary("clip", large, {real("max", 1.0)}));
    checkOp(unary("clip", any, {real("min", 0.0)}));
    checkOp(unary("clip", any));
  }
}

TEST_CASE("integer neg, abs, identity and not", "[elementwise]") {
  for (DType dtype : {DType::I64, DType::I32, DType::I16, DType::I8}) {
    HostTensor x = randomIntegers(dtype, {4, 7}, -100, 100);
    checkOp(unary("neg", x));
    checkOp(unary("abs", x));
    checkOp(unary("identity", x));
  }
  HostTensor flags = randomIntegers(DType::I1, {5, 9}, 0, 1);
  checkOp(unary("not", flags));
  checkOp(unary("identity", flags));
  checkOp(unary("not", randomIntegers(DType::I1, {300, 200}, 0, 1)));
}

TEST_CASE("is_nan finds NaNs, not infinities or zeros", "[elementwise]") {
  for (DType dtype : {DType::F32, DType::F64}) {
    HostTensor x = randomTensor(dtype, {6, 7});
    x.data[0] = std::nan("");
    x.data[5] = -std::nan("");
    x.data[8] = std::numeric_limits<double>::infinity();
    x.data[9] = -std::numeric_limits<double>::infinity();
    x.data[10] = -0.0;
    x.data[41] = std::nan("");
    checkOp({"graph.is_nan", {x}, {{DType::I1, x.shape}}, {}});
  }
}

TEST_CASE("cast between every pair of element types", "[elementwise]") {
  std::vector<DType> types = {DType::F32, DType::F64, DType::I64, DType::I32,
                              DType::I16, DType::I8,  DType::I1};
  for (DType from : types)
    for (DType to : types) {
      HostTensor x;
      if (from == DType::I1)
        x = randomIntegers(from, {3, 5}, 0, 1);
      else if (from == DType::F32 || from == DType::F64)
        // Fractions, negatives, zero and values that wrap in narrow ints.
        x = tensor(from, {3, 5},
                   {0.0, -0.0, 0.5, -0.5, 1.75, -2.5, 3.99, -3.99, 127.5,
                    -129.25, 300.75, 70000.5, -70000.5, 3e9, -5e9});
      else
        x = randomIntegers(from, {3, 5}, -120, 120);
      if (from == DType::F32 || from == DType::F64)
        for (double &value : x.data)
          value = roundTo(from, value);
      INFO(dtypeName(from).str() << " -> " << dtypeName(to).str());
      checkOp({"graph.cast", {x}, {{to, x.shape}}, {type("to", to)}});
    }
}

TEST_CASE("broadcasting arithmetic on floats and integers", "[elementwise]") {
  for (const auto &[lhsShape, rhsShape] : kBroadcastShapes) {
    INFO(formatShape(lhsShape) << " op " << formatShape(rhsShape));
    for (DType dtype : {DType::F32, DType::F64}) {
      HostTensor a = randomTensor(dtype, lhsShape, -3.0, 3.0);
      HostTensor b = randomTensor(dtype, rhsShape, 0.5, 3.0);
      for (const char *op : {"add", "sub", "mul", "div"}) {
        checkOp(binary(op, a, b, dtype));
        checkOp(binary(op, b, a, dtype));
      }
      checkOp(binary("pow", b, a, dtype));
    }
    for (DType dtype : {DType::I64, DType::I32}) {
      HostTensor a = randomIntegers(dtype, lhsShape, -50, 50);
      HostTensor b = randomIntegers(dtype, rhsShape, 1, 7);
      for (const char *op : {"add", "sub", "mul", "div"})
        checkOp(binary(op, a, b, dtype));
      HostTensor negative = randomIntegers(dtype, rhsShape, -7, -1);
      checkOp(binary("div", a, negative, dtype));
      checkOp(binary("pow", b, randomIntegers(dtype, lhsShape, 0, 4), dtype));
    }
  }
}

TEST_CASE("comparisons and where", "[elementwise]") {
  for (const auto &[lhsShape, rhsShape] : kBroadcastShapes) {
    INFO(formatShape(lhsShape) << " vs " << formatShape(rhsShape));
    // Small integer values, so that ties happen.
    for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32}) {
      HostTensor a = randomIntegers(dtype, lhsShape, -2, 2);
      HostTensor b = randomIntegers(dtype, rhsShape, -2, 2);
      for (const char *op :
           {"equal", "less", "greater", "less_equal", "greater_equal"})
        checkOp(binary(op, a, b, DType::I1));
    }
    HostTensor p = randomIntegers(DType::I1, lhsShape, 0, 1);
    HostTensor q = randomIntegers(DType::I1, rhsShape, 0, 1);
    checkOp(binary("equal", p, q, DType::I1));
    checkOp(binary("and", p, q, DType::I1));
    Shape shape = broadcastShape(lhsShape, rhsShape);
    HostTensor condition = randomIntegers(DType::I1, {shape.back()}, 0, 1);
    for (DType dtype : {DType::F32, DType::I64, DType::I1}) {
      HostTensor a = randomIntegers(dtype, lhsShape, 0, 1);
      HostTensor b = randomIntegers(dtype, rhsShape, 0, 1);
      if (dtype == DType::F32) {
        a = randomTensor(dtype, lhsShape);
        b = randomTensor(dtype, rhsShape);
      }
      checkOp({"graph.where", {condition, a, b}, {{dtype, shape}}, {}});
      checkOp({"graph.where", {p, a, b}, {{dtype, shape}}, {}});
    }
  }
}

TEST_CASE("reductions over axes, with and without keepdims", "[reduction]") {
  const std::vector<Shape> axesList = {{1}, {0, 2}, {0, 1, 2}, {}, {2}, {0}};
  for (const Shape &inputShape : {Shape{4, 5, 6}, Shape{16, 3, 700}}) {
    for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32}) {
      HostTensor x = dtype == DType::F32 || dtype == DType::F64
                         ? randomTensor(dtype, inputShape, -2.0, 2.0)
                         : randomIntegers(dtype, inputShape, -9, 9);
      for (const Shape &axes : axesList)
        for (bool keepdims : {true, false}) {
          Shape shape;
          for (int64_t d = 0; d < 3; ++d) {
            bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
            if (!reduced)
              shape.push_back(inputShape[d]);
            else if (keepdims)
              shape.push_back(1);
          }
          INFO("axes " << formatShape(axes) << " keepdims " << keepdims);
          for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"}) {
            std::vector<Attr> attributes = {ints("axes", axes)};
            if (!keepdims || axes.size() == 1) // default true when absent
              attributes.push_back(flag("keepdims", keepdims));
            checkOp({std::string("graph.") + op,
                     {x},
                     {{dtype, shape}},
                     attributes});
          }
        }
    }
  }
}

TEST_CASE("argmax: ties, NaN and select_last_index", "[reduction]") {
  for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32})
    for (const Shape &shape : {Shape{4, 5, 6}, Shape{64, 10}, Shape{3, 2000}})
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size());
           ++axis) {
        // Few distinct values: ties everywhere; NaNs in the float cases,
        // some rows with two.
        HostTensor x = randomIntegers(DType::I64, shape, -3, 3);
        x.dtype = dtype;
        if (dtype == DType::F32 || dtype == DType::F64)
          for (size_t i = 0; i < x.data.size(); i += 7)
            x.data[i] = std::nan("");
        for (bool last : {false, true})
          for (bool keepdims : {true, false}) {
            Shape out = shape;
            if (keepdims)
              out[axis] = 1;
            else
              out.erase(out.begin() + axis);
            INFO("axis " << axis << " last " << last << " keepdims "
                         << keepdims);
            checkOp({"graph.argmax",
                     {x},
                     {{DType::I64, out}},
                     {integer("axis", axis), flag("keepdims", keepdims),
                      flag("select_last_index", last)}});
          }
      }
}

TEST_CASE("softmax and log_softmax along every axis", "[reduction]") {
  for (DType dtype : {DType::F32, DType::F64})
    for (const Shape &shape : {Shape{4, 5, 6}, Shape{64, 10}, Shape{3, 2000}})
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size());
           ++axis) {
        HostTensor x = randomTensor(dtype, shape, -8.0, 8.0);
        checkOp(unary("softmax", x, {integer("axis", axis)}));
        checkOp(unary("log_softmax", x, {integer("axis", axis)}));
      }
}
