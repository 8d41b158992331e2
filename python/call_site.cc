#include "python/call_site.h"

#include <Python.h>
#include <frameobject.h>

#include <string>
#include <string_view>
#include <unordered_set>

namespace mutagrad::python {
namespace {

namespace py = pybind11;

// File names are few; interning them keeps MutationSite's `const char*` valid forever.
// Guarded by the GIL, which every caller holds.
const char* intern(const std::string& s) {
  static auto* names = new std::unordered_set<std::string>();
  return names->emplace(s).first->c_str();
}

// Note [The module path of a write]
// A write's place is the innermost frame outside the mutagrad package (the user's line, not
// nn/functional.py or nn/init.py; the innermost frame when every frame is inside). And while
// nn.Module.__call__ runs a forward, the thread's label holds the module's path and class
// ("features.2 (ReLU)"), and the write records as its file "module features.2 (ReLU), called
// from <file>", so a stale-tensor error says "... is relu_ at module features.2 (ReLU), called
// from model.py:31". The label is a Python str held by a thread_local (a strong reference; only
// set and read with the GIL held). Cost: two swaps per module call; a write walks the frames
// inside the package (none when called from user code).
thread_local PyObject* t_module_label = nullptr;
std::string* g_package_dir = new std::string();  // set once at import; read with the GIL

bool in_package(const char* file) {
  return !g_package_dir->empty() && file != nullptr &&
         std::string_view(file).substr(0, g_package_dir->size()) == *g_package_dir;
}

}  // namespace

CallSite python_call_site() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  if (frame == nullptr) return CallSite{"<python>", 0};
  Py_INCREF(frame);
  const char* file = nullptr;
  int line = 0;
  for (PyFrameObject* f = frame; f != nullptr;) {
    PyCodeObject* code = PyFrame_GetCode(f);  // new reference
    const char* name = PyUnicode_AsUTF8(code->co_filename);
    const bool inside = in_package(name);
    if (file == nullptr || !inside) {
      file = intern(name != nullptr ? name : "<python>");
      line = PyFrame_GetLineNumber(f);
    }
    Py_DECREF(code);
    PyFrameObject* back = inside ? PyFrame_GetBack(f) : nullptr;  // new reference or null
    Py_DECREF(f);
    f = back;
  }
  if (t_module_label == nullptr) return CallSite{file, line};
  const char* label = PyUnicode_AsUTF8(t_module_label);
  if (label == nullptr) {
    PyErr_Clear();
    return CallSite{file, line};
  }
  return CallSite{intern("module " + std::string(label) + ", called from " + file), line};
}

py::object swap_module_label(py::object label) {
  PyObject* previous = t_module_label;  // the reference moves to the returned object
  t_module_label = label.is_none() ? nullptr : label.release().ptr();
  return previous == nullptr ? py::none() : py::reinterpret_steal<py::object>(previous);
}

void set_package_dir(const std::string& path) { *g_package_dir = path; }

}  // namespace mutagrad::python
