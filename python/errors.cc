// How errors reach Python. A mutagrad::Error becomes a RuntimeError (an IndexError stays an
// IndexError; an IndexOutOfRangeError is mutagrad.IndexOutOfRangeError, both) with the C++
// spellings in its message rewritten as Python ones (python_message); a Python int outside int64
// becomes mutagrad.IntOverflowError / IndexOverflowError; and pybind11's own argument errors become
// torch-like TypeErrors (install_argument_errors):
//
//   x.sum(foo=1)
//   TypeError: sum() received an invalid combination of arguments - got (foo=int), but
//   expected one of:
//    * (dim=None, keepdim: bool = False)
//         didn't match because of the unexpected keyword argument 'foo'
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/bindings.h"

namespace mutagrad::python {
namespace {

// ---- C++ spellings in messages --------------------------------------------------------------

struct Spelling {
  const char* cpp;
  const char* python;
};

// Every C++ spelling a mutagrad error message can hold, and how a Python caller writes it.
// Phrases come first (they hold identifiers rewritten below); an identifier is replaced where it
// stands as a whole word. messages_test.py checks that every k-constant in the message strings
// of tensor/, autograd/ and indexing/ is listed here.
constexpr Spelling kSpellings[] = {
    {"index() / set_item_ (x[{true}])", "x[...] and x[...] = v (x[True])"},
    {"x.index({...})", "x[...]"},
    {"x[{true}]", "x[True]"},
    {"pass kFloat32", "pass dtype=mutagrad.float32"},
    {"pass a Scalar or a 0-dim tensor", "pass a number or a 0-dim tensor"},
    {"cannot be converted to a Scalar", "cannot be converted to a Python number"},
    {"use Slice() to take a dim whole", "use : to take a dim whole"},
    {"from_blob()", "from_numpy()"},
    {"kFloat32", "mutagrad.float32"},
    {"kFloat", "mutagrad.float32"},
    {"kFloat64", "mutagrad.float64"},
    {"kDouble", "mutagrad.float64"},
    {"kInt32", "mutagrad.int32"},
    {"kInt", "mutagrad.int32"},
    {"kInt64", "mutagrad.int64"},
    {"kLong", "mutagrad.int64"},
    {"kBool", "mutagrad.bool"},
    {"kFloat16", "mutagrad.float16"},
    {"kHalf", "mutagrad.float16"},
    {"kBFloat16", "mutagrad.bfloat16"},
    {"kUInt8", "mutagrad.uint8"},
    {"kInt8", "mutagrad.int8"},
    {"kInt16", "mutagrad.int16"},
    {"kCPU", "'cpu'"},
    {"kCUDA", "'cuda'"},
};

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_identifier(const std::string& s) {
  for (char c : s) {
    if (!is_identifier_char(c)) return false;
  }
  return !s.empty();
}

// Replaces every `from` in text; a whole word only when `from` is an identifier.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  bool whole_word = is_identifier(from);
  size_t pos = 0;
  while ((pos = text.find(from, pos)) != std::string::npos) {
    size_t end = pos + from.size();
    bool word = !whole_word || ((pos == 0 || !is_identifier_char(text[pos - 1])) &&
                                (end == text.size() || !is_identifier_char(text[end])));
    if (!word) {
      pos = end;
      continue;
    }
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
  return text;
}

// ---- exception types ------------------------------------------------------------------------

PyObject* int_overflow_type = nullptr;        // mutagrad.IntOverflowError
PyObject* index_overflow_type = nullptr;      // mutagrad.IndexOverflowError
PyObject* index_out_of_range_type = nullptr;  // mutagrad.IndexOutOfRangeError

PyObject* new_exception_type(const char* name, const char* doc, py::tuple bases) {
  PyObject* type = PyErr_NewExceptionWithDoc(name, doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  return type;  // one reference, kept for the process
}

// ---- pybind11's argument errors -------------------------------------------------------------

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// One parameter of a pybind11 signature ("keepdim: bool = False").
struct Param {
  std::string name, type, default_value;
  bool has_default = false;
  bool keyword = true;     // may be passed by keyword
  bool positional = true;  // may be passed by position
  bool var_args = false, var_kwargs = false;
};

using Signature = std::vector<Param>;  // without self

// Splits "a: int, b: List[int] = [1, 2]" at the commas outside brackets and quotes.
std::vector<std::string> split_params(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  char quote = 0;
  std::string current;
  for (char c : s) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(trim(current));
      current.clear();
      continue;
    }
    current += c;
  }
  if (!trim(current).empty()) out.push_back(trim(current));
  return out;
}

// pybind11 names unnamed parameters arg0, arg1, ...: those can't be passed by keyword.
bool is_unnamed(const std::string& name) {
  if (name.size() < 4 || !starts_with(name, "arg")) return false;
  for (size_t i = 3; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  return true;
}

std::string clean_type(std::string type) { return replace_all(type, "mutagrad._C.", ""); }

Signature parse_signature(const std::string& params, bool has_self) {
  Signature sig;
  bool keyword_only = false;
  for (const std::string& text : split_params(params)) {
    if (text == "*") {
      keyword_only = true;
      continue;
    }
    if (text == "/") {
      for (Param& p : sig) p.keyword = false;
      continue;
    }
    Param p;
    std::string rest = text;
    if (starts_with(rest, "**")) {
      p.var_kwargs = true;
      rest = rest.substr(2);
    } else if (starts_with(rest, "*")) {
      p.var_args = keyword_only = true;
      rest = rest.substr(1);
    }
    size_t colon = rest.find(':'), equals = rest.find(" = ");
    p.name = trim(rest.substr(0, std::min(colon, equals)));
    if (colon != std::string::npos) {
      p.type = clean_type(trim(rest.substr(
          colon + 1, equals == std::string::npos ? std::string::npos : equals - colon - 1)));
    }
    if (equals != std::string::npos) {
      p.has_default = true;
      p.default_value = trim(rest.substr(equals + 3));
    }
    p.positional = !keyword_only || p.var_args;
    p.keyword = !is_unnamed(p.name) && !p.var_args && !p.var_kwargs;
    sig.push_back(p);
  }
  if (has_self && !sig.empty()) sig.erase(sig.begin());
  return sig;
}

// The signatures in a pybind11 docstring: "name(params) -> ret" lines, numbered ("1. name(...")
// when overloaded, after a "name(*args, **kwargs)" line that is not one of them.
std::vector<Signature> parse_signatures(const std::string& doc, const std::string& name,
                                        bool has_self) {
  std::vector<Signature> out;
  bool overloaded = doc.find("\nOverloaded function.\n") != std::string::npos;
  size_t start = 0;
  while (start < doc.size()) {
    size_t end = doc.find('\n', start);
    std::string line =
        doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? doc.size() : end + 1;
    size_t i = 0;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    if (i > 0 && line.compare(i, 2, ". ") == 0) {
      line = line.substr(i + 2);
    } else if (overloaded) {
      continue;  // the "name(*args, **kwargs)" line of an overloaded function
    }
    if (!starts_with(line, name + "(")) continue;
    size_t open = name.size(), close = line.rfind(") -> ");
    if (close == std::string::npos) close = line.rfind(')');
    if (close == std::string::npos || close < open) continue;
    out.push_back(parse_signature(line.substr(open + 1, close - open - 1), has_self));
  }
  return out;
}

std::string type_name(py::handle value) {
  std::string name = Py_TYPE(value.ptr())->tp_name;
  size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

bool has_number_slot(py::handle value, bool want_float) {
  PyNumberMethods* n = Py_TYPE(value.ptr())->tp_as_number;
  if (n == nullptr) return false;
  return want_float ? (n->nb_float != nullptr || n->nb_index != nullptr) : n->nb_bool != nullptr;
}

// Whether pybind11 converts value to a parameter of this (cleaned) type; true for types that
// take anything (object, handle) or that it doesn't know.
bool accepts(const std::string& type, py::handle value) {
  PyObject* v = value.ptr();
  if (starts_with(type, "Optional[") && type.back() == ']') {
    return value.is_none() || accepts(type.substr(9, type.size() - 10), value);
  }
  if (type == "int") return PyLong_Check(v) || (!PyFloat_Check(v) && PyIndex_Check(v));
  if (type == "float") return PyFloat_Check(v) || PyLong_Check(v) || has_number_slot(value, true);
  if (type == "bool") return value.is_none() || has_number_slot(value, false);
  if (type == "str") return PyUnicode_Check(v);
  if (type == "Tensor") return py::isinstance<Tensor>(value);
  if (type == "numpy.ndarray") return is_numpy_array(value);
  if (starts_with(type, "List[") || starts_with(type, "Sequence[")) {
    return PyList_Check(v) || PyTuple_Check(v);
  }
  return true;
}

// How a message shows a type: "" for the ones that take anything.
std::string shown_type(const std::string& type) {
  return type == "object" || type == "handle" ? "" : type;
}

std::string signature_text(const Signature& sig) {
  std::string out = "(";
  bool keyword_only = false;
  for (size_t i = 0; i < sig.size(); ++i) {
    const Param& p = sig[i];
    if (i > 0) out += ", ";
    if (!p.positional && !keyword_only) out += "*, ";
    keyword_only = keyword_only || !p.positional || p.var_args;
    if (p.var_args) out += "*";
    if (p.var_kwargs) out += "**";
    out += p.name;
    std::string type = shown_type(p.type);
    if (!type.empty() && !p.var_args && !p.var_kwargs) out += ": " + type;
    if (p.has_default) out += (type.empty() ? "=" : " = ") + p.default_value;
  }
  return out + ")";
}

using Kwargs = std::vector<std::pair<std::string, py::handle>>;

std::string got_text(const std::vector<py::handle>& args, const Kwargs& kwargs) {
  std::string out;
  for (py::handle a : args) out += (out.empty() ? "" : ", ") + type_name(a);
  for (const auto& [k, v] : kwargs) out += (out.empty() ? "" : ", ") + k + "=" + type_name(v);
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// Why the arguments don't match sig, completing "didn't match because ..."; "" if they do.
std::string mismatch(const Signature& sig, const std::vector<py::handle>& args,
                     const Kwargs& kwargs) {
  std::vector<const Param*> positional;
  bool var_args = false, var_kwargs = false;
  for (const Param& p : sig) {
    var_args = var_args || p.var_args;
    var_kwargs = var_kwargs || p.var_kwargs;
    if (p.positional && !p.var_args && !p.var_kwargs && !var_args) positional.push_back(&p);
  }
  std::vector<std::string> unexpected;
  for (const auto& kw : kwargs) {
    bool known = var_kwargs;
    for (const Param& p : sig) known = known || (p.keyword && p.name == kw.first);
    if (!known) unexpected.push_back(kw.first);
  }
  if (!unexpected.empty()) {
    return str("of the unexpected keyword argument", unexpected.size() > 1 ? "s " : " ",
               quoted_list(unexpected));
  }
  if (!var_args && args.size() > positional.size()) {
    return str("it takes at most ", positional.size(), " positional argument",
               positional.size() == 1 ? "" : "s", " (", args.size(), " given)");
  }
  std::vector<std::pair<const Param*, py::handle>> given;
  for (size_t i = 0; i < args.size() && i < positional.size(); ++i) {
    given.emplace_back(positional[i], args[i]);
  }
  for (const auto& [name, value] : kwargs) {
    for (const auto& g : given) {
      if (g.first->name == name) return str("of multiple values for argument '", name, "'");
    }
    for (const Param& p : sig) {
      if (p.keyword && p.name == name) given.emplace_back(&p, value);
    }
  }
  for (const Param& p : sig) {
    if (p.has_default || p.var_args || p.var_kwargs) continue;
    bool found = false;
    for (const auto& g : given) found = found || g.first == &p;
    if (!found) return str("the required argument '", p.name, "' is missing");
  }
  for (const auto& [p, value] : given) {
    if (accepts(p->type, value)) continue;
    std::string where = str("argument '", p->name, "'");
    for (size_t i = 0; i < positional.size() && i < args.size(); ++i) {
      if (positional[i] == p) where = str("argument '", p->name, "' (position ", i + 1, ")");
    }
    return str(where, " must be ", p->type, ", not ", type_name(value));
  }
  return "";
}

// A Python int outside int64 somewhere in value (nested lists and tuples too).
std::optional<py::handle> find_overflow(py::handle value, int depth) {
  if (is_int64_overflow(value)) return value;
  if (depth < 8 && (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr()))) {
    for (py::handle item : value) {
      if (auto found = find_overflow(item, depth + 1)) return found;
    }
  }
  return std::nullopt;
}

struct Overflow {
  std::string where;  // "argument 'dim0' (position 1)", "argument 'alpha'", "argument 2"
  py::handle value;
};

std::optional<Overflow> find_overflow_argument(const std::vector<Signature>& sigs,
                                               const std::vector<py::handle>& args,
                                               const Kwargs& kwargs) {
  for (size_t i = 0; i < args.size(); ++i) {
    auto found = find_overflow(args[i], 0);
    if (!found) continue;
    std::string name;
    if (!sigs.empty() && i < sigs[0].size() && sigs[0][i].positional && !sigs[0][i].var_args &&
        !is_unnamed(sigs[0][i].name)) {
      name = sigs[0][i].name;
    }
    return Overflow{name.empty() ? str("argument ", i + 1)
                                 : str("argument '", name, "' (position ", i + 1, ")"),
                    *found};
  }
  for (const auto& [name, value] : kwargs) {
    if (auto found = find_overflow(value, 0)) return Overflow{str("argument '", name, "'"), *found};
  }
  return std::nullopt;
}

// A wrapped function: pybind11's function, called as it is; only its errors are rewritten.
struct Wrapped {
  PyMethodDef def{};
  std::string name;         // as messages say it: "sum", "__add__", "requires_grad"
  std::string pybind_name;  // as pybind11's own messages say it ("" for a property setter)
  std::string doc;
  py::object function;
  bool has_self = false;  // args[0] is the object (methods and property setters)
  bool is_setter = false;
};

// The exception (type, message) to raise instead of the current one, if it is one to rewrite.
std::optional<std::pair<PyObject*, std::string>> replacement(const Wrapped& w, PyObject* type,
                                                             PyObject* value, PyObject* args,
                                                             PyObject* kwargs) {
  std::string message = py::str(value);
  bool incompatible = PyErr_GivenExceptionMatches(type, PyExc_TypeError) &&
                      starts_with(message, w.pybind_name + "(): incompatible function arguments");
  bool cast_failed =
      type == PyExc_RuntimeError && starts_with(message, "Unable to cast Python instance");
  bool overflow = PyErr_GivenExceptionMatches(type, int_overflow_type) &&
                  starts_with(message, kIntOverflowStart);
  if (!incompatible && !cast_failed && !overflow) return std::nullopt;

  std::vector<py::handle> positional;
  for (Py_ssize_t i = w.has_self ? 1 : 0; i < PyTuple_GET_SIZE(args); ++i) {
    positional.push_back(PyTuple_GET_ITEM(args, i));
  }
  Kwargs keywords;
  if (kwargs != nullptr) {
    for (auto item : py::reinterpret_borrow<py::dict>(kwargs)) {
      keywords.emplace_back(py::str(item.first), item.second);
    }
  }
  std::vector<Signature> sigs = parse_signatures(w.doc, w.pybind_name, w.has_self);
  std::optional<Overflow> big = find_overflow_argument(sigs, positional, keywords);
  if (overflow) {
    return std::pair{type, str(w.name, "(): ", big ? big->where + ": " : "", message)};
  }
  if (w.is_setter && positional.size() == 1 && sigs.size() == 1 && sigs[0].size() == 1) {
    return std::pair{PyExc_TypeError, str("attribute '", w.name, "' must be ", sigs[0][0].type,
                                          ", not ", type_name(positional[0]))};
  }
  std::vector<std::string> reasons;
  bool any_match = sigs.empty();
  for (const Signature& sig : sigs) {
    reasons.push_back(mismatch(sig, positional, keywords));
    any_match = any_match || reasons.back().empty();
  }
  if (big && any_match) {
    return std::pair{int_overflow_type,
                     str(w.name, "(): ", big->where, ": ", int_overflow_message(big->value))};
  }
  std::string out = str(w.name, "() received an invalid combination of arguments - got (",
                        got_text(positional, keywords), "), but expected one of:");
  for (size_t i = 0; i < sigs.size(); ++i) {
    out += str("\n * ", signature_text(sigs[i]));
    if (!reasons[i].empty()) out += str("\n      didn't match because ", reasons[i]);
  }
  return std::pair{PyExc_TypeError, out};
}

PyObject* call_wrapped(PyObject* capsule, PyObject* args, PyObject* kwargs) {
  auto* w = static_cast<Wrapped*>(PyCapsule_GetPointer(capsule, nullptr));
  PyObject* result = PyObject_Call(w->function.ptr(), args, kwargs);
  if (result != nullptr) return result;
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  std::optional<std::pair<PyObject*, std::string>> instead;
  try {
    instead = replacement(*w, type, value, args, kwargs);
  } catch (py::error_already_set&) {  // keep the original error
  } catch (const std::exception&) {
  }
  if (!instead) {
    PyErr_Restore(type, value, trace);
    return nullptr;
  }
  PyErr_SetString(instead->first, instead->second.c_str());  // before type may go
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  return nullptr;
}

bool is_pybind_function(py::handle h) {
  return h && PyCFunction_Check(h.ptr()) && PyCFunction_GET_SELF(h.ptr()) != nullptr &&
         PyCapsule_CheckExact(PyCFunction_GET_SELF(h.ptr())) &&
         PyCFunction_GET_FUNCTION(h.ptr()) !=
             reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&call_wrapped));
}

py::object wrap(py::handle function, const std::string& name, py::handle module, bool has_self,
                bool is_setter) {
  auto* w = new Wrapped;
  w->name = name;
  w->pybind_name = py::str(function.attr("__name__"));
  py::object doc = function.attr("__doc__");
  w->doc = doc.is_none() ? "" : std::string(py::str(doc));
  w->function = py::reinterpret_borrow<py::object>(function);
  w->has_self = has_self;
  w->is_setter = is_setter;
  w->def.ml_name = w->name.c_str();
  w->def.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&call_wrapped));
  w->def.ml_flags = METH_VARARGS | METH_KEYWORDS;
  w->def.ml_doc = w->doc.empty() ? nullptr : w->doc.c_str();
  // The capsule owns w; the function object owns the capsule (its __self__).
  py::capsule owner(w, [](void* p) { delete static_cast<Wrapped*>(p); });
  PyObject* f = PyCFunction_NewEx(&w->def, owner.ptr(), module.ptr());
  if (f == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(f);
}

