//===- GeneratedKernelHarness.h - run a generated kernel, JIT --*- C++ -*-===//
//
// Each case is one kernel.launch of the `generated` backend, taken through
// the production path (--trainc-kernel-to-loop for the host's vector
// lanes, then LoopToLLVM's translateLoopKernels and LLVM's O3 for the
// host, lib/Codegen's optimizeForCpu), JIT-compiled, and run nest by nest.
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

/// The most CPU seconds LLVM may take (O3 and code generation) on one
/// generated kernel of the tests, for any CPU (0.27 s at most on a Sapphire
/// Rapids; the AVX2 bug of docs/PERFORMANCE.md took 27 s to minutes).
inline constexpr double kMaxKernelCompileSeconds = 5.0;

/// Compiles and runs the case. The kernel is scheduled and optimized for
/// the host as `trainc compile` would; it must also compile within
/// kMaxKernelCompileSeconds for an AVX2 CPU (znver3) and, on a host
/// without AVX-512, for an AVX-512 one (znver4).
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
