//===- GradientCheckTests.cpp - every gradient against finite differences -===//
//
// For each differentiable graph op: a small @forward computing
// sum(op(parameters) * r) for a random r, --trainc-autodiff, then the
// interpreter in fp64 compares @gradients' result with central differences
// of @forward, element by element. Shapes exercise broadcasting, strides,
// padding, groups and dilation.
//
//===----------------------------------------------------------------------===//
#include "TrainingTestSupport.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/graph/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace trainc;
using namespace trainc::test;

namespace {

struct GradientCase {
  std::string name;
  std::vector<std::string> arguments; ///< "%p0: tensor<...>" with a role
  std::string body;                   ///< defines %y
  std::vector<int64_t> resultShape;
  double low = -1.0, high = 1.0;      ///< range of random floats
  int64_t integerHigh = 3;            ///< integer inputs are in [0, this)
};

std::string param(const std::string &name, const std::string &type) {
  return "%" + name + ": tensor<" + type + "> {graph.name = \"" + name +
         "\", graph.role = \"parameter\"}";
}
std::string input(const std::string &name, const std::string &type) {
  return "%" + name + ": tensor<" + type + "> {graph.name = \"" + name +
         "\", graph.role = \"input\"}";
}

std::string tensorType(const std::vector<int64_t> &shape) {
  std::string text = "tensor<";
  for (int64_t d : shape)
    text += std::to_string(d) + "x";
  return text + "f64>";
}

std::string moduleText(const GradientCase &c) {
  std::string type = tensorType(c.resultShape), axes;
  for (size_t i = 0; i < c.resultShape.size(); ++i)
    axes += (i ? ", " : "") + std::to_string(i);
  std::string arguments;
  for (const std::string &argument : c.arguments)
    arguments += argument + ", ";
  return "func.func @forward(" + arguments +
         "%r: " + type + " {graph.name = \"r\", graph.role = \"input\"}) -> tensor<f64> {\n" +
         c.body + "\n  %lossTerms = graph.mul %y, %r : (" + type + ", " + type + ") -> " +
         type + "\n  %loss = graph.reduce_sum %lossTerms {axes = array<i64" +
         (axes.empty() ? "" : ": " + axes) + ">, keepdims = false} : (" + type +
         ") -> tensor<f64>\n  return %loss : tensor<f64>\n}\n";
}

HostTensor scalarI64(int64_t value) {
  HostTensor t;
  t.dtype = DType::I64;
  t.data = {static_cast<double>(value)};
  return t;
}

void checkGradients(const GradientCase &c) {
  INFO("case: " << c.name);
  auto context = makeContext();
  auto module = parseModule(*context, moduleText(c));
  buildTrainingGraph(*module, "loss=model");
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  auto gradients = module->lookupSymbol<mlir::func::FuncOp>("gradients");
  REQUIRE(forward);
  REQUIRE(gradients);

  std::mt19937 generator(1234);
  std::vector<HostTensor> arguments;
  std::vector<unsigned> parameters;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    mlir::Type type = forward.getArgumentTypes()[i];
    auto element = mlir::cast<mlir::RankedTensorType>(type).getElementType();
    if (element.isIntOrIndex()) {
      HostTensor t = randomTensor(type, generator, 0, double(c.integerHigh));
      for (double &v : t.data)
        v = std::floor(v);
      arguments.push_back(t);
    } else {
      arguments.push_back(randomTensor(type, generator, c.low, c.high));
    }
    auto role = forward.getArgAttrOfType<mlir::StringAttr>(i, "graph.role");
    if (role && role.getValue() == "parameter")
      parameters.push_back(i);
  }
  InterpreterOptions fp64;
  fp64.fp64 = true;
  std::vector<HostTensor> gradientArguments = arguments;
  gradientArguments.push_back(scalarI64(0)); // step
  gradientArguments.push_back(scalarI64(0)); // seed
  auto analytic = interpret(gradients, gradientArguments, fp64);
  if (!analytic)
    FAIL(llvm::toString(analytic.takeError()));
  REQUIRE(analytic->size() >= 1 + parameters.size());

