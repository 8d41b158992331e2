// Devices from Python: the device= argument (a str such as "cuda:0", a mutagrad.device, a
// torch.device or any object with .type and .index, or an int CUDA index, as torch reads them),
// Tensor.to / .cuda() / .cpu() / .is_cuda, and mutagrad._C._cuda, the C++ side of the
// mutagrad.cuda package module (torch.cuda's names).
//
//   x = mutagrad.zeros(2, 3, device="cuda")      # to_device("cuda") -> kCUDA
//   y = x.to("cpu", mutagrad.float64, non_blocking=True)
#include <string>

#include "cuda/cuda.h"
#include "python/bindings.h"
#include "tensor/cpu/vec_kernels.h"

namespace mutagrad::python {
namespace {

std::string type_name(py::handle value) { return py::str(value.get_type().attr("__name__")); }

// The device an argument names, as to_device, without asking whether it is available.
std::optional<Device> parse_device_argument(py::handle value, const char* fn) {
  if (value.is_none()) return std::nullopt;
  PyObject* p = value.ptr();
  if (PyUnicode_Check(p)) return parse_device(value.cast<std::string>());
  if (PyLong_Check(p) && !PyBool_Check(p)) {  // torch reads an int as a CUDA index
    int overflow = 0;
    long long index = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow != 0 || index < 0) {
      throw ValueError(str(fn, "(): device index ", std::string(py::str(value)),
                           " is out of range; a CUDA device index is an int in [0, 127]"));
    }
    return parse_device(str("cuda:", index));
  }
  if (py::hasattr(value, "type") && py::hasattr(value, "index")) {
    // mutagrad.device, torch.device: .type is "cpu" or "cuda", .index an int or None.
    py::object type = value.attr("type"), index = value.attr("index");
    if (PyUnicode_Check(type.ptr()) && (index.is_none() || PyLong_Check(index.ptr()))) {
      std::string text = type.cast<std::string>();
      if (!index.is_none()) text += str(":", std::string(py::str(index)));
      return parse_device(text);
    }
  }
  throw py::type_error(str(fn,
                           "(): argument 'device' must be a device: a str such as 'cpu', 'cuda' "
                           "or 'cuda:0', a mutagrad.device (or torch.device), or an int CUDA "
                           "index; got ",
                           type_name(value)));
}

// A bool flag of to() (non_blocking, copy): a Python bool only, as torch.
bool flag_value(py::handle value, const char* name) {
  if (!PyBool_Check(value.ptr())) {
    throw py::type_error(str("to(): argument '", name, "' must be bool, not ", type_name(value)));
  }
  return value.ptr() == Py_True;
}

constexpr const char* kToForms =
    "the forms are to(dtype, non_blocking=False, copy=False), to(device=None, dtype=None, "
    "non_blocking=False, copy=False) and to(other, non_blocking=False, copy=False)";

// Tensor.to's three forms, as torch's:
//   to(dtype, non_blocking=False, copy=False)
//   to(device=None, dtype=None, non_blocking=False, copy=False)
//   to(other, non_blocking=False, copy=False)          (other's device and dtype)
// Returns self when nothing changes, unless copy=True.
Tensor tensor_to(const Tensor& self, const py::args& args, const py::kwargs& kwargs) {
  std::optional<Device> device;
  std::optional<ScalarType> dtype;
  bool device_form = true;
  size_t next = 0;  // the next positional argument
  if (args.size() > 0 && py::isinstance<Tensor>(args[0])) {
    const Tensor& other = args[0].cast<const Tensor&>();
    device = other.device();
    dtype = other.dtype();
    device_form = false;
    next = 1;
  } else if (args.size() > 0 && is_dtype(args[0])) {
    dtype = to_dtype(args[0]);
    device_form = false;
    next = 1;
  } else if (args.size() > 0) {
    device = to_device(args[0], "to");
    next = 1;
    if (args.size() > 1 && (is_dtype(args[1]) || args[1].is_none())) {
      dtype = to_dtype(args[1]);
      next = 2;
    }
  }
  // The flags, by position then by keyword.
  bool flags[2] = {false, false};
  const char* const kFlagNames[2] = {"non_blocking", "copy"};
  const size_t first_flag = next;
  if (args.size() > first_flag + 2) {
    throw py::type_error(str("to() takes at most ", first_flag + 2, " positional arguments here (",
                             args.size(), " given); ", kToForms));
  }
  for (; next < args.size(); ++next) {
    flags[next - first_flag] = flag_value(args[next], kFlagNames[next - first_flag]);
  }
  for (auto item : kwargs) {
    std::string key = py::str(item.first);
    py::handle value = item.second;
    int flag = key == "non_blocking" ? 0 : key == "copy" ? 1 : -1;
    if (flag >= 0) {
      if (first_flag + static_cast<size_t>(flag) < args.size()) {
        throw py::type_error(str("to() got multiple values for argument '", key, "'"));
      }
      flags[flag] = flag_value(value, kFlagNames[flag]);
    } else if (key == "dtype" && device_form) {
      if (first_flag >= 2) throw py::type_error("to() got multiple values for argument 'dtype'");
      dtype = to_dtype(value);
    } else if (key == "device" && device_form) {
      if (first_flag >= 1) throw py::type_error("to() got multiple values for argument 'device'");
      device = to_device(value, "to");
    } else {
      throw py::type_error(str("to() got an unexpected keyword argument '", key, "'; ", kToForms));
    }
  }
  Tensor out = self;
  if (device) {
    out = self.to(*device, dtype, /*non_blocking=*/flags[0]);
  } else if (dtype) {
    out = self.to(*dtype);
  }
  if (flags[1] && out.is_same(self)) out = self.clone();
  return out;
}

// The Python object `self` when the conversion returned its tensor unchanged (x.to("cpu") is x,
// as torch), else a new one.
py::object same_or_new(py::handle self, const Tensor& out) {
  if (out.is_same(self.cast<const Tensor&>())) return py::reinterpret_borrow<py::object>(self);
  return py::cast(out);
}

// Tensor.cuda(device=None): an int index, or a CUDA device as str / device object.
Device cuda_device(py::handle device) {
  std::optional<Device> d =
      device.is_none() ? to_device(py::str("cuda"), "cuda") : to_device(device, "cuda");
  if (!d->is_cuda()) {
    throw DeviceError(str("cuda(): expected a CUDA device, got '", *d,
                          "'; use .cpu() or .to(device) to copy a tensor elsewhere"));
  }
  return *d;
}

}  // namespace

