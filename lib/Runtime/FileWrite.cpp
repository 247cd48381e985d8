//===- FileWrite.cpp - files written whole or not at all ------------------===//
#include "lib/Runtime/FileWrite.h"

#include <cstdio>
#include <fstream>
#include <unistd.h>

namespace trainc::rt {

std::string writeFileAtomically(const std::string &path,
                                const std::string &bytes) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream)
      return "cannot write '" + path + "'";
    stream.write(bytes.data(), bytes.size());
    stream.flush();
    if (!stream) {
      std::remove(temporary.c_str());
      return "cannot write '" + path + "'";
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return "cannot write '" + path + "'";
  }
  return "";
}

} // namespace trainc::rt