  auto loss = [&](std::vector<HostTensor> &args) {
    auto result = interpret(forward, args, fp64);
    if (!result)
      FAIL(llvm::toString(result.takeError()));
    return (*result)[0].data[0];
  };
  for (size_t k = 0; k < parameters.size(); ++k) {
    HostTensor &parameter = arguments[parameters[k]];
    const HostTensor &gradient = (*analytic)[1 + k];
    REQUIRE(gradient.data.size() == parameter.data.size());
    HostTensor expected, actual;
    size_t count = parameter.data.size();
    size_t stride = count > 48 ? count / 48 : 1; // sample large tensors
    for (size_t j = 0; j < count; j += stride) {
      double saved = parameter.data[j];
      double h = 1e-6 * std::max(1.0, std::abs(saved));
      parameter.data[j] = saved + h;
      double plus = loss(arguments);
      parameter.data[j] = saved - h;
      double minus = loss(arguments);
      parameter.data[j] = saved;
      expected.data.push_back((plus - minus) / (2 * h));
      actual.data.push_back(gradient.data[j]);
    }
    double error = relativeError(actual, expected);
    INFO("parameter " << k << ": e(autodiff, finite differences) = " << error);
    CHECK(error < 1e-6);
  }
}

// Shorthands for the cases below.
const std::string T234 = "2x3x4xf64";

std::vector<GradientCase> elementwiseCases() {
  std::vector<GradientCase> cases;
  auto unary = [&](std::string op, double low = -1, double high = 1,
                   std::string attrs = "") {
    cases.push_back({op,
                     {param("p", T234)},
                     "  %y = graph." + op + " %p" + attrs + " : tensor<" + T234 + ">",
                     {2, 3, 4},
                     low,
                     high});
  };
  unary("neg");
  unary("abs");
  unary("sqrt", 0.5, 2);
  unary("exp");
  unary("log", 0.5, 2);
  unary("tanh");
  unary("sigmoid");
  unary("relu");
  unary("erf");
  unary("sin", -3, 3);
  unary("cos", -3, 3);
  unary("softplus", -3, 3);
  unary("reciprocal", 0.5, 2);
  unary("identity");
  unary("leaky_relu", -1, 1, " {alpha = 0.2 : f64}");
  unary("gelu");
  unary("gelu", -1, 1, " {tanh_approximation = true}");
  unary("clip", -1, 1, " {min = -0.5 : f64, max = 0.25 : f64}");
  cases.push_back({"cast f64->f32->f64",
                   {param("p", "3x4xf64")},
                   "  %c = graph.cast %p {to = f32} : (tensor<3x4xf64>) -> tensor<3x4xf32>\n"
                   "  %d = graph.cast %c {to = f64} : (tensor<3x4xf32>) -> tensor<3x4xf64>\n"
                   "  %y = graph.mul %d, %d : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>",
                   {3, 4}});
  for (std::string op : {"add", "sub", "mul", "div"})
    cases.push_back({op + " with broadcasting",
                     {param("a", T234), param("b", "3x1xf64")},
                     "  %y = graph." + op + " %a, %b : (tensor<" + T234 +
                         ">, tensor<3x1xf64>) -> tensor<" + T234 + ">",
                     {2, 3, 4},
                     0.5,
                     2});
  cases.push_back({"pow with broadcasting exponent",
                   {param("a", T234), param("b", "4xf64")},
                   "  %y = graph.pow %a, %b : (tensor<" + T234 +
                       ">, tensor<4xf64>) -> tensor<" + T234 + ">",
                   {2, 3, 4},
                   0.5,
                   2});
  cases.push_back({"where",
                   {param("a", T234), param("b", "4xf64"), param("c", T234)},
                   "  %m = graph.greater %c, %b : (tensor<" + T234 +
                       ">, tensor<4xf64>) -> tensor<2x3x4xi1>\n"
                       "  %y = graph.where %m, %a, %b : (tensor<2x3x4xi1>, tensor<" +
                       T234 + ">, tensor<4xf64>) -> tensor<" + T234 + ">",
                   {2, 3, 4}});
  return cases;
}

