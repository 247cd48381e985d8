/* The C API used wrongly: every call must answer with a status and a
 * message, never crash or report success.
 *
 * Usage: c_api_misuse misuse   (closed sessions, bad options)
 *        c_api_misuse oom      (a session whose memory cannot be allocated;
 *                               run under a small `ulimit -v`) */
#include "trainc/runtime.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(trainc_status got, trainc_status want, const char *what) {
  if (got != want) {
    fprintf(stderr, "%s: status %d, expected %d (%s)\n", what, (int)got,
            (int)want, trainc_last_error());
    ++failures;
  } else {
    printf("%s: %d (%s)\n", what, (int)got, trainc_last_error());
  }
}

static int misuse(void) {
  trainc_session *session = NULL;
  /* NULL options are the defaults. */
  expect(trainc_session_open(NULL, &session), TRAINC_OK, "open, NULL options");
  int64_t step = -1;
  expect(trainc_get_step(session, &step), TRAINC_OK, "step of an open session");
  trainc_session_close(session);
  /* Everything on the closed session is refused. */
  step = 12345;
  expect(trainc_get_step(session, &step), TRAINC_ERROR_INVALID_ARGUMENT,
         "step of a closed session");
  if (step != 12345) {
    fprintf(stderr, "a refused call wrote its output\n");
    ++failures;
  }
  size_t arena = 0;
  expect(trainc_get_memory(session, &arena, NULL),
         TRAINC_ERROR_INVALID_ARGUMENT, "memory of a closed session");
  float loss = 0;
  expect(trainc_train_step(session, NULL, 0, NULL, &loss),
         TRAINC_ERROR_INVALID_ARGUMENT, "step on a closed session");
  expect(trainc_set_learning_rate(session, 0.1), TRAINC_ERROR_INVALID_ARGUMENT,
         "learning rate of a closed session");
  expect(trainc_save_checkpoint(session, "never.ckpt", NULL, 0),
         TRAINC_ERROR_INVALID_ARGUMENT, "checkpoint of a closed session");
  if (trainc_num_parameters(session) != 0 ||
      trainc_parameter_name(session, 0) != NULL) {
    fprintf(stderr, "a closed session has parameters\n");
    ++failures;
  }
  /* Closing again, or closing NULL, does nothing. */
  trainc_session_close(session);
  trainc_session_close(NULL);
  /* Bad options. */
  trainc_session_options options = {-5, 0, NULL};
  session = NULL;
  expect(trainc_session_open(&options, &session), TRAINC_ERROR_INVALID_ARGUMENT,
         "num_threads = -5");
  if (session) {
    fprintf(stderr, "a refused open returned a session\n");
    ++failures;
  }
  expect(trainc_session_open(&options, NULL), TRAINC_ERROR_INVALID_ARGUMENT,
         "no place for the session");
  return failures;
}

static int oom(void) {
  trainc_session *session = NULL;
  expect(trainc_session_open(NULL, &session), TRAINC_ERROR_OUT_OF_MEMORY,
         "open without the memory for it");
  if (session || !strstr(trainc_last_error(), "out of memory")) {
    fprintf(stderr, "expected no session and an out-of-memory message\n");
    ++failures;
  }
  return failures;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "misuse"))
    return misuse() ? 1 : 0;
  if (argc == 2 && !strcmp(argv[1], "oom"))
    return oom() ? 1 : 0;
  fprintf(stderr, "usage: c_api_misuse misuse|oom\n");
  return 2;
}
