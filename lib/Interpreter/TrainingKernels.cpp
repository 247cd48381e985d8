//===- TrainingKernels.cpp - losses, optimizer updates, the dropout mask --===//
//
// Losses follow PyTorch (CrossEntropyLoss, NLLLoss, MSELoss, L1Loss,
// BCEWithLogitsLoss), the optimizer updates the formulas in their op
// descriptions (TrainingOps.td), and graph.random_mask the Philox stream of
// trainc/Random.h.
//
//===----------------------------------------------------------------------===//
#include "lib/Interpreter/Kernels.h"

#include "dialects/graph/GraphOps.h"
#include "trainc/Random.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace graph = trainc::graph;

namespace trainc::interpreter {
namespace {

//===----------------------------------------------------------------------===//
// Class-index losses
//===----------------------------------------------------------------------===//

/// scores [N, C, d...] against labels [N, d...]: one "element" per label.
struct ClassLoss {
  int64_t classes = 0, inner = 1, elements = 0;
  std::optional<int64_t> ignoreIndex;
  bool mean = false, none = false;
  /// Flat position of class `c` of element `e` in the scores.
  int64_t at(int64_t e, int64_t c) const {
    return ((e / inner) * classes + c) * inner + e % inner;
  }
};

llvm::Expected<ClassLoss> classLoss(const HostTensor &scores,
                                    const HostTensor &labels,
                                    StringRef reduction, IntegerAttr ignore) {
  ArrayRef<int64_t> shape = scores.shape;
  llvm::SmallVector<int64_t> expected;
  if (shape.size() >= 2) {
    expected.push_back(shape[0]);
    llvm::append_range(expected, shape.drop_front(2));
  }
  if (shape.size() < 2 ||
      ArrayRef<int64_t>(labels.shape) != ArrayRef<int64_t>(expected))
    return kernelError("labels " + formatShape(labels.shape) +
                       " do not match scores " + formatShape(shape));
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return kernelError("unknown reduction '" + reduction + "'");
  ClassLoss loss;
  loss.classes = shape[1];
  loss.inner = product(shape.drop_front(2));
  loss.elements = labels.numElements();
  loss.mean = reduction == "mean";
  loss.none = reduction == "none";
  if (ignore)
    loss.ignoreIndex = ignore.getInt();
  for (double label : labels.data) {
    int64_t value = toIndex(label);
    if (value != loss.ignoreIndex && (value < 0 || value >= loss.classes))
      return kernelError("label " + std::to_string(value) +
                         " is not a class index in [0, " +
                         std::to_string(loss.classes) + ")");
  }
  return loss;
}

bool ignored(const ClassLoss &loss, double label) {
  return loss.ignoreIndex && toIndex(label) == *loss.ignoreIndex;
}

/// Log-softmax over the classes of element `e`.
std::vector<double> logSoftmax(const ClassLoss &loss, const HostTensor &scores,
                               int64_t e) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < loss.classes; ++c)
    max = std::max(max, scores.data[loss.at(e, c)]);
  double sum = 0.0;
  for (int64_t c = 0; c < loss.classes; ++c)
    sum += std::exp(scores.data[loss.at(e, c)] - max);
  std::vector<double> result(loss.classes);
  for (int64_t c = 0; c < loss.classes; ++c)
    result[c] = scores.data[loss.at(e, c)] - max - std::log(sum);
  return result;
}

/// Per-element losses reduced as `loss` says; ignored elements hold 0 and
/// do not count in the mean.
HostTensor reduceClassLoss(const ClassLoss &loss, const HostTensor &labels,
                           const std::vector<double> &perElement) {
  if (loss.none) {
    HostTensor output = filled(labels.shape);
    output.data = perElement;
    return output;
  }
  double sum = 0.0, count = 0.0;
  for (int64_t e = 0; e < loss.elements; ++e) {
    sum += perElement[e];
    count += ignored(loss, labels.data[e]) ? 0.0 : 1.0;
  }
  return filled({}, loss.mean ? sum / count : sum);
}

