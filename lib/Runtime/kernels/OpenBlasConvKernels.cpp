//===- OpenBlasConvKernels.cpp - convolutions on OpenBLAS -----------------===//
//
// Backend "openblas" of graph.conv, graph.conv_backward_input and
// graph.conv_backward_weight: im2col / col2im over any number of spatial
// dims (runs along the last one) and one GEMM per (image, group) task.
// Tasks are cut by shape only (see Blas.h): the forward splits columns
// when there are few images, the input gradient splits channels (its
// col2im writes disjoint planes), and the weight gradient sums per-chunk
// partial gradients in chunk order. Convs with output planes of at most 16
// positions instead run as one GEMM per group over all images, with only
// the kernel taps that read the input (BatchedConv).
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/Blas.h"
#include "lib/Runtime/kernels/ConvGather.h"

namespace trainc::rt {
namespace {

//===----------------------------------------------------------------------===//
// im2col / col2im
//===----------------------------------------------------------------------===//

/// col [channels * kernelSize, end - begin] from `channels` input planes.
template <typename T>
void im2col(const Window &w, const T *x, int64_t channels, int64_t begin,
            int64_t end, T *col) {
  int64_t columns = end - begin;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kf = 0; kf < w.kernelSize; ++kf) {
      T *row = col + (c * w.kernelSize + kf) * columns;
      const T *plane = x + c * w.inputPlane;
      forEachTapRun(
          w, kf, begin, end,
          [&](int64_t column, int64_t length, int64_t in, int64_t step) {
            T *to = row + (column - begin);
            for (int64_t i = 0; i < length; ++i)
              to[i] = plane[in + i * step];
          },
          [&](int64_t column, int64_t length) {
            std::fill_n(row + (column - begin), length, T(0));
          });
    }
}

/// Adds col [channels * kernelSize, outputPlane] into `channels` planes.
template <typename T>
void col2im(const Window &w, const T *col, int64_t channels, T *x) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kf = 0; kf < w.kernelSize; ++kf) {
      const T *row = col + (c * w.kernelSize + kf) * w.outputPlane;
      T *plane = x + c * w.inputPlane;
      forEachTapRun(
          w, kf, 0, w.outputPlane,
          [&](int64_t column, int64_t length, int64_t in, int64_t step) {
            for (int64_t i = 0; i < length; ++i)
              plane[in + i * step] += row[column + i];
          },
          [](int64_t, int64_t) {});
    }
}

/// A 1x1 window with unit strides and no padding reads the input as is.
bool isPointwise(const Window &w) {
  for (size_t d = 0; d < w.rank; ++d)
    if (w.kernel[d] != 1 || w.strides[d] != 1 || w.padsBegin[d] != 0 ||
        w.padsEnd[d] != 0)
      return false;
  return true;
}

/// Checks that the GEMMs of a conv fit BLAS's int sizes.
bool prepareGemms(const Launch &launch, const ConvShape &conv,
                  std::string &error) {
  const Window &win = conv.window;
  return blas::prepare(launch,
                       {conv.groupOutputs, conv.groupChannels * win.kernelSize,
                        win.outputPlane, win.inputPlane},
                       error);
}

//===----------------------------------------------------------------------===//
// Small output planes: one GEMM over all images (ConvGather.h)
//===----------------------------------------------------------------------===//

/// BatchedConv with its buffers.
template <typename T> struct OwnedBatchedConv : BatchedConv<T> {
  std::vector<T> colsBuffer, rowsBuffer, compactBuffer;
  explicit OwnedBatchedConv(const ConvShape &shape)
      : BatchedConv<T>(shape), colsBuffer(this->colsSize()),
        rowsBuffer(this->rowsSize()), compactBuffer(this->compactSize()) {
    this->cols = colsBuffer.data();
    this->rows = rowsBuffer.data();
    this->compact = compactBuffer.data();
  }
};

template <typename T>
void convBatched(const ConvShape &conv, const T *x, const T *w, const T *bias,
                 T *y) {
  OwnedBatchedConv<T> b(conv);
  for (int64_t g = 0; g < conv.group; ++g) {
    const T *weights = b.liveWeights(w, g);
    b.gatherInput(x, g);
    blas::parallelGemm<T>(false, false, b.mg, b.columns, b.inner, 1, weights,
                          b.inner, b.cols, b.columns, 0, b.rows, b.columns);
    b.scatterOutput(bias, g, y);
  }
}

template <typename T>
void convBackwardInputBatched(const ConvShape &conv, const T *dy, const T *w,
                              T *dx) {
  OwnedBatchedConv<T> b(conv);
  for (int64_t g = 0; g < conv.group; ++g) {
    const T *weights = b.liveWeights(w, g);
    b.gatherOutput(dy, g);
    blas::parallelGemm<T>(true, false, b.inner, b.columns, b.mg, 1, weights,
                          b.inner, b.rows, b.columns, 0, b.cols, b.columns);
    b.scatterInput(g, dx);
  }
}

