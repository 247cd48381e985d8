//===- ElementwiseKernels.cpp - unary, binary, compare, where, cast -------===//
//
// f32 computes in float (libm's float functions), f64 in double; GELU
// computes in double for both (its erf/tanh forms cancel badly in float
// for negative inputs). Integers compute in int64 with two's-complement
// wrap-around and are stored wrapped to their width; i1 is stored as one
// byte, 0 or 1.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

#include <cmath>

namespace trainc::rt {
namespace {

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

enum class Unary {
  Neg,
  Abs,
  Sqrt,
  Exp,
  Log,
  Tanh,
  Sigmoid,
  Relu,
  Erf,
  Sin,
  Cos,
  Softplus,
  Reciprocal,
  LeakyRelu,
  Gelu,
  Clip
};

struct UnaryParams {
  double alpha = 0.01;
  bool tanhApproximation = false;
  std::optional<double> low, high;
};

double gelu(double x, bool tanhApproximation) {
  if (!tanhApproximation)
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  const double pi = 3.14159265358979323846;
  double inner = std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(inner));
}

template <Unary kind, typename T> T applyFloat(T x, const UnaryParams &p) {
  switch (kind) {
  case Unary::Sqrt:
    return std::sqrt(x);
  case Unary::Exp:
    return std::exp(x);
  case Unary::Log:
    return std::log(x);
  case Unary::Tanh:
    return std::tanh(x);
  case Unary::Sigmoid:
    return T(1) / (T(1) + std::exp(-x));
  case Unary::Relu: // x < 0 rather than max: NaN stays NaN
    return x < T(0) ? T(0) : x;
  case Unary::Erf:
    return std::erf(x);
  case Unary::Sin:
    return std::sin(x);
  case Unary::Cos:
    return std::cos(x);
  case Unary::Softplus: // stable for large |x|; NaN stays NaN
    return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::fabs(x)));
  case Unary::Reciprocal:
    return T(1) / x;
  case Unary::LeakyRelu:
    return x >= T(0) ? x : static_cast<T>(p.alpha * static_cast<double>(x));
  case Unary::Gelu:
    return static_cast<T>(gelu(static_cast<double>(x), p.tanhApproximation));
  case Unary::Clip: // comparisons, so that NaN passes through
    if (p.low && static_cast<double>(x) < *p.low)
      x = static_cast<T>(*p.low);
    if (p.high && static_cast<double>(x) > *p.high)
      x = static_cast<T>(*p.high);
    return x;
  case Unary::Neg:
    return -x;
  case Unary::Abs:
    return std::fabs(x);
  }
  return x;
}

/// Wrapping integer negation and absolute value (no overflow UB).
template <typename T> T applyInteger(T x, Unary kind) {
  int64_t value = static_cast<int64_t>(x);
  uint64_t negated = 0 - static_cast<uint64_t>(value);
  if (kind == Unary::Neg || (kind == Unary::Abs && value < 0))
    return fromInteger<T>(static_cast<int64_t>(negated));
  return x;
}

template <typename T, typename F>
void mapElements(const T *input, T *output, int64_t count, F f) {
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (int64_t i = 0; i < count; ++i)
    output[i] = f(input[i]);
}

bool checkUnary(const Launch &launch, std::string &error) {
  return checkArity(launch, 1, 1, 1, 1, error) &&
         checkOutput(launch, 0, launch.inputs[0].dtype, launch.inputs[0].shape,
                     error);
}

template <Unary kind>
bool unaryKernel(const Launch &launch, void *const *inputs,
                 void *const *outputs, std::string &error) {
  if (!checkUnary(launch, error))
    return false;
  UnaryParams params;
  Attributes attributes(launch);
  if (kind == Unary::LeakyRelu)
    params.alpha = attributes.real("alpha", 0.01);
  if (kind == Unary::Gelu)
    params.tanhApproximation = attributes.flag("tanh_approximation", false);
  if (kind == Unary::Clip) {
    params.low = attributes.optionalReal("min");
    params.high = attributes.optionalReal("max");
  }
  if (!attributes.ok(error))
    return false;
  int64_t count = launch.inputs[0].numElements();
  DType dtype = launch.inputs[0].dtype;
  bool integerAllowed = kind == Unary::Neg || kind == Unary::Abs;
  if (integerAllowed && dtype != DType::F32 && dtype != DType::F64)
    return withNumber(launch, dtype, error, [&](auto tag) {
      using T = decltype(tag);
      mapElements(static_cast<const T *>(inputs[0]),
                  static_cast<T *>(outputs[0]), count,
                  [](T x) { return applyInteger(x, kind); });
      return true;
    });
  return withFloat(launch, dtype, error, [&](auto tag) {
    using T = decltype(tag);
    mapElements(static_cast<const T *>(inputs[0]), static_cast<T *>(outputs[0]),
                count, [&](T x) { return applyFloat<kind>(x, params); });
    return true;
  });
}