std::vector<GradientCase> reductionCases() {
  std::vector<GradientCase> cases;
  for (std::string op : {"reduce_sum", "reduce_mean", "reduce_max"}) {
    cases.push_back({op + " keepdims",
                     {param("p", T234)},
                     "  %y = graph." + op + " %p {axes = array<i64: 0, 2>} : (tensor<" +
                         T234 + ">) -> tensor<1x3x1xf64>",
                     {1, 3, 1}});
    cases.push_back({op,
                     {param("p", T234)},
                     "  %y = graph." + op +
                         " %p {axes = array<i64: 1>, keepdims = false} : (tensor<" +
                         T234 + ">) -> tensor<2x4xf64>",
                     {2, 4}});
  }
  for (std::string op : {"softmax", "log_softmax"})
    cases.push_back({op,
                     {param("p", T234)},
                     "  %y = graph." + op + " %p {axis = 1 : i64} : tensor<" + T234 + ">",
                     {2, 3, 4}});
  return cases;
}

std::vector<GradientCase> tensorCases() {
  return {
      {"reshape with 0 and -1",
       {param("p", T234)},
       "  %y = graph.reshape %p {shape = array<i64: 0, -1>} : (tensor<" + T234 +
           ">) -> tensor<2x12xf64>",
       {2, 12}},
      {"transpose",
       {param("p", T234)},
       "  %y = graph.transpose %p {perm = array<i64: 2, 0, 1>} : (tensor<" +
           T234 + ">) -> tensor<4x2x3xf64>",
       {4, 2, 3}},
      {"expand",
       {param("p", "3x1xf64")},
       "  %y = graph.expand %p {shape = array<i64: 2, 1, 4>} : "
       "(tensor<3x1xf64>) -> "
       "tensor<2x3x4xf64>",
       {2, 3, 4}},
      {"concat",
       {param("a", "2x3xf64"), param("b", "2x5xf64")},
       "  %y = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf64>, "
       "tensor<2x5xf64>) -> tensor<2x8xf64>",
       {2, 8}},
      {"slice with steps 2 and -1",
       {param("p", "5x6xf64")},
       "  %y = graph.slice %p {starts = array<i64: 1, 5>, ends = array<i64: 5, "
       "0>, "
       "steps = array<i64: 2, -1>} : (tensor<5x6xf64>) -> tensor<2x5xf64>",
       {2, 5}},
      {"gather_elements with repeated indices",
       {param("p", "3x5xf64"), input("i", "3x4xi64")},
       "  %y = graph.gather_elements %p, %i {axis = 1 : i64} : "
       "(tensor<3x5xf64>, tensor<3x4xi64>) -> tensor<3x4xf64>",
       {3, 4},
       -1,
       1,
       /*integerHigh=*/4},
      {"gather with repeated indices",
       {param("p", "3x5xf64"), input("i", "2x3xi64")},
       "  %y = graph.gather %p, %i {axis = 1 : i64} : (tensor<3x5xf64>, "
       "tensor<2x3xi64>) -> tensor<3x2x3xf64>",
       {3, 2, 3},
       -1,
       1,
       /*integerHigh=*/5},
  };
}

std::vector<GradientCase> matmulCases() {
  std::vector<GradientCase> cases = {
      {"matmul batched x matrix",
       {param("a", T234), param("b", "4x5xf64")},
       "  %y = graph.matmul %a, %b : (tensor<" + T234 +
           ">, tensor<4x5xf64>) -> tensor<2x3x5xf64>",
       {2, 3, 5}},
      {"matmul with broadcast batch dims",
       {param("a", "2x1x3x4xf64"), param("b", "5x4x2xf64")},
       "  %y = graph.matmul %a, %b : (tensor<2x1x3x4xf64>, tensor<5x4x2xf64>) -> "
       "tensor<2x5x3x2xf64>",
       {2, 5, 3, 2}},
      {"matmul vector x matrix",
       {param("a", "4xf64"), param("b", "4x5xf64")},
       "  %y = graph.matmul %a, %b : (tensor<4xf64>, tensor<4x5xf64>) -> tensor<5xf64>",
       {5}},
      {"matmul matrix x vector",
       {param("a", "3x4xf64"), param("b", "4xf64")},
       "  %y = graph.matmul %a, %b : (tensor<3x4xf64>, tensor<4xf64>) -> tensor<3xf64>",
       {3}},
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      std::string a = ta ? "4x3xf64" : "3x4xf64", b = tb ? "5x4xf64" : "4x5xf64";
      cases.push_back(
          {std::string("gemm transA=") + (ta ? "1" : "0") + " transB=" + (tb ? "1" : "0"),
           {param("a", a), param("b", b), param("c", "5xf64")},
           "  %y = graph.gemm %a, %b, %c {alpha = 0.5 : f64, beta = 2.0 : f64, "
           "trans_a = " + std::string(ta ? "true" : "false") +
               ", trans_b = " + (tb ? "true" : "false") + "} : (tensor<" + a +
               ">, tensor<" + b + ">, tensor<5xf64>) -> tensor<3x5xf64>",
           {3, 5}});
    }
  return cases;
}

