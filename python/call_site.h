// The Python caller's file:line, for the MutationSite of an in-place op called from Python.
//
//   x.add_(y, python_call_site());   // a stale-tensor error later names the .py line
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "tensor/version_counter.h"

namespace mutagrad::python {

// The innermost Python frame outside the mutagrad package (the innermost frame when all are
// inside), file and line; inside an nn.Module call, the file names the module too (Note [The
// module path of a write], call_site.cc). Strings are interned: they live for the process.
// Falls back to "<python>":0 when no frame is executing. Needs the GIL.
CallSite python_call_site();

// Sets the calling thread's module label ("features.2 (ReLU)", or None outside any module
// call) and returns the previous one. Called by nn.Module.__call__ on entry and exit.
pybind11::object swap_module_label(pybind11::object label);
// The directory of the mutagrad package (ending in a separator), whose frames
// python_call_site skips; set once by mutagrad.nn.modules.module at import.
void set_package_dir(const std::string& path);

}  // namespace mutagrad::python
