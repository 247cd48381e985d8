//===- DnnlSupport.cpp - the oneDNN backend: prepared primitive programs --===//
#include "lib/Runtime/kernels/Dnnl.h"

#include <cassert>

namespace trainc::rt {

namespace {
constexpr size_t kAlignment = 64;
size_t alignUp(size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}
} // namespace

/// A persistent tensor in a blocked layout of the same size; conversions
/// are reorders on the session's stream.
class DnnlStoredLayout final : public StoredLayout {
public:
  DnnlStoredLayout(std::shared_ptr<DnnlContext> context,
                   const dnnl::memory::desc &dense,
                   const dnnl::memory::desc &stored)
      : context(std::move(context)), dense(dense), stored(stored),
        toDenseReorder(reorderDesc(stored, dense)),
        fromDenseReorder(reorderDesc(dense, stored)) {}

  void toDense(const void *from, void *to) const override {
    convert(toDenseReorder, stored, from, dense, to);
  }
  void fromDense(const void *from, void *to) const override {
    convert(fromDenseReorder, dense, from, stored, to);
  }

  bool sameDense(const dnnl::memory::desc &other) const {
    return other == dense;
  }
  const dnnl::memory::desc &storedDesc() const { return stored; }

private:
  dnnl::reorder::primitive_desc reorderDesc(const dnnl::memory::desc &from,
                                            const dnnl::memory::desc &to) {
    dnnl::primitive_attr attributes; // a scratchpad of its own
    return {context->engine, from, context->engine, to, attributes};
  }
  void convert(const dnnl::reorder &reorder, const dnnl::memory::desc &fromDesc,
               const void *from, const dnnl::memory::desc &toDesc,
               void *to) const {
    dnnl::memory source(fromDesc, context->engine, const_cast<void *>(from));
    dnnl::memory target(toDesc, context->engine, to);
    reorder.execute(context->stream, source, target);
    context->stream.wait();
  }

