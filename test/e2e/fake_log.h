/* The log of the fake CUDA libraries (fake_libcuda.c, fake_libcublas.c,
 * fake_libcudnn.c): one line per call, appended to $FAKE_CUDA_LOG and
 * prefixed with the library's name ("" for the driver); nothing when the
 * variable is unset. */
#ifndef TRAINC_TEST_E2E_FAKE_LOG_H
#define TRAINC_TEST_E2E_FAKE_LOG_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((format(printf, 2, 3))) static void
fake_log(const char *prefix, const char *format, ...) {
  const char *path = getenv("FAKE_CUDA_LOG");
  FILE *log = path ? fopen(path, "a") : NULL;
  if (!log)
    return;
  va_list args;
  va_start(args, format);
  fputs(prefix, log);
  vfprintf(log, format, args);
  va_end(args);
  fputc('\n', log);
  fclose(log);
}

#endif
