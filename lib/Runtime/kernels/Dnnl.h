//===- Dnnl.h - the oneDNN backend: prepared primitive programs -*- C++ -*-===//
//
// Kernels of backend "dnnl" are prepared when a session opens. The prepare
// hook checks the launch exactly as the reference kernel does, creates the
// oneDNN primitives (f32, user scratchpad mode) and returns a DnnlKernel:
// a short program of primitives, reorders and host steps over memories
// that are bound at run time to the launch's operands or to the session's
// scratch memory.
//
// Layouts: operands stay dense row-major at the kernel boundary (nchw,
// oihw, ...). A primitive may be created with `any` layouts; where oneDNN
// picks a blocked layout for this CPU, the kernel reorders into and out of
// temporaries in the scratch memory (DnnlKernel::toLayout / like). The
// exception are operands of a layout group (option `weight_layout`, set by
// --trainc-assign-weight-layouts on convolution weights that only
// convolutions and optimizer updates touch): those are stored in the
// layout the group's forward convolution prefers (DnnlKernel::storedLayout),
// so the weights and their gradient are not reordered every step.
//
// Threads: oneDNN runs on the process's GNU OpenMP pool and fixes the
// thread count of a primitive when it is created, i.e. when the session
// opens (after it set the count). For a fixed thread count the results are
// bit-identical run to run; a primitive may split a reduction by thread
// count (the conv weight gradient does), so 1 and 2 threads may round
// differently (see kernels/README.md).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_KERNELS_DNNL_H
#define TRAINC_LIB_RUNTIME_KERNELS_DNNL_H

#include "lib/Runtime/kernels/KernelSupport.h"

#include <dnnl.hpp>

#include <functional>
#include <memory>
#include <unordered_map>

namespace trainc::rt {

/// One engine and one in-order stream per session.
struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

/// A prepared launch of the dnnl backend: memories and the steps that run
/// on them, in order.
class DnnlKernel final : public PreparedKernel {
public:
  using Memory = int; ///< an index into the kernel's memories

  explicit DnnlKernel(LibraryContext &libraries);

  const dnnl::engine &engine() const { return context->engine; }

  /// The layout of an operand kept in layout group `group` (the launch's
  /// `weight_layout` option): the layout the group's first prepared launch
  /// registered, else `preferred` when it holds exactly the bytes of
  /// `dense` (a permutation, no padding), registered now, else `dense`
  /// (registered as null). False with `error` set when the group was
  /// registered for another shape.
  bool storedLayout(int64_t group, const dnnl::memory::desc &dense,
                    const dnnl::memory::desc &preferred,
                    dnnl::memory::desc &stored, std::string &error);

  /// Memories bound to input / output `index` of the launch at run time.
  Memory input(size_t index, const dnnl::memory::desc &desc);
  Memory output(size_t index, const dnnl::memory::desc &desc);
  /// A memory of `desc` in the scratch memory, for this launch only.
  Memory temporary(const dnnl::memory::desc &desc);
  /// The bytes of `memory` seen through `desc`, which spans no more bytes
  /// (a dense tensor as a matrix, a matrix transposed by its strides).
  Memory view(Memory memory, const dnnl::memory::desc &desc);
  /// `memory` if it has layout `desc`, else a new temporary of that layout.
  Memory like(Memory memory, const dnnl::memory::desc &desc);
  /// `memory` in layout `desc`: itself, or a temporary filled by a reorder
  /// step added now.
  Memory toLayout(Memory memory, const dnnl::memory::desc &desc);
  /// Adds a reorder step (nothing when `from` is `to`).
  void reorder(Memory from, Memory to);
  /// Adds a primitive step; `arguments` pairs DNNL_ARG_* with memories. Its
  /// scratchpad shares one region with every other step's.
  void add(const dnnl::primitive &primitive, const dnnl::primitive_desc_base &desc,
           std::vector<std::pair<int, Memory>> arguments);
  /// Adds a step that runs on the host (OpenMP loops of its own); `data`
  /// gives the current address of a memory.
  void addHost(std::function<void(const DnnlKernel &kernel)> step);
  void *data(Memory memory) const;
  /// The descriptor a memory was created with.
  dnnl::memory::desc desc(Memory memory) const;

  size_t scratchBytes() const override;
  bool run(void *const *inputs, void *const *outputs, void *scratch,
           std::string &error) override;

private:
  struct Binding {
    enum Kind { Input, Output, Scratch } kind;
    size_t index;  ///< operand index, or byte offset in the scratch memory
    void *current; ///< the address last bound
  };
  struct Step {
    dnnl::primitive primitive;
    std::unordered_map<int, dnnl::memory> arguments;
    std::function<void(const DnnlKernel &)> host;
  };

  Memory bind(const dnnl::memory::desc &desc, Binding binding);

  std::shared_ptr<DnnlContext> context;
  LibraryContext &libraries;
  std::vector<dnnl::memory> memories;
  std::vector<Binding> bindings;
  std::vector<Step> steps;
  size_t temporaryBytes = 0, scratchpadBytes = 0;
  dnnl::memory scratchpad; ///< after the temporaries
};

/// Primitive attributes of every dnnl kernel: user scratchpad, strict f32.
dnnl::primitive_attr dnnlAttributes();
/// dnnlAttributes() plus, when the launch has option `post_relu`
/// (--trainc-fuse-activations), a ReLU applied to the result after any
/// other post-op in `postOps`.
dnnl::primitive_attr dnnlAttributes(const Launch &launch,
                                    dnnl::post_ops postOps = {});

/// A dense row-major memory descriptor of `shape` (rank 1 to 12).
dnnl::memory::desc
plainDesc(const Shape &shape,
          dnnl::memory::data_type type = dnnl::memory::data_type::f32);
/// `desc` with every dim free to take the layout oneDNN prefers.
dnnl::memory::desc
anyLayout(const Shape &shape,
          dnnl::memory::data_type type = dnnl::memory::data_type::f32);

/// The element type of a kernel whose operands are all f32 or all bf16
/// (checkDnnlTypes): its first input's.
dnnl::memory::data_type dnnlDataType(const Launch &launch);

/// Fails unless every operand is f32, or, with `bf16` (the kernels of
/// --amp bf16: convolutions, products, pooling), every operand is bf16.
bool checkDnnlTypes(const Launch &launch, bool bf16, std::string &error);

/// Wraps a prepare function that fills a DnnlKernel: returns it, or null
/// with `error` set.
template <bool (*build)(const Launch &, DnnlKernel &, std::string &),
          bool bf16 = false>
std::unique_ptr<PreparedKernel> prepareDnnl(const Launch &launch,
                                            LibraryContext &libraries,
                                            std::string &error) {
  if (!checkDnnlTypes(launch, bf16, error))
    return nullptr;
  auto kernel = std::make_unique<DnnlKernel>(libraries);
  if (!build(launch, *kernel, error))
    return nullptr;
  return kernel;
}
#define TRAINC_RT_REGISTER_DNNL(op, build)                                     \
  ::trainc::rt::registerPreparedKernel(op, "dnnl",                             \
                                       &::trainc::rt::prepareDnnl<build>)
/// A kernel that also runs bf16 operands (--amp bf16).
#define TRAINC_RT_REGISTER_DNNL_BF16(op, build)                                \
  ::trainc::rt::registerPreparedKernel(                                        \
      op, "dnnl", &::trainc::rt::prepareDnnl<build, true>)

} // namespace trainc::rt

#endif // TRAINC_LIB_RUNTIME_KERNELS_DNNL_H
