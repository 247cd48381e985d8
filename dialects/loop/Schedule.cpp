//===- Schedule.cpp - the default schedule of a loop nest -----------------===//
#include "dialects/loop/Schedule.h"

#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;

namespace trainc::loop {

/// The dimension of `map`'s last result if `map` is a permutation of the
/// domain's dimensions, each plus a constant (a copy into a padded
/// buffer's interior), of at least 2 results.
static std::optional<int64_t> lastOfPermutation(AffineMap map) {
  unsigned rank = map.getNumDims();
  if (map.getNumResults() != rank || rank < 2)
    return std::nullopt;
  llvm::SmallBitVector seen(rank);
  std::optional<int64_t> last;
  for (AffineExpr expr : map.getResults()) {
    std::optional<AffineForm> form = getAffineForm(expr, rank);
    std::optional<unsigned> dim = form ? form->singleDim() : std::nullopt;
    if (!dim || form->coefficients[*dim] != 1 || seen.test(*dim))
      return std::nullopt;
    seen.set(*dim);
    last = *dim;
  }
  return last;
}

/// For a nest whose maps are all permutations of the domain (with
/// offsets), whose outputs end with `inner` and whose inputs end with
/// `inner` or with one other dimension (the same for all): that dimension.
static std::optional<int64_t>
transposedDim(ArrayRef<AffineMap> maps, unsigned numOutputs, int64_t inner) {
  std::optional<int64_t> across;
  for (auto [i, map] : llvm::enumerate(maps)) {
    std::optional<int64_t> lastDim = lastOfPermutation(map);
    if (!lastDim)
      return std::nullopt;
    int64_t last = *lastDim;
    bool output = i + numOutputs >= maps.size();
    if (last == inner)
      continue;
    if (output || (across && *across != last))
      return std::nullopt;
    across = last;
  }
  return across;
}

ScheduleAttr defaultSchedule(MLIRContext *context, ArrayRef<int64_t> domain,
                             ArrayRef<bool> isReduction, ArrayRef<AffineMap> maps,
                             unsigned numOutputs, int64_t vectorLanes) {
  int64_t rank = domain.size();
  SmallVector<int64_t> tile(rank, 1);
  if (rank == 0)
    return ScheduleAttr::get(context, -1, tile, false);

  int64_t inner = rank - 1;
  int64_t lanes = std::max<int64_t>(1, domain[inner]);
  tile[inner] = std::min(innerTile(vectorLanes),
                         (lanes + vectorLanes - 1) / vectorLanes * vectorLanes);
  // Every result one dimension read forward (or a constant), each
  // dimension at most once per buffer (what linalg's vectorizer takes),
  // and the innermost dimension contiguous or broadcast, never strided.
  auto forms = [&](AffineMap map) {
    return llvm::map_to_vector(map.getResults(), [&](AffineExpr expr) {
      return *getAffineForm(expr, rank);
    });
  };
  bool vectorize = llvm::all_of(maps, [&](AffineMap map) {
    SmallVector<unsigned> dims;
    SmallVector<AffineForm> results = forms(map);
    for (auto [axis, form] : llvm::enumerate(results)) {
      if (form.isConstant())
        continue;
      std::optional<unsigned> dim = form.singleDim();
      if (!dim || form.coefficients[*dim] < 0 || llvm::is_contained(dims, *dim))
        return false;
      dims.push_back(*dim);
      if (*dim == inner &&
          (axis + 1 != results.size() || form.coefficients[*dim] != 1))
        return false;
    }
    return true;
  });
  // The parallel dimension must be read forward, alone, in every result.
  auto splittable = [&](int64_t dim) {
    return llvm::all_of(maps, [&](AffineMap map) {
      return llvm::all_of(forms(map), [&](const AffineForm &form) {
        return form.coefficients[dim] == 0 ||
               (form.singleDim() && form.coefficients[dim] > 0);
      });
    });
  };

  // An innermost dimension of 2 or 3 elements (the 2x2 taps of a sliced
  // 3x3 weight, the rows of a 3x3 fill) would run a mostly masked vector
  // per row: scalar loops move such rows 2-15x faster on a Zen 4. (Rows of
  // 7, a 2x2 pooling's, and of 1 run faster as vectors.)
  if (vectorize && domain[inner] > 1 && domain[inner] < kMinVectorExtent) {
    vectorize = false;
    tile.assign(rank, 1);
  }

  // Windows (sums of dimensions) run as scalar loops: tiles of one point
  // are the loops themselves.
  bool sums = llvm::any_of(maps, [&](AffineMap map) {
    return llvm::any_of(forms(map), [](const AffineForm &form) {
      return !form.isConstant() && !form.singleDim();
    });
  });
  if (sums)
    tile.assign(rank, 1);

  // A permuted copy of short rows (an attention head's transpose, [1, 0,
  // 2], rows of 32 bf16): walking the output row by row reads the input
  // with a stride of whole planes, often a multiple of 4 KiB, and the rows
  // evict each other from L1. Blocks of 4 x 2 rows (4 of the input's
  // neighbouring rows, 2 of the output's) move at copy speed: a 64x64x32
  // bf16 head transpose took 7.3 instead of 26 us on a Zen 4. Rank 3
  // only: over 4 dims (heads split out, [0, 2, 1, 3] of 16x64x4x32, alone
  // or fused with a scale or the slice of a packed projection) the blocks
  // ran 2-3x slower than rows one at a time (f32 13-20 against 6-9 us,
  // bf16 6-14 against 3-7; Zen 4, 2 threads).
  if (vectorize && !sums && rank == 3 &&
      tile[inner] <= kPermutedRowLanes * vectorLanes) {
    // The dimension indexing the rows of a buffer read or written as a
    // permutation of the domain (-1 for other maps).
    auto rowDim = [&](AffineMap map) -> int64_t {
      if (!map.isPermutation())
        return -1; // broadcast or sliced reads keep rows of one point
      return map.getDimPosition(map.getNumResults() - 2);
    };
    int64_t out = rowDim(maps[maps.size() - numOutputs]);
    for (AffineMap map : maps.drop_back(numOutputs)) {
      int64_t in = rowDim(map);
      if (out < 0 || in < 0 || in == out || in == inner || out == inner ||
          isReduction[in] || isReduction[out])
        continue;
      tile[in] = std::min<int64_t>(4, domain[in]);
      tile[out] = std::min<int64_t>(2, domain[out]);
      break;
    }
  }

  // A nest whose buffers are all permutations of the domain (offsets
  // allowed: into a padded buffer), some input reading the innermost
  // dimension strided (a transpose moving it: NCHW to NHWC, a matrix
  // transpose): tiles of lanes x lanes over the output's
  // innermost dimension and the one those inputs read contiguously are
  // read in the input's order and transposed in registers
  // (vector.transpose), not moved one element at a time: a 64x64x32 bf16
  // head transpose to [64, 32, 64] took 45 instead of 363 us on a Zen 4.
  if (!vectorize && !sums) {
    if (std::optional<int64_t> across = transposedDim(maps, numOutputs, inner);
        across && domain[inner] >= kMinVectorExtent &&
        domain[*across] >= kMinVectorExtent) {
      vectorize = true;
      tile.assign(rank, 1);
      tile[inner] = vectorLanes;
      tile[*across] = std::min(vectorLanes, domain[*across]);
    }
  }

  int64_t points = 1;
  for (int64_t extent : domain)
    points *= extent;
  int64_t parallel = -1;
  if (points >= kParallelPoints) {
    for (int64_t dim = 0; dim < rank && parallel < 0; ++dim) {
      if (isReduction[dim] || (domain[dim] + tile[dim] - 1) / tile[dim] < 2)
        continue;
      if (llvm::all_of(maps.take_back(numOutputs),
                       [&](AffineMap map) { return map.isFunctionOfDim(dim); }) &&
          splittable(dim))
        parallel = dim;
    }
  }
  return ScheduleAttr::get(context, parallel, tile, vectorize);
}

} // namespace trainc::loop
