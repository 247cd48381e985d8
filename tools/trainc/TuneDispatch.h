//===- TuneDispatch.h - backends chosen by measurement -------*- C++ -*-===//
//
// `trainc compile --tune`: after --trainc-dispatch, every launch that more
// than one kernel library (oneDNN, OpenBLAS) can run is timed on each of
// them, on this machine, with random operands, and runs on the fastest.
// Times are cached per CPU, thread count and launch descriptor (shapes,
// dtypes, attributes), so a model is measured once per machine.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_TOOLS_TRAINC_TUNEDISPATCH_H
#define TRAINC_TOOLS_TRAINC_TUNEDISPATCH_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace trainc {

struct TuneOptions {
  /// Threads the kernels are timed on (0: every core, as a session opens).
  int threads = 0;
  /// The cache file (JSON); empty: none.
  std::string cachePath;
  /// KERNEL=BACKEND overrides of --dispatch: those kernels keep the
  /// backend the user asked for.
  std::vector<std::string> overrides;
};

struct TuneReport {
  int launches = 0; ///< launches with more than one library to choose from
  int measured = 0; ///< (launch, backend) pairs timed in this run
  int cached = 0;   ///< ... read from the cache (or an earlier launch
                    ///< of the same shape in this run)
  int changed = 0;  ///< launches now on another backend than dispatch chose
};

/// The cache file used when --tune-cache is not given:
/// $XDG_CACHE_HOME/trainc/dispatch-times.json, else
/// ~/.cache/trainc/dispatch-times.json, else empty.
std::string defaultTuneCache();

/// Times the candidates of every launch of `module` and sets each launch's
/// backend to the fastest; false with `error` set if the cache cannot be
/// read (a cache that cannot be written is only warned about).
bool tuneDispatch(mlir::ModuleOp module, const TuneOptions &options,
                  TuneReport &report, std::string &error);

} // namespace trainc

#endif
