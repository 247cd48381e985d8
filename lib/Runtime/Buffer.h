//===- Buffer.h - aligned, zeroed storage the runtime owns -----*- C++ -*-===//
#ifndef TRAINC_LIB_RUNTIME_BUFFER_H
#define TRAINC_LIB_RUNTIME_BUFFER_H

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
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
  /// Storage someone else allocated (`size` bytes at `data`, zeroed),
  /// given back by `release` when the buffer dies.
  static Buffer adopt(void *data, size_t size,
                      std::function<void(void *)> release) {
    Buffer buffer;
    buffer.storage =
        std::unique_ptr<void, Free>(data, Free{std::move(release)});
    buffer.bytes = size;
    return buffer;
  }

  void *data() { return storage.get(); }
  const void *data() const { return storage.get(); }
  size_t size() const { return bytes; }

private:
  struct Free {
    std::function<void(void *)> release; ///< empty: std::free
    void operator()(void *p) const {
      if (release)
        release(p);
      else
        std::free(p);
    }
  };
  std::unique_ptr<void, Free> storage;
  size_t bytes = 0;
};

} // namespace trainc::rt

#endif // TRAINC_LIB_RUNTIME_BUFFER_H
