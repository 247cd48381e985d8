//===- ShapeRefinement.h - two shapes of one buffer on common dims -*- C++
//-*-===//
//
// A buffer viewed under two shapes (a reshape) has, where one exists, a
// common refinement: a list of factors whose consecutive runs multiply to
// the dims of either shape ([64, 16, 128] and [64, 64, 32] are runs of
// [64, 16, 4, 32]). Windows and permutations given on either shape can
// then be expressed on the one list of dims. Used by
// --trainc-fold-slice-transposes and --trainc-fold-concat-transposes.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_KERNEL_TRANSFORMS_SHAPEREFINEMENT_H
#define TRAINC_DIALECTS_KERNEL_TRANSFORMS_SHAPEREFINEMENT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace trainc::kernel {

/// Two shapes of one element count as runs of a common list of factors:
/// dim i of the first is the product of `factors[first[i]]`, dim j of the
/// second that of `factors[second[j]]`, each run in order.
struct Refinement {
  llvm::SmallVector<int64_t> factors;
  llvm::SmallVector<llvm::SmallVector<unsigned>> first, second;
};

inline std::optional<Refinement> refine(llvm::ArrayRef<int64_t> a,
                                        llvm::ArrayRef<int64_t> b) {
  if (llvm::is_contained(a, 0) || llvm::is_contained(b, 0))
    return std::nullopt;
  Refinement r;
  r.first.resize(a.size());
  r.second.resize(b.size());
  size_t i = 0, j = 0;
  int64_t restA = a.empty() ? 1 : a[0], restB = b.empty() ? 1 : b[0];
  while (i < a.size() && j < b.size()) {
    int64_t factor = std::min(restA, restB);
    if (restA % factor != 0 || restB % factor != 0)
      return std::nullopt;
    r.first[i].push_back(r.factors.size());
    r.second[j].push_back(r.factors.size());
    r.factors.push_back(factor);
    restA /= factor;
    restB /= factor;
    if (restA == 1 && ++i < a.size())
      restA = a[i];
    if (restB == 1 && ++j < b.size())
      restB = b[j];
  }
  // Unit dims left at the end of either shape: a factor of 1 each.
  for (; i < a.size(); ++i) {
    r.first[i].push_back(r.factors.size());
    r.factors.push_back(1);
  }
  for (; j < b.size(); ++j) {
    r.second[j].push_back(r.factors.size());
    r.factors.push_back(1);
  }
  return r;
}

} // namespace trainc::kernel

#endif
