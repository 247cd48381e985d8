//===- LossKernels.cpp - class-index and pointwise losses -----------------===//
//
// PyTorch's CrossEntropyLoss (label smoothing, ignore_index), NLLLoss,
// MSELoss, L1Loss and BCEWithLogitsLoss, as the interpreter computes them:
// per-element losses in double (exp in the element type), reduced over
// fixed blocks added in order, so the result does not depend on the
// thread count. "mean" divides by the non-ignored count.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

#include <limits>

namespace trainc::rt {
namespace {

enum class Reduction { Mean, Sum, None };

bool parseReduction(const Launch &launch, const std::string &text,
                    Reduction &reduction, std::string &error) {
  if (text == "mean")
    reduction = Reduction::Mean;
  else if (text == "sum")
    reduction = Reduction::Sum;
  else if (text == "none")
    reduction = Reduction::None;
  else
    return fail(launch, error, "unknown reduction '" + text + "'");
  return true;
}

/// scores [N, C, d...] against labels [N, d...]: one element per label.
struct ClassLoss {
  int64_t classes = 0, inner = 1, elements = 0;
  std::optional<int64_t> ignoreIndex;
  Reduction reduction = Reduction::Mean;
  double smoothing = 0.0;
  const void *labels = nullptr;
  DType labelType = DType::I64;

  int64_t at(int64_t e, int64_t c) const {
    return ((e / inner) * classes + c) * inner + e % inner;
  }
  int64_t label(int64_t e) const { return indexAt(labels, labelType, e); }
  bool ignored(int64_t e) const {
    return ignoreIndex && label(e) == *ignoreIndex;
  }
  double count() const {
    double n = 0.0;
    for (int64_t e = 0; e < elements; ++e)
      n += ignored(e) ? 0.0 : 1.0;
    return n;
  }
  /// The loss output's shape: the labels' for "none", else a scalar.
  Shape lossShape(const Shape &labelShape) const {
    return reduction == Reduction::None ? labelShape : Shape();
  }
};

/// Reads the attributes and checks scores (input `scoreIndex`) against the
/// labels (the next input) and every label against the classes.
bool makeClassLoss(const Launch &launch, size_t scoreIndex, bool smoothing,
                   const void *labels, ClassLoss &loss, std::string &error) {
  Attributes attributes(launch);
  std::string reduction = attributes.string("reduction", "mean");
  if (smoothing)
    loss.smoothing = attributes.real("label_smoothing", 0.0);
  loss.ignoreIndex = attributes.optionalInteger("ignore_index");
  if (!attributes.ok(error) ||
      !parseReduction(launch, reduction, loss.reduction, error))
    return false;
  const OperandInfo &scores = launch.inputs[scoreIndex];
  const OperandInfo &labelInfo = launch.inputs[scoreIndex + 1];
  Shape expected;
  if (scores.shape.size() >= 2) {
    expected.push_back(scores.shape[0]);
    expected.insert(expected.end(), scores.shape.begin() + 2,
                    scores.shape.end());
  }
  if (scores.shape.size() < 2 || labelInfo.shape != expected)
    return fail(launch, error,
                "labels " + formatShape(labelInfo.shape) +
                    " do not match scores " + formatShape(scores.shape));
  if (!isIndexType(labelInfo.dtype))
    return fail(launch, error, "labels must be i32 or i64");
  loss.classes = scores.shape[1];
  loss.inner = product(scores.shape.data() + 2,
                       scores.shape.data() + scores.shape.size());
  loss.elements = labelInfo.numElements();
  loss.labels = labels;
  loss.labelType = labelInfo.dtype;
  for (int64_t e = 0; e < loss.elements; ++e) {
    int64_t value = loss.label(e);
    if (value != loss.ignoreIndex && (value < 0 || value >= loss.classes))
      return fail(launch, error,
                  "label " + std::to_string(value) +
                      " is not a class index in [0, " +
                      std::to_string(loss.classes) + ")");
  }
  return true;
}

/// Stores per-element losses reduced as `loss` says.
template <typename T>
void storeLoss(const ClassLoss &loss, const std::vector<double> &perElement,
               T *output) {
  if (loss.reduction == Reduction::None) {
    for (int64_t e = 0; e < loss.elements; ++e)
      output[e] = static_cast<T>(perElement[e]);
    return;
  }
  double sum =
      deterministicSum(loss.elements, [&](int64_t e) { return perElement[e]; });
  output[0] = static_cast<T>(
      loss.reduction == Reduction::Mean ? sum / loss.count() : sum);
}

/// Log-softmax pieces of element e: max and log(sum(exp(x - max))).
template <typename T>
void logSumExp(const ClassLoss &loss, const T *x, int64_t e, T &max,
               double &logSum) {
  max = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < loss.classes; ++c)
    max = std::max(max, x[loss.at(e, c)]);
  double sum = 0.0;
  for (int64_t c = 0; c < loss.classes; ++c)
    sum += static_cast<double>(std::exp(x[loss.at(e, c)] - max));
  logSum = std::log(sum);
}

bool softmaxCrossEntropyKernel(const Launch &launch, void *const *inputs,
                               void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  ClassLoss loss;
  const OperandInfo &logits = launch.inputs[0];
  if (!makeClassLoss(launch, 0, true, inputs[1], loss, error) ||
      !checkOutput(launch, 0, logits.dtype,
                   loss.lossShape(launch.inputs[1].shape), error))
    return false;
  return withFloat(launch, logits.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    std::vector<double> perElement(loss.elements, 0.0);
    double classes = static_cast<double>(loss.classes);
#pragma omp parallel for schedule(static) if (loss.elements * loss.classes >=  \
                                              kParallelElements)
    for (int64_t e = 0; e < loss.elements; ++e) {
      if (loss.ignored(e))
        continue;
      T max;
      double logSum;
      logSumExp(loss, x, e, max, logSum);
      // PyTorch: (1 - s) * nll + s * mean over classes of -log p.
      double uniform = 0.0;
      for (int64_t c = 0; c < loss.classes; ++c)
        uniform -= static_cast<double>(x[loss.at(e, c)] - max) - logSum;
      uniform /= classes;
      double nll =
          -(static_cast<double>(x[loss.at(e, loss.label(e))] - max) - logSum);
      perElement[e] = (1.0 - loss.smoothing) * nll + loss.smoothing * uniform;
    }
    storeLoss(loss, perElement, static_cast<T *>(outputs[0]));
    return true;
  });
}

