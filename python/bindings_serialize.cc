// Checkpoints (docs/checkpoints.md): _C._save_bytes / _C._load_bytes for mutagrad.save/load,
// and _C._safetensors_* for mutagrad.safetensors. Python objects convert to serialize::Value:
// None, bool, int, float, str, Tensor, list, tuple, dict and OrderedDict (with its
// attributes, a state_dict's _metadata).
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "serialize/checkpoint.h"
#include "serialize/errors.h"
#include "serialize/pickle.h"
#include "serialize/safetensors.h"

namespace mutagrad::python {
namespace {

using serialize::Value;

Value to_value(py::handle o, int depth) {
  if (depth > serialize::kMaxDepth) {
    throw ValueError(str("save: the object nests deeper than ", serialize::kMaxDepth,
                         " levels (or contains itself)"));
  }
  if (o.is_none()) return Value();
  if (py::isinstance<py::bool_>(o)) return Value(o.cast<bool>());
  if (py::isinstance<py::int_>(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o.ptr(), &overflow);
    if (overflow != 0) throw ValueError("save: an int outside int64's range");
    return Value(static_cast<int64_t>(v));
  }
  if (py::isinstance<py::float_>(o)) return Value(o.cast<double>());
  if (py::isinstance<py::str>(o)) return Value(o.cast<std::string>());
  if (py::isinstance(o, py::type::of<Tensor>())) return Value(o.cast<Tensor>());
  if (py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o)) {
    std::vector<Value> items;
    for (py::handle e : o) items.push_back(to_value(e, depth + 1));
    return py::isinstance<py::list>(o) ? Value::list(std::move(items))
                                       : Value::tuple(std::move(items));
  }
  if (py::isinstance<py::dict>(o)) {
    std::vector<std::pair<Value, Value>> entries;
    for (auto kv : py::reinterpret_borrow<py::dict>(o)) {
      entries.emplace_back(to_value(kv.first, depth + 1), to_value(kv.second, depth + 1));
    }
    py::object ordered_dict = py::module_::import("collections").attr("OrderedDict");
    bool ordered = py::isinstance(o, ordered_dict);
    Value v = Value::dict(std::move(entries), ordered);
    if (ordered && py::hasattr(o, "__dict__")) {
      py::dict attrs = o.attr("__dict__");
      if (py::len(attrs) > 0) v.set_attributes(std::make_shared<Value>(to_value(attrs, depth + 1)));
    }
    return v;
  }
  throw py::type_error(str("save: cannot save an object of type ",
                           py::str(py::type::of(o).attr("__name__")).cast<std::string>(),
                           "; checkpoints hold tensors, numbers, strings, None, and lists, "
                           "tuples and dicts of them"));
}

py::object from_value(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None:
      return py::none();
    case Value::Kind::Bool:
      return py::bool_(v.to_bool());
    case Value::Kind::Int:
      return py::int_(v.to_int());
    case Value::Kind::Double:
      return py::float_(v.to_double());
    case Value::Kind::String:
      return py::str(v.to_string());
    case Value::Kind::Tensor:
      return py::cast(v.to_tensor());
    case Value::Kind::List: {
      py::list l;
      for (const Value& e : v.items()) l.append(from_value(e));
      return std::move(l);
    }
    case Value::Kind::Tuple: {
      py::tuple t(v.items().size());
      for (size_t k = 0; k < v.items().size(); ++k) t[k] = from_value(v.items()[k]);
      return std::move(t);
    }
    case Value::Kind::Dict: {
      py::object d = v.ordered() ? py::module_::import("collections").attr("OrderedDict")()
                                 : py::object(py::dict());
      for (const auto& [k, e] : v.entries()) d[from_value(k)] = from_value(e);
      if (v.attributes() && v.attributes()->kind() == Value::Kind::Dict) {
        for (const auto& [k, e] : v.attributes()->entries()) {
          if (k.kind() == Value::Kind::String) py::setattr(d, k.to_string().c_str(), from_value(e));
        }
      }
      return d;
    }
  }
  throw InternalError("load: an unknown value kind");
}

// torch.load's map_location (Note [map_location] in serialize/checkpoint.h): None, a device or
// device string, a dict of location strings, or a callable(storage, location) that receives a
// mutagrad.serialization.UntypedStorage on the CPU and returns one (moved or not) or None.
MapLocation map_location_arg(py::handle value) {
  if (value.is_none()) return {};
  if (py::isinstance<py::dict>(value)) {
    std::map<std::string, std::string> remap;
    for (auto kv : py::reinterpret_borrow<py::dict>(value)) {
      if (!py::isinstance<py::str>(kv.first)) {
        throw py::type_error(
            "load: map_location's keys are saved locations, as strings ('cpu', "
            "'cuda:0')");
      }
      remap[kv.first.cast<std::string>()] = py::str(kv.second).cast<std::string>();
    }
    return remap;
  }
  py::object device_type = py::module_::import("mutagrad").attr("device");
  if (py::isinstance<py::str>(value) || py::isinstance(value, device_type)) {
    return to_device(value, "load");
  }
  if (!PyCallable_Check(value.ptr())) {
    throw py::type_error(
        str("load: map_location must be None, a device, a device string, a dict "
            "or a callable(storage, location); got ",
            py::str(py::type::of(value).attr("__name__")).cast<std::string>()));
  }
  py::object fn = py::reinterpret_borrow<py::object>(value);
  return MapLocation::Fn([fn](const Storage& cpu,
                              const std::string& location) -> std::optional<Storage> {
    py::module_ ser = py::module_::import("mutagrad.serialization");
    py::object storage_type = ser.attr("UntypedStorage");
    auto n = static_cast<int64_t>(cpu.nbytes());
    Tensor bytes(
        make_pooled<TensorImpl>(cpu, DimVector{n}, DimVector{1}, 0, kUInt8, VersionCounter()));
    py::object result = fn(storage_type(py::cast(bytes)), py::str(location));
    if (result.is_none()) return std::nullopt;
    if (!py::isinstance(result, storage_type)) {
      throw py::type_error(str("load: map_location returned a ",
                               py::str(py::type::of(result).attr("__name__")).cast<std::string>(),
                               "; return the storage it was given (moved with .cuda() or "
                               ".cpu()) or None"));
    }
    return result.attr("_data").cast<Tensor>().unsafe_impl()->storage();
  });
}

