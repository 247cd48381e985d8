//===- Stats.h - trainc compile --stats ------------------------*- C++ -*-===//
#ifndef TRAINC_TOOLS_TRAINC_STATS_H
#define TRAINC_TOOLS_TRAINC_STATS_H

#include "trainc/Import.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <map>
#include <string>

namespace trainc::cli {

/// Arena bytes per function (kernel::kArenaSizeAttrName).
std::map<std::string, int64_t> arenaSizes(mlir::ModuleOp module);

/// What --stats says about mixed precision: the precision and the arenas
/// the same model plans in f32.
struct PrecisionStats {
  std::string amp = "off";
  std::map<std::string, int64_t> f32Arenas;
};

/// --stats: what the memory plan and dispatch decided, and what each
/// function's kernels cost per call (estimated; KernelCost.h).
void printStats(mlir::ModuleOp module, const ImportedModel &imported,
                const PrecisionStats &precision);

} // namespace trainc::cli

#endif
