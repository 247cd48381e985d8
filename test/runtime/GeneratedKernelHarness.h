//===- GeneratedKernelHarness.h - run a generated kernel, JIT --*- C++ -*-===//
//
// Each case is one kernel.launch of the `generated` backend, taken through
// the production path (--trainc-kernel-to-loop, then LoopToLLVM's
// translateLoopKernels and LLVM O3), JIT-compiled, and run nest by nest.
// Every parallel nest is also run as two separate runs of blocks, as two
// threads would, to check that blocks are independent.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_TEST_RUNTIME_GENERATEDKERNELHARNESS_H
#define TRAINC_TEST_RUNTIME_GENERATEDKERNELHARNESS_H

#include "RuntimeTestSupport.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainc::rttest {

struct GeneratedRun {
  std::vector<HostTensor> outputs;
  /// With a loop.check: the message the caller would report, if any.
  std::optional<std::string> checkFailure;
};

/// Compiles and runs the case.
GeneratedRun runGenerated(const OpCase &c);

/// The generated kernel agrees with the interpreter: floats within
/// `tolerance` (relative, see checkClose) plus `absolute`.
void checkGenerated(const OpCase &c, double tolerance = 2e-6,
                    double absolute = 0.0);

/// The generated kernel gives the interpreter's values exactly, and the
/// same signs of zero.
void checkGeneratedBits(const OpCase &c);

/// Shapes that hit tails, unit dimensions and several ranks.
extern const std::vector<Shape> kShapes;
/// Pairs of shapes that broadcast against each other.
extern const std::vector<std::pair<Shape, Shape>> kBroadcastShapes;

} // namespace trainc::rttest

#endif