void wrap_class(py::handle cls, py::handle module) {
  py::list items(cls.attr("__dict__").attr("items")());  // a copy: setattr changes the dict
  for (py::handle item : items) {
    std::string name = py::str(item[py::int_(0)]);
    py::object member = item[py::int_(1)];
    if (PyInstanceMethod_Check(member.ptr())) {
      py::handle function = PyInstanceMethod_GET_FUNCTION(member.ptr());
      if (!is_pybind_function(function)) continue;
      py::object method = py::reinterpret_steal<py::object>(
          PyInstanceMethod_New(wrap(function, name, module, true, false).ptr()));
      if (!method) throw py::error_already_set();
      py::setattr(cls, name.c_str(), method);
    } else if (Py_TYPE(member.ptr()) == &PyProperty_Type &&
               is_pybind_function(member.attr("fset"))) {
      py::object fset = wrap(member.attr("fset"), name, module, true, true);
      py::object property =
          py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyProperty_Type));
      py::setattr(cls, name.c_str(),
                  property(member.attr("fget"), fset, member.attr("fdel"), member.attr("__doc__")));
    }
  }
}

}  // namespace

std::string python_message(const std::string& cpp_message) {
  std::string out = cpp_message;
  for (const Spelling& s : kSpellings) out = replace_all(out, s.cpp, s.python);
  return out;
}