/// graph.identity and runtime.copy: the bytes of input 0 (any dtype).
bool copyKernel(const Launch &launch, void *const *inputs, void *const *outputs,
                std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  const OperandInfo &input = launch.inputs[0], &output = launch.outputs[0];
  if (launch.op != "runtime.copy" &&
      !checkOutput(launch, 0, input.dtype, input.shape, error))
    return false;
  if (input.bytes() != output.bytes())
    return fail(launch, error,
                "input has " + std::to_string(input.bytes()) +
                    " bytes, output " + std::to_string(output.bytes()));
  if (inputs[0] != outputs[0] && input.bytes() != 0)
    std::memmove(outputs[0], inputs[0], input.bytes());
  return true;
}

bool notKernel(const Launch &launch, void *const *inputs, void *const *outputs,
               std::string &error) {
  if (!checkUnary(launch, error))
    return false;
  if (launch.inputs[0].dtype != DType::I1)
    return fail(launch, error, "expected an i1 input");
  mapElements(static_cast<const uint8_t *>(inputs[0]),
              static_cast<uint8_t *>(outputs[0]),
              launch.inputs[0].numElements(),
              [](uint8_t x) { return static_cast<uint8_t>(x == 0); });
  return true;
}

bool isNaNKernel(const Launch &launch, void *const *inputs,
                 void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  if (!checkOutput(launch, 0, DType::I1, input.shape, error))
    return false;
  return withNumber(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!isFloat<T>()) {
      return fail(launch, error, "expected a floating-point input");
    } else {
      const T *x = static_cast<const T *>(inputs[0]);
      uint8_t *y = static_cast<uint8_t *>(outputs[0]);
      for (int64_t i = 0; i < input.numElements(); ++i)
        y[i] = std::isnan(x[i]);
      return true;
    }
  });
}

bool castKernel(const Launch &launch, void *const *inputs, void *const *outputs,
                std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  Attributes attributes(launch);
  std::string to = attributes.string("to");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  auto target = parseDType(to);
  if (!target)
    return fail(launch, error, "unknown element type '" + to + "'");
  if (!checkOutput(launch, 0, *target, input.shape, error))
    return false;
  int64_t count = input.numElements();
  return withNumber(launch, input.dtype, error, [&](auto fromTag) {
    using From = decltype(fromTag);
    return withNumber(launch, *target, error, [&](auto toTag) {
      using To = decltype(toTag);
      const From *x = static_cast<const From *>(inputs[0]);
      To *y = static_cast<To *>(outputs[0]);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
      for (int64_t i = 0; i < count; ++i)
        y[i] = convertElement<To>(x[i]);
      return true;
    });
  });
}

//===----------------------------------------------------------------------===//
// Broadcasting binary ops and comparisons
//===----------------------------------------------------------------------===//

enum class Binary {
  Add,
  Sub,
  Mul,
  Div,
  Equal,
  Less,
  Greater,
  LessEqual,
  GreaterEqual,
  And // of i1 masks
};

constexpr bool isComparison(Binary kind) { return kind >= Binary::Equal; }

template <Binary kind, typename T> T arithmetic(T a, T b) {
  if constexpr (isFloat<T>()) {
    switch (kind) {
    case Binary::Add:
      return a + b;
    case Binary::Sub:
      return a - b;
    case Binary::Mul:
      return a * b;
    default:
      return a / b;
    }
  } else {
    uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(a));
    uint64_t y = static_cast<uint64_t>(static_cast<int64_t>(b));
    int64_t bI = static_cast<int64_t>(b), aI = static_cast<int64_t>(a);
    switch (kind) {
    case Binary::Add:
      return fromInteger<T>(static_cast<int64_t>(x + y));
    case Binary::Sub:
      return fromInteger<T>(static_cast<int64_t>(x - y));
    case Binary::Mul:
      return fromInteger<T>(static_cast<int64_t>(x * y));
    default: // truncating; b != 0 was checked, INT64_MIN / -1 wraps
      return bI == -1 ? fromInteger<T>(static_cast<int64_t>(0 - x))
                      : fromInteger<T>(aI / bI);
    }
  }
}

template <Binary kind, typename T> uint8_t compare(T a, T b) {
  switch (kind) {
  case Binary::Equal:
    return a == b;
  case Binary::Less:
    return a < b;
  case Binary::Greater:
    return a > b;
  case Binary::LessEqual:
    return a <= b;
  case Binary::And:
    return a != T(0) && b != T(0);
  default:
    return a >= b;
  }
}

