#include "version.h"

namespace mutagrad {

const char* version() { return MUTAGRAD_VERSION; }

}  // namespace mutagrad
