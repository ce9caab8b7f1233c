// glint: the command-line client of glintd. See client/cli.h.
#include <iostream>
#include <string>
#include <vector>

#include "client/cli.h"

int main(int argc, char** argv) {
  return glint::RunGlintCli(std::vector<std::string>(argv + 1, argv + argc),
                            std::cout, std::cerr);
}