/// Result shape and the loop of a broadcasting op with output operand 0.
bool broadcastLoop(const Launch &launch, const std::vector<Shape> &shapes,
                   DType outputType, std::optional<StridedLoop> &loop,
                   std::string &error) {
  Shape shape;
  for (const Shape &operand : shapes) {
    auto combined = broadcastShapes(shape, operand);
    if (!combined)
      return fail(launch, error,
                  "operand shapes " + formatShape(shape) + " and " +
                      formatShape(operand) + " do not broadcast");
    shape = *combined;
  }
  if (!checkOutput(launch, 0, outputType, shape, error))
    return false;
  std::vector<Shape> strides = {stridesOf(shape)};
  for (const Shape &operand : shapes)
    strides.push_back(broadcastStrides(shape, operand));
  loop.emplace(shape, strides);
  return true;
}

template <Binary kind>
bool binaryKernel(const Launch &launch, void *const *inputs,
                  void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  const OperandInfo &lhs = launch.inputs[0], &rhs = launch.inputs[1];
  if (lhs.dtype != rhs.dtype)
    return fail(launch, error,
                std::string("operands have different element types ") +
                    dtypeName(lhs.dtype) + " and " + dtypeName(rhs.dtype));
  std::optional<StridedLoop> loop;
  DType outputType = isComparison(kind) ? DType::I1 : lhs.dtype;
  if (!broadcastLoop(launch, {lhs.shape, rhs.shape}, outputType, loop, error))
    return false;
  return withNumber(launch, lhs.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    using R = std::conditional_t<isComparison(kind), uint8_t, T>;
    const T *a = static_cast<const T *>(inputs[0]);
    const T *b = static_cast<const T *>(inputs[1]);
    R *out = static_cast<R *>(outputs[0]);
    if constexpr (kind == Binary::Div && !isFloat<T>()) {
      for (int64_t i = 0; i < rhs.numElements(); ++i)
        if (b[i] == 0)
          return fail(launch, error, "integer division by zero");
    }
    auto f = [](T x, T y) -> R {
      if constexpr (isComparison(kind))
        return compare<kind>(x, y);
      else
        return arithmetic<kind>(x, y);
    };
    loop->run([&](const StridedLoop::Offsets &at,
                  const StridedLoop::Offsets &step, int64_t count) {
      R *o = out + at[0];
      const T *x = a + at[1], *y = b + at[2];
      if (step[1] == 1 && step[2] == 1) {
        for (int64_t i = 0; i < count; ++i)
          o[i] = f(x[i], y[i]);
      } else if (step[1] == 1 && step[2] == 0) {
        for (int64_t i = 0; i < count; ++i)
          o[i] = f(x[i], *y);
      } else if (step[1] == 0 && step[2] == 1) {
        for (int64_t i = 0; i < count; ++i)
          o[i] = f(*x, y[i]);
      } else {
        for (int64_t i = 0; i < count; ++i)
          o[i] = f(x[i * step[1]], y[i * step[2]]);
      }
    });
    return true;
  });
}

/// lhs ^ rhs in double, stored in lhs's element type (rhs may differ).
bool powKernel(const Launch &launch, void *const *inputs, void *const *outputs,
               std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  const OperandInfo &lhs = launch.inputs[0], &rhs = launch.inputs[1];
  std::optional<StridedLoop> loop;
  if (!broadcastLoop(launch, {lhs.shape, rhs.shape}, lhs.dtype, loop, error))
    return false;
  return withNumber(launch, lhs.dtype, error, [&](auto lhsTag) {
    using T = decltype(lhsTag);
    return withNumber(launch, rhs.dtype, error, [&](auto rhsTag) {
      using U = decltype(rhsTag);
      const T *a = static_cast<const T *>(inputs[0]);
      const U *b = static_cast<const U *>(inputs[1]);
      T *out = static_cast<T *>(outputs[0]);
      loop->run([&](const StridedLoop::Offsets &at,
                    const StridedLoop::Offsets &step, int64_t count) {
        for (int64_t i = 0; i < count; ++i)
          out[at[0] + i] = fromDouble<T>(
              std::pow(static_cast<double>(a[at[1] + i * step[1]]),
                       static_cast<double>(b[at[2] + i * step[2]])));
      });
      return true;
    });
  });
}

