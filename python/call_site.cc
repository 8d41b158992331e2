#include "python/call_site.h"

#include <Python.h>
#include <frameobject.h>

#include <string>
#include <unordered_set>

namespace mutagrad::python {
namespace {

// File names are few; interning them keeps MutationSite's `const char*` valid forever.
// Guarded by the GIL, which every caller holds.
const char* intern(const char* s) {
  static auto* names = new std::unordered_set<std::string>();
  return names->emplace(s).first->c_str();
}

}  // namespace

CallSite python_call_site() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  if (frame == nullptr) return CallSite{"<python>", 0};
  PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  CallSite site{intern(file != nullptr ? file : "<python>"), PyFrame_GetLineNumber(frame)};
  Py_DECREF(code);
  return site;
}

}  // namespace mutagrad::python
