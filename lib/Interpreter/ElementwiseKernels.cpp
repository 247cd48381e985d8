//===- ElementwiseKernels.cpp - constants, elementwise ops, reductions ----===//
//
// Kernels of graph.constant, the unary and broadcasting binary ops,
// comparisons, where, cast, the reductions and softmax / log_softmax.
//
//===----------------------------------------------------------------------===//
#include "lib/Interpreter/Kernels.h"

#include "dialects/graph/GraphOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace graph = trainc::graph;

namespace trainc::interpreter {
namespace {

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

/// Registers a unary op computing `function(op, x)` per element.
template <typename OpTy, typename Function>
void addUnary(KernelTable &table, Function function) {
  table.add<OpTy>([function](OpTy op, const Values &values) -> KernelResult {
    HostTensor output = values[op.getInput()];
    for (double &x : output.data)
      x = function(op, x);
    return result(std::move(output));
  });
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// log(1 + e^x) without overflow for large x; NaN stays NaN.
double softplus(double x) {
  return (x > 0.0 ? x : 0.0) + std::log1p(std::exp(-std::fabs(x)));
}

double gelu(double x, bool tanhApproximation) {
  if (!tanhApproximation)
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  const double pi = 3.14159265358979323846;
  double inner = std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(inner));
}

KernelResult constantKernel(graph::ConstantOp op, const Values &) {
  auto tensor = hostTensorFromAttr(op.getValueAttr());
  if (!tensor)
    return tensor.takeError();
  return result(std::move(*tensor));
}

KernelResult clipKernel(graph::ClipOp op, const Values &values) {
  HostTensor output = values[op.getInput()];
  std::optional<double> low, high;
  if (auto attr = op.getMinAttr())
    low = attr.getValueAsDouble();
  if (auto attr = op.getMaxAttr())
    high = attr.getValueAsDouble();
  // Comparisons (not std::clamp) so that NaN passes through.
  for (double &x : output.data) {
    if (low && x < *low)
      x = *low;
    if (high && x > *high)
      x = *high;
  }
  return result(std::move(output));
}

KernelResult dropoutKernel(graph::DropoutOp op, const Values &values) {
  // The mask of graph.dropout has no RNG key (seed, step, stream) until
  // --trainc-autodiff rewrites it into graph.random_mask; any mask made up
  // here would be one no other implementation reproduces.
  if (!op.getRatio().isZero())
    return kernelError("graph.dropout with a non-zero ratio draws an unkeyed "
                       "mask; run --trainc-autodiff to turn it into "
                       "graph.random_mask, which the interpreter runs");
  return result(values[op.getInput()]);
}

KernelResult castKernel(graph::CastOp op, const Values &values) {
  // The driver rounds (floats), truncates and wraps (integers) or
  // compares with zero (i1) when it stores the result.
  return result(values[op.getInput()]);
}

//===----------------------------------------------------------------------===//
// Broadcasting binary ops, comparisons, where
//===----------------------------------------------------------------------===//

/// `function(lhs, rhs)` over the numpy broadcast of two tensors.
template <typename Function>
KernelResult broadcastBinary(const HostTensor &lhs, const HostTensor &rhs,
                             Function function) {
  auto shape = broadcastShapes(lhs.shape, rhs.shape);
  if (!shape)
    return kernelError("shapes " + formatShape(lhs.shape) + " and " +
                       formatShape(rhs.shape) + " do not broadcast");
  HostTensor output = filled(*shape);
  BroadcastIndexer lhsIndex(*shape, lhs.shape), rhsIndex(*shape, rhs.shape);
  for (int64_t i = 0; i < output.numElements(); ++i)
    output.data[i] = function(lhs.data[lhsIndex(i)], rhs.data[rhsIndex(i)]);
  return result(std::move(output));
}

template <typename OpTy, typename Function>
void addBinary(KernelTable &table, Function function) {
  table.add<OpTy>([function](OpTy op, const Values &values) {
    return broadcastBinary(values[op.getLhs()], values[op.getRhs()], function);
  });
}

KernelResult divKernel(graph::DivOp op, const Values &values) {
  const HostTensor &lhs = values[op.getLhs()], &rhs = values[op.getRhs()];
  if (!isIntegerTensor(op.getOutput()))
    return broadcastBinary(lhs, rhs, [](double a, double b) { return a / b; });
  if (llvm::is_contained(rhs.data, 0.0))
    return kernelError("integer division by zero");
  // In int64, since a double quotient may round up to the next integer.
  return broadcastBinary(lhs, rhs, [](double a, double b) {
    return static_cast<double>(static_cast<int64_t>(a) /
                               static_cast<int64_t>(b));
  });
}

KernelResult whereKernel(graph::WhereOp op, const Values &values) {
  const HostTensor &condition = values[op.getCondition()];
  const HostTensor &lhs = values[op.getLhs()], &rhs = values[op.getRhs()];
  auto valueShape = broadcastShapes(lhs.shape, rhs.shape);
  auto shape =
      valueShape ? broadcastShapes(condition.shape, *valueShape) : std::nullopt;
  if (!shape)
    return kernelError("condition, lhs and rhs do not broadcast");
  HostTensor output = filled(*shape);
  BroadcastIndexer conditionIndex(*shape, condition.shape),
      lhsIndex(*shape, lhs.shape), rhsIndex(*shape, rhs.shape);
  for (int64_t i = 0; i < output.numElements(); ++i)
    output.data[i] = condition.data[conditionIndex(i)] != 0.0
                         ? lhs.data[lhsIndex(i)]
                         : rhs.data[rhsIndex(i)];
  return result(std::move(output));
}

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

enum class Reduction { Sum, Mean, Max };

template <typename OpTy>
KernelResult reduceKernel(OpTy op, const Values &values, Reduction kind) {
  const HostTensor &input = values[op.getInput()];
  ArrayRef<int64_t> axes = op.getAxes();
  int64_t rank = input.shape.size();
  llvm::SmallVector<int64_t> kept(input.shape.begin(), input.shape.end());
  int64_t count = 1;
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank)
      return kernelError("reduction axis " + std::to_string(axis) +
                         " is out of range");
    kept[axis] = 1;
    count *= input.shape[axis];
  }
  double initial =
      kind == Reduction::Max ? -std::numeric_limits<double>::infinity() : 0.0;
  HostTensor output = filled(kept, initial);
  llvm::SmallVector<int64_t> keptStrides = stridesOf(kept);
  for (int64_t i = 0; i < input.numElements(); ++i) {
    llvm::SmallVector<int64_t> index = unravel(i, input.shape);
    for (int64_t axis : axes)
      index[axis] = 0;
    double &accumulator = output.data[ravel(index, keptStrides)];
    double x = input.data[i];
    if (kind != Reduction::Max)
      accumulator += x;
    else if (std::isnan(x) || x > accumulator) // NaN wins, as in numpy
      accumulator = x;
  }
  if (kind == Reduction::Mean)
    for (double &x : output.data)
      x /= static_cast<double>(count);
  if (!op.getKeepdims()) {
    output.shape.clear();
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(axes, d))
        output.shape.push_back(input.shape[d]);
  }
  return result(std::move(output));
}

