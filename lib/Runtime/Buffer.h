//===- Buffer.h - aligned, zeroed storage the runtime owns -----*- C++ -*-===//
#ifndef TRAINC_LIB_RUNTIME_BUFFER_H
#define TRAINC_LIB_RUNTIME_BUFFER_H

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <sys/mman.h>

namespace trainc::rt {

/// Storage aligned for vector loads (64 bytes; 2 MiB from 2 MiB on),
/// zero-initialized; data() is null when the size is 0 or the allocation
/// failed.
class Buffer {
public:
  explicit Buffer(size_t size = 0) : bytes(size) {
    if (size == 0)
      return;
    // 2 MiB and more (the arena): transparent huge pages where the
    // system allows them on request, so kernels walk it through few TLB
    // entries.
    constexpr size_t kHugePage = size_t(2) << 20;
    bool huge = size >= kHugePage;
    size_t alignment = huge ? kHugePage : 64;
    size_t rounded = (size + alignment - 1) / alignment * alignment;
    void *p = std::aligned_alloc(alignment, rounded);
    if (p && huge)
      madvise(p, rounded, MADV_HUGEPAGE);
    if (p)
      std::memset(p, 0, size);
    storage.reset(p);
  }
  void *data() { return storage.get(); }
  const void *data() const { return storage.get(); }
  size_t size() const { return bytes; }

private:
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> storage;
  size_t bytes = 0;
};

} // namespace trainc::rt

#endif // TRAINC_LIB_RUNTIME_BUFFER_H
