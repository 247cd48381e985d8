//===- Checkpoint.cpp - saving and resuming a session ---------------------===//
//
// Format (little-endian), version 1:
//   "TRAINCK1"  u32 version  u32 n + model hash  u64 n + caller's extra bytes
//   u32 tensor count, then per tensor: u32 n + name, u32 dtype, u32 rank,
//   i64 dims[rank], u64 n + data
//   u64 FNV-1a hash of every byte before it
// A checkpoint holds every persistent tensor of the session: parameters,
// BatchNorm statistics, optimizer state, the step, seed and learning rate,
// dense row-major whatever layout a library keeps them in (so a checkpoint
// resumes on a CPU whose oneDNN prefers other layouts).
// It is written to a temporary file in the same directory and renamed, so
// a crash never leaves a half-written checkpoint under the final name.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/FileWrite.h"
#include "lib/Runtime/Session.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace trainc::rt;

namespace {

constexpr char kMagic[8] = {'T', 'R', 'A', 'I', 'N', 'C', 'K', '1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kMaxExtra = 1 << 20;

uint64_t fnv1a(const std::string &bytes) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

template <typename T> void put(std::string &out, T value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof(T));
}
void putBytes(std::string &out, const void *data, size_t size) {
  put<uint64_t>(out, size);
  out.append(static_cast<const char *>(data), size);
}

/// Reads from a byte string; every read checks the bounds.
struct Reader {
  const std::string &bytes;
  size_t position = 0;
  bool ok = true;
  template <typename T> T get() {
    T value{};
    if (position + sizeof(T) > bytes.size()) {
      ok = false;
      return value;
    }
    std::memcpy(&value, bytes.data() + position, sizeof(T));
    position += sizeof(T);
    return value;
  }
  std::string take(size_t size) {
    if (position + size > bytes.size()) {
      ok = false;
      return {};
    }
    std::string value = bytes.substr(position, size);
    position += size;
    return value;
  }
};

} // namespace

extern "C" trainc_status trainc_save_checkpoint(const trainc_session *session,
                                                const char *path,
                                                const void *extra,
                                                size_t extra_size) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!path || (extra_size && !extra))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "null argument");
  if (extra_size > kMaxExtra)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "extra data above 1 MiB");
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kVersion);
  put<uint32_t>(out, session->modelHash.size());
  out += session->modelHash;
  putBytes(out, extra, extra_size);
  put<uint32_t>(out, session->persistent.size());
  for (const auto &[name, tensor] : session->persistent) {
    put<uint32_t>(out, name.size());
    out += name;
    put<uint32_t>(out, static_cast<uint32_t>(tensor.first.dtype));
    put<uint32_t>(out, tensor.first.shape.size());
    for (int64_t d : tensor.first.shape)
      put<int64_t>(out, d);
    std::string dense(tensor.second.size(), '\0');
    session->readDense(name, dense.data());
    putBytes(out, dense.data(), dense.size());
  }
  put<uint64_t>(out, fnv1a(out));

  std::string error = writeFileAtomically(path, out);
  if (!error.empty())
    return fail(TRAINC_ERROR_IO, "checkpoint: " + error);
  return TRAINC_OK;
}

extern "C" trainc_status trainc_load_checkpoint(trainc_session *session,
                                                const char *path, void *extra,
                                                size_t extra_capacity,
                                                size_t *extra_size) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!path)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "null argument");
  // A regular file no larger than this model's checkpoint can be: never
  // a device or a pipe read without bound.
  struct stat status;
  if (::stat(path, &status) != 0)
    return fail(TRAINC_ERROR_IO,
                std::string("cannot read checkpoint '") + path + "'");
  if (!S_ISREG(status.st_mode))
    return fail(TRAINC_ERROR_IO,
                std::string("checkpoint '") + path + "' is not a regular file");
  size_t largest = kMaxExtra + 4096;
  for (const auto &[name, tensor] : session->persistent)
    largest += tensor.second.size() + name.size() + 64;
  if (static_cast<uint64_t>(status.st_size) > largest)
    return fail(TRAINC_ERROR_CORRUPT,
                std::string("checkpoint '") + path +
                    "' is larger than a checkpoint of this model can be");
  std::ifstream stream(path, std::ios::binary);
  std::string bytes(static_cast<size_t>(status.st_size), '\0');
  if (!stream || !stream.read(bytes.data(), bytes.size()))
    return fail(TRAINC_ERROR_IO,
                std::string("cannot read checkpoint '") + path + "'");
  auto corrupt = [&](const std::string &why) {
    return fail(TRAINC_ERROR_CORRUPT,
                std::string("checkpoint '") + path + "' " + why);
  };
  if (bytes.size() < sizeof(kMagic) + 8 ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return corrupt("is not a trainc checkpoint");
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  std::string body = bytes.substr(0, bytes.size() - 8);
  if (fnv1a(body) != stored)
    return corrupt("is damaged (checksum mismatch)");
  Reader in{body, sizeof(kMagic)};
  if (in.get<uint32_t>() != kVersion)
    return corrupt("has an unknown format version");
  std::string hash = in.take(in.get<uint32_t>());
  if (in.ok && hash != session->modelHash)
    return corrupt("was written by a different model");
  std::string extraBytes = in.take(in.get<uint64_t>());
  uint32_t count = in.get<uint32_t>();
  if (!in.ok || count != session->persistent.size())
    return corrupt("does not hold this model's state");
  // Check everything before changing anything.
  std::vector<std::pair<std::string, std::string>> updates; // name, bytes
  for (uint32_t i = 0; i < count && in.ok; ++i) {
    std::string name = in.take(in.get<uint32_t>());
    uint32_t dtype = in.get<uint32_t>();
    uint32_t rank = in.get<uint32_t>();
    std::vector<int64_t> shape;
    for (uint32_t d = 0; d < rank && in.ok; ++d)
      shape.push_back(in.get<int64_t>());
    std::string data = in.take(in.get<uint64_t>());
    auto it = session->persistent.find(name);
    if (!in.ok || it == session->persistent.end() ||
        static_cast<uint32_t>(it->second.first.dtype) != dtype ||
        it->second.first.shape != shape || data.size() != it->second.second.size())
      return corrupt("does not match tensor '" + name + "' of this model");
    updates.emplace_back(name, std::move(data));
  }
  if (!in.ok || in.position != body.size())
    return corrupt("is truncated or has trailing data");
  if (extra_size)
    *extra_size = extraBytes.size();
  if (extra && !extraBytes.empty()) {
    if (extraBytes.size() > extra_capacity)
      return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                  "the checkpoint's extra data does not fit the buffer");
    std::memcpy(extra, extraBytes.data(), extraBytes.size());
  }
  for (auto &[name, data] : updates)
    session->writeDense(name, data.data());
  return TRAINC_OK;
}
