//===- Fnv1a.h - 64-bit FNV-1a over bytes
//----------------------------------===//
//
// The hash checkpoints use twice: over their own bytes (a checksum) and,
// through the compiler, over the ONNX file and options that made the
// library (the model hash a checkpoint must match). Incremental: pass the
// previous result as `hash` to continue over more bytes.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_RUNTIME_FNV1A_H
#define TRAINC_RUNTIME_FNV1A_H

#include <cstddef>
#include <cstdint>

namespace trainc::rt {

constexpr uint64_t kFnv1aBasis = 1469598103934665603ull;

inline uint64_t fnv1a(const void *bytes, size_t size,
                      uint64_t hash = kFnv1aBasis) {
  const auto *p = static_cast<const unsigned char *>(bytes);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

} // namespace trainc::rt

#endif // TRAINC_RUNTIME_FNV1A_H