bool whereKernel(const Launch &launch, void *const *inputs,
                 void *const *outputs, std::string &error) {
  if (!checkArity(launch, 3, 3, 1, 1, error))
    return false;
  const OperandInfo &condition = launch.inputs[0];
  const OperandInfo &lhs = launch.inputs[1], &rhs = launch.inputs[2];
  if (condition.dtype != DType::I1)
    return fail(launch, error, "the condition must be i1");
  if (lhs.dtype != rhs.dtype)
    return fail(launch, error, "lhs and rhs have different element types");
  std::optional<StridedLoop> loop;
  if (!broadcastLoop(launch, {condition.shape, lhs.shape, rhs.shape}, lhs.dtype,
                     loop, error))
    return false;
  return withBits(launch, lhs.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const uint8_t *c = static_cast<const uint8_t *>(inputs[0]);
    const T *a = static_cast<const T *>(inputs[1]);
    const T *b = static_cast<const T *>(inputs[2]);
    T *out = static_cast<T *>(outputs[0]);
    loop->run([&](const StridedLoop::Offsets &at,
                  const StridedLoop::Offsets &step, int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        out[at[0] + i] = c[at[1] + i * step[1]] ? a[at[2] + i * step[2]]
                                                : b[at[3] + i * step[3]];
    });
    return true;
  });
}

} // namespace

void registerElementwiseKernels() {
  const char *ref = "reference";
  TRAINC_RT_REGISTER("runtime.copy", ref, copyKernel);
  TRAINC_RT_REGISTER("graph.identity", ref, copyKernel);
  TRAINC_RT_REGISTER("graph.neg", ref, unaryKernel<Unary::Neg>);
  TRAINC_RT_REGISTER("graph.abs", ref, unaryKernel<Unary::Abs>);
  TRAINC_RT_REGISTER("graph.sqrt", ref, unaryKernel<Unary::Sqrt>);
  TRAINC_RT_REGISTER("graph.exp", ref, unaryKernel<Unary::Exp>);
  TRAINC_RT_REGISTER("graph.log", ref, unaryKernel<Unary::Log>);
  TRAINC_RT_REGISTER("graph.tanh", ref, unaryKernel<Unary::Tanh>);
  TRAINC_RT_REGISTER("graph.sigmoid", ref, unaryKernel<Unary::Sigmoid>);
  TRAINC_RT_REGISTER("graph.relu", ref, unaryKernel<Unary::Relu>);
  TRAINC_RT_REGISTER("graph.erf", ref, unaryKernel<Unary::Erf>);
  TRAINC_RT_REGISTER("graph.sin", ref, unaryKernel<Unary::Sin>);
  TRAINC_RT_REGISTER("graph.cos", ref, unaryKernel<Unary::Cos>);
  TRAINC_RT_REGISTER("graph.softplus", ref, unaryKernel<Unary::Softplus>);
  TRAINC_RT_REGISTER("graph.reciprocal", ref, unaryKernel<Unary::Reciprocal>);
  TRAINC_RT_REGISTER("graph.leaky_relu", ref, unaryKernel<Unary::LeakyRelu>);
  TRAINC_RT_REGISTER("graph.gelu", ref, unaryKernel<Unary::Gelu>);
  TRAINC_RT_REGISTER("graph.clip", ref, unaryKernel<Unary::Clip>);
  TRAINC_RT_REGISTER("graph.not", ref, notKernel);
  TRAINC_RT_REGISTER("graph.is_nan", ref, isNaNKernel);
  TRAINC_RT_REGISTER("graph.cast", ref, castKernel);

  TRAINC_RT_REGISTER("graph.add", ref, binaryKernel<Binary::Add>);
  TRAINC_RT_REGISTER("graph.sub", ref, binaryKernel<Binary::Sub>);
  TRAINC_RT_REGISTER("graph.mul", ref, binaryKernel<Binary::Mul>);
  TRAINC_RT_REGISTER("graph.div", ref, binaryKernel<Binary::Div>);
  TRAINC_RT_REGISTER("graph.pow", ref, powKernel);
  TRAINC_RT_REGISTER("graph.equal", ref, binaryKernel<Binary::Equal>);
  TRAINC_RT_REGISTER("graph.less", ref, binaryKernel<Binary::Less>);
  TRAINC_RT_REGISTER("graph.greater", ref, binaryKernel<Binary::Greater>);
  TRAINC_RT_REGISTER("graph.less_equal", ref, binaryKernel<Binary::LessEqual>);
  TRAINC_RT_REGISTER("graph.greater_equal", ref,
                     binaryKernel<Binary::GreaterEqual>);
  TRAINC_RT_REGISTER("graph.and", ref, binaryKernel<Binary::And>);
  TRAINC_RT_REGISTER("graph.where", ref, whereKernel);
}

} // namespace trainc::rt
