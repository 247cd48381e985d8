//===- OptimizerKernels.cpp - SGD, Adam/AdamW, Adagrad updates ------------===//
//
// The fused updates of TrainingOps.td, elementwise: SGD, Adam and Adagrad
// in the parameter's type as torch.optim rounds them, ONNX's Adam in
// double. Every new
// value may alias the old one (parameters and optimizer state are updated
// in place by buffer donation): each element is read before it is written.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

namespace trainc::rt {
namespace {

/// The scalar learning rate (any float type) and step (i64) operands.
struct UpdateScalars {
  double learningRate = 0.0;
  int64_t step = 0;
};

bool readScalars(const Launch &launch, size_t rateIndex, void *const *inputs,
                 UpdateScalars &scalars, std::string &error) {
  const OperandInfo &rate = launch.inputs[rateIndex];
  const OperandInfo &step = launch.inputs[rateIndex + 1];
  if (!checkScalar(launch, rate, "learning_rate", error) ||
      !checkScalar(launch, step, "step", error))
    return false;
  if (step.dtype != DType::I64)
    return fail(launch, error, "step must be i64");
  scalars.step = *static_cast<const int64_t *>(inputs[rateIndex + 1]);
  return withFloat(launch, rate.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    scalars.learningRate = *static_cast<const T *>(inputs[rateIndex]);
    return true;
  });
}

/// Checks that the listed inputs and every output have the parameter's
/// dtype and shape.
bool checkState(const Launch &launch, std::initializer_list<size_t> inputs,
                std::string &error) {
  const OperandInfo &param = launch.inputs[0];
  for (size_t i : inputs) {
    if (launch.inputs[i].dtype != param.dtype)
      return fail(launch, error, "operands have different element types");
    if (!checkShape(launch, launch.inputs[i], param.shape,
                    "operand " + std::to_string(i), error))
      return false;
  }
  for (size_t i = 0; i < launch.outputs.size(); ++i)
    if (!checkOutput(launch, i, param.dtype, param.shape, error))
      return false;
  return true;
}

bool sgdKernel(const Launch &launch, void *const *inputs, void *const *outputs,
               std::string &error) {
  if (!checkArity(launch, 4, 5, 1, 2, error))
    return false;
  Attributes attributes(launch);
  double momentum = attributes.real("momentum", 0.0);
  double dampening = attributes.real("dampening", 0.0);
  bool nesterov = attributes.flag("nesterov", false);
  double weightDecay = attributes.real("weight_decay", 0.0);
  if (!attributes.ok(error))
    return false;
  bool hasBuffer = launch.inputs.size() == 5;
  if (hasBuffer != (launch.outputs.size() == 2))
    return fail(launch, error, "a momentum buffer needs a new buffer result");
  if ((momentum != 0.0) != hasBuffer)
    return fail(launch, error,
                "a momentum buffer is needed exactly when "
                "momentum is non-zero");
  UpdateScalars scalars;
  if (!readScalars(launch, 2, inputs, scalars, error) ||
      !(hasBuffer ? checkState(launch, {1, 4}, error)
                  : checkState(launch, {1}, error)))
    return false;
  // torch.optim.SGD's arithmetic (TrainingOps.td): every op in T, each
  // `add` with an alpha one fused multiply-add (ATen's vectorized kernels).
  // The first step takes the whole gradient (torch's buffer initialization
  // from zero; ONNX Momentum's beta adjustment).
  double gradientShare = scalars.step == 0 ? 1.0 : 1.0 - dampening;
  int64_t count = launch.inputs[0].numElements();
  return withFloat(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *param = static_cast<const T *>(inputs[0]);
    const T *grad = static_cast<const T *>(inputs[1]);
    const T *buffer = hasBuffer ? static_cast<const T *>(inputs[4]) : nullptr;
    T *newParam = static_cast<T *>(outputs[0]);
    T *newBuffer = hasBuffer ? static_cast<T *>(outputs[1]) : nullptr;
    T decay = static_cast<T>(weightDecay), mu = static_cast<T>(momentum);
    T share = static_cast<T>(gradientShare);
    T rate = -static_cast<T>(scalars.learningRate);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
    for (int64_t i = 0; i < count; ++i) {
      T p = param[i];
      T direction = weightDecay != 0.0 ? std::fma(p, decay, grad[i]) : grad[i];
      if (buffer) {
        T b = std::fma(direction, share, buffer[i] * mu);
        newBuffer[i] = b;
        direction = nesterov ? std::fma(b, mu, direction) : b;
      }
      newParam[i] = std::fma(direction, rate, p);
    }
    return true;
  });
}