/// The weight of element e's gradient: grad_loss (per element for
/// "none"), divided by the non-ignored count for "mean"; 0 when ignored.
bool lossWeights(const Launch &launch, const ClassLoss &loss,
                 const OperandInfo &gradLoss, const void *data,
                 std::vector<double> &weights, std::string &error) {
  Shape expected =
      loss.reduction == Reduction::None ? launch.inputs[2].shape : Shape();
  if (gradLoss.numElements() != product(expected))
    return fail(launch, error,
                "grad_loss has shape " + formatShape(gradLoss.shape) +
                    ", expected " + formatShape(expected));
  return withFloat(launch, gradLoss.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *g = static_cast<const T *>(data);
    double count = loss.reduction == Reduction::Mean ? loss.count() : 1.0;
    weights.assign(loss.elements, 0.0);
    for (int64_t e = 0; e < loss.elements; ++e)
      if (!loss.ignored(e))
        weights[e] =
            static_cast<double>(g[loss.reduction == Reduction::None ? e : 0]) /
            count;
    return true;
  });
}

bool softmaxCrossEntropyBackwardKernel(const Launch &launch,
                                       void *const *inputs,
                                       void *const *outputs,
                                       std::string &error) {
  if (!checkArity(launch, 3, 3, 1, 1, error))
    return false;
  ClassLoss loss;
  const OperandInfo &logits = launch.inputs[1];
  std::vector<double> weights;
  if (!makeClassLoss(launch, 1, true, inputs[2], loss, error) ||
      !checkOutput(launch, 0, logits.dtype, logits.shape, error) ||
      !lossWeights(launch, loss, launch.inputs[0], inputs[0], weights, error))
    return false;
  return withFloat(launch, logits.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[1]);
    T *dx = static_cast<T *>(outputs[0]);
    double uniform = loss.smoothing / static_cast<double>(loss.classes);
#pragma omp parallel for schedule(static) if (loss.elements * loss.classes >=  \
                                              kParallelElements)
    for (int64_t e = 0; e < loss.elements; ++e) {
      if (loss.ignored(e)) {
        for (int64_t c = 0; c < loss.classes; ++c)
          dx[loss.at(e, c)] = T(0);
        continue;
      }
      T max;
      double logSum;
      logSumExp(loss, x, e, max, logSum);
      int64_t label = loss.label(e);
      // d/dz of the loss is softmax(z) minus the smoothed target.
      for (int64_t c = 0; c < loss.classes; ++c) {
        double probability =
            std::exp(static_cast<double>(x[loss.at(e, c)] - max) - logSum);
        double target = (c == label ? 1.0 - loss.smoothing : 0.0) + uniform;
        dx[loss.at(e, c)] = static_cast<T>(weights[e] * (probability - target));
      }
    }
    return true;
  });
}

