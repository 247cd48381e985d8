//===- CheckpointFormat.cpp - a checkpoint's bytes ------------------------===//
//
// Format (little-endian), version 1:
//   "TRAINCK1"  u32 version  u32 n + model hash  u64 n + caller's extra bytes
//   u32 tensor count, then per tensor: u32 n + name, u32 dtype, u32 rank,
//   i64 dims[rank], u64 n + data
//   u64 FNV-1a hash of every byte before it
// Plain C++ on bytes, no session: the fuzz target test/fuzz/checkpoint.cpp
// links this file alone.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Checkpoint.h"
#include "lib/Runtime/Fnv1a.h"

#include <cstring>
#include <set>

using namespace trainc::rt;

namespace {

constexpr char kMagic[8] = {'T', 'R', 'A', 'I', 'N', 'C', 'K', '1'};
constexpr uint32_t kVersion = 1;

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
    // Not `position + size > size()`: a size near 2^64 would wrap.
    if (size > bytes.size() - position) {
      ok = false;
      return {};
    }
    std::string value = bytes.substr(position, size);
    position += size;
    return value;
  }
};

/// "[3, 4]".
std::string describe(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

/// The magic, the version and the model hash at the start of `bytes`:
/// "" when they are a checkpoint of `modelHash`, else why not.
std::string checkHeader(Reader &in, const std::string &modelHash) {
  std::string magic = in.take(sizeof(kMagic));
  if (!in.ok || std::memcmp(magic.data(), kMagic, sizeof(kMagic)))
    return "is not a trainc checkpoint";
  if (in.get<uint32_t>() != kVersion)
    return "has an unknown format version";
  std::string hash = in.take(in.get<uint32_t>());
  if (!in.ok || hash != modelHash)
    return "was written by a different model";
  return "";
}

} // namespace

std::string trainc::rt::whyTooLarge(const std::string &head,
                                    const std::string &modelHash) {
  Reader in{head};
  std::string why = checkHeader(in, modelHash);
  if (!why.empty())
    return why;
  return "is larger than a checkpoint of this model can be: its state is "
         "larger than this library's (a checkpoint of this model from a "
         "library built by another trainc version?) or the file is damaged";
}

std::string
trainc::rt::serializeCheckpoint(const std::string &modelHash, const void *extra,
                                size_t extraSize,
                                const std::vector<SavedTensor> &tensors) {
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kVersion);
  put<uint32_t>(out, modelHash.size());
  out += modelHash;
  putBytes(out, extra, extraSize);
  put<uint32_t>(out, tensors.size());
  for (const SavedTensor &tensor : tensors) {
    put<uint32_t>(out, tensor.name.size());
    out += tensor.name;
    put<uint32_t>(out, tensor.dtype);
    put<uint32_t>(out, tensor.shape.size());
    for (int64_t d : tensor.shape)
      put<int64_t>(out, d);
    putBytes(out, tensor.bytes.data(), tensor.bytes.size());
  }
  put<uint64_t>(out, fnv1a(out.data(), out.size()));
  return out;
}

uint64_t trainc::rt::checkpointChecksum(const std::string &bytes) {
  return fnv1a(bytes.data(), bytes.size());
}

std::string trainc::rt::parseCheckpoint(
    const std::string &bytes, const std::string &modelHash,
    const std::map<std::string, ExpectedTensor> &expected,
    CheckpointContents &contents) {
  if (bytes.size() < sizeof(kMagic) + 8 ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return "is not a trainc checkpoint";
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  std::string body = bytes.substr(0, bytes.size() - 8);
  if (fnv1a(body.data(), body.size()) != stored)
    return "is damaged (checksum mismatch)";
  Reader in{body};
  std::string why = checkHeader(in, modelHash);
  if (!why.empty())
    return why;
  contents.extra = in.take(in.get<uint64_t>());
  if (contents.extra.size() > kMaxExtra)
    return "holds more than 1 MiB of caller data";
  uint32_t count = in.get<uint32_t>();
  if (!in.ok || count != expected.size())
    return "does not hold this model's state";
  // Every tensor once, each checked before anything changes.
  std::set<std::string> seen;
  for (uint32_t i = 0; i < count && in.ok; ++i) {
    std::string name = in.take(in.get<uint32_t>());
    uint32_t dtype = in.get<uint32_t>();
    uint32_t rank = in.get<uint32_t>();
    if (rank > 16)
      return "has a tensor of rank " + std::to_string(rank);
    std::vector<int64_t> shape;
    for (uint32_t d = 0; d < rank && in.ok; ++d)
      shape.push_back(in.get<int64_t>());
    std::string data = in.take(in.get<uint64_t>());
    auto it = expected.find(name);
    if (in.ok && it != expected.end() &&
        (it->second.dtype != dtype || it->second.shape != shape)) {
      // The model's own hash, another layout of its state: a library
      // built by another trainc (e.g. optimizer state kept for a weight's
      // live taps only) or a damaged file.
      std::string what =
          it->second.shape != shape
              ? "of shape " + describe(shape) + ", this library keeps it as " +
                    describe(it->second.shape)
              : std::string("of another element type than this library's");
      return "holds tensor '" + name + "' " + what +
             " (a checkpoint of this model from a library built by another "
             "trainc version?)";
    }
    if (!in.ok || it == expected.end() || data.size() != it->second.bytes)
      return "does not match tensor '" + name + "' of this model";
    if (!seen.insert(name).second)
      return "holds tensor '" + name + "' twice";
    contents.tensors.emplace_back(name, std::move(data));
  }
  if (!in.ok || in.position != body.size())
    return "is truncated or has trailing data";
  return "";
}
