//===- CheckNumerics.cpp - the first kernel that made a NaN or an infinity ===//
//
// A library built with `trainc compile --check-numerics` calls
// trainc_rt_check_numerics when a function starts (its arguments: the
// batch, the parameters, the optimizer state) and after every launch (the
// launch's inputs and outputs). The step fails with TRAINC_ERROR_NOT_FINITE
// at the first place a non-finite value appears:
//
//   - an argument that holds a NaN or an infinity, or
//   - a launch with a NaN in an output and none in its inputs, or with an
//     infinity in an output and only finite inputs.
//
// A launch that passes on what it was given (an infinity from a constant,
// such as an attention mask's -inf) is not the origin and is not reported;
// an input that is also an output (an in-place update) does not count as
// an input. Inputs are read only when an output is not finite, so a clean
// step costs one pass over every output.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Model.h"
#include "lib/Runtime/Session.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

using namespace trainc::rt;

namespace {

/// The first NaN and the first infinity of a buffer (-1: none).
struct NonFinite {
  int64_t nan = -1, inf = -1;
  bool any() const { return nan >= 0 || inf >= 0; }
};

/// Half-precision formats by their bits: exponent all ones is not finite,
/// a NaN when the mantissa is not zero.
template <typename Bits>
NonFinite scanHalf(const void *data, int64_t count, Bits exponent,
                   Bits mantissa) {
  NonFinite found;
  const auto *values = static_cast<const Bits *>(data);
  for (int64_t i = 0; i < count; ++i) {
    Bits bits = values[i];
    if ((bits & exponent) != exponent)
      continue;
    int64_t &first = (bits & mantissa) ? found.nan : found.inf;
    if (first < 0)
      first = i;
    if (found.nan >= 0 && found.inf >= 0)
      break;
  }
  return found;
}

template <typename T> NonFinite scanFloat(const void *data, int64_t count) {
  NonFinite found;
  const T *values = static_cast<const T *>(data);
  for (int64_t i = 0; i < count; ++i) {
    if (std::isfinite(values[i]))
      continue;
    int64_t &first = std::isnan(values[i]) ? found.nan : found.inf;
    if (first < 0)
      first = i;
    if (found.nan >= 0 && found.inf >= 0)
      break;
  }
  return found;
}

NonFinite scan(const void *data, const NumericsOperand &operand) {
  switch (operand.dtype) {
  case DType::F32:
    return scanFloat<float>(data, operand.count);
  case DType::F64:
    return scanFloat<double>(data, operand.count);
  case DType::F16:
    return scanHalf<uint16_t>(data, operand.count, 0x7c00, 0x03ff);
  case DType::BF16:
    return scanHalf<uint16_t>(data, operand.count, 0x7f80, 0x007f);
  default:
    return {};
  }
}

std::string element(int64_t index, const NumericsOperand &operand) {
  return "element " + std::to_string(index) + " of " +
         std::to_string(operand.count);
}

} // namespace

namespace trainc::rt {

std::vector<NumericsCheck> parseNumericsChecks(const nlohmann::json &list) {
  std::vector<NumericsCheck> checks;
  for (const auto &entry : list) {
    NumericsCheck check;
    check.where = entry.at("where").get<std::string>();
    check.arguments = entry.value("arguments", false);
    for (const auto &item : entry.at("operands")) {
      NumericsOperand operand;
      operand.slot = item.at("slot").get<int32_t>();
      operand.label = item.at("label").get<std::string>();
      auto dtype = parseDType(item.at("dtype").get<std::string>());
      if (!dtype || operand.slot < 0)
        throw std::runtime_error("numerics: bad operand of " + check.where);
      operand.dtype = *dtype;
      operand.count = item.at("count").get<int64_t>();
      operand.output = item.at("output").get<bool>();
      check.operands.push_back(std::move(operand));
    }
    checks.push_back(std::move(check));
  }
  return checks;
}

} // namespace trainc::rt

extern "C" {

int32_t trainc_rt_check_numerics(void *state, void *const *pointers,
                                 int32_t id) {
  auto *launch = static_cast<LaunchState *>(state);
  if (id < 0 || static_cast<size_t>(id) >= launch->numerics.size())
    return 0; // the manifest describes fewer checks than the code makes
  const NumericsCheck &check = launch->numerics[id];
  std::vector<std::pair<const NumericsOperand *, NonFinite>> outputs;
  for (const NumericsOperand &operand : check.operands)
    if (operand.output)
      if (NonFinite found = scan(pointers[operand.slot], operand); found.any())
        outputs.push_back({&operand, found});
  if (outputs.empty())
    return 0;
  // What the inputs held; one that is also an output was overwritten.
  bool inputNaN = false;
  const NumericsOperand *inputInf = nullptr;
  for (const NumericsOperand &operand : check.operands) {
    bool overwritten = false;
    for (const NumericsOperand &other : check.operands)
      overwritten |=
          other.output && pointers[other.slot] == pointers[operand.slot];
    if (operand.output || overwritten)
      continue;
    NonFinite input = scan(pointers[operand.slot], operand);
    inputNaN |= input.nan >= 0;
    if (input.inf >= 0 && !inputInf)
      inputInf = &operand;
  }
  std::string message;
  for (auto [operand, found] : outputs) {
    bool nan = found.nan >= 0 && !inputNaN;
    bool inf = !nan && found.inf >= 0 && !inputNaN && !inputInf;
    if (!nan && !inf)
      continue; // passed on from an input (a constant's -inf, say)
    std::string what = nan ? "NaN" : "an infinity";
    std::string at = "(" + element(nan ? found.nan : found.inf, *operand) + ")";
    if (check.arguments)
      message =
          check.where + ": " + operand->label + " holds " + what + " " + at;
    else
      message = check.where + " produced " + what + " in " + operand->label +
                " " + at + " from " +
                (inputInf ? "an infinity in " + inputInf->label
                          : std::string("finite inputs"));
    break;
  }
  if (message.empty())
    return 0;
  launch->error = "--check-numerics: " + message;
  return TRAINC_ERROR_NOT_FINITE;
}

} // extern "C"
