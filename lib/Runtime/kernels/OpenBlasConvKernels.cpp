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

namespace trainc::rt {
namespace {

//===----------------------------------------------------------------------===//
// im2col / col2im
//===----------------------------------------------------------------------===//

int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/// For kernel tap `kernelFlat` and output columns [begin, end) (flat
/// output positions): calls inside(column, length, input, step) for runs
/// of columns whose tap reads input elements input + i * step of a plane,
/// and outside(column, length) for runs that read padding.
template <typename Inside, typename Outside>
void forEachTapRun(const Window &w, int64_t kernelFlat, int64_t begin,
                   int64_t end, Inside inside, Outside outside) {
  size_t last = w.rank - 1;
  int64_t k[kMaxSpatialRank], o[kMaxSpatialRank];
  for (int64_t d = static_cast<int64_t>(last), rest = kernelFlat; d >= 0; --d) {
    k[d] = rest % w.kernel[d];
    rest /= w.kernel[d];
  }
  w.unravelOutput(begin, o);
  int64_t stride = w.strides[last], width = w.outputSpatial[last];
  int64_t shift = k[last] * w.dilations[last] - w.padsBegin[last];
  // Output columns ow with 0 <= ow * stride + shift < input width.
  int64_t low = std::max<int64_t>(0, ceilDiv(-shift, stride));
  int64_t high = std::min<int64_t>(
      width, floorDiv(w.inputSpatial[last] - 1 - shift, stride) + 1);
  for (int64_t column = begin; column < end;) {
    int64_t ow = o[last], length = std::min(width - ow, end - column);
    bool in = high > low;
    int64_t base = 0;
    for (size_t d = 0; d < last && in; ++d) {
      int64_t position =
          o[d] * w.strides[d] - w.padsBegin[d] + k[d] * w.dilations[d];
      in = position >= 0 && position < w.inputSpatial[d];
      base += position * w.inputStrides[d];
    }
    if (!in) {
      outside(column, length);
    } else {
      int64_t a = std::min(std::max(low, ow), ow + length);
      int64_t b = std::max(std::min(high, ow + length), a);
      if (a > ow)
        outside(column, a - ow);
      if (b > a)
        inside(column + (a - ow), b - a, base + a * stride + shift, stride);
      if (ow + length > b)
        outside(column + (b - ow), ow + length - b);
    }
    column += length;
    o[last] += length;
    if (o[last] == width) {
      o[last] = 0;
      for (int64_t d = static_cast<int64_t>(last) - 1; d >= 0; --d) {
        if (++o[d] < w.outputSpatial[d])
          break;
        o[d] = 0;
      }
    }
  }
}

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
// Small output planes: one GEMM over all images
//===----------------------------------------------------------------------===//

/// Whether a conv (or its gradients) runs as one GEMM over all images:
/// output planes of at most 16 positions, where per-image GEMMs would have
/// a dimension of at most 16, with the gathered operands under 64 MiB of
/// elements. The dispatch rules that prefer this backend for such convs
/// are in dialects/kernel/BackendRegistry.cpp (smallPlaneConv*); they must
/// accept no launch this refuses.
bool runsBatched(const ConvShape &conv) {
  int64_t columns = conv.batch * conv.window.outputPlane;
  int64_t elements =
      (conv.groupOutputs + conv.groupChannels * conv.window.kernelSize) *
      columns;
  return conv.window.outputPlane <= 16 && elements <= (int64_t(1) << 24);
}

/// A group of a conv as one GEMM whose columns are (image, output
/// position) pairs, N * plane of them, and whose inner dimension holds
/// only the kernel taps that read an input element at some output
/// position (`live`): at a 1x1 plane with padding 1, 1 of 9. With `cols`
/// the input's taps [cg * live, columns] and `rows` an output-side tensor
/// [mg, columns], the GEMMs are
///   forward         rows = W [mg, cg * live] . cols
///   input gradient  cols = W^T . rows
///   weight gradient W = rows . cols^T
/// The gathers and scatters convert between these and the tensors; each is
/// split across images (or weight rows), writing disjoint elements, so
/// results do not depend on the thread count.
template <typename T> struct BatchedConv {
  const ConvShape &conv;
  const Window &win;
  std::vector<int64_t> taps;
  int64_t live, mg, cg, ks, plane, columns, inner;
  std::vector<T> cols, rows;
  std::vector<T> compact; ///< W's live taps [mg, cg * live], if not all are

  explicit BatchedConv(const ConvShape &shape)
      : conv(shape), win(shape.window), mg(shape.groupOutputs),
        cg(shape.groupChannels), ks(shape.window.kernelSize),
        plane(shape.window.outputPlane),
        columns(shape.batch * shape.window.outputPlane) {
    for (int64_t kf = 0; kf < ks; ++kf) {
      bool reads = false;
      forEachTapRun(
          win, kf, 0, plane,
          [&](int64_t, int64_t, int64_t, int64_t) { reads = true; },
          [](int64_t, int64_t) {});
      if (reads)
        taps.push_back(kf);
    }
    live = static_cast<int64_t>(taps.size());
    inner = cg * live;
    cols.resize(inner * columns);
    rows.resize(mg * columns);
    compact.resize(live == ks ? 0 : mg * inner);
  }
  bool parallel(int64_t elements) const {
    return conv.batch > 1 && elements >= kParallelElements;
  }

  /// cols <- group g of the input x [N, C, ...].
  void gatherInput(const T *x, int64_t g) {
#pragma omp parallel for schedule(static) if (parallel(inner * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      const T *in = x + (n * conv.channels + g * cg) * win.inputPlane;
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t l = 0; l < live; ++l) {
          T *row = cols.data() + (c * live + l) * columns + n * plane;
          const T *channel = in + c * win.inputPlane;
          forEachTapRun(
              win, taps[l], 0, plane,
              [&](int64_t column, int64_t length, int64_t at, int64_t step) {
                for (int64_t i = 0; i < length; ++i)
                  row[column + i] = channel[at + i * step];
              },
              [&](int64_t column, int64_t length) {
                std::fill_n(row + column, length, T(0));
              });
        }
    }
  }