std::vector<GradientCase> neuralCases() {
  return {
      {"conv: stride 2, asymmetric pads, dilation 2, groups 2, bias",
       {param("x", "2x4x7x6xf64"), param("w", "6x2x3x2xf64"),
        param("b", "6xf64")},
       "  %y = graph.conv %x, %w, %b {strides = array<i64: 2, 1>, pads = "
       "array<i64: "
       "1, 0, 2, 1>, dilations = array<i64: 2, 2>, group = 2 : i64} : "
       "(tensor<2x4x7x6xf64>, tensor<6x2x3x2xf64>, tensor<6xf64>) -> "
       "tensor<2x6x3x5xf64>",
       {2, 6, 3, 5}},
      {"conv 1-d",
       {param("x", "2x3x9xf64"), param("w", "4x3x3xf64")},
       "  %y = graph.conv %x, %w {strides = array<i64: 2>, pads = array<i64: "
       "1, 1>, "
       "dilations = array<i64: 1>, group = 1 : i64} : (tensor<2x3x9xf64>, "
       "tensor<4x3x3xf64>) -> tensor<2x4x5xf64>",
       {2, 4, 5}},
      {"conv_backward_input (ONNX ConvTranspose): stride 2 with a row no "
       "tap reaches, pads, dilation 2, groups 2",
       {param("d", "2x6x3x4xf64"), param("w", "6x2x3x2xf64")},
       "  %y = graph.conv_backward_input %d, %w {input_shape = array<i64: 2, "
       "4, "
       "6, 6>, strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 1, 0>, "
       "dilations = array<i64: 1, 2>, group = 2 : i64} : (tensor<2x6x3x4xf64>, "
       "tensor<6x2x3x2xf64>) -> tensor<2x4x6x6xf64>",
       {2, 4, 6, 6}},
      {"conv_matrix: 3x3 taps, padding 1, over 2x2 planes",
       {param("w", "3x2x3x3xf64")},
       "  %y = graph.conv_matrix %w {input_spatial = array<i64: 2, 2>, "
       "output_spatial = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = "
       "array<i64: 1, 1>} : (tensor<3x2x3x3xf64>) -> tensor<12x8xf64>",
       {12, 8}},
      {"conv_matrix 1-d: 5 taps, stride 2, over 3 positions",
       {param("w", "2x3x5xf64")},
       "  %y = graph.conv_matrix %w {input_spatial = array<i64: 3>, "
       "output_spatial = array<i64: 2>, strides = array<i64: 2>, pads = "
       "array<i64: 2>} : (tensor<2x3x5xf64>) -> tensor<4x9xf64>",
       {4, 9}},
      {"max_pool overlapping windows with padding",
       {param("x", "2x2x7x7xf64")},
       "  %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = "
       "array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = "
       "array<i64: 1, "
       "1>} : (tensor<2x2x7x7xf64>) -> tensor<2x2x4x4xf64>",
       {2, 2, 4, 4}},
      {"max_pool ceil mode",
       {param("x", "1x2x6x6xf64")},
       "  %y = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = "
       "array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, dilations = "
       "array<i64: 1, "
       "1>, ceil_mode = true} : (tensor<1x2x6x6xf64>) -> tensor<1x2x2x2xf64>",
       {1, 2, 2, 2}},
      {"avg_pool counting the padding",
       {param("x", "2x2x5x5xf64")},
       "  %y = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = "
       "array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = "
       "true} "
       ": (tensor<2x2x5x5xf64>) -> tensor<2x2x3x3xf64>",
       {2, 2, 3, 3}},
      {"avg_pool not counting the padding, ceil mode",
       {param("x", "2x2x6x6xf64")},
       "  %y = graph.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = "
       "array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true} : "
       "(tensor<2x2x6x6xf64>) -> tensor<2x2x4x4xf64>",
       {2, 2, 4, 4}},
      {"global_avg_pool",
       {param("x", "2x3x4x5xf64")},
       "  %y = graph.global_avg_pool %x : (tensor<2x3x4x5xf64>) -> "
       "tensor<2x3x1x1xf64>",
       {2, 3, 1, 1}},
      {"batch_norm_training",
       {param("x", "4x3x2x2xf64"), param("s", "3xf64"), param("b", "3xf64"),
        input("m", "3xf64"), input("v", "3xf64")},
       "  %y, %nm, %nv = graph.batch_norm_training %x, %s, %b, %m, %v {epsilon "
       "= "
       "1.0e-5 : f64, momentum = 0.9 : f64} : (tensor<4x3x2x2xf64>, "
       "tensor<3xf64>, "
       "tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) -> (tensor<4x3x2x2xf64>, "
       "tensor<3xf64>, tensor<3xf64>)",
       {4, 3, 2, 2},
       0.1,
       1.5},
      {"batch_norm_inference",
       {param("x", "4x3x2xf64"), param("s", "3xf64"), param("b", "3xf64"),
        input("m", "3xf64"), input("v", "3xf64")},
       "  %y = graph.batch_norm_inference %x, %s, %b, %m, %v {epsilon = 1.0e-5 "
       ": "
       "f64} : (tensor<4x3x2xf64>, tensor<3xf64>, tensor<3xf64>, "
       "tensor<3xf64>, "
       "tensor<3xf64>) -> tensor<4x3x2xf64>",
       {4, 3, 2},
       0.1,
       1.5},
      {"layer_norm with bias over two dims",
       {param("x", T234), param("s", "3x4xf64"), param("b", "3x4xf64")},
       "  %y = graph.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-5 : "
       "f64} "
       ": (tensor<" +
           T234 + ">, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<" + T234 +
           ">",
       {2, 3, 4}},
      {"layer_norm without bias",
       {param("x", T234), param("s", "4xf64")},
       "  %y = graph.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-5 : "
       "f64} : "
       "(tensor<" +
           T234 + ">, tensor<4xf64>) -> tensor<" + T234 + ">",
       {2, 3, 4}},
  };
}

