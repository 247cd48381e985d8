/* The low-precision weight copies a mixed-precision library keeps between
 * steps (--trainc-keep-weight-copies) follow every change of the
 * parameters made from outside a step:
 *   - a resumed session (checkpoint) trains bit-identically to one that
 *     never stopped, and the checkpoint holds no copies;
 *   - after trainc_set_parameter the next step reads copies of the new
 *     values: a session that sets them right after a step (its copies
 *     current until then) trains bit-identically to one that resumed that
 *     step's checkpoint and set the same values, and differently from a
 *     session that did not set them;
 *   - a copy cannot be set (it is derived from its parameter).
 * Built against the MLP compiled with --amp fp16 (copies on every CPU).
 *
 * Usage: weight_copies WORKDIR */
#include "trainc/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 8
#define PIXELS 784
#define PARAMETERS 6

static float images[BATCH * PIXELS];
static int64_t labels[BATCH];
static const int64_t shapes[PARAMETERS][2] = {{256, 784}, {256, 1},  {128, 256},
                                              {128, 1},   {10, 128}, {10, 1}};

static void check(trainc_status status, const char *what) {
  if (status != TRAINC_OK) {
    fprintf(stderr, "%s failed (%d): %s\n", what, (int)status,
            trainc_last_error());
    exit(1);
  }
}

static float train(trainc_session *session, int steps) {
  int64_t image_shape[4] = {BATCH, 1, 28, 28};
  int64_t label_shape[1] = {BATCH};
  trainc_tensor input = {TRAINC_FLOAT32, 4, image_shape, images};
  trainc_tensor target = {TRAINC_INT64, 1, label_shape, labels};
  float loss = 0;
  for (int i = 0; i < steps; ++i)
    check(trainc_train_step(session, &input, 1, &target, &loss), "train step");
  return loss;
}

static size_t count(int i) { return (size_t)(shapes[i][0] * shapes[i][1]); }

static trainc_tensor tensor(int i, int64_t *shape, float *data) {
  shape[0] = shapes[i][0];
  shape[1] = shapes[i][1];
  trainc_tensor t = {TRAINC_FLOAT32, shape[1] == 1 ? 1 : 2, shape, data};
  return t;
}

/* All parameters, concatenated (malloc'ed). */
static float *snapshot(trainc_session *session, size_t *total) {
  *total = 0;
  for (int i = 0; i < PARAMETERS; ++i)
    *total += count(i);
  float *all = malloc(*total * sizeof(float)), *at = all;
  for (int i = 0; i < PARAMETERS; ++i) {
    int64_t shape[2];
    trainc_tensor out = tensor(i, shape, at);
    check(
        trainc_get_parameter(session, trainc_parameter_name(session, i), &out),
        "get parameter");
    at += count(i);
  }
  return all;
}

/* Sets every parameter from `all` (as snapshot() lays them out). */
static void set_all(trainc_session *session, const float *all) {
  for (int i = 0; i < PARAMETERS; ++i) {
    int64_t shape[2];
    trainc_tensor value = tensor(i, shape, (float *)all);
    check(trainc_set_parameter(session, trainc_parameter_name(session, i),
                               &value),
          "set parameter");
    all += count(i);
  }
}

