//===- FileWrite.h - files written whole or not at all ---------*- C++ -*-===//
#ifndef TRAINC_LIB_RUNTIME_FILEWRITE_H
#define TRAINC_LIB_RUNTIME_FILEWRITE_H

#include <string>

namespace trainc::rt {

/// Writes `bytes` to a temporary file beside `path`, then renames it over
/// `path`: readers see the old file or the new one, never a part. A path
/// that exists and is not a regular file (/dev/null, a FIFO, or a link to
/// one) is written in place instead: a rename would replace the device
/// itself. Returns an error message naming the path, or "" on success.
std::string writeFileAtomically(const std::string &path,
                                const std::string &bytes);

/// Removes what writers killed before their rename left beside `path`:
/// `PATH.tmp.PID` and `PATH.tmp.PID.*` of processes that no longer run.
void removeStaleTemporaries(const std::string &path);

} // namespace trainc::rt

#endif