void bind_errors(py::module_& m) {
  // IndexOutOfRangeError is both an IndexError and a RuntimeError: torch raises IndexError for
  // an out-of-range index of x[idx], index_put_, take, put_, index_select, index_add_, ... and
  // RuntimeError for gather and the scatters, and code catches either (docs/python.md).
  // Any other IndexError stays IndexError; every other mutagrad::Error (ValueError included: torch
  // raises RuntimeError for nearly all of those conditions, e.g. zeros(-1), permute(0, 0),
  // an in-place write to overlapping memory) is a RuntimeError, its message with Python
  // spellings. The few places where torch raises TypeError or ValueError (item() of many
  // elements, a slice step <= 0, ragged nested lists, unsupported index or value types) raise
  // those Python types directly from the bindings.
  // torch 1.13 raises RuntimeError ("Overflow when unpacking long") for such an int, 2.x
  // ValueError ("... long long"): ours is both (docs/torch-versions.md).
  int_overflow_type = new_exception_type(
      "mutagrad.IntOverflowError",
      "A Python int that does not fit in int64. An OverflowError, and a RuntimeError and a "
      "ValueError as torch 1.13 and 2.x raise for it.",
      py::make_tuple(py::handle(PyExc_OverflowError), py::handle(PyExc_RuntimeError),
                     py::handle(PyExc_ValueError)));
  index_out_of_range_type = new_exception_type(
      "mutagrad.IndexOutOfRangeError",
      "An index value outside the range its op accepts (x[idx], index_put_, gather, scatter_, "
      "take, put_, index_select, index_add_, ...). An IndexError and a RuntimeError: torch "
      "raises one or the other depending on the op.",
      py::make_tuple(py::handle(PyExc_IndexError), py::handle(PyExc_RuntimeError)));
  index_overflow_type = new_exception_type(
      "mutagrad.IndexOverflowError",
      "An integer index that does not fit in int64: an IndexOutOfRangeError and an "
      "IntOverflowError.",
      py::make_tuple(py::handle(index_out_of_range_type), py::handle(int_overflow_type)));
  m.attr("IntOverflowError") = py::handle(int_overflow_type);
  m.attr("IndexOverflowError") = py::handle(index_overflow_type);
  m.attr("IndexOutOfRangeError") = py::handle(index_out_of_range_type);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const IndexOverflow& e) {
      PyErr_SetString(index_overflow_type, e.what());
    } catch (const IntOverflow& e) {
      PyErr_SetString(int_overflow_type, e.what());
    } catch (const IndexOutOfRangeError& e) {
      PyErr_SetString(index_out_of_range_type, python_message(e.what()).c_str());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, python_message(e.what()).c_str());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, python_message(e.what()).c_str());
    }
  });
  // For messages_test.py: the translation and its table.
  m.def("_python_message", &python_message, py::arg("message"));
  py::list spellings;
  for (const Spelling& s : kSpellings) spellings.append(py::make_tuple(s.cpp, s.python));
  m.attr("_cpp_spellings") = spellings;
}

void install_argument_errors(py::module_& m) {
  py::object module_name = m.attr("__name__");
  py::list items(m.attr("__dict__").attr("items")());
  for (py::handle item : items) {
    std::string name = py::str(item[py::int_(0)]);
    py::object member = item[py::int_(1)];
    if (is_pybind_function(member)) {
      m.attr(name.c_str()) = wrap(member, name, module_name, false, false);
    } else if (PyType_Check(member.ptr()) &&
               py::str(member.attr("__module__")).equal(module_name)) {
      wrap_class(member, module_name);
    }
  }
}

}  // namespace mutagrad::python
