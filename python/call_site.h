// The Python caller's file:line, for the MutationSite of an in-place op called from Python.
//
//   x.add_(y, python_call_site());   // a stale-tensor error later names the .py line
#pragma once

#include "tensor/version_counter.h"

namespace mutagrad::python {

// The innermost Python frame's file and line (interned: the strings live for the process).
// Falls back to "<python>":0 when no frame is executing. Needs the GIL.
CallSite python_call_site();

}  // namespace mutagrad::python