/// The weight of element `e`'s gradient: grad_loss (per element for
/// "none"), divided by the non-ignored count for "mean".
std::vector<double> lossWeights(const ClassLoss &loss, const HostTensor &labels,
                                const HostTensor &gradLoss) {
  double count = 0.0;
  for (double label : labels.data)
    count += ignored(loss, label) ? 0.0 : 1.0;
  std::vector<double> weights(loss.elements, 0.0);
  for (int64_t e = 0; e < loss.elements; ++e) {
    if (ignored(loss, labels.data[e]))
      continue;
    weights[e] = loss.none ? gradLoss.data[e] : gradLoss.data[0];
    if (loss.mean)
      weights[e] /= count;
  }
  return weights;
}

KernelResult softmaxCrossEntropyKernel(graph::SoftmaxCrossEntropyOp op,
                                       const Values &values) {
  const HostTensor &logits = values[op.getLogits()];
  const HostTensor &labels = values[op.getLabels()];
  auto loss =
      classLoss(logits, labels, op.getReduction(), op.getIgnoreIndexAttr());
  if (!loss)
    return loss.takeError();
  double smoothing = op.getLabelSmoothing().convertToDouble();
  std::vector<double> perElement(loss->elements, 0.0);
  for (int64_t e = 0; e < loss->elements; ++e) {
    if (ignored(*loss, labels.data[e]))
      continue;
    std::vector<double> logProbs = logSoftmax(*loss, logits, e);
    // PyTorch: (1 - s) * nll + s * mean over classes of -log p.
    double uniform = 0.0;
    for (double logProb : logProbs)
      uniform -= logProb;
    uniform /= static_cast<double>(loss->classes);
    double nll = -logProbs[toIndex(labels.data[e])];
    perElement[e] = (1.0 - smoothing) * nll + smoothing * uniform;
  }
  return result(reduceClassLoss(*loss, labels, perElement));
}

KernelResult
softmaxCrossEntropyBackwardKernel(graph::SoftmaxCrossEntropyBackwardOp op,
                                  const Values &values) {
  const HostTensor &logits = values[op.getLogits()];
  const HostTensor &labels = values[op.getLabels()];
  auto loss =
      classLoss(logits, labels, op.getReduction(), op.getIgnoreIndexAttr());
  if (!loss)
    return loss.takeError();
  double smoothing = op.getLabelSmoothing().convertToDouble();
  std::vector<double> weights =
      lossWeights(*loss, labels, values[op.getGradLoss()]);
  HostTensor gradLogits = filled(logits.shape);
  for (int64_t e = 0; e < loss->elements; ++e) {
    if (ignored(*loss, labels.data[e]))
      continue;
    std::vector<double> logProbs = logSoftmax(*loss, logits, e);
    int64_t label = toIndex(labels.data[e]);
    // d/dz of the loss is softmax(z) minus the smoothed target.
    for (int64_t c = 0; c < loss->classes; ++c) {
      double target = (c == label ? 1.0 - smoothing : 0.0) +
                      smoothing / static_cast<double>(loss->classes);
      gradLogits.data[loss->at(e, c)] =
          weights[e] * (std::exp(logProbs[c]) - target);
    }
  }
  return result(std::move(gradLogits));
}

KernelResult nllLossKernel(graph::NllLossOp op, const Values &values) {
  const HostTensor &logProbs = values[op.getLogProbs()];
  const HostTensor &labels = values[op.getLabels()];
  auto loss =
      classLoss(logProbs, labels, op.getReduction(), op.getIgnoreIndexAttr());
  if (!loss)
    return loss.takeError();
  std::vector<double> perElement(loss->elements, 0.0);
  for (int64_t e = 0; e < loss->elements; ++e)
    if (!ignored(*loss, labels.data[e]))
      perElement[e] = -logProbs.data[loss->at(e, toIndex(labels.data[e]))];
  return result(reduceClassLoss(*loss, labels, perElement));
}

KernelResult nllLossBackwardKernel(graph::NllLossBackwardOp op,
                                   const Values &values) {
  const HostTensor &logProbs = values[op.getLogProbs()];
  const HostTensor &labels = values[op.getLabels()];
  auto loss =
      classLoss(logProbs, labels, op.getReduction(), op.getIgnoreIndexAttr());
  if (!loss)
    return loss.takeError();
  std::vector<double> weights =
      lossWeights(*loss, labels, values[op.getGradLoss()]);
  HostTensor gradLogProbs = filled(logProbs.shape);
  for (int64_t e = 0; e < loss->elements; ++e)
    if (!ignored(*loss, labels.data[e]))
      gradLogProbs.data[loss->at(e, toIndex(labels.data[e]))] = -weights[e];
  return result(std::move(gradLogProbs));
}