/// The first (or, with select_last_index, last) largest element along the
/// axis; a NaN is larger than any number.
KernelResult argMaxKernel(graph::ArgMaxOp op, const Values &values) {
  const HostTensor &input = values[op.getInput()];
  int64_t axis = op.getAxis();
  int64_t rank = input.shape.size();
  if (axis < 0 || axis >= rank)
    return kernelError("argmax axis " + std::to_string(axis) +
                       " is out of range");
  llvm::SmallVector<int64_t> kept(input.shape.begin(), input.shape.end());
  kept[axis] = 1;
  HostTensor output = filled(kept, 0.0);
  output.dtype = DType::I64;
  HostTensor best = filled(kept, 0.0);
  std::vector<bool> seen(output.data.size(), false);
  llvm::SmallVector<int64_t> keptStrides = stridesOf(kept);
  bool last = op.getSelectLastIndex();
  for (int64_t i = 0; i < input.numElements(); ++i) {
    llvm::SmallVector<int64_t> index = unravel(i, input.shape);
    int64_t position = index[axis];
    index[axis] = 0;
    int64_t o = ravel(index, keptStrides);
    double x = input.data[i], &largest = best.data[o];
    bool better = !seen[o] ||
                  (std::isnan(x) ? !std::isnan(largest) || last
                                 : !std::isnan(largest) &&
                                       (x > largest || (last && x == largest)));
    if (better) {
      largest = x;
      output.data[o] = static_cast<double>(position);
      seen[o] = true;
    }
  }
  if (!op.getKeepdims())
    output.shape.erase(output.shape.begin() + axis);
  return result(std::move(output));
}

template <typename OpTy>
KernelResult softmaxKernel(OpTy op, const Values &values, bool logarithm) {
  const HostTensor &input = values[op.getInput()];
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(input.shape.size()))
    return kernelError("softmax axis is out of range");
  ArrayRef<int64_t> shape = input.shape;
  int64_t outer = product(shape.take_front(axis)), size = shape[axis],
          inner = product(shape.drop_front(axis + 1));
  HostTensor output = filled(shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * size + k) * inner + i; };
      // Subtracting the max keeps exp() finite; it cancels in the ratio.
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < size; ++k)
        max = std::max(max, input.data[at(k)]);
      double sum = 0.0;
      for (int64_t k = 0; k < size; ++k)
        sum += std::exp(input.data[at(k)] - max);
      for (int64_t k = 0; k < size; ++k) {
        double shifted = input.data[at(k)] - max;
        output.data[at(k)] =
            logarithm ? shifted - std::log(sum) : std::exp(shifted) / sum;
      }
    }
  }
  return result(std::move(output));
}

} // namespace