template <typename T>
void convBackwardWeightBatched(const ConvShape &conv, const T *dy, const T *x,
                               T *dw) {
  OwnedBatchedConv<T> b(conv);
  for (int64_t g = 0; g < conv.group; ++g) {
    b.gatherOutput(dy, g);
    b.gatherInput(x, g);
    blas::parallelGemm<T>(false, true, b.mg, b.inner, b.columns, 1, b.rows,
                          b.columns, b.cols, b.columns, 0,
                          b.weightGradient(dw, g), b.inner);
    b.scatterWeight(g, dw);
  }
}

bool convKernel(const Launch &launch, void *const *inputs, void *const *outputs,
                std::string &error) {
  ConvShape conv;
  if (!checkConv(launch, conv, error) || !prepareGemms(launch, conv, error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  bool hasBias = launch.inputs.size() == 3;
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    const T *w = static_cast<const T *>(inputs[1]);
    const T *bias = hasBias ? static_cast<const T *>(inputs[2]) : nullptr;
    T *y = static_cast<T *>(outputs[0]);
    if (runsBatched(conv)) {
      convBatched(conv, x, w, bias, y);
      return true;
    }
    const Window &win = conv.window;
    int64_t groups = conv.group, mg = conv.groupOutputs;
    int64_t rows = conv.groupChannels * win.kernelSize;
    int64_t plane = win.outputPlane;
    bool direct = isPointwise(win);
    // Few images: also split the output columns.
    int64_t images = conv.batch * groups;
    int64_t columnBlocks =
        images >= 4 ? 1
                    : std::max<int64_t>(1, std::min<int64_t>(8, plane / 256));
    int64_t blockColumns =
        (plane + columnBlocks - 1) / std::max<int64_t>(1, columnBlocks);
    std::vector<T> cols(direct ? 0 : maxThreads() * rows * blockColumns);
    int64_t tasks = images * columnBlocks;
#pragma omp parallel for schedule(                                             \
    static) if (tasks > 1 && images * mg * rows * plane >= kParallelElements)
    for (int64_t task = 0; task < tasks; ++task) {
      int64_t image = task / columnBlocks, n = image / groups,
              g = image % groups;
      int64_t begin = (task % columnBlocks) * blockColumns;
      int64_t end = std::min(plane, begin + blockColumns);
      if (begin >= end)
        continue;
      const T *in =
          x + (n * conv.channels + g * conv.groupChannels) * win.inputPlane;
      T *out = y + (n * conv.outChannels + g * mg) * plane;
      if (bias)
        for (int64_t r = 0; r < mg; ++r)
          std::fill(out + r * plane + begin, out + r * plane + end,
                    bias[g * mg + r]);
      const T *b = in + begin;
      int64_t ldb = win.inputPlane;
      if (!direct) {
        T *col = cols.data() + threadIndex() * rows * blockColumns;
        im2col(win, in, conv.groupChannels, begin, end, col);
        b = col;
        ldb = end - begin;
      }
      blas::gemm<T>(false, false, mg, end - begin, rows, 1, w + g * mg * rows,
                    rows, b, ldb, bias ? 1 : 0, out + begin, plane);
    }
    return true;
  });
}

bool convBackwardInputKernel(const Launch &launch, void *const *inputs,
                             void *const *outputs, std::string &error) {
  ConvShape conv;
  if (!checkConvBackwardInput(launch, conv, error) ||
      !prepareGemms(launch, conv, error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0];
  return withFloat(launch, gradOutput.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T *>(inputs[0]);
    const T *w = static_cast<const T *>(inputs[1]);
    T *dx = static_cast<T *>(outputs[0]);
    if (runsBatched(conv)) {
      convBackwardInputBatched(conv, dy, w, dx);
      return true;
    }
    const Window &win = conv.window;
    int64_t groups = conv.group, mg = conv.groupOutputs;
    int64_t cg = conv.groupChannels, ks = win.kernelSize;
    int64_t plane = win.outputPlane;
    bool direct = isPointwise(win);
    // Few images: also split the channels (col2im then writes disjoint
    // planes).
    int64_t images = conv.batch * groups;
    int64_t channelBlocks = images >= 4 ? 1 : std::min<int64_t>(cg, 4);
    int64_t blockChannels =
        (cg + channelBlocks - 1) / std::max<int64_t>(1, channelBlocks);
    std::vector<T> cols(direct ? 0 : maxThreads() * blockChannels * ks * plane);
    int64_t tasks = images * channelBlocks;
#pragma omp parallel for schedule(static) if (tasks > 1 &&                     \
                                              images * mg * cg * ks * plane >= \
                                                  kParallelElements)
    for (int64_t task = 0; task < tasks; ++task) {
      int64_t image = task / channelBlocks, n = image / groups,
              g = image % groups;
      int64_t first = (task % channelBlocks) * blockChannels;
      int64_t last = std::min(cg, first + blockChannels);
      if (first >= last)
        continue;
      const T *gradient = dy + (n * conv.outChannels + g * mg) * plane;
      // Rows [first * ks, last * ks) of W_g^T.
      const T *a = w + g * mg * cg * ks + first * ks;
      T *out = dx + (n * conv.channels + g * cg + first) * win.inputPlane;
      int64_t rows = (last - first) * ks;
      if (direct) {
        blas::gemm<T>(true, false, rows, plane, mg, 1, a, cg * ks, gradient,
                      plane, 0, out, win.inputPlane);
        continue;
      }
      T *col = cols.data() + threadIndex() * blockChannels * ks * plane;
      blas::gemm<T>(true, false, rows, plane, mg, 1, a, cg * ks, gradient,
                    plane, 0, col, plane);
      std::fill(out, out + (last - first) * win.inputPlane, T(0));
      col2im(win, col, last - first, out);
    }
    return true;
  });
}