//===----------------------------------------------------------------------===//
// Pointwise losses
//===----------------------------------------------------------------------===//

template <typename OpTy, typename Function>
void addPointwiseLoss(KernelTable &table, Function function) {
  table.add<OpTy>([function](OpTy op, const Values &values) -> KernelResult {
    const HostTensor &prediction = values[op.getPrediction()];
    const HostTensor &target = values[op.getTarget()];
    if (prediction.shape != target.shape)
      return kernelError("prediction and target shapes differ");
    StringRef reduction = op.getReduction();
    HostTensor losses = filled(prediction.shape);
    for (int64_t i = 0; i < prediction.numElements(); ++i)
      losses.data[i] = function(prediction.data[i], target.data[i]);
    if (reduction == "none")
      return result(std::move(losses));
    if (reduction != "mean" && reduction != "sum")
      return kernelError("unknown reduction '" + reduction + "'");
    double sum = 0.0;
    for (double value : losses.data)
      sum += value;
    if (reduction == "mean")
      sum /= static_cast<double>(prediction.numElements());
    return result(filled({}, sum));
  });
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// The scalar learning rate and step operands of an update.
struct UpdateScalars {
  double learningRate;
  int64_t step;
};

llvm::Expected<UpdateScalars> updateScalars(const HostTensor &learningRate,
                                            const HostTensor &step) {
  if (learningRate.numElements() != 1 || step.numElements() != 1)
    return kernelError("learning rate and step must be scalars");
  return UpdateScalars{learningRate.data[0], toIndex(step.data[0])};
}

/// Checks that every per-parameter operand has the parameter's shape.
llvm::Error sameShapes(std::initializer_list<const HostTensor *> tensors) {
  for (const HostTensor *tensor : tensors)
    if (tensor->shape != (*tensors.begin())->shape)
      return kernelError("gradient and optimizer state must have the "
                         "parameter's shape");
  return llvm::Error::success();
}

KernelResult sgdUpdateKernel(graph::SgdUpdateOp op, const Values &values) {
  const HostTensor &param = values[op.getParam()];
  const HostTensor &grad = values[op.getGrad()];
  const HostTensor *buffer =
      op.getMomentumBuffer() ? &values[op.getMomentumBuffer()] : nullptr;
  auto scalars =
      updateScalars(values[op.getLearningRate()], values[op.getStep()]);
  if (!scalars)
    return scalars.takeError();
  if (auto error = sameShapes({&param, &grad, buffer ? buffer : &param}))
    return std::move(error);
  double momentum = op.getMomentum().convertToDouble();
  double dampening = op.getDampening().convertToDouble();
  double weightDecay = op.getWeightDecay().convertToDouble();
  if ((momentum != 0.0) != (buffer != nullptr))
    return kernelError("a momentum buffer is needed exactly when momentum is "
                       "non-zero");
  // torch.optim.SGD's arithmetic op for op (TrainingOps.td): in the
  // parameter's type (double in an exact run, f32 for f16 and bf16), each
  // `add` with an alpha one fused multiply-add. The first step takes the
  // whole gradient (torch.optim.SGD's buffer initialization from zero,
  // ONNX Momentum's beta adjustment).
  double gradientShare = scalars->step == 0 ? 1.0 : 1.0 - dampening;
  HostTensor newParam = param, newBuffer = buffer ? *buffer : HostTensor();
  auto update = [&](auto tag) {
    using T = decltype(tag);
    T decay = static_cast<T>(weightDecay), mu = static_cast<T>(momentum);
    T share = static_cast<T>(gradientShare);
    T rate = -static_cast<T>(scalars->learningRate);
    for (int64_t i = 0; i < param.numElements(); ++i) {
      T p = static_cast<T>(param.data[i]);
      T direction = static_cast<T>(grad.data[i]);
      if (weightDecay != 0.0)
        direction = std::fma(p, decay, direction);
      if (buffer) {
        T b = std::fma(direction, share, static_cast<T>(buffer->data[i]) * mu);
        newBuffer.data[i] = b;
        direction = op.getNesterov() ? std::fma(b, mu, direction) : b;
      }
      newParam.data[i] = std::fma(direction, rate, p);
    }
  };
  if (values.exact() || param.dtype == DType::F64)
    update(double{});
  else
    update(float{});
  std::vector<HostTensor> results;
  results.push_back(std::move(newParam));
  if (buffer)
    results.push_back(std::move(newBuffer));
  return results;
}

KernelResult adamUpdateKernel(graph::AdamUpdateOp op, const Values &values) {
  const HostTensor &param = values[op.getParam()];
  const HostTensor &grad = values[op.getGrad()];
  const HostTensor &expAvg = values[op.getExpAvg()];
  const HostTensor &expAvgSq = values[op.getExpAvgSq()];
  auto scalars =
      updateScalars(values[op.getLearningRate()], values[op.getStep()]);
  if (!scalars)
    return scalars.takeError();
  if (auto error = sameShapes({&param, &grad, &expAvg, &expAvgSq}))
    return std::move(error);
  double lr = scalars->learningRate;
  double beta1 = op.getBeta1().convertToDouble();
  double beta2 = op.getBeta2().convertToDouble();
  double epsilon = op.getEpsilon().convertToDouble();
  double weightDecay = op.getWeightDecay().convertToDouble();
  bool decoupled = op.getDecoupled();
  double t = static_cast<double>(scalars->step);
  HostTensor newParam = param, newExpAvg = expAvg, newExpAvgSq = expAvgSq;
  if (op.getOnnxConvention()) {
    // In double, rounded once (TrainingOps.td).
    double rate = scalars->step > 0 ? lr * std::sqrt(1.0 - std::pow(beta2, t)) /
                                          (1.0 - std::pow(beta1, t))
                                    : lr;
    for (int64_t i = 0; i < param.numElements(); ++i) {
      double p = param.data[i];
      double g = decoupled ? grad.data[i] : grad.data[i] + weightDecay * p;
      if (decoupled) // AdamW decays the parameter itself
        p *= 1.0 - lr * weightDecay;
      double m = beta1 * expAvg.data[i] + (1.0 - beta1) * g;
      double v = beta2 * expAvgSq.data[i] + (1.0 - beta2) * g * g;
      newParam.data[i] = p - rate * m / (std::sqrt(v) + epsilon);
      newExpAvg.data[i] = m;
      newExpAvgSq.data[i] = v;
    }
  } else {
    // torch.optim.Adam and AdamW's arithmetic op for op (TrainingOps.td),
    // k = t + 1: in the parameter's type (double in an exact run, f32 for
    // f16 and bf16), the step size, the correction and AdamW's 1 - lr *
    // weight_decay computed in double and rounded to it.
    double k = t + 1.0;
    double stepSize = lr / (1.0 - std::pow(beta1, k));
    double correction = std::sqrt(1.0 - std::pow(beta2, k));
    auto update = [&](auto tag) {
      using T = decltype(tag);
      T decay = static_cast<T>(weightDecay);
      T shrink = static_cast<T>(1.0 - lr * weightDecay);
      T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
      T share1 = static_cast<T>(1.0 - beta1);
      T share2 = static_cast<T>(1.0 - beta2);
      T root = static_cast<T>(correction), eps = static_cast<T>(epsilon);
      T rate = -static_cast<T>(stepSize);
      for (int64_t i = 0; i < param.numElements(); ++i) {
        T p = static_cast<T>(param.data[i]);
        T g = static_cast<T>(grad.data[i]);
        if (decoupled && weightDecay != 0.0)
          p *= shrink;
        else if (!decoupled && weightDecay != 0.0)
          g = std::fma(p, decay, g);
        T m = std::fma(g, share1, static_cast<T>(expAvg.data[i]) * b1);
        T v = std::fma(share2 * g, g, static_cast<T>(expAvgSq.data[i]) * b2);
        T denominator = std::sqrt(v) / root + eps;
        newParam.data[i] = p + rate * m / denominator;
        newExpAvg.data[i] = m;
        newExpAvgSq.data[i] = v;
      }
    };
    if (values.exact() || param.dtype == DType::F64)
      update(double{});
    else
      update(float{});
  }
  std::vector<HostTensor> results;
  results.push_back(std::move(newParam));
  results.push_back(std::move(newExpAvg));
  results.push_back(std::move(newExpAvgSq));
  return results;
}

KernelResult adagradUpdateKernel(graph::AdagradUpdateOp op,
                                 const Values &values) {
  const HostTensor &param = values[op.getParam()];
  const HostTensor &grad = values[op.getGrad()];
  const HostTensor &sum = values[op.getSum()];
  auto scalars =
      updateScalars(values[op.getLearningRate()], values[op.getStep()]);
  if (!scalars)
    return scalars.takeError();
  if (auto error = sameShapes({&param, &grad, &sum}))
    return std::move(error);
  double lrDecay = op.getLrDecay().convertToDouble();
  double epsilon = op.getEpsilon().convertToDouble();
  double weightDecay = op.getWeightDecay().convertToDouble();
  double rate = scalars->learningRate /
                (1.0 + static_cast<double>(scalars->step) * lrDecay);
  HostTensor newParam = param, newSum = sum;
  // torch.optim.Adagrad's arithmetic op for op (TrainingOps.td), in the
  // parameter's type (double in an exact run, f32 for f16 and bf16).
  auto update = [&](auto tag) {
    using T = decltype(tag);
    T decay = static_cast<T>(weightDecay), eps = static_cast<T>(epsilon);
    T negativeRate = -static_cast<T>(rate);
    for (int64_t i = 0; i < param.numElements(); ++i) {
      T p = static_cast<T>(param.data[i]), g = static_cast<T>(grad.data[i]);
      if (weightDecay != 0.0)
        g = std::fma(p, decay, g);
      T s = std::fma(g, g, static_cast<T>(sum.data[i]));
      newSum.data[i] = s;
      newParam.data[i] = p + negativeRate * g / (std::sqrt(s) + eps);
    }
  };
  if (values.exact() || param.dtype == DType::F64)
    update(double{});
  else
    update(float{});
  std::vector<HostTensor> results;
  results.push_back(std::move(newParam));
  results.push_back(std::move(newSum));
  return results;
}

//===----------------------------------------------------------------------===//
// Randomness
//===----------------------------------------------------------------------===//

KernelResult randomMaskKernel(graph::RandomMaskOp op, const Values &values) {
  const HostTensor &seed = values[op.getSeed()];
  const HostTensor &step = values[op.getStep()];
  if (seed.numElements() != 1 || step.numElements() != 1)
    return kernelError("seed and step must be scalars");
  double ratio = op.getRatio().convertToDouble();
  if (ratio < 0.0 || ratio >= 1.0)
    return kernelError("ratio must be in [0, 1)");
  // i64 values wrap into the RNG's unsigned words.
  auto word = [](double value) {
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  };
  uint64_t seedWord = word(seed.data[0]), stepWord = word(step.data[0]);
  uint64_t stream = static_cast<uint64_t>(op.getStreamAttr().getInt());
  HostTensor mask = filled(op.getShape());
  for (int64_t i = 0; i < mask.numElements(); ++i)
    mask.data[i] = trainc_random_mask_value(seedWord, stream, stepWord,
                                            static_cast<uint64_t>(i), ratio);
  return result(std::move(mask));
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

/// The interpreter is one process: the mean over the job is the tensor.
KernelResult allReduceKernel(graph::AllReduceOp op, const Values &values) {
  return result(HostTensor(values[op.getInput()]));
}

} // namespace

void registerTrainingKernels(KernelTable &table) {
  table.add<graph::SoftmaxCrossEntropyOp>(softmaxCrossEntropyKernel);
  table.add<graph::SoftmaxCrossEntropyBackwardOp>(
      softmaxCrossEntropyBackwardKernel);
  table.add<graph::NllLossOp>(nllLossKernel);
  table.add<graph::NllLossBackwardOp>(nllLossBackwardKernel);
  addPointwiseLoss<graph::MseLossOp>(
      table, [](double x, double t) { return (x - t) * (x - t); });
  addPointwiseLoss<graph::L1LossOp>(
      table, [](double x, double t) { return std::fabs(x - t); });
  // PyTorch's stable form: max(x, 0) - x t + log(1 + e^-|x|).
  addPointwiseLoss<graph::BceWithLogitsLossOp>(table, [](double x, double t) {
    return std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::fabs(x)));
  });

  table.add<graph::SgdUpdateOp>(sgdUpdateKernel);
  table.add<graph::AdamUpdateOp>(adamUpdateKernel);
  table.add<graph::AdagradUpdateOp>(adagradUpdateKernel);

  table.add<graph::RandomMaskOp>(randomMaskKernel);
  table.add<graph::AllReduceOp>(allReduceKernel);
}

} // namespace trainc::interpreter
