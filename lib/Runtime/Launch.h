//===- Launch.h - one kernel launch as the runtime sees it -----*- C++ -*-===//
//
// Generated code calls trainc_rt_launch(state, descriptor, inputs, outputs)
// once per kernel. The descriptor is a constant string the compiler writes:
//
//   graph.conv;backend=reference;in=f32:64x1x28x28|f32:32x1x3x3|f32:32;
//   out=f32:64x32x28x28;strides=1,1;pads=1,1,1,1;dilations=1,1;group=1
//
// i.e. the graph op's name, then `key=value` fields separated by ';':
// `backend`, `in` and `out` (operands as dtype:dims, '|'-separated, a
// scalar has no dims), and every attribute of the graph op: integers and
// integer arrays in decimal (comma-separated), floats with 17 significant
// digits, booleans as 0/1, strings and types (f32, i64, ...) verbatim.
// Buffers are dense, row-major; i1 is one byte per element.
//
// The compiler also lists every descriptor (trainc_model_kernels): the
// session prepares each launch when it opens (prepareLaunch: parse, find
// the kernel, run its prepare hook, which creates library primitives), and
// trainc_rt_launch finds the prepared launch by the descriptor's address.
//
// This header is the runtime's side of that contract (no MLIR here).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_LAUNCH_H
#define TRAINC_LIB_RUNTIME_LAUNCH_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainc::rt {

enum class DType : int32_t { F32, F64, F16, BF16, I64, I32, I16, I8, I1 };

/// "f32" -> DType; nullopt for an unknown name.
std::optional<DType> parseDType(const std::string &name);
const char *dtypeName(DType dtype);
/// Bytes per element (i1: 1).
size_t dtypeSize(DType dtype);

struct OperandInfo {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numElements() const;
  size_t bytes() const { return numElements() * dtypeSize(dtype); }
};

/// A parsed descriptor.
struct Launch {
  std::string op;      ///< "graph.conv"
  std::string backend; ///< "reference", "openblas", ...
  std::vector<OperandInfo> inputs, outputs;
  std::map<std::string, std::string> attributes;

  bool has(const std::string &name) const { return attributes.count(name); }
  /// Typed accessors; a missing attribute gives the default.
  int64_t i64(const std::string &name, int64_t defaultValue = 0) const;
  double f64(const std::string &name, double defaultValue = 0.0) const;
  bool flag(const std::string &name, bool defaultValue = false) const;
  std::string str(const std::string &name,
                  const std::string &defaultValue = "") const;
  std::vector<int64_t> ints(const std::string &name) const;
};

/// Parses a descriptor; on failure returns nullopt and sets `error`.
std::optional<Launch> parseLaunch(const char *descriptor, std::string &error);

/// A kernel: reads `inputs`, writes `outputs` (both in the descriptor's
/// order). Returns false and sets `error` on bad input (never aborts).
using KernelFunction = bool (*)(const Launch &launch, void *const *inputs,
                                void *const *outputs, std::string &error);

struct DnnlContext; // kernels/Dnnl.h: oneDNN's engine and stream
class Communicator; // Communicator.h: the processes of a data-parallel job
struct CommunicationTimes; // Communicator.h

/// A layout in which a library keeps a persistent tensor instead of dense
/// row-major: oneDNN's blocked layout of a convolution's weights, chosen
/// when the session opens for this CPU. It has exactly the dense tensor's
/// bytes (a permutation of its elements), so an elementwise kernel (an
/// optimizer update) runs on it unchanged. The session converts at its
/// boundary: initial weights, parameters read or written, checkpoints,
/// export (Session::readDense / writeDense).
class StoredLayout {
public:
  virtual ~StoredLayout() = default;
  virtual void toDense(const void *stored, void *dense) const = 0;
  virtual void fromDense(const void *dense, void *stored) const = 0;
};

/// What the kernel libraries of one session share across its launches
/// (oneDNN's engine and stream), created by the first prepare hook that
/// needs it; prepared kernels keep shared references.
struct LibraryContext {
  std::shared_ptr<DnnlContext> dnnl;
  /// A data-parallel library's job (set by the prepare hook of its first
  /// `mpi` launch; null: one process).
  std::shared_ptr<Communicator> communicator;
  /// The `mpi` kernels' state of this session (buckets in flight), and
  /// their time (set with `communicator`).
  std::shared_ptr<void> collectives;
  std::shared_ptr<CommunicationTimes> communicationTimes;
  /// Layout groups (a launch's `weight_layout` option, the manifest's
  /// `layout` of an argument; --trainc-assign-weight-layouts) -> the layout
  /// the group's first prepared launch chose; null: dense.
  std::map<int64_t, std::shared_ptr<const StoredLayout>> layouts;
};

/// What a kernel's prepare hook builds once per launch, when the session
/// opens: library primitives, the memory layouts they chose, and the
/// scratch memory a run needs.
class PreparedKernel {
public:
  virtual ~PreparedKernel() = default;
  /// Bytes of scratch memory run() uses (from a 64-byte aligned base).
  /// Launches run one at a time, so every launch of a session shares one
  /// scratch buffer sized to the largest.
  virtual size_t scratchBytes() const = 0;
  /// Like a KernelFunction, with the scratch memory.
  virtual bool run(void *const *inputs, void *const *outputs, void *scratch,
                   std::string &error) = 0;
};

/// Builds a kernel's state for `launch`; null with `error` set when the
/// launch is bad or the library cannot run it.
using PrepareFunction = std::unique_ptr<PreparedKernel> (*)(
    const Launch &launch, LibraryContext &libraries, std::string &error);

/// A kernel of the table: stateless (`run`), or prepared once per launch
/// (`prepare`, for library primitives).
struct KernelEntry {
  KernelFunction run = nullptr;
  PrepareFunction prepare = nullptr;
  explicit operator bool() const { return run || prepare; }
};

/// The kernel for (op, backend), or an empty entry. The table is filled on
/// first use by registerBuiltinKernels() (explicit calls, not static
/// initializers: the runtime is a static library, whose unreferenced
/// objects the linker would drop).
KernelEntry findKernel(const std::string &op, const std::string &backend);
void registerKernel(const std::string &op, const std::string &backend,
                    KernelFunction kernel);
void registerPreparedKernel(const std::string &op, const std::string &backend,
                            PrepareFunction prepare);
/// Every registered (op, backend) pair, for tests and --stats.
std::vector<std::pair<std::string, std::string>> registeredKernels();
/// Defined in kernels/Kernels.cpp: calls every family's registration.
void registerBuiltinKernels();

/// A launch ready to run: parsed, its kernel found and prepared.
struct PreparedLaunch {
  Launch launch;
  KernelFunction kernel = nullptr;          ///< a stateless kernel, or
  std::unique_ptr<PreparedKernel> prepared; ///< what a prepare hook built

  size_t scratchBytes() const { return prepared ? prepared->scratchBytes() : 0; }
  /// Runs the kernel with `scratch` (scratchBytes() bytes, 64-byte aligned).
  /// On failure sets `error` to "<op>: <message>"; exceptions are caught.
  bool run(void *const *inputs, void *const *outputs, void *scratch,
           std::string &error) const;
};

/// Parses `descriptor`, finds its kernel and runs the kernel's prepare hook
/// (with the thread count that later runs will use: libraries such as
/// oneDNN fix it when they build a primitive). False with `error` set.
bool prepareLaunch(const char *descriptor, LibraryContext &libraries,
                   PreparedLaunch &prepared, std::string &error);

} // namespace trainc::rt

#endif // TRAINC_LIB_RUNTIME_LAUNCH_H
