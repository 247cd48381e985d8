//===- DynamicLibrary.h - a library opened with dlopen --------*- C++ -*-===//
//
// The CUDA target's runtime never links CUDA: the driver (CudaDevice.cpp)
// and cuBLAS (kernels/CublasKernels.cpp) are opened when a session needs
// them, their entry points bound by name.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_DYNAMICLIBRARY_H
#define TRAINC_LIB_RUNTIME_DYNAMICLIBRARY_H

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <type_traits>

namespace trainc::rt {

class DynamicLibrary {
public:
  DynamicLibrary() = default;
  DynamicLibrary(const DynamicLibrary &) = delete;
  DynamicLibrary &operator=(const DynamicLibrary &) = delete;
  ~DynamicLibrary() {
    if (handle)
      dlclose(handle);
  }

  /// Opens $`variable` if set, else `name`; false with dlerror() in
  /// `error`.
  bool open(const char *variable, const char *name, std::string &error) {
    const char *chosen = std::getenv(variable);
    path = chosen && *chosen ? chosen : name;
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      error = dlerror();
    return handle != nullptr;
  }

  /// Binds `function` to `symbol`; the first symbol missing is kept in
  /// `missing` (bind them all, then check it).
  template <typename Function>
  void bind(Function &function, const char *symbol) {
    function = reinterpret_cast<Function>(dlsym(handle, symbol));
    if (!function && missing.empty())
      missing = symbol;
  }

  std::string path;    ///< what was opened
  std::string missing; ///< the first symbol bind() did not find

private:
  void *handle = nullptr;
};

} // namespace trainc::rt

#endif
