//===- FileWrite.cpp - files written whole or not at all ------------------===//
#include "lib/Runtime/FileWrite.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace trainc::rt {

void removeStaleTemporaries(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string directory =
      slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string prefix =
      (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  DIR *dir = opendir(directory.c_str());
  if (!dir)
    return;
  while (dirent *entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    // PATH.tmp.PID or PATH.tmp.PID.SUFFIX, by a process that is gone.
    const char *digits = name.c_str() + prefix.size();
    char *end = nullptr;
    long pid = std::strtol(digits, &end, 10);
    if (end == digits || (*end && *end != '.') || pid <= 0 ||
        pid == static_cast<long>(::getpid()))
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
      continue;
    std::string stale = (slash == std::string::npos ? "" : directory) + name;
    std::remove(stale.c_str());
  }
  closedir(dir);
}

std::string writeFileAtomically(const std::string &path,
                                const std::string &bytes) {
  // `trainc compile --emit kernel -o /dev/null`, run as root, renamed a
  // regular file over /dev/null.
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
    std::ofstream stream(path, std::ios::binary);
    if (stream)
      stream.write(bytes.data(), bytes.size());
    stream.flush();
    return stream ? "" : "cannot write '" + path + "'";
  }
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
  removeStaleTemporaries(path);
  return "";
}

} // namespace trainc::rt