bool convBackwardWeightKernel(const Launch &launch, void *const *inputs,
                              void *const *outputs, std::string &error) {
  ConvShape conv;
  if (!checkConvBackwardWeight(launch, conv, error) ||
      !prepareGemms(launch, conv, error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0];
  const Shape &weightShape = conv.weightShape;
  return withFloat(launch, gradOutput.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T *>(inputs[0]);
    const T *x = static_cast<const T *>(inputs[1]);
    T *dw = static_cast<T *>(outputs[0]);
    if (runsBatched(conv)) {
      convBackwardWeightBatched(conv, dy, x, dw);
      return true;
    }
    const Window &win = conv.window;
    int64_t groups = conv.group, mg = conv.groupOutputs;
    int64_t rows = conv.groupChannels * win.kernelSize;
    int64_t plane = win.outputPlane, weightSize = product(weightShape);
    bool direct = isPointwise(win);
    // Images in at most 8 chunks; each chunk sums its images into its own
    // partial gradient, and the partials are added in chunk order.
    int64_t perChunk = std::max<int64_t>(1, (conv.batch + 7) / 8);
    int64_t chunks =
        std::max<int64_t>(1, (conv.batch + perChunk - 1) / perChunk);
    std::vector<T> partials(chunks > 1 ? chunks * weightSize : 0);
    std::vector<T> cols(direct ? 0 : maxThreads() * rows * plane);
    auto runChunk = [&](int64_t chunk, bool parallelGemm) {
      T *target = chunks > 1 ? partials.data() + chunk * weightSize : dw;
      int64_t begin = chunk * perChunk;
      int64_t end = std::min(conv.batch, begin + perChunk);
      if (begin >= end)
        std::fill(target, target + weightSize, T(0));
      for (int64_t n = begin; n < end; ++n)
        for (int64_t g = 0; g < groups; ++g) {
          const T *in =
              x + (n * conv.channels + g * conv.groupChannels) * win.inputPlane;
          const T *b = in;
          if (!direct) {
            T *col = cols.data() + threadIndex() * rows * plane;
            im2col(win, in, conv.groupChannels, 0, plane, col);
            b = col;
          }
          const T *gradient = dy + (n * conv.outChannels + g * mg) * plane;
          T beta = n == begin ? 0 : 1;
          T *c = target + g * mg * rows;
          if (parallelGemm)
            blas::parallelGemm<T>(false, true, mg, rows, plane, 1, gradient,
                                  plane, b, plane, beta, c, rows);
          else
            blas::gemm<T>(false, true, mg, rows, plane, 1, gradient, plane, b,
                          plane, beta, c, rows);
        }
    };
    if (chunks == 1) {
      runChunk(0, true);
      return true;
    }
    int64_t work = conv.batch * groups * mg * rows * plane;
#pragma omp parallel for schedule(static) if (work >= kParallelElements)
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      runChunk(chunk, false);
#pragma omp parallel for schedule(static) if (chunks * weightSize >=           \
                                              kParallelElements)
    for (int64_t i = 0; i < weightSize; ++i) {
      double sum = 0.0;
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        sum += static_cast<double>(partials[chunk * weightSize + i]);
      dw[i] = static_cast<T>(sum);
    }
    return true;
  });
}
} // namespace

void registerOpenBlasConvKernels() {
  const char *backend = "openblas";
  TRAINC_RT_REGISTER("graph.conv", backend, convKernel);
  TRAINC_RT_REGISTER("graph.conv_backward_input", backend,
                     convBackwardInputKernel);
  TRAINC_RT_REGISTER("graph.conv_backward_weight", backend,
                     convBackwardWeightKernel);
}

} // namespace trainc::rt