safetensors::TensorMap tensor_map(const py::dict& tensors) {
  safetensors::TensorMap out;
  for (auto kv : tensors) {
    if (!py::isinstance<py::str>(kv.first) || !py::isinstance(kv.second, py::type::of<Tensor>())) {
      throw py::type_error("safetensors: expected a dict of str to Tensor");
    }
    out[kv.first.cast<std::string>()] = kv.second.cast<Tensor>();
  }
  return out;
}

py::dict tensor_dict(const safetensors::TensorMap& tensors) {
  py::dict d;
  for (const auto& [k, t] : tensors) d[py::str(k)] = py::cast(t);
  return d;
}

// Note [Checkpoint errors in Python] (mutagrad/serialization.py): each serialize/errors.h
// type becomes the Python class of its name, most derived first.
[[noreturn]] void raise_checkpoint_error(const char* name, const std::exception& e) {
  py::object type = py::module_::import("mutagrad.serialization").attr(name);
  PyErr_SetString(type.ptr(), python_message(e.what()).c_str());
  throw py::error_already_set();
}

template <typename F>
auto checkpoint_call(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const serialize::UnpicklingError& e) {
    raise_checkpoint_error("UnpicklingError", e);
  } catch (const serialize::UnknownDTypeError& e) {
    raise_checkpoint_error("UnknownDTypeError", e);
  } catch (const serialize::SizeMismatchError& e) {
    raise_checkpoint_error("SizeMismatchError", e);
  } catch (const serialize::OffsetError& e) {
    raise_checkpoint_error("OffsetError", e);
  } catch (const serialize::FormatError& e) {
    raise_checkpoint_error("FormatError", e);
  } catch (const serialize::SerializationError& e) {
    raise_checkpoint_error("SerializationError", e);
  }
}

}  // namespace

void bind_serialize(py::module_& m) {
  m.def("_save_bytes", [](py::handle obj, const std::string& name) {
    Value v = to_value(obj, 0);
    std::string bytes = checkpoint_call([&] {
      py::gil_scoped_release release;
      return save_to_bytes(v, name);
    });
    return py::bytes(bytes);
  });
  m.def("_save_file", [](py::handle obj, const std::string& path) {
    Value v = to_value(obj, 0);
    checkpoint_call([&] {
      py::gil_scoped_release release;
      save(v, path);
    });
  });
  // Loading holds the GIL: a callable map_location runs during it.
  m.def("_load_bytes", [](const py::bytes& bytes, py::handle map_location) {
    MapLocation where = map_location_arg(map_location);
    return from_value(checkpoint_call([&] { return load_from_bytes(std::string(bytes), where); }));
  });
  m.def("_load_file", [](const std::string& path, py::handle map_location) {
    MapLocation where = map_location_arg(map_location);
    return from_value(checkpoint_call([&] { return load(path, where); }));
  });
  m.def("_safetensors_save",
        [](const py::dict& tensors, const std::map<std::string, std::string>& metadata) {
          safetensors::TensorMap map = tensor_map(tensors);
          return py::bytes(checkpoint_call([&] { return safetensors::save(map, metadata); }));
        });
  m.def("_safetensors_save_file", [](const py::dict& tensors, const std::string& path,
                                     const std::map<std::string, std::string>& metadata) {
    safetensors::TensorMap map = tensor_map(tensors);
    checkpoint_call([&] {
      py::gil_scoped_release release;
      safetensors::save_file(map, path, metadata);
    });
  });
  m.def("_safetensors_load", [](const py::bytes& bytes, py::handle device) {
    Device d = to_device(device, "load").value_or(kCPU);
    return tensor_dict(checkpoint_call([&] { return safetensors::load(std::string(bytes), d); }));
  });
  m.def("_safetensors_load_file", [](const std::string& path, py::handle device) {
    Device d = to_device(device, "load_file").value_or(kCPU);
    return tensor_dict(checkpoint_call([&] {
      py::gil_scoped_release release;
      return safetensors::load_file(path, d);
    }));
  });
  py::class_<safetensors::SafeOpen>(m, "_SafeOpen")
      .def(py::init([](const std::string& path, py::handle device) {
        Device d = to_device(device, "safe_open").value_or(kCPU);
        return checkpoint_call([&] { return new safetensors::SafeOpen(path, d); });
      }))
      .def("keys", &safetensors::SafeOpen::keys)
      .def("get_tensor",
           [](const safetensors::SafeOpen& f, const std::string& name) {
             return checkpoint_call([&] { return f.get_tensor(name); });
           })
      .def("metadata", [](const safetensors::SafeOpen& f) -> py::object {
        if (f.metadata().empty()) return py::none();
        return py::cast(f.metadata());
      });
}

}  // namespace mutagrad::python
