//===- GeneratedRandomKernels.cpp - dropout masks -------------------------===//
//
// graph.random_mask as one parallel nest that runs Philox4x32-10 per
// element, exactly as include/trainc/Random.h defines it for the
// reference interpreter and the runtime: key = seed, counter = (index,
// stream, step), the top 24 bits of output word 0 as the uniform. The
// rounds are 32-bit integer multiplies (arith.mului_extended gives both
// halves), xors and adds, so the nest vectorizes and its masks are bit
// for bit the reference's on any thread count.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

namespace trainc::conversion {
namespace {

/// Element word 0 of Philox4x32-10 for `counter` under `key` (i32 values).
Value philoxWord(OpBuilder &b, Location loc, std::array<Value, 4> c,
                 std::array<Value, 2> k) {
  auto i32 = [&](uint32_t value) {
    return arith::ConstantIntOp::create(b, loc, static_cast<int32_t>(value),
                                        32)
        .getResult();
  };
  Value multiplier0 = i32(0xD2511F53u), multiplier1 = i32(0xCD9E8D57u);
  Value weyl0 = i32(0x9E3779B9u), weyl1 = i32(0xBB67AE85u);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] = arith::AddIOp::create(b, loc, k[0], weyl0);
      k[1] = arith::AddIOp::create(b, loc, k[1], weyl1);
    }
    auto product0 = arith::MulUIExtendedOp::create(b, loc, multiplier0, c[0]);
    auto product1 = arith::MulUIExtendedOp::create(b, loc, multiplier1, c[2]);
    Value c0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, product1.getHigh(), c[1]), k[0]);
    Value c2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, product0.getHigh(), c[3]), k[1]);
    c = {c0, product1.getLow(), c2, product0.getLow()};
  }
  return c[0];
}

} // namespace

LogicalResult buildRandomMask(KernelBuilder &kb) {
  MemRefType type = kb.outputType(0);
  std::optional<int64_t> stream = kb.integer("stream");
  std::optional<double> ratio = kb.optionalReal("ratio");
  if (!type.getElementType().isF32() || !stream || !ratio ||
      !(*ratio >= 0.0 && *ratio < 1.0))
    return kb.launch.emitError("the generated graph.random_mask needs an f32 "
                               "mask, a stream and a ratio in [0, 1)");
  int64_t count = type.getNumElements();
  Space space(ArrayRef<int64_t>{count});
  unsigned scalarId = space.add({}), elementId = space.add({0});
  Operand seed{kb.input(0, {}), scalarId}, step{kb.input(1, {}), scalarId};
  Operand mask{kb.output(0, {count}), elementId};
  float kept = static_cast<float>(1.0 / (1.0 - *ratio));
  double threshold = *ratio;
  kb.nest(space, {seed, step}, mask, space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Type i32 = b.getI32Type();
            auto low = [&](Value word) -> Value {
              return arith::TruncIOp::create(b, loc, i32, word);
            };
            auto high = [&](Value word) -> Value {
              return low(arith::ShRUIOp::create(
                  b, loc, word, arith::ConstantIntOp::create(b, loc, 32, 64)));
            };
            Value index = arith::IndexCastOp::create(
                b, loc, b.getI64Type(), loop::IndexOp::create(b, loc, 0));
            Value streamWord = arith::ConstantIntOp::create(
                b, loc, static_cast<int32_t>(static_cast<uint32_t>(*stream)),
                32);
            Value word = philoxWord(
                b, loc, {low(index), streamWord, low(x[1]), high(x[1])},
                {low(x[0]), high(x[0])});
            // (word >> 8) * 2^-24, exact in f32; compared in double.
            Value top = arith::ShRUIOp::create(
                b, loc, word, arith::ConstantIntOp::create(b, loc, 8, 32));
            Value uniform = arith::MulFOp::create(
                b, loc, arith::UIToFPOp::create(b, loc, b.getF32Type(), top),
                constant(b, loc, b.getF32Type(), 1.0 / 16777216.0));
            Value keep = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OGE,
                arith::ExtFOp::create(b, loc, b.getF64Type(), uniform),
                constant(b, loc, b.getF64Type(), threshold));
            return {arith::SelectOp::create(
                b, loc, keep, constant(b, loc, b.getF32Type(), kept),
                constant(b, loc, b.getF32Type(), 0.0))};
          });
  return success();
}

} // namespace trainc::conversion