std::optional<Device> to_device(py::handle value, const char* fn) {
  std::optional<Device> device = parse_device_argument(value, fn);
  // Without a CUDA device, say why (the build, or the CUDA error) before anything is created.
  if (device && device->is_cuda()) cuda::check_available();
  return device;
}

void bind_device(py::module_& m) {
  // mutagrad.device validates its string here: (type, index or None), as torch.device.
  m.def(
      "_parse_device",
      [](const std::string& text) {
        Device d = parse_device(text);
        std::string type = d.is_cuda() ? "cuda" : "cpu";
        bool has_index = text.find(':') != std::string::npos;
        py::object index =
            has_index ? py::object(py::int_(d.is_cuda() ? d.index() : 0)) : py::object(py::none());
        return py::make_tuple(type, index);
      },
      py::arg("text"));

  auto t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  t.def("to",
        [](py::object self, const py::args& args, const py::kwargs& kwargs) {
          return same_or_new(self, tensor_to(self.cast<const Tensor&>(), args, kwargs));
        })
      .def(
          "cuda",
          [](py::object self, py::handle device, bool non_blocking) {
            const Tensor& s = self.cast<const Tensor&>();
            return same_or_new(self, s.to(cuda_device(device), std::nullopt, non_blocking));
          },
          py::arg("device") = py::none(), py::arg("non_blocking") = false)
      .def("cpu",
           [](py::object self) { return same_or_new(self, self.cast<const Tensor&>().cpu()); })
      // Page-locked host memory (cuda/host_allocator.h): a CPU tensor that non_blocking
      // transfers copy from and into without waiting. Needs a CUDA device.
      .def("pin_memory",
           [](py::object self) {
             return same_or_new(self, cuda::pin_memory(self.cast<const Tensor&>()));
           })
      .def("is_pinned", [](const Tensor& s) { return cuda::is_pinned(s); })
      .def_property_readonly("is_cuda", [](const Tensor& s) { return s.device().is_cuda(); })
      // torch: -1 for a CPU tensor, the device index for a CUDA one.
      .def("get_device",
           [](const Tensor& s) { return s.device().is_cuda() ? int{s.device().index()} : -1; });

  // The CPU kernels' build (tensor/cpu/vec_kernels.h): mutagrad.backends.cpu.
  py::module_ cpu_mod =
      m.def_submodule("_cpu", "tensor/cpu/vec_kernels.h; use mutagrad.backends.cpu");
  cpu_mod.def("capability", [] { return cpu::cpu_capability_name(cpu::cpu_capability()); });
  cpu_mod.def("supported",
              [] { return cpu::cpu_capability_name(cpu::cpu_capability_supported()); });
  // A bad name, or a build this CPU cannot run, is a Python ValueError (an argument's value).
  cpu_mod.def(
      "set_capability",
      [](const std::string& name) {
        for (cpu::CpuCapability c : cpu::kCpuCapabilities) {
          if (name != cpu::cpu_capability_name(c)) continue;
          try {
            cpu::set_cpu_capability(c);
          } catch (const ValueError& e) {
            throw py::value_error(e.what());
          }
          return;
        }
        throw py::value_error(str("set_cpu_capability(\"", name,
                                  "\"): not a CPU capability; expected \"DEFAULT\" (\"baseline\"), "
                                  "\"AVX2\" (\"avx2\") or \"AVX512\" (\"avx512\")"));
      },
      py::arg("name"));

  py::module_ c = m.def_submodule("_cuda", "mutagrad::cuda (cuda/cuda.h); use mutagrad.cuda");
  c.def("is_available", &cuda::is_available);
  c.def("device_count", &cuda::device_count);
  c.def("current_device", &cuda::current_device);
  c.def("set_device", &cuda::set_device, py::arg("device"));
  c.def("unavailable_reason", &cuda::unavailable_reason);
  c.def("build_name", &cuda::build_name);
  c.def("check_available", &cuda::check_available);
  c.def(
      "device_name", [](int device) { return cuda::device_name(device); }, py::arg("device") = 0);
  c.def("synchronize", [] {
    cuda::check_available();
    cuda::synchronize();
  });
  c.def("memory_allocated", &cuda::memory_allocated);
  c.def("max_memory_allocated", &cuda::max_memory_allocated);
  c.def("memory_reserved", &cuda::memory_reserved);
  c.def("reset_peak_memory_stats", &cuda::reset_peak_memory_stats);
  c.def("empty_cache", &cuda::empty_cache);
  c.def(
      "manual_seed", [](py::handle seed) { cuda::manual_seed(seed_bits(seed, "manual_seed")); },
      py::arg("seed"));
  c.def("seed", [] { return cuda::default_generator().seed(); });
}

}  // namespace mutagrad::python