bool nllLossKernel(const Launch &launch, void *const *inputs,
                   void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  ClassLoss loss;
  const OperandInfo &logProbs = launch.inputs[0];
  if (!makeClassLoss(launch, 0, false, inputs[1], loss, error) ||
      !checkOutput(launch, 0, logProbs.dtype,
                   loss.lossShape(launch.inputs[1].shape), error))
    return false;
  return withFloat(launch, logProbs.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    std::vector<double> perElement(loss.elements, 0.0);
    for (int64_t e = 0; e < loss.elements; ++e)
      if (!loss.ignored(e))
        perElement[e] = -static_cast<double>(x[loss.at(e, loss.label(e))]);
    storeLoss(loss, perElement, static_cast<T *>(outputs[0]));
    return true;
  });
}

bool nllLossBackwardKernel(const Launch &launch, void *const *inputs,
                           void *const *outputs, std::string &error) {
  if (!checkArity(launch, 3, 3, 1, 1, error))
    return false;
  ClassLoss loss;
  const OperandInfo &logProbs = launch.inputs[1];
  std::vector<double> weights;
  if (!makeClassLoss(launch, 1, false, inputs[2], loss, error) ||
      !checkOutput(launch, 0, logProbs.dtype, logProbs.shape, error) ||
      !lossWeights(launch, loss, launch.inputs[0], inputs[0], weights, error))
    return false;
  return withFloat(launch, logProbs.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    T *dx = static_cast<T *>(outputs[0]);
    std::fill(dx, dx + logProbs.numElements(), T(0));
    for (int64_t e = 0; e < loss.elements; ++e)
      if (!loss.ignored(e))
        dx[loss.at(e, loss.label(e))] = static_cast<T>(-weights[e]);
    return true;
  });
}

//===----------------------------------------------------------------------===//
// Pointwise losses
//===----------------------------------------------------------------------===//

enum class Pointwise { Mse, L1, BceWithLogits };

template <Pointwise kind> double pointwiseLoss(double x, double t) {
  switch (kind) {
  case Pointwise::Mse:
    return (x - t) * (x - t);
  case Pointwise::L1:
    return std::fabs(x - t);
  case Pointwise::BceWithLogits: // max(x, 0) - x t + log(1 + e^-|x|)
    return std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::fabs(x)));
  }
  return 0.0;
}

template <Pointwise kind>
bool pointwiseLossKernel(const Launch &launch, void *const *inputs,
                         void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  Attributes attributes(launch);
  std::string text = attributes.string("reduction", "mean");
  Reduction reduction;
  if (!attributes.ok(error) || !parseReduction(launch, text, reduction, error))
    return false;
  const OperandInfo &prediction = launch.inputs[0], &target = launch.inputs[1];
  if (target.dtype != prediction.dtype)
    return fail(launch, error, "operands have different element types");
  if (!checkShape(launch, target, prediction.shape, "target", error) ||
      !checkOutput(launch, 0, prediction.dtype,
                   reduction == Reduction::None ? prediction.shape : Shape(),
                   error))
    return false;
  int64_t count = prediction.numElements();
  return withFloat(launch, prediction.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    const T *t = static_cast<const T *>(inputs[1]);
    T *y = static_cast<T *>(outputs[0]);
    auto at = [&](int64_t i) {
      return pointwiseLoss<kind>(static_cast<double>(x[i]),
                                 static_cast<double>(t[i]));
    };
    if (reduction == Reduction::None) {
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
      for (int64_t i = 0; i < count; ++i)
        y[i] = static_cast<T>(at(i));
      return true;
    }
    double sum = deterministicSum(count, at);
    y[0] = static_cast<T>(
        reduction == Reduction::Mean ? sum / static_cast<double>(count) : sum);
    return true;
  });
}

} // namespace

void registerLossKernels() {
  const char *ref = "reference";
  TRAINC_RT_REGISTER("graph.softmax_cross_entropy", ref,
                     softmaxCrossEntropyKernel);
  TRAINC_RT_REGISTER("graph.softmax_cross_entropy_backward", ref,
                     softmaxCrossEntropyBackwardKernel);
  TRAINC_RT_REGISTER("graph.nll_loss", ref, nllLossKernel);
  TRAINC_RT_REGISTER("graph.nll_loss_backward", ref, nllLossBackwardKernel);
  TRAINC_RT_REGISTER("graph.mse_loss", ref,
                     pointwiseLossKernel<Pointwise::Mse>);
  TRAINC_RT_REGISTER("graph.l1_loss", ref, pointwiseLossKernel<Pointwise::L1>);
  TRAINC_RT_REGISTER("graph.bce_with_logits_loss", ref,
                     pointwiseLossKernel<Pointwise::BceWithLogits>);
}

} // namespace trainc::rt
