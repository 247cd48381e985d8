//===- Launch.cpp - kernel descriptors and the kernel table ---------------===//
#include "lib/Runtime/Launch.h"

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <sstream>

namespace trainc::rt {

static const char *const kDTypeNames[] = {"f32", "f64", "f16", "bf16", "i64",
                                          "i32", "i16", "i8",  "i1"};

std::optional<DType> parseDType(const std::string &name) {
  for (int i = 0; i < 9; ++i)
    if (name == kDTypeNames[i])
      return static_cast<DType>(i);
  return std::nullopt;
}

const char *dtypeName(DType dtype) {
  return kDTypeNames[static_cast<int32_t>(dtype)];
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
    return 2;
  case DType::I8:
  case DType::I1:
    return 1;
  }
  return 0;
}

int64_t OperandInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

static std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream stream(text);
  while (std::getline(stream, part, separator))
    parts.push_back(part);
  if (!text.empty() && text.back() == separator)
    parts.push_back("");
  return parts;
}

static bool parseOperands(const std::string &text,
                          std::vector<OperandInfo> &operands,
                          std::string &error) {
  if (text.empty())
    return true;
  for (const std::string &item : split(text, '|')) {
    size_t colon = item.find(':');
    auto dtype = parseDType(item.substr(0, colon));
    if (colon == std::string::npos || !dtype) {
      error = "bad operand '" + item + "'";
      return false;
    }
    OperandInfo info;
    info.dtype = *dtype;
    std::string dims = item.substr(colon + 1);
    int64_t bytes = static_cast<int64_t>(dtypeSize(info.dtype));
    if (!dims.empty())
      for (const std::string &dim : split(dims, 'x')) {
        char *end = nullptr;
        errno = 0;
        long long value = std::strtoll(dim.c_str(), &end, 10);
        // The byte size must stay representable: kernels index with it.
        if (dim.empty() || *end != '\0' || value < 0 || errno != 0 ||
            __builtin_mul_overflow(bytes, static_cast<int64_t>(value),
                                   &bytes)) {
          error = "bad dimension in '" + item + "'";
          return false;
        }
        info.shape.push_back(value);
      }
    operands.push_back(std::move(info));
  }
  return true;
}

std::optional<Launch> parseLaunch(const char *descriptor, std::string &error) {
  if (!descriptor) {
    error = "null kernel descriptor";
    return std::nullopt;
  }
  std::vector<std::string> fields = split(descriptor, ';');
  if (fields.empty() || fields[0].empty()) {
    error = "empty kernel descriptor";
    return std::nullopt;
  }
  Launch launch;
  launch.op = fields[0];
  for (size_t i = 1; i < fields.size(); ++i) {
    size_t equal = fields[i].find('=');
    if (equal == std::string::npos) {
      error = "field '" + fields[i] + "' of " + launch.op + " has no '='";
      return std::nullopt;
    }
    std::string key = fields[i].substr(0, equal);
    std::string value = fields[i].substr(equal + 1);
    if (key == "backend")
      launch.backend = value;
    else if (key == "in") {
      if (!parseOperands(value, launch.inputs, error))
        return std::nullopt;
    } else if (key == "out") {
      if (!parseOperands(value, launch.outputs, error))
        return std::nullopt;
    } else {
      launch.attributes[key] = value;
    }
  }
  return launch;
}

int64_t Launch::i64(const std::string &name, int64_t defaultValue) const {
  auto it = attributes.find(name);
  return it == attributes.end() ? defaultValue
                                : std::strtoll(it->second.c_str(), nullptr, 10);
}

double Launch::f64(const std::string &name, double defaultValue) const {
  auto it = attributes.find(name);
  return it == attributes.end() ? defaultValue
                                : std::strtod(it->second.c_str(), nullptr);
}

bool Launch::flag(const std::string &name, bool defaultValue) const {
  auto it = attributes.find(name);
  return it == attributes.end() ? defaultValue : it->second == "1";
}

std::string Launch::str(const std::string &name,
                        const std::string &defaultValue) const {
  auto it = attributes.find(name);
  return it == attributes.end() ? defaultValue : it->second;
}

std::vector<int64_t> Launch::ints(const std::string &name) const {
  std::vector<int64_t> values;
  auto it = attributes.find(name);
  if (it == attributes.end() || it->second.empty())
    return values;
  for (const std::string &item : split(it->second, ','))
    values.push_back(std::strtoll(item.c_str(), nullptr, 10));
  return values;
}

using KernelTable = std::map<std::pair<std::string, std::string>, KernelEntry>;

static KernelTable &rawTable() {
  static KernelTable kernels;
  return kernels;
}

/// The table, filled with the builtin kernels on first use.
static KernelTable &table() {
  static bool filled = [] {
    registerBuiltinKernels();
    return true;
  }();
  (void)filled;
  return rawTable();
}

KernelEntry findKernel(const std::string &op, const std::string &backend) {
  auto it = table().find({op, backend});
  return it == table().end() ? KernelEntry() : it->second;
}

void registerKernel(const std::string &op, const std::string &backend,
                    KernelFunction kernel) {
  rawTable()[{op, backend}] = KernelEntry{kernel, nullptr};
}

void registerPreparedKernel(const std::string &op, const std::string &backend,
                            PrepareFunction prepare) {
  rawTable()[{op, backend}] = KernelEntry{nullptr, prepare};
}

std::vector<std::pair<std::string, std::string>> registeredKernels() {
  std::vector<std::pair<std::string, std::string>> keys;
  for (const auto &[key, kernel] : table())
    keys.push_back(key);
  return keys;
}

/// "<op>: <message>" unless the message already names the op.
static void nameOp(const Launch &launch, std::string &error) {
  std::string prefix = launch.op + ": ";
  if (error.compare(0, prefix.size(), prefix) != 0)
    error = prefix + error;
}

bool PreparedLaunch::run(void *const *inputs, void *const *outputs,
                         void *scratch, std::string &error) const {
  bool ok = false;
  try {
    ok = prepared ? prepared->run(inputs, outputs, scratch, error)
                  : kernel(launch, inputs, outputs, error);
  } catch (const std::exception &exception) {
    error = exception.what();
  } catch (...) {
    error = "unknown exception";
  }
  if (!ok)
    nameOp(launch, error);
  return ok;
}

bool prepareLaunch(const char *descriptor, LibraryContext &libraries,
                   PreparedLaunch &prepared, std::string &error) {
  auto launch = parseLaunch(descriptor, error);
  if (!launch) {
    error = "bad kernel descriptor: " + error;
    return false;
  }
  KernelEntry entry = findKernel(launch->op, launch->backend);
  if (!entry) {
    error = "the runtime has no " + launch->backend + " kernel for " +
            launch->op;
    return false;
  }
  prepared.launch = std::move(*launch);
  prepared.kernel = entry.run;
  prepared.prepared.reset();
  if (!entry.prepare)
    return true;
  try {
    prepared.prepared = entry.prepare(prepared.launch, libraries, error);
  } catch (const std::exception &exception) {
    error = exception.what();
  } catch (...) {
    error = "unknown exception";
  }
  if (!prepared.prepared) {
    nameOp(prepared.launch, error);
    return false;
  }
  return true;
}

} // namespace trainc::rt
