//===- Commands.h - trainc subcommands -------------------------*- C++ -*-===//
#ifndef TRAINC_TOOLS_TRAINC_COMMANDS_H
#define TRAINC_TOOLS_TRAINC_COMMANDS_H

#include <optional>
#include <string>

namespace CLI {
class App;
} // namespace CLI

namespace trainc::cli {

struct ImportCommandOptions {
  std::string model;
  std::string output = "-";
  std::optional<long long> batch;
  std::string freeze;
  bool noCanonicalize = false;
  bool printLocations = false;
};

void addImportCommand(CLI::App &command, ImportCommandOptions &options);
int runImportCommand(const ImportCommandOptions &options);

/// Writes `contents` to `path` atomically ("-" is stdout). Returns an
/// error message, or an empty string on success.
std::string writeFileAtomically(const std::string &path,
                                const std::string &contents);

} // namespace trainc::cli

#endif // TRAINC_TOOLS_TRAINC_COMMANDS_H
