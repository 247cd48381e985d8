// Trains the MLP that trainc compiled into libmlp.so, through the C API of
// its generated header, on a few fixed synthetic batches: each class is a
// bright square at its own place in a noisy 28x28 image, so a model that
// learns drives the loss down. Exits non-zero unless the loss falls.
#include "mlp.h" // generated next to libmlp.so; includes trainc/runtime.h

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#ifndef BATCH
#error "BATCH must be the batch size the model was compiled for"
#endif

namespace {

constexpr int kPixels = 28 * 28;
constexpr int kClasses = 10;
constexpr int kBatches = 4;
constexpr int kEpochs = 15;

struct Batch {
  std::vector<float> images = std::vector<float>(BATCH * kPixels);
  std::vector<int64_t> labels = std::vector<int64_t>(BATCH);
};

/// Deterministic data: class c lights a 6x6 square whose corner depends on c.
std::vector<Batch> makeBatches() {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> noise(0.0f, 0.3f);
  std::vector<Batch> batches(kBatches);
  for (Batch &batch : batches)
    for (int i = 0; i < BATCH; ++i) {
      int label = static_cast<int>(random() % kClasses);
      batch.labels[i] = label;
      float *image = &batch.images[i * kPixels];
      for (int p = 0; p < kPixels; ++p)
        image[p] = noise(random);
      int top = 2 + (label / 5) * 12, left = 2 + (label % 5) * 5;
      for (int y = top; y < top + 6; ++y)
        for (int x = left; x < left + 6 && x < 28; ++x)
          image[y * 28 + x] = 1.0f;
    }
  return batches;
}

bool ok(trainc_status status, const char *what) {
  if (status == TRAINC_OK)
    return true;
  std::fprintf(stderr, "%s failed (%d): %s\n", what, static_cast<int>(status),
               trainc_last_error());
  return false;
}

} // namespace

int main() {
  std::vector<Batch> batches = makeBatches();
  trainc_session_options options = {/*num_threads=*/0, /*seed=*/1,
                                    /*weights_path=*/nullptr};
  trainc_session *session = nullptr;
  if (!ok(trainc_session_open(&options, &session), "trainc_session_open"))
    return 1;

  const int64_t imageShape[4] = {BATCH, 1, 28, 28};
  const int64_t labelShape[1] = {BATCH};
  double first = 0, last = 0;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    double sum = 0;
    for (Batch &batch : batches) {
      trainc_tensor image = {TRAINC_FLOAT32, 4, imageShape,
                             batch.images.data()};
      trainc_tensor labels = {TRAINC_INT64, 1, labelShape, batch.labels.data()};
      float loss = 0;
      if (!ok(trainc_train_step(session, &image, 1, &labels, &loss),
              "trainc_train_step")) {
        trainc_session_close(session);
        return 1;
      }
      sum += loss;
    }
    double mean = sum / kBatches;
    std::printf("epoch %2d: mean loss %.4f\n", epoch + 1, mean);
    if (epoch == 0)
      first = mean;
    last = mean;
  }
  trainc_session_close(session);

  if (!(last < 0.5 * first)) {
    std::fprintf(stderr, "the loss did not fall: %.4f -> %.4f\n", first, last);
    return 1;
  }
  std::printf("loss fell from %.4f to %.4f\n", first, last);
  return 0;
}