  std::shared_ptr<DnnlContext> context;
  dnnl::memory::desc dense, stored;
  dnnl::reorder toDenseReorder, fromDenseReorder;
};

DnnlKernel::DnnlKernel(LibraryContext &libraries) : libraries(libraries) {
  if (!libraries.dnnl)
    libraries.dnnl = std::make_shared<DnnlContext>();
  context = libraries.dnnl;
}

bool DnnlKernel::storedLayout(int64_t group, const dnnl::memory::desc &dense,
                              const dnnl::memory::desc &preferred,
                              dnnl::memory::desc &stored, std::string &error) {
  auto [it, added] = libraries.layouts.try_emplace(group);
  if (added) {
    // Same size and no padding: a permutation of the dense elements.
    bool padded = false;
    for (int i = 0; i < preferred.data.ndims; ++i)
      padded |= preferred.data.padded_dims[i] != preferred.data.dims[i];
    if (preferred != dense && !padded &&
        preferred.get_size() == dense.get_size())
      it->second = std::make_shared<DnnlStoredLayout>(context, dense, preferred);
  }
  auto *layout = static_cast<const DnnlStoredLayout *>(it->second.get());
  if (layout && !layout->sameDense(dense)) {
    error = "layout group " + std::to_string(group) +
            " holds tensors of different shapes";
    return false;
  }
  stored = layout ? layout->storedDesc() : dense;
  return true;
}

DnnlKernel::Memory DnnlKernel::bind(const dnnl::memory::desc &desc,
                                    Binding binding) {
  memories.emplace_back(desc, context->engine, static_cast<void *>(DNNL_MEMORY_NONE));
  bindings.push_back(binding);
  return static_cast<Memory>(memories.size() - 1);
}

DnnlKernel::Memory DnnlKernel::input(size_t index,
                                     const dnnl::memory::desc &desc) {
  return bind(desc, {Binding::Input, index, nullptr});
}

DnnlKernel::Memory DnnlKernel::output(size_t index,
                                      const dnnl::memory::desc &desc) {
  return bind(desc, {Binding::Output, index, nullptr});
}

DnnlKernel::Memory DnnlKernel::temporary(const dnnl::memory::desc &desc) {
  size_t offset = temporaryBytes;
  temporaryBytes += alignUp(desc.get_size());
  return bind(desc, {Binding::Scratch, offset, nullptr});
}

DnnlKernel::Memory DnnlKernel::view(Memory memory,
                                    const dnnl::memory::desc &desc) {
  assert(desc.get_size() <= this->desc(memory).get_size());
  Binding binding = bindings[memory];
  binding.current = nullptr;
  return bind(desc, binding);
}

DnnlKernel::Memory DnnlKernel::like(Memory memory,
                                    const dnnl::memory::desc &desc) {
  return memories[memory].get_desc() == desc ? memory : temporary(desc);
}

DnnlKernel::Memory DnnlKernel::toLayout(Memory memory,
                                        const dnnl::memory::desc &desc) {
  Memory converted = like(memory, desc);
  reorder(memory, converted);
  return converted;
}

void DnnlKernel::reorder(Memory from, Memory to) {
  if (from == to)
    return;
  dnnl::reorder::primitive_desc desc(context->engine, this->desc(from),
                                     context->engine, this->desc(to),
                                     dnnlAttributes());
  add(dnnl::reorder(desc), desc,
      {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

void DnnlKernel::add(const dnnl::primitive &primitive,
                     const dnnl::primitive_desc_base &desc,
                     std::vector<std::pair<int, Memory>> arguments) {
  Step step;
  step.primitive = primitive;
  for (const auto &[argument, memory] : arguments)
    step.arguments.emplace(argument, memories[memory]);
  size_t bytes = desc.scratchpad_desc().get_size();
  if (bytes > scratchpadBytes) {
    scratchpadBytes = bytes;
    scratchpad = dnnl::memory(desc.scratchpad_desc(), context->engine,
                              static_cast<void *>(DNNL_MEMORY_NONE));
    // Earlier steps get the larger region too (it only grows).
    for (Step &earlier : steps)
      if (earlier.arguments.count(DNNL_ARG_SCRATCHPAD))
        earlier.arguments[DNNL_ARG_SCRATCHPAD] = scratchpad;
  }
  if (bytes)
    step.arguments.emplace(DNNL_ARG_SCRATCHPAD, scratchpad);
  steps.push_back(std::move(step));
}

void DnnlKernel::addHost(std::function<void(const DnnlKernel &)> host) {
  Step step;
  step.host = std::move(host);
  steps.push_back(std::move(step));
}

void *DnnlKernel::data(Memory memory) const {
  return memories[memory].get_data_handle();
}

dnnl::memory::desc DnnlKernel::desc(Memory memory) const {
  return memories[memory].get_desc();
}

size_t DnnlKernel::scratchBytes() const {
  return temporaryBytes + scratchpadBytes;
}

bool DnnlKernel::run(void *const *inputs, void *const *outputs, void *scratch,
                     std::string &error) {
  char *base = static_cast<char *>(scratch);
  for (size_t i = 0; i < memories.size(); ++i) {
    Binding &binding = bindings[i];
    void *address = binding.kind == Binding::Input    ? inputs[binding.index]
                    : binding.kind == Binding::Output ? outputs[binding.index]
                                                      : base + binding.index;
    // Rebinding can cost (oneDNN zero-fills padded layouts): only on change.
    if (address != binding.current) {
      memories[i].set_data_handle(address);
      binding.current = address;
    }
  }
  if (scratchpadBytes && scratchpad.get_data_handle() != base + temporaryBytes)
    scratchpad.set_data_handle(base + temporaryBytes);
  for (Step &step : steps) {
    if (step.host)
      step.host(*this);
    else
      step.primitive.execute(context->stream, step.arguments);
  }
  context->stream.wait();
  return true;
}

dnnl::primitive_attr dnnlAttributes() {
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // The default (strict): f32 math stays f32, no implicit bf16 on AMX.
  attributes.set_fpmath_mode(dnnl::fpmath_mode::strict);
  return attributes;
}

dnnl::primitive_attr dnnlAttributes(const Launch &launch,
                                    dnnl::post_ops postOps) {
  dnnl::primitive_attr attributes = dnnlAttributes();
  if (launch.flag("post_relu"))
    postOps.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  if (postOps.len() > 0)
    attributes.set_post_ops(postOps);
  return attributes;
}

dnnl::memory::desc plainDesc(const Shape &shape, dnnl::memory::data_type type) {
  return dnnl::memory::desc(shape, type, stridesOf(shape));
}

dnnl::memory::desc anyLayout(const Shape &shape, dnnl::memory::data_type type) {
  return dnnl::memory::desc(shape, type, dnnl::memory::format_tag::any);
}

dnnl::memory::data_type dnnlDataType(const Launch &launch) {
  return !launch.inputs.empty() && launch.inputs[0].dtype == DType::BF16
             ? dnnl::memory::data_type::bf16
             : dnnl::memory::data_type::f32;
}

bool checkDnnlTypes(const Launch &launch, bool bf16, std::string &error) {
  DType type =
      bf16 && !launch.inputs.empty() && launch.inputs[0].dtype == DType::BF16
          ? DType::BF16
          : DType::F32;
  for (const auto *operands : {&launch.inputs, &launch.outputs})
    for (const OperandInfo &operand : *operands)
      if (operand.dtype != type)
        return fail(launch, error,
                    std::string("element type ") + dtypeName(operand.dtype) +
                        " is not supported by the dnnl backend here (all "
                        "operands f32" +
                        (bf16 ? ", or all bf16)" : ")"));
  return true;
}

} // namespace trainc::rt