static int same(const float *a, const float *b, size_t n) {
  return memcmp(a, b, n * sizeof(float)) == 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
    return 2;
  }
  if (!strstr(trainc_manifest(), "\"refresh_weight_copies\"") ||
      !strstr(trainc_manifest(), "\"weight_copy\"")) {
    fprintf(stderr, "the library keeps no weight copies: nothing to test\n");
    return 1;
  }
  srand(11);
  for (int i = 0; i < BATCH * PIXELS; ++i)
    images[i] = (float)rand() / RAND_MAX;
  for (int i = 0; i < BATCH; ++i)
    labels[i] = rand() % 10;
  char initial[4096], middle[4096];
  snprintf(initial, sizeof initial, "%s/step1.ckpt", argv[1]);
  snprintf(middle, sizeof middle, "%s/middle.ckpt", argv[1]);
  trainc_session_options options = {1, 42, NULL};
  size_t n;

  /* Resumed from a checkpoint: the copies are made again from the
   * parameters it holds. */
  trainc_session *straight, *first, *resumed;
  check(trainc_session_open(&options, &straight), "open");
  if (trainc_num_parameters(straight) != PARAMETERS) {
    fprintf(stderr,
            "expected %d parameters (copies are not parameters), got %d\n",
            PARAMETERS, trainc_num_parameters(straight));
    return 1;
  }
  float loss_straight = train(straight, 6);
  check(trainc_session_open(&options, &first), "open");
  train(first, 3);
  check(trainc_save_checkpoint(first, middle, NULL, 0), "save");
  trainc_session_close(first);
  check(trainc_session_open(&options, &resumed), "open");
  train(resumed, 1); /* its copies now hold other values */
  check(trainc_load_checkpoint(resumed, middle, NULL, 0, NULL), "load");
  float loss_resumed = train(resumed, 3);
  float *a = snapshot(straight, &n), *b = snapshot(resumed, &n);
  if (!same(a, b, n) || loss_straight != loss_resumed) {
    fprintf(stderr, "the resumed run differs from the straight run\n");
    return 1;
  }
  printf("6 steps == 3 + checkpoint + resume + 3: bit-identical (loss %.6f)\n",
         loss_straight);

  /* Set right after a step (its copies are current), against a session
   * that resumed that step's checkpoint before setting the same values. */
  trainc_session *set_after_step, *set_after_load, *unset;
  check(trainc_session_open(&options, &set_after_step), "open");
  train(set_after_step, 1);
  check(trainc_save_checkpoint(set_after_step, initial, NULL, 0), "save");
  float *halved = snapshot(set_after_step, &n);
  for (size_t i = 0; i < n; ++i)
    halved[i] *= 0.5f;
  set_all(set_after_step, halved);
  float loss_step = train(set_after_step, 2);
  check(trainc_session_open(&options, &set_after_load), "open");
  check(trainc_load_checkpoint(set_after_load, initial, NULL, 0, NULL), "load");
  set_all(set_after_load, halved);
  float loss_load = train(set_after_load, 2);
  check(trainc_session_open(&options, &unset), "open");
  float loss_unset = train(unset, 3);
  float *c = snapshot(set_after_step, &n), *d = snapshot(set_after_load, &n),
        *e = snapshot(unset, &n);
  if (!same(c, d, n) || loss_step != loss_load) {
    fprintf(stderr,
            "set_parameter right after a step, then 2 steps, differs "
            "from the same after a checkpoint load (losses %.9g, "
            "%.9g): a stale weight copy\n",
            loss_step, loss_load);
    return 1;
  }
  if (same(c, e, n) || loss_step == loss_unset) {
    fprintf(stderr, "halving the weights changed nothing: the test cannot "
                    "tell a stale copy\n");
    return 1;
  }
  printf("set_parameter after a step, then 2 steps: bit-identical to a "
         "resumed session (loss %.6f; unset %.6f)\n",
         loss_step, loss_unset);

  /* A copy is the library's, not the caller's. */
  int64_t shape[2] = {256, 784};
  trainc_tensor value = {TRAINC_FLOAT32, 2, shape, halved};
  trainc_status status =
      trainc_set_parameter(set_after_step, "fc1.weight.f16", &value);
  printf("setting a weight copy: status %d, \"%s\"\n", (int)status,
         trainc_last_error());
  if (status != TRAINC_ERROR_INVALID_ARGUMENT ||
      !strstr(trainc_last_error(), "fc1.weight.f16"))
    return 1;

  trainc_session_close(straight);
  trainc_session_close(resumed);
  trainc_session_close(set_after_step);
  trainc_session_close(set_after_load);
  trainc_session_close(unset);
  free(a);
  free(b);
  free(c);
  free(d);
  free(e);
  free(halved);
  return 0;
}
