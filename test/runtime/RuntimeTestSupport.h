//===- RuntimeTestSupport.h - runtime kernels vs the interpreter -*- C++
//-*-===//
//
// A test case is one graph op applied to host tensors. It is written twice
// from the same description: as a one-op MLIR function that the reference
// interpreter runs, and as the kernel descriptor of lib/Runtime/Launch.h
// that the runtime's kernel runs; the results are compared.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_TEST_RUNTIME_RUNTIMETESTSUPPORT_H
#define TRAINC_TEST_RUNTIME_RUNTIMETESTSUPPORT_H

#include "trainc/Interpreter.h"

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace trainc::rttest {

using Shape = std::vector<int64_t>;

/// An attribute in MLIR syntax and in descriptor syntax.
struct Attr {
  std::string name, mlir, descriptor;
};
Attr ints(const std::string &name, const Shape &values);
Attr integer(const std::string &name, int64_t value);
Attr real(const std::string &name, double value);
Attr flag(const std::string &name, bool value);
Attr string(const std::string &name, const std::string &value);
Attr type(const std::string &name, DType dtype);

/// A result type.
struct Result {
  DType dtype = DType::F32;
  Shape shape;
};

/// One op applied to `inputs`.
struct OpCase {
  std::string op; ///< "graph.conv"
  std::vector<HostTensor> inputs;
  std::vector<Result> results;
  std::vector<Attr> attributes;
};

HostTensor tensor(DType dtype, const Shape &shape, std::vector<double> data);
/// Uniform values in [low, high) rounded to `dtype`.
HostTensor randomTensor(DType dtype, const Shape &shape, double low = -1.0,
                        double high = 1.0);
/// Uniform integers in [low, high].
HostTensor randomIntegers(DType dtype, const Shape &shape, int64_t low,
                          int64_t high);
/// Class labels in [0, classes), every third one set to `ignore` if given.
HostTensor classLabels(DType dtype, const Shape &shape, int64_t classes,
                       std::optional<int64_t> ignore);
/// The labels' shape for class scores [N, C, d...]: [N, d...].
Shape labelShape(const Shape &scores);
/// The test's random generator (fixed seed per test case).
std::mt19937 &generator();

std::string formatShape(const Shape &shape);
/// The numpy broadcast of two shapes (assumed compatible).
Shape broadcastShape(const Shape &a, const Shape &b);
/// The bytes of `tensor` in its dtype's layout (i1: one byte), and back.
std::vector<unsigned char> toBytes(const HostTensor &tensor);
HostTensor fromBytes(DType dtype, const Shape &shape,
                     const unsigned char *bytes);

/// The one-op MLIR module the interpreter runs.
std::string mlirModule(const OpCase &c);
/// The runtime descriptor (Launch.h's format).
std::string descriptor(const OpCase &c, const std::string &backend);

/// Runs the case through the interpreter; fails the test on error.
std::vector<HostTensor> interpretCase(const OpCase &c);

/// Runs the case through the runtime kernel of `backend`.
struct RuntimeRun {
  bool ok = false;
  std::string error;
  std::vector<HostTensor> outputs;
  std::vector<std::vector<unsigned char>> bytes; ///< raw output buffers
};
RuntimeRun runKernel(const OpCase &c, const std::string &backend);
/// Runs the case with output `first` written into the buffer of input
/// `second` for each pair of `aliases` (buffer donation); `bytes` holds
/// every output buffer after the call.
RuntimeRun runInPlace(const OpCase &c, const std::string &backend,
                      const std::vector<std::pair<size_t, size_t>> &aliases);
/// Runs a raw descriptor with zero-filled buffers of the declared sizes.
RuntimeRun runDescriptor(const std::string &text,
                         const std::vector<HostTensor> &inputs);

/// Floats: |a - b| <= tolerance * (|b| + 0.05 max|b|) + absolute;
/// integers exactly.
void checkClose(const HostTensor &actual, const HostTensor &expected,
                double tolerance = 1e-5, double absolute = 0.0);

/// The interpreter and each backend's kernel agree on `c`.
void checkOp(const OpCase &c,
             const std::vector<std::string> &backends = {"reference"},
             double tolerance = 1e-5);

/// The kernel of `backend` gives the same bytes on 1 and 2 threads.
void checkDeterministic(const OpCase &c, const std::string &backend);

/// Seconds per call of the kernel alone on `threads` threads (buffers
/// prepared once, one warm-up call).
double timeKernel(const OpCase &c, const std::string &backend, int threads,
                  int repeats);

/// Counts the cases compared (reported at the end of the run).
int64_t &comparedCases();

} // namespace trainc::rttest

#endif // TRAINC_TEST_RUNTIME_RUNTIMETESTSUPPORT_H