std::vector<GradientCase> lossCases() {
  std::vector<GradientCase> cases;
  for (std::string reduction : {"mean", "sum"}) {
    cases.push_back(
        {"softmax_cross_entropy " + reduction + ", smoothing, ignore_index",
         {param("x", "5x4x2xf64"), input("t", "5x2xi64")},
         "  %y = graph.softmax_cross_entropy %x, %t {reduction = \"" + reduction +
             "\", label_smoothing = 0.1 : f64, ignore_index = 3 : i64} : "
             "(tensor<5x4x2xf64>, tensor<5x2xi64>) -> tensor<f64>",
         {},
         -1,
         1,
         4});
    cases.push_back({"nll_loss " + reduction,
                     {param("x", "5x4xf64"), input("t", "5xi64")},
                     "  %y = graph.nll_loss %x, %t {reduction = \"" + reduction +
                         "\", ignore_index = 0 : i64} : (tensor<5x4xf64>, "
                         "tensor<5xi64>) -> tensor<f64>",
                     {},
                     -1,
                     1,
                     4});
    for (std::string op : {"mse_loss", "l1_loss", "bce_with_logits_loss"})
      cases.push_back({op + " " + reduction,
                       {param("x", "3x4xf64"), param("t", "3x4xf64")},
                       "  %y = graph." + op + " %x, %t {reduction = \"" + reduction +
                           "\"} : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<f64>",
                       {}});
  }
  cases.push_back({"softmax_cross_entropy none",
                   {param("x", "5x4xf64"), input("t", "5xi64")},
                   "  %y = graph.softmax_cross_entropy %x, %t {reduction = \"none\"} "
                   ": (tensor<5x4xf64>, tensor<5xi64>) -> tensor<5xf64>",
                   {5},
                   -1,
                   1,
                   4});
  return cases;
}

} // namespace

