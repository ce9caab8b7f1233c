// FUZZ_CHECK(condition, message): the properties a fuzz target asserts
// beyond "no crash" (a round trip gives back what went in, a successful
// plan is valid...). A failure prints the message and aborts, which
// libFuzzer reports as a crash and saves the input.
#ifndef GLINT_FUZZ_FUZZ_CHECK_H_
#define GLINT_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition, message)                                     \
  do {                                                                     \
    if (!(condition)) {                                                    \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: %s\n", __FILE__, \
                   __LINE__, #condition, std::string(message).c_str());    \
      std::abort();                                                        \
    }                                                                      \
  } while (false)

#endif  // GLINT_FUZZ_FUZZ_CHECK_H_
