// mutagrad's version, as written in version.bzl (the wheel, mutagrad.pc and the CMake package
// carry the same string).
//
//   #include "mutagrad.h"
//   std::cout << mutagrad::version() << "\n";   // "0.1.0"
#pragma once

namespace mutagrad {

// "MAJOR.MINOR.PATCH" of the library this program is linked with.
const char* version();

}  // namespace mutagrad
