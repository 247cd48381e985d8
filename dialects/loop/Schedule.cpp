//===- Schedule.cpp - the default schedule of a loop nest -----------------===//
#include "dialects/loop/Schedule.h"

#include "mlir/IR/AffineMap.h"

using namespace mlir;

namespace trainc::loop {

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
  // Contiguous or broadcast along the innermost dimension, never strided.
  bool vectorize = llvm::all_of(maps, [&](AffineMap map) {
    std::optional<unsigned> axis =
        map.getResultPosition(getAffineDimExpr(inner, context));
    return !axis || *axis + 1 == map.getNumResults();
  });

  int64_t points = 1;
  for (int64_t extent : domain)
    points *= extent;
  int64_t parallel = -1;
  if (points >= kParallelPoints) {
    for (int64_t dim = 0; dim < rank && parallel < 0; ++dim) {
      if (isReduction[dim] || (domain[dim] + tile[dim] - 1) / tile[dim] < 2)
        continue;
      if (llvm::all_of(maps.take_back(numOutputs), [&](AffineMap map) {
            return map.isFunctionOfDim(dim);
          }))
        parallel = dim;
    }
  }
  return ScheduleAttr::get(context, parallel, tile, vectorize);
}

} // namespace trainc::loop