TEST_CASE("gradients of elementwise ops match finite differences",
          "[gradient]") {
  for (const GradientCase &c : elementwiseCases())
    checkGradients(c);
}

TEST_CASE("gradients of reductions and softmax match finite differences",
          "[gradient]") {
  for (const GradientCase &c : reductionCases())
    checkGradients(c);
}

TEST_CASE("gradients of data-movement ops match finite differences",
          "[gradient]") {
  for (const GradientCase &c : tensorCases())
    checkGradients(c);
}

TEST_CASE("gradients of matmul and gemm match finite differences",
          "[gradient]") {
  for (const GradientCase &c : matmulCases())
    checkGradients(c);
}

TEST_CASE("gradients of conv, pooling and normalization match finite "
          "differences",
          "[gradient]") {
  for (const GradientCase &c : neuralCases())
    checkGradients(c);
}

/// Interprets @gradients of the model `text` (loss=model) on random
/// arguments in [-2, 2) (each element through `adjust`), runs the passes
/// `addPasses` adds, hands @gradients to `inspect`, interprets it again
/// and compares every result element: bit for bit where `tolerance` is 0,
/// else within `tolerance` times max(1, |before|).
void checkPassKeepsGradients(
    const std::string &text, unsigned seed,
    llvm::function_ref<double(double)> adjust,
    llvm::function_ref<void(mlir::PassManager &)> addPasses,
    llvm::function_ref<void(mlir::func::FuncOp)> inspect, double tolerance) {
  auto context = makeContext();
  auto module = parseModule(*context, text);
  buildTrainingGraph(*module, "loss=model");
  std::mt19937 generator(seed);
  auto gradients = module->lookupSymbol<mlir::func::FuncOp>("gradients");
  REQUIRE(gradients);
  std::vector<HostTensor> arguments;
  for (mlir::Type type : gradients.getArgumentTypes().drop_back(2)) {
    HostTensor t = randomTensor(type, generator, -2.0, 2.0);
    for (double &v : t.data)
      v = adjust(v);
    arguments.push_back(t);
  }
  arguments.push_back(scalarI64(0)); // step
  arguments.push_back(scalarI64(0)); // seed
  auto before = interpret(gradients, arguments, {});
  if (!before)
    FAIL(llvm::toString(before.takeError()));

  mlir::PassManager pm(context.get());
  addPasses(pm);
  REQUIRE(mlir::succeeded(pm.run(*module)));
  inspect(gradients);
  auto after = interpret(gradients, arguments, {});
  if (!after)
    FAIL(llvm::toString(after.takeError()));
  REQUIRE(after->size() == before->size());
  for (size_t i = 0; i < before->size(); ++i)
    for (size_t j = 0; j < (*before)[i].data.size(); ++j) {
      double a = (*before)[i].data[j], b = (*after)[i].data[j];
      INFO("result " << i << " element " << j);
      if (tolerance == 0)
        CHECK(std::memcmp(&a, &b, sizeof a) == 0);
      else
        CHECK(std::abs(a - b) <= tolerance * std::max(1.0, std::abs(a)));
    }
}

