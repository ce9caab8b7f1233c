// glint: the command-line client of glintd. See client/cli.h.
#include <iostream>
#include <string>
#include <vector>

#include "client/cli.h"
#include "core/allocator_policy.h"

int main(int argc, char** argv) {
  // Replies of MBs (a segmentation map, `perf`'s many calls) otherwise land
  // in fresh mappings, a page fault per 4 KiB (core/allocator_policy.h).
  glint::ConfigureAllocatorForTensors();
  return glint::RunGlintCli(std::vector<std::string>(argv + 1, argv + argc),
                            std::cout, std::cerr);
}