  /// Group g of x [N, C, ...] <- cols summed over the taps (the input
  /// gradient; overwrites the group's planes).
  void scatterInput(int64_t g, T *x) const {
#pragma omp parallel for schedule(static) if (parallel(inner * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      T *out = x + (n * conv.channels + g * cg) * win.inputPlane;
      std::fill(out, out + cg * win.inputPlane, T(0));
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t l = 0; l < live; ++l) {
          const T *row = cols.data() + (c * live + l) * columns + n * plane;
          T *channel = out + c * win.inputPlane;
          forEachTapRun(
              win, taps[l], 0, plane,
              [&](int64_t column, int64_t length, int64_t at, int64_t step) {
                for (int64_t i = 0; i < length; ++i)
                  channel[at + i * step] += row[column + i];
              },
              [](int64_t, int64_t) {});
        }
    }
  }

  /// rows <- group g of y [N, M, ...] (an output gradient).
  void gatherOutput(const T *y, int64_t g) {
#pragma omp parallel for schedule(static) if (parallel(mg * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      const T *from = y + (n * conv.outChannels + g * mg) * plane;
      for (int64_t m = 0; m < mg; ++m)
        std::copy_n(from + m * plane, plane,
                    rows.data() + m * columns + n * plane);
    }
  }

  /// Group g of y [N, M, ...] <- rows (+ bias, if any).
  void scatterOutput(const T *bias, int64_t g, T *y) const {
#pragma omp parallel for schedule(static) if (parallel(mg * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      T *to = y + (n * conv.outChannels + g * mg) * plane;
      for (int64_t m = 0; m < mg; ++m) {
        const T *from = rows.data() + m * columns + n * plane;
        T shift = bias ? bias[g * mg + m] : T(0);
        for (int64_t p = 0; p < plane; ++p)
          to[m * plane + p] = from[p] + shift;
      }
    }
  }

  /// Group g of w [M, cg, K...] as [mg, cg * live]: w itself when every tap
  /// is live, else its live taps gathered into `compact`.
  const T *liveWeights(const T *w, int64_t g) {
    const T *from = w + g * mg * cg * ks;
    if (compact.empty())
      return from;
#pragma omp parallel for schedule(static) if (mg * cg * ks >= kParallelElements)
    for (int64_t r = 0; r < mg * cg; ++r)
      for (int64_t l = 0; l < live; ++l)
        compact[r * live + l] = from[r * ks + taps[l]];
    return compact.data();
  }

  /// Where the weight gradient of group g is computed: w itself when every
  /// tap is live, else `compact` (then scatterWeight).
  T *weightGradient(T *w, int64_t g) {
    return compact.empty() ? w + g * mg * cg * ks : compact.data();
  }
  /// Group g of w <- compact, zero at the taps that read only padding.
  void scatterWeight(int64_t g, T *w) const {
    if (compact.empty())
      return;
    T *to = w + g * mg * cg * ks;
#pragma omp parallel for schedule(static) if (mg * cg * ks >= kParallelElements)
    for (int64_t r = 0; r < mg * cg; ++r) {
      std::fill_n(to + r * ks, ks, T(0));
      for (int64_t l = 0; l < live; ++l)
        to[r * ks + taps[l]] = compact[r * live + l];
    }
  }
};

template <typename T>
void convBatched(const ConvShape &conv, const T *x, const T *w, const T *bias,
                 T *y) {
  BatchedConv<T> b(conv);
  for (int64_t g = 0; g < conv.group; ++g) {
    const T *weights = b.liveWeights(w, g);
    b.gatherInput(x, g);
    blas::parallelGemm<T>(false, false, b.mg, b.columns, b.inner, 1, weights,
                          b.inner, b.cols.data(), b.columns, 0, b.rows.data(),
                          b.columns);
    b.scatterOutput(bias, g, y);
  }
}

template <typename T>
void convBackwardInputBatched(const ConvShape &conv, const T *dy, const T *w,
                              T *dx) {
  BatchedConv<T> b(conv);
  for (int64_t g = 0; g < conv.group; ++g) {
    const T *weights = b.liveWeights(w, g);
    b.gatherOutput(dy, g);
    blas::parallelGemm<T>(true, false, b.inner, b.columns, b.mg, 1, weights,
                          b.inner, b.rows.data(), b.columns, 0, b.cols.data(),
                          b.columns);
    b.scatterInput(g, dx);
  }
}

template <typename T>
void convBackwardWeightBatched(const ConvShape &conv, const T *dy, const T *x,
                               T *dw) {
  BatchedConv<T> b(conv);
  for (int64_t g = 0; g < conv.group; ++g) {
    b.gatherOutput(dy, g);
    b.gatherInput(x, g);
    blas::parallelGemm<T>(false, true, b.mg, b.inner, b.columns, 1,
                          b.rows.data(), b.columns, b.cols.data(), b.columns,
                          0, b.weightGradient(dw, g), b.inner);
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