TEST_CASE("ReLU + max pooling gradients are bit for bit the same with "
          "their mask on the pooled gradient (mask-pooled-gradients)",
          "[gradient]") {
  // Windows that tile the plane (the CNN's) and overlapping padded ones
  // (ResNet-18's stem); inputs on a coarse grid, so that windows tie and
  // whole windows are zero after the ReLU.
  for (std::string pool :
       {std::string("kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, "
                    "2>, pads = array<i64: 0, 0, 0, 0>"),
        std::string("kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, "
                    "2>, pads = array<i64: 1, 1, 1, 1>")}) {
    INFO(pool);
    std::string text =
        "func.func @forward(" + param("x", "2x3x6x6xf32") +
        ", %r: tensor<2x3x3x3xf32> {graph.name = \"r\", graph.role = "
        "\"input\"}) -> tensor<f32> {\n"
        "  %h = graph.relu %x : tensor<2x3x6x6xf32>\n"
        "  %y = graph.max_pool %h {" +
        pool +
        ", dilations = array<i64: 1, 1>}"
        " : (tensor<2x3x6x6xf32>) -> tensor<2x3x3x3xf32>\n"
        "  %t = graph.mul %y, %r : (tensor<2x3x3x3xf32>, tensor<2x3x3x3xf32>)"
        " -> tensor<2x3x3x3xf32>\n"
        "  %loss = graph.reduce_sum %t {axes = array<i64: 0, 1, 2, 3>, "
        "keepdims = false} : (tensor<2x3x3x3xf32>) -> tensor<f32>\n"
        "  return %loss : tensor<f32>\n}\n";
    checkPassKeepsGradients(
        text, 7,
        [](double v) { return std::round(v) / 2; }, // -1, -0.5, 0, 0.5, 1
        [](mlir::PassManager &pm) {
          pm.addPass(graph::createMaskPooledGradientsPass());
          pm.addPass(mlir::createCSEPass());
        },
        [](mlir::func::FuncOp gradients) {
          // The mask now runs on the pooled gradient.
          bool maskedPooled = false;
          gradients.walk([&](graph::WhereOp where) {
            maskedPooled |=
                mlir::cast<mlir::RankedTensorType>(where.getType())
                    .getShape() == llvm::ArrayRef<int64_t>{2, 3, 3, 3};
          });
          CHECK(maskedPooled);
        },
        /*tolerance=*/0);
  }
}

TEST_CASE("convolutions over small planes as products of their weight "
          "matrices (convs-as-products) keep their values and gradients",
          "[gradient]") {
  // 3x3 taps with padding 1 over 2x2 planes, with a bias, then a stride-2
  // one to a 1x1 plane: every output position reads every input position
  // (a batch of 32: the pass's smallest).
  std::string text =
      "func.func @forward(" + param("x", "32x4x2x2xf32") + ", " +
      param("w", "6x4x3x3xf32") + ", " + param("b", "6xf32") + ", " +
      param("v", "5x6x3x3xf32") +
      ", %r: tensor<32x5x1x1xf32> {graph.name = \"r\", graph.role = "
      "\"input\"}) -> tensor<f32> {\n"
      "  %h = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = "
      "array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : "
      "i64} : (tensor<32x4x2x2xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> "
      "tensor<32x6x2x2xf32>\n"
      "  %y = graph.conv %h, %v {strides = array<i64: 2, 2>, pads = "
      "array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : "
      "i64} : (tensor<32x6x2x2xf32>, tensor<5x6x3x3xf32>) -> "
      "tensor<32x5x1x1xf32>\n"
      "  %t = graph.mul %y, %r : (tensor<32x5x1x1xf32>, tensor<32x5x1x1xf32>)"
      " -> tensor<32x5x1x1xf32>\n"
      "  %loss = graph.reduce_sum %t {axes = array<i64: 0, 1, 2, 3>, "
      "keepdims = false} : (tensor<32x5x1x1xf32>) -> tensor<f32>\n"
      "  return %loss : tensor<f32>\n}\n";
  checkPassKeepsGradients(
      text, 11, [](double v) { return v / 2; },
      [](mlir::PassManager &pm) {
        pm.addPass(graph::createConvsAsProductsPass());
        pm.addPass(mlir::createCSEPass());
      },
      [](mlir::func::FuncOp gradients) {
        int convs = 0, matrices = 0, folds = 0;
        gradients.walk([&](mlir::Operation *op) {
          convs += mlir::isa<graph::ConvOp, graph::ConvBackwardInputOp,
                             graph::ConvBackwardWeightOp>(op);
          matrices += mlir::isa<graph::ConvMatrixOp>(op);
          folds += mlir::isa<graph::ConvMatrixBackwardOp>(op);
        });
        CHECK(convs == 0);
        CHECK(matrices == 2); // one per weight, shared by its input gradient
        CHECK(folds == 2);
      },
      // The same sums in another order, each rounded to f32 once or twice.
      /*tolerance=*/1e-6);
}

TEST_CASE("gradients of the losses match finite differences", "[gradient]") {
  for (const GradientCase &c : lossCases())
    checkGradients(c);
}