bool adamKernel(const Launch &launch, void *const *inputs, void *const *outputs,
                std::string &error) {
  if (!checkArity(launch, 6, 6, 3, 3, error))
    return false;
  Attributes attributes(launch);
  double beta1 = attributes.real("beta1", 0.9);
  double beta2 = attributes.real("beta2", 0.999);
  double epsilon = attributes.real("epsilon", 1e-8);
  double weightDecay = attributes.real("weight_decay", 0.0);
  bool decoupled = attributes.flag("decoupled", false);
  bool onnx = attributes.flag("onnx_convention", false);
  if (!attributes.ok(error))
    return false;
  UpdateScalars scalars;
  if (!readScalars(launch, 4, inputs, scalars, error) ||
      !checkState(launch, {1, 2, 3}, error))
    return false;
  double lr = scalars.learningRate;
  double t = static_cast<double>(scalars.step);
  int64_t count = launch.inputs[0].numElements();
  // ONNX: r = t > 0 ? lr sqrt(1 - beta2^t) / (1 - beta1^t) : lr, and
  // param -= r m / (sqrt(v) + eps), in double.
  double onnxRate = scalars.step > 0
                        ? lr * std::sqrt(1.0 - std::pow(beta2, t)) /
                              (1.0 - std::pow(beta1, t))
                        : lr;
  // torch.optim.Adam and AdamW's arithmetic (TrainingOps.td), k = t + 1:
  // the step size lr / (1 - beta1^k), sqrt(1 - beta2^k) and AdamW's 1 - lr
  // * weight_decay in double (Python's floats), every op on the tensors in
  // T with those rounded to it.
  double k = t + 1.0;
  double stepSize = lr / (1.0 - std::pow(beta1, k));
  double correction = std::sqrt(1.0 - std::pow(beta2, k));
  return withFloat(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *param = static_cast<const T *>(inputs[0]);
    const T *grad = static_cast<const T *>(inputs[1]);
    const T *expAvg = static_cast<const T *>(inputs[2]);
    const T *expAvgSq = static_cast<const T *>(inputs[3]);
    T *newParam = static_cast<T *>(outputs[0]);
    T *newExpAvg = static_cast<T *>(outputs[1]);
    T *newExpAvgSq = static_cast<T *>(outputs[2]);
    if (onnx) {
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
      for (int64_t i = 0; i < count; ++i) {
        double p = param[i];
        double g = decoupled ? static_cast<double>(grad[i])
                             : static_cast<double>(grad[i]) + weightDecay * p;
        if (decoupled) // AdamW decays the parameter itself
          p *= 1.0 - lr * weightDecay;
        double m = beta1 * static_cast<double>(expAvg[i]) + (1.0 - beta1) * g;
        double v =
            beta2 * static_cast<double>(expAvgSq[i]) + (1.0 - beta2) * g * g;
        p -= onnxRate * m / (std::sqrt(v) + epsilon);
        newParam[i] = static_cast<T>(p);
        newExpAvg[i] = static_cast<T>(m);
        newExpAvgSq[i] = static_cast<T>(v);
      }
      return true;
    }
    T decay = static_cast<T>(weightDecay);
    T shrink = static_cast<T>(1.0 - lr * weightDecay);
    T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
    T share1 = static_cast<T>(1.0 - beta1);
    T share2 = static_cast<T>(1.0 - beta2);
    T root = static_cast<T>(correction), eps = static_cast<T>(epsilon);
    T rate = -static_cast<T>(stepSize);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
    for (int64_t i = 0; i < count; ++i) {
      T p = param[i], g = grad[i];
      if (decoupled && weightDecay != 0.0)
        p *= shrink; // param.mul_(1 - lr * weight_decay)
      else if (!decoupled && weightDecay != 0.0)
        g = std::fma(p, decay, g); // grad.add(param, alpha=weight_decay)
      T m = std::fma(g, share1, expAvg[i] * b1);
      T v = std::fma(share2 * g, g, expAvgSq[i] * b2); // addcmul_, contracted
      T denominator = std::sqrt(v) / root + eps;
      newParam[i] = p + rate * m / denominator; // addcdiv_
      newExpAvg[i] = m;
      newExpAvgSq[i] = v;
    }
    return true;
  });
}

bool adagradKernel(const Launch &launch, void *const *inputs,
                   void *const *outputs, std::string &error) {
  if (!checkArity(launch, 5, 5, 2, 2, error))
    return false;
  Attributes attributes(launch);
  double lrDecay = attributes.real("lr_decay", 0.0);
  double epsilon = attributes.real("epsilon", 1e-10);
  double weightDecay = attributes.real("weight_decay", 0.0);
  if (!attributes.ok(error))
    return false;
  UpdateScalars scalars;
  if (!readScalars(launch, 3, inputs, scalars, error) ||
      !checkState(launch, {1, 2}, error))
    return false;
  double rate = scalars.learningRate /
                (1.0 + static_cast<double>(scalars.step) * lrDecay);
  int64_t count = launch.inputs[0].numElements();
  return withFloat(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *param = static_cast<const T *>(inputs[0]);
    const T *grad = static_cast<const T *>(inputs[1]);
    const T *sum = static_cast<const T *>(inputs[2]);
    T *newParam = static_cast<T *>(outputs[0]);
    T *newSum = static_cast<T *>(outputs[1]);
    // torch.optim.Adagrad's arithmetic (TrainingOps.td): every op in T,
    // the rate formed in double (a Python float) and rounded to it.
    T decay = static_cast<T>(weightDecay), eps = static_cast<T>(epsilon);
    T negativeRate = -static_cast<T>(rate);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
    for (int64_t i = 0; i < count; ++i) {
      T p = param[i], g = grad[i];
      if (weightDecay != 0.0)
        g = std::fma(p, decay, g);  // grad.add(param, alpha=weight_decay)
      T s = std::fma(g, g, sum[i]); // addcmul_(grad, grad), contracted
      newSum[i] = s;
      newParam[i] = p + negativeRate * g / (std::sqrt(s) + eps); // addcdiv_
    }
    return true;
  });
}

} // namespace

void registerOptimizerKernels() {
  const char *ref = "reference";
  TRAINC_RT_REGISTER("graph.sgd_update", ref, sgdKernel);
  TRAINC_RT_REGISTER("graph.adam_update", ref, adamKernel);
  TRAINC_RT_REGISTER("graph.adagrad_update", ref, adagradKernel);
}

} // namespace trainc::rt
