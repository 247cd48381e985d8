//===- ConvGather.h - conv operands gathered for GEMMs ---------*- C++ -*-===//
//
// The index arithmetic of convolutions run as matrix products: which input
// element each kernel tap reads at each output position (forEachTapRun),
// and BatchedConv, which gathers a conv over small output planes into one
// GEMM over all images. Shared by the openblas backend (im2col / col2im,
// and BatchedConv with OpenBLAS's GEMM) and the dnnl backend (bf16 convs
// and their gradients over small planes as one oneDNN matmul).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_KERNELS_CONVGATHER_H
#define TRAINC_LIB_RUNTIME_KERNELS_CONVGATHER_H

#include "lib/Runtime/kernels/KernelSupport.h"

#include <vector>

namespace trainc::rt {

inline int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
inline int64_t ceilDiv(int64_t a, int64_t b) {
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

/// Whether a conv (or its gradients) runs as one GEMM over all images:
/// output planes of at most 16 positions, where per-image GEMMs would have
/// a dimension of at most 16, with the gathered operands under 64 MiB of
/// elements. The dispatch rules that prefer this backend for such convs
/// are in dialects/kernel/BackendRegistry.cpp (smallPlaneConv*); they must
/// accept no launch this refuses.
inline bool runsBatched(const ConvShape &conv) {
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
  /// offsets[l * plane + p]: the element live tap l reads at output
  /// position p, as an offset in its input channel's plane; -1 where it
  /// reads padding.
  std::vector<int64_t> offsets;
  /// The caller's buffers, of colsSize(), rowsSize() and compactSize()
  /// elements (compact: W's live taps [mg, cg * live], when not all are).
  T *cols = nullptr, *rows = nullptr, *compact = nullptr;

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
    offsets.assign(live * plane, -1);
    for (int64_t l = 0; l < live; ++l)
      forEachTapRun(
          win, taps[l], 0, plane,
          [&](int64_t column, int64_t length, int64_t at, int64_t step) {
            for (int64_t i = 0; i < length; ++i)
              offsets[l * plane + column + i] = at + i * step;
          },
          [](int64_t, int64_t) {});
  }
  int64_t colsSize() const { return inner * columns; }
  int64_t rowsSize() const { return mg * columns; }
  int64_t compactSize() const { return live == ks ? 0 : mg * inner; }
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
          T *row = cols + (c * live + l) * columns + n * plane;
          const T *channel = in + c * win.inputPlane;
          const int64_t *at = offsets.data() + l * plane;
          for (int64_t p = 0; p < plane; ++p)
            row[p] = at[p] < 0 ? T(0) : channel[at[p]];
        }
    }
  }

  /// cols^T [N * plane, cg * live] <- group g of the input x [N, C, ...]
  /// (the layout of a matmul's right operand).
  void gatherInputTransposed(const T *x, int64_t g) {
#pragma omp parallel for schedule(static) if (parallel(inner * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      const T *in = x + (n * conv.channels + g * cg) * win.inputPlane;
      for (int64_t p = 0; p < plane; ++p) {
        T *row = cols + (n * plane + p) * inner;
        for (int64_t c = 0; c < cg; ++c) {
          const T *channel = in + c * win.inputPlane;
          for (int64_t l = 0; l < live; ++l) {
            int64_t at = offsets[l * plane + p];
            row[c * live + l] = at < 0 ? T(0) : channel[at];
          }
        }
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
          const T *row = cols + (c * live + l) * columns + n * plane;
          T *channel = out + c * win.inputPlane;
          const int64_t *at = offsets.data() + l * plane;
          for (int64_t p = 0; p < plane; ++p)
            if (at[p] >= 0)
              channel[at[p]] += row[p];
        }
    }
  }

  /// rows <- group g of y [N, M, ...] (an output gradient).
  void gatherOutput(const T *y, int64_t g) {
#pragma omp parallel for schedule(static) if (parallel(mg * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      const T *from = y + (n * conv.outChannels + g * mg) * plane;
      for (int64_t m = 0; m < mg; ++m)
        std::copy_n(from + m * plane, plane, rows + m * columns + n * plane);
    }
  }

  /// Group g of y [N, M, ...] <- rows (+ bias, if any).
  void scatterOutput(const T *bias, int64_t g, T *y) const {
#pragma omp parallel for schedule(static) if (parallel(mg * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      T *to = y + (n * conv.outChannels + g * mg) * plane;
      for (int64_t m = 0; m < mg; ++m) {
        const T *from = rows + m * columns + n * plane;
        T shift = bias ? bias[g * mg + m] : T(0);
        for (int64_t p = 0; p < plane; ++p)
          to[m * plane + p] = from[p] + shift;
      }
    }
  }

  // The transposed forms (a column per row: [N * plane, ...]), where the
  // GEMMs are rows^T = cols^T . W^T (forward) and cols^T = rows^T . W
  // (input gradient), so every operand of the matrix product is row-major
  // or, for W^T, a transposed weight matrix (oneDNN's matmul and its bias
  // broadcast along the columns).

  /// rows^T [N * plane, mg] <- group g of y [N, M, ...] (an output
  /// gradient).
  void gatherOutputTransposed(const T *y, int64_t g) {
#pragma omp parallel for schedule(static) if (parallel(mg * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      const T *from = y + (n * conv.outChannels + g * mg) * plane;
      T *to = rows + n * plane * mg;
      for (int64_t m = 0; m < mg; ++m)
        for (int64_t p = 0; p < plane; ++p)
          to[p * mg + m] = from[m * plane + p];
    }
  }

  /// Group g of y [N, M, ...] <- rows^T [N * plane, mg].
  void scatterOutputTransposed(int64_t g, T *y) const {
#pragma omp parallel for schedule(static) if (parallel(mg * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      T *to = y + (n * conv.outChannels + g * mg) * plane;
      const T *from = rows + n * plane * mg;
      for (int64_t m = 0; m < mg; ++m)
        for (int64_t p = 0; p < plane; ++p)
          to[m * plane + p] = from[p * mg + m];
    }
  }

  /// Group g of x [N, C, ...] <- sumsT [N * plane, cg * live] summed over
  /// the taps (the input gradient; overwrites the group's planes). Sums in
  /// S (the product's type, f32), not in T: a bf16 gradient is rounded
  /// once, by its caller, after every tap is added.
  template <typename S>
  void scatterInputTransposed(const S *sumsT, int64_t g, S *x) const {
#pragma omp parallel for schedule(static) if (parallel(inner * columns))
    for (int64_t n = 0; n < conv.batch; ++n) {
      S *out = x + (n * conv.channels + g * cg) * win.inputPlane;
      std::fill(out, out + cg * win.inputPlane, S(0));
      for (int64_t p = 0; p < plane; ++p) {
        const S *row = sumsT + (n * plane + p) * inner;
        for (int64_t c = 0; c < cg; ++c) {
          S *channel = out + c * win.inputPlane;
          for (int64_t l = 0; l < live; ++l) {
            int64_t at = offsets[l * plane + p];
            if (at >= 0)
              channel[at] += row[c * live + l];
          }
        }
      }
    }
  }

  /// Group g of w [M, cg, K...] as [mg, cg * live]: w itself when every tap
  /// is live, else its live taps gathered into `compact`.
  const T *liveWeights(const T *w, int64_t g) {
    const T *from = w + g * mg * cg * ks;
    if (live == ks)
      return from;
#pragma omp parallel for schedule(static) if (mg * cg * ks >= kParallelElements)
    for (int64_t r = 0; r < mg * cg; ++r)
      for (int64_t l = 0; l < live; ++l)
        compact[r * live + l] = from[r * ks + taps[l]];
    return compact;
  }

  /// Where the weight gradient of group g is computed: w itself when every
  /// tap is live, else `compact` (then scatterWeight).
  T *weightGradient(T *w, int64_t g) {
    return live == ks ? w + g * mg * cg * ks : compact;
  }
  /// Group g of w <- compact, zero at the taps that read only padding.
  void scatterWeight(int64_t g, T *w) const {
    if (live == ks)
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

} // namespace trainc::rt

#endif // TRAINC_LIB_RUNTIME_KERNELS_CONVGATHER_H