void registerElementwiseKernels(KernelTable &table) {
  table.add<graph::ConstantOp>(constantKernel);

  addUnary<graph::IdentityOp>(table, [](auto, double x) { return x; });
  addUnary<graph::NegOp>(table, [](auto, double x) { return -x; });
  addUnary<graph::AbsOp>(table, [](auto, double x) { return std::fabs(x); });
  addUnary<graph::SqrtOp>(table, [](auto, double x) { return std::sqrt(x); });
  addUnary<graph::ExpOp>(table, [](auto, double x) { return std::exp(x); });
  addUnary<graph::LogOp>(table, [](auto, double x) { return std::log(x); });
  addUnary<graph::TanhOp>(table, [](auto, double x) { return std::tanh(x); });
  addUnary<graph::SigmoidOp>(table, [](auto, double x) { return sigmoid(x); });
  // x < 0 rather than max(x, 0): NaN stays NaN, as in PyTorch.
  addUnary<graph::ReluOp>(table,
                          [](auto, double x) { return x < 0.0 ? 0.0 : x; });
  addUnary<graph::ErfOp>(table, [](auto, double x) { return std::erf(x); });
  addUnary<graph::SinOp>(table, [](auto, double x) { return std::sin(x); });
  addUnary<graph::CosOp>(table, [](auto, double x) { return std::cos(x); });
  addUnary<graph::SoftplusOp>(table,
                              [](auto, double x) { return softplus(x); });
  addUnary<graph::ReciprocalOp>(table, [](auto, double x) { return 1.0 / x; });
  addUnary<graph::LeakyReluOp>(table, [](graph::LeakyReluOp op, double x) {
    return x >= 0.0 ? x : op.getAlpha().convertToDouble() * x;
  });
  addUnary<graph::GeluOp>(table, [](graph::GeluOp op, double x) {
    return gelu(x, op.getTanhApproximation());
  });
  addUnary<graph::NotOp>(table,
                         [](auto, double x) { return x != 0.0 ? 0.0 : 1.0; });
  addUnary<graph::IsNaNOp>(
      table, [](auto, double x) { return std::isnan(x) ? 1.0 : 0.0; });
  table.add<graph::ClipOp>(clipKernel);
  table.add<graph::DropoutOp>(dropoutKernel);
  table.add<graph::CastOp>(castKernel);

  addBinary<graph::AddOp>(table, [](double a, double b) { return a + b; });
  addBinary<graph::SubOp>(table, [](double a, double b) { return a - b; });
  addBinary<graph::MulOp>(table, [](double a, double b) { return a * b; });
  table.add<graph::DivOp>(divKernel);
  addBinary<graph::PowOp>(table,
                          [](double a, double b) { return std::pow(a, b); });
  addBinary<graph::EqualOp>(table,
                            [](double a, double b) { return double(a == b); });
  addBinary<graph::LessOp>(table,
                           [](double a, double b) { return double(a < b); });
  addBinary<graph::GreaterOp>(table,
                              [](double a, double b) { return double(a > b); });
  addBinary<graph::LessEqualOp>(
      table, [](double a, double b) { return double(a <= b); });
  addBinary<graph::GreaterEqualOp>(
      table, [](double a, double b) { return double(a >= b); });
  addBinary<graph::AndOp>(
      table, [](double a, double b) { return double(a != 0.0 && b != 0.0); });
  table.add<graph::WhereOp>(whereKernel);

  table.add<graph::ReduceSumOp>([](graph::ReduceSumOp op, const Values &v) {
    return reduceKernel(op, v, Reduction::Sum);
  });
  table.add<graph::ReduceMeanOp>([](graph::ReduceMeanOp op, const Values &v) {
    return reduceKernel(op, v, Reduction::Mean);
  });
  table.add<graph::ReduceMaxOp>([](graph::ReduceMaxOp op, const Values &v) {
    return reduceKernel(op, v, Reduction::Max);
  });
  table.add<graph::ArgMaxOp>(argMaxKernel);
  table.add<graph::SoftmaxOp>([](graph::SoftmaxOp op, const Values &v) {
    return softmaxKernel(op, v, /*logarithm=*/false);
  });
  table.add<graph::LogSoftmaxOp>([](graph::LogSoftmaxOp op, const Values &v) {
    return softmaxKernel(op, v, /*logarithm=*/true);
  });
}

} // namespace trainc::interpreter
