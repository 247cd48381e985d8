/* A C program that trains a model through its generated library and header:
 * 6 steps straight, versus 3 steps, save, a fresh session, resume, 3 steps.
 * The two runs must end with bit-identical parameters. Bad inputs must give
 * error codes with a message, not crashes.
 *
 * Usage: train_resume CHECKPOINT_PATH */
#include "trainc/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 8
#define PIXELS 784

static float images[BATCH * PIXELS];
static int64_t labels[BATCH];

static int check(trainc_status status, const char *what) {
  if (status != TRAINC_OK) {
    fprintf(stderr, "%s failed (%d): %s\n", what, (int)status, trainc_last_error());
    exit(1);
  }
  return 0;
}

static void train(trainc_session *session, int steps, float *loss) {
  int64_t image_shape[4] = {BATCH, 1, 28, 28};
  int64_t label_shape[1] = {BATCH};
  trainc_tensor input = {TRAINC_FLOAT32, 4, image_shape, images};
  trainc_tensor target = {TRAINC_INT64, 1, label_shape, labels};
  for (int i = 0; i < steps; ++i)
    check(trainc_train_step(session, &input, 1, &target, loss), "train step");
}

/* All parameters, concatenated. */
static float *snapshot(trainc_session *session, size_t *count) {
  size_t total = 0, capacity = 1 << 20;
  float *all = malloc(capacity * sizeof(float));
  for (int32_t i = 0; i < trainc_num_parameters(session); ++i) {
    const char *name = trainc_parameter_name(session, i);
    /* Shapes come from the manifest in real code; here try the MLP's. */
    static const int64_t shapes[][2] = {{256, 784}, {256, 1}, {128, 256},
                                        {128, 1},   {10, 128}, {10, 1}};
    int64_t shape[2] = {shapes[i][0], shapes[i][1]};
    int32_t rank = shape[1] == 1 ? 1 : 2;
    size_t n = (size_t)(shape[0] * shape[1]);
    trainc_tensor out = {TRAINC_FLOAT32, rank, shape, all + total};
    check(trainc_get_parameter(session, name, &out), name);
    total += n;
  }
  *count = total;
  return all;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CHECKPOINT\n", argv[0]);
    return 2;
  }
  srand(7);
  for (int i = 0; i < BATCH * PIXELS; ++i)
    images[i] = (float)rand() / RAND_MAX;
  for (int i = 0; i < BATCH; ++i)
    labels[i] = rand() % 10;

  trainc_session_options options = {1, 42, NULL};
  trainc_session *straight, *first, *resumed;
  float loss_straight, loss_resumed;
  check(trainc_session_open(&options, &straight), "open");
  train(straight, 6, &loss_straight);

  check(trainc_session_open(&options, &first), "open");
  train(first, 3, &loss_resumed);
  check(trainc_save_checkpoint(first, argv[1], NULL, 0), "save");
  trainc_session_close(first);
  check(trainc_session_open(&options, &resumed), "open");
  check(trainc_load_checkpoint(resumed, argv[1], NULL, 0, NULL), "load");
  int64_t step;
  check(trainc_get_step(resumed, &step), "step");
  if (step != 3) {
    fprintf(stderr, "resumed at step %lld, expected 3\n", (long long)step);
    return 1;
  }
  train(resumed, 3, &loss_resumed);

  size_t n1, n2;
  float *a = snapshot(straight, &n1), *b = snapshot(resumed, &n2);
  if (n1 != n2 || memcmp(a, b, n1 * sizeof(float)) != 0 ||
      loss_straight != loss_resumed) {
    fprintf(stderr, "resumed run differs from the straight run\n");
    return 1;
  }
  printf("6 steps straight == 3 + save + resume + 3: %zu parameters bit-identical, "
         "loss %.6f\n", n1, loss_straight);

  /* The session's memory: the manifest's arena, and oneDNN's scratch (the
   * MLP's GEMMs run on oneDNN, which needs none at this size: any value is
   * fine, the call must answer). */
  size_t arena = 0, library_scratch = 0;
  check(trainc_get_memory(resumed, &arena, &library_scratch), "memory");
  if (arena == 0)
    return 1;
  printf("session memory: arena %zu bytes + library scratch %zu bytes\n", arena,
         library_scratch);

  /* The trained model as an ONNX inference model (checked by c_api.sh). */
  char exported[4096];
  snprintf(exported, sizeof exported, "%s.onnx", argv[1]);
  check(trainc_export_onnx(resumed, exported), "export");
  printf("exported %s\n", exported);

  /* Bad inputs: error codes and messages, no crash. */
  int64_t wrong_shape[4] = {BATCH + 1, 1, 28, 28};
  trainc_tensor wrong = {TRAINC_FLOAT32, 4, wrong_shape, images};
  int64_t label_shape[1] = {BATCH};
  trainc_tensor target = {TRAINC_INT64, 1, label_shape, labels};
  float loss;
  trainc_status status = trainc_train_step(resumed, &wrong, 1, &target, &loss);
  printf("wrong-sized input: status %d, \"%s\"\n", (int)status, trainc_last_error());
  if (status != TRAINC_ERROR_INVALID_ARGUMENT)
    return 1;
  status = trainc_train_step(resumed, NULL, 1, &target, &loss);
  printf("null input: status %d, \"%s\"\n", (int)status, trainc_last_error());
  if (status != TRAINC_ERROR_INVALID_ARGUMENT)
    return 1;
  FILE *corrupt = fopen(argv[1], "r+b");
  fseek(corrupt, 100, SEEK_SET);
  fputc(0x5a, corrupt);
  fclose(corrupt);
  status = trainc_load_checkpoint(resumed, argv[1], NULL, 0, NULL);
  printf("corrupted checkpoint: status %d, \"%s\"\n", (int)status, trainc_last_error());
  if (status != TRAINC_ERROR_CORRUPT)
    return 1;
  status = trainc_save_checkpoint(resumed, "/nonexistent-dir/ckpt", NULL, 0);
  printf("unwritable checkpoint path: status %d, \"%s\"\n", (int)status,
         trainc_last_error());
  if (status != TRAINC_ERROR_IO)
    return 1;
  status = trainc_export_onnx(resumed, "/nonexistent-dir/model.onnx");
  printf("unwritable export path: status %d, \"%s\"\n", (int)status,
         trainc_last_error());
  if (status != TRAINC_ERROR_IO)
    return 1;
  trainc_session_close(straight);
  trainc_session_close(resumed);
  free(a);
  free(b);
  return 0;
}
