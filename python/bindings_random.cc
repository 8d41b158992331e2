// Random numbers in mutagrad._C, with torch's names and keywords: Generator, the default
// generators and manual_seed, the random factories (rand, randn, randint, randperm, normal,
// bernoulli, multinomial, *_like) and the in-place fills (uniform_, normal_, exponential_,
// bernoulli_, random_), each taking generator=. The numbers are mutagrad's (Philox, the same on
// every device: Note [Counter-based generators] in tensor/generator.h), not torch's.
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/call_site.h"

namespace mutagrad::python {
namespace {

using Self = py::object;  // in-place methods return the same Python object, as torch

std::string type_name(py::handle v) { return py::str(v.get_type().attr("__name__")); }

// generator=: None (the device's default generator) or a mutagrad.Generator.
std::optional<Generator> generator_arg(py::handle g, const char* fn) {
  if (g.is_none()) return std::nullopt;
  if (py::isinstance<Generator>(g)) return g.cast<Generator>();
  throw py::type_error(
      str(fn, "(): argument 'generator' must be mutagrad.Generator, not ", type_name(g)));
}

// A float argument: a Python number or a one-element tensor (torch's parser takes both).
double float_arg(py::handle v, const char* fn, const char* name) {
  if (py::isinstance<Tensor>(v)) return v.cast<Tensor>().item().to<double>();
  if (!is_python_number(v) && !is_numpy_scalar(v)) {
    throw py::type_error(str(fn, "(): argument '", name, "' must be float, not ", type_name(v)));
  }
  return to_scalar(v).to<double>();
}

// An int argument: a Python int (not a float), within int64.
int64_t int_arg(py::handle v, const char* fn, const char* name) {
  if (!PyLong_Check(v.ptr()) && !(PyIndex_Check(v.ptr()) && !PyFloat_Check(v.ptr()))) {
    throw py::type_error(str(fn, "(): argument '", name, "' must be int, not ", type_name(v)));
  }
  if (is_int64_overflow(v)) throw IntOverflow(int_overflow_message(v));
  return py::int_(py::reinterpret_borrow<py::object>(v)).cast<int64_t>();
}

Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

TensorOptions options_of(py::handle dtype, py::handle device, ScalarType fallback, const char* fn) {
  return TensorOptions(to_dtype(dtype).value_or(fallback))
      .device(to_device(device, fn).value_or(kCPU));
}

// TensorOptions of a *_like factory: other's dtype and device unless given.
TensorOptions like_options(const Tensor& other, py::handle dtype, py::handle device,
                           const char* fn) {
  return TensorOptions(to_dtype(dtype).value_or(other.dtype()))
      .device(to_device(device, fn).value_or(other.device()));
}

Generator generator_for(py::handle generator, Device device, const char* fn) {
  return generator_arg(generator, fn).value_or(default_generator(device));
}

// Raises torch's UserWarning for random_ on a floating dtype past its exact integers.
void warn_precision(const Tensor& self, int64_t from, std::optional<int64_t> to) {
  const std::string message = native::random_precision_warning(self.dtype(), from, to);
  if (!message.empty() && PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) {
    throw py::error_already_set();
  }
}

// random_(), random_(to), random_(from, to) (to may be None; from= and to= as keywords too),
// generator=, as torch's three signatures.
void random_method(Tensor& self, const py::args& args, const py::kwargs& kwargs) {
  const char* fn = "random_";
  const char* forms = "; the forms are random_(), random_(to) and random_(from, to)";
  py::object kw_from, kw_to, generator = py::none();
  for (auto item : kwargs) {
    const std::string key = py::str(item.first);
    py::object value = py::reinterpret_borrow<py::object>(item.second);
    if (key == "generator") {
      generator = value;
    } else if (key == "from") {
      kw_from = value;
    } else if (key == "to") {
      kw_to = value;
    } else {
      throw py::type_error(str(fn, "() got an unexpected keyword argument '", key, "'", forms));
    }
  }
  py::object from, to;
  if (args.size() == 2 && !kw_from && !kw_to) {
    from = args[0];
    to = args[1];
  } else if (args.size() == 1 && !kw_from) {
    (kw_to ? from : to) = args[0];  // random_(from, to=...) or random_(to)
    if (kw_to) to = kw_to;
  } else if (args.empty()) {
    from = kw_from;
    to = kw_to;
  } else {
    throw py::type_error(str(fn, "() received an invalid combination of ", args.size(),
                             " positional arguments and keywords", forms));
  }
  const std::optional<Generator> gen = generator_arg(generator, fn);
  const CallSite site = python_call_site();
  if (!from && !to) {
    warn_precision(self, 0, std::nullopt);
    self.random_(gen, site);
  } else if (!from) {
    const int64_t t = int_arg(to, fn, "to");
    warn_precision(self, 0, t);
    self.random_(t, gen, site);
  } else {
    if (!to) throw py::type_error(str(fn, "() missing required argument 'to'", forms));
    const int64_t f = int_arg(from, fn, "from");
    const std::optional<int64_t> t =
        to.is_none() ? std::nullopt : std::optional<int64_t>(int_arg(to, fn, "to"));
    warn_precision(self, f, t);
    self.random_(f, t, gen, site);
  }
}

// randint's (high, size) and (low, high, size), positional or by keyword.
struct RandintArgs {
  int64_t low = 0;
  int64_t high = 0;
  py::object size;
};

RandintArgs randint_args(const py::args& args, py::handle low, py::handle high, py::handle size,
                         const char* fn, bool sized) {
  std::vector<py::object> pos;
  for (py::handle a : args) pos.push_back(py::reinterpret_borrow<py::object>(a));
  py::object l = py::reinterpret_borrow<py::object>(low);
  py::object h = py::reinterpret_borrow<py::object>(high);
  py::object s = py::reinterpret_borrow<py::object>(size);
  if (sized && s.is_none() && !pos.empty()) {
    s = pos.back();
    pos.pop_back();
  }
  if (pos.size() == 2) {
    if (!l.is_none() || !h.is_none()) throw py::type_error(str(fn, "(): low/high given twice"));
    l = pos[0];
    h = pos[1];
  } else if (pos.size() == 1) {
    if (!h.is_none()) {
      if (!l.is_none()) throw py::type_error(str(fn, "(): low given twice"));
      l = pos[0];
    } else {
      h = pos[0];
    }
  } else if (!pos.empty()) {
    throw py::type_error(
        str(fn, "(): expected ",
            sized ? "(high, size) or (low, high, size)" : "(input, high) or (input, low, high)",
            ", got ", args.size(), " positional arguments"));
  }
  if (h.is_none() || (sized && s.is_none())) {
    throw py::type_error(
        str(fn, "(): missing required argument '", h.is_none() ? "high" : "size", "'; call ", fn,
            sized ? "(high, size) or (low, high, size)" : "(input, high) or (input, low, high)"));
  }
  RandintArgs out;
  out.low = l.is_none() ? 0 : int_arg(l, fn, "low");
  out.high = int_arg(h, fn, "high");
  out.size = s;
  return out;
}

void bind_generator(py::module_& m) {
  py::class_<Generator> g(m, "Generator",
                          "A seeded random number generator of one device, as torch.Generator: "
                          "Philox, the same numbers on every device for the same seed.");
  g.def(py::init([](py::handle device) {
          return Generator(Generator::kTorchDefaultSeed,
                           to_device(device, "Generator").value_or(kCPU));
        }),
        py::arg("device") = "cpu");
  g.def_property_readonly("device", [](const Generator& self) {
    return package_attr("_types", "device")(str(self.device()));
  });
  g.def(
      "manual_seed",
      [](Self self, py::handle seed) {
        // As torch's Generator.manual_seed: an int only (not a bool, float or str).
        if (!PyLong_Check(seed.ptr()) || PyBool_Check(seed.ptr())) {
          throw ValueError(
              str("manual_seed expected a long, but got ", type_name(seed), "; pass an int"));
        }
        self.cast<Generator&>().manual_seed(seed_bits(seed, "manual_seed"));
        return self;
      },
      py::arg("seed"));
  g.def("initial_seed", &Generator::seed);
  g.def("seed", &Generator::seed_nondeterministic);
  g.def("get_state", &Generator::get_state);
  g.def(
      "set_state",
      [](Self self, py::handle state) {
        if (!py::isinstance<Tensor>(state)) {
          throw py::type_error(
              str("expected a mutagrad.ByteTensor (a uint8 tensor), but got ", type_name(state)));
        }
        const Tensor t = state.cast<Tensor>();
        if (t.dtype() != kByte) {
          throw py::type_error(str("RNG state must be a mutagrad.ByteTensor (a uint8 tensor), got ",
                                   dtype_name(t.dtype())));
        }
        self.cast<Generator&>().set_state(t);
        return self;
      },
      py::arg("new_state"));
  // The process's generators (handles sharing the C++ defaults' state).
  m.attr("default_generator") = py::cast(default_generator(kCPU));
  m.attr("_cuda_default_generator") = py::cast(default_generator(kCUDA));
  m.def(
      "manual_seed",
      [m](py::handle seed) {
        // As torch: seeds the CPU generator and every CUDA device's; returns the CPU's.
        const uint64_t bits = seed_bits(seed, "manual_seed");
        default_generator(kCPU).manual_seed(bits);
        default_generator(kCUDA).manual_seed(bits);
        return m.attr("default_generator");
      },
      py::arg("seed"));
}

void bind_factories(py::module_& m) {
  for (const char* name : {"rand", "randn"}) {
    const bool normal = std::string(name) == "randn";
    m.def(
        name,
        [name, normal](py::args sizes, py::handle generator, py::handle dtype, py::handle device,
                       bool requires_grad) {
          const TensorOptions o = options_of(dtype, device, default_dtype(), name);
          Generator gen = generator_for(generator, o.device(), name);
          const DimVector s = sizes_from_args(sizes, name);
          return finish(normal ? randn(s, gen, o) : rand(s, gen, o), requires_grad);
        },
        py::kw_only(), py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::arg("requires_grad") = false);
    const char* like_name = normal ? "randn_like" : "rand_like";
    m.def(
        like_name,
        [like_name, normal](const Tensor& other, py::handle generator, py::handle dtype,
                            py::handle device, bool requires_grad) {
          const TensorOptions o = like_options(other, dtype, device, like_name);
          Generator gen = generator_for(generator, o.device(), like_name);
          return finish(normal ? randn(other.sizes(), gen, o) : rand(other.sizes(), gen, o),
                        requires_grad);
        },
        py::arg("input"), py::kw_only(), py::arg("generator") = py::none(),
        py::arg("dtype") = py::none(), py::arg("device") = py::none(),
        py::arg("requires_grad") = false);
  }
  m.def(
      "randint",
      [](py::args args, py::handle low, py::handle high, py::handle size, py::handle generator,
         py::handle dtype, py::handle device, bool requires_grad) {
        const RandintArgs a = randint_args(args, low, high, size, "randint", true);
        const TensorOptions o = options_of(dtype, device, kInt64, "randint");
        Generator gen = generator_for(generator, o.device(), "randint");
        return finish(randint(a.low, a.high, sizes_from(a.size, "randint"), gen, o), requires_grad);
      },
      py::kw_only(), py::arg("low") = py::none(), py::arg("high") = py::none(),
      py::arg("size") = py::none(), py::arg("generator") = py::none(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false);
  m.def(
      "randint_like",
      [](const Tensor& input, py::args args, py::handle low, py::handle high, py::handle generator,
         py::handle dtype, py::handle device, bool requires_grad) {
        const RandintArgs a = randint_args(args, low, high, py::none(), "randint_like", false);
        const TensorOptions o = like_options(input, dtype, device, "randint_like");
        Generator gen = generator_for(generator, o.device(), "randint_like");
        return finish(randint(a.low, a.high, input.sizes(), gen, o), requires_grad);
      },
      py::arg("input"), py::kw_only(), py::arg("low") = py::none(), py::arg("high") = py::none(),
      py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  m.def(
      "randperm",
      [](py::handle n, py::handle generator, py::handle dtype, py::handle device,
         bool requires_grad) {
        const TensorOptions o = options_of(dtype, device, kInt64, "randperm");
        return finish(
            randperm(int_arg(n, "randperm", "n"), generator_arg(generator, "randperm"), o),
            requires_grad);
      },
      py::arg("n"), py::kw_only(), py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
  // normal(Tensor mean, Tensor std), normal(Tensor mean, float std=1), normal(float mean,
  // Tensor std), normal(float mean, float std, size, *, dtype, device, requires_grad).
  m.def(
      "normal",
      [](py::handle mean, py::handle std, py::handle size, py::handle generator, py::handle dtype,
         py::handle device, bool requires_grad) {
        const char* fn = "normal";
        const bool mean_t = py::isinstance<Tensor>(mean), std_t = py::isinstance<Tensor>(std);
        std::optional<Generator> gen = generator_arg(generator, fn);
        if (mean_t || std_t) {
          if (!size.is_none() || !dtype.is_none() || !device.is_none() || requires_grad) {
            throw py::type_error(
                "normal(): size=, dtype=, device= and requires_grad= go with a float mean and "
                "std only: normal(mean, std, size); with tensors the result has their shape");
          }
          if (mean_t && std_t) return normal(mean.cast<Tensor>(), std.cast<Tensor>(), gen);
          if (mean_t) {
            return normal(mean.cast<Tensor>(), std.is_none() ? 1.0 : float_arg(std, fn, "std"),
                          gen);
          }
          return normal(float_arg(mean, fn, "mean"), std.cast<Tensor>(), gen);
        }
        if (size.is_none()) {
          throw py::type_error(
              "normal(): with a float mean and std, pass the size: normal(mean, std, size), or "
              "pass mean or std as a tensor");
        }
        const TensorOptions o = options_of(dtype, device, default_dtype(), fn);
        return finish(
            normal(float_arg(mean, fn, "mean"), std.is_none() ? 1.0 : float_arg(std, fn, "std"),
                   sizes_from(size, fn), gen, o),
            requires_grad);
      },
      py::arg("mean"), py::arg("std") = py::none(), py::arg("size") = py::none(), py::kw_only(),
      py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false);
}

void bind_samplers(py::module_& m, py::class_<Tensor>& t) {
  auto bernoulli_fn = [](const Tensor& input, py::handle p, py::handle generator) {
    std::optional<Generator> gen = generator_arg(generator, "bernoulli");
    if (p.is_none()) return bernoulli(input, gen);
    return bernoulli(input, float_arg(p, "bernoulli", "p"), gen);
  };
  m.def("bernoulli", bernoulli_fn, py::arg("input"), py::arg("p") = py::none(), py::kw_only(),
        py::arg("generator") = py::none());
  t.def("bernoulli", bernoulli_fn, py::arg("p") = py::none(), py::kw_only(),
        py::arg("generator") = py::none());
  auto multinomial_fn = [](const Tensor& input, py::handle num_samples, bool replacement,
                           py::handle generator) {
    return multinomial(input, int_arg(num_samples, "multinomial", "num_samples"), replacement,
                       generator_arg(generator, "multinomial"));
  };
  m.def("multinomial", multinomial_fn, py::arg("input"), py::arg("num_samples"),
        py::arg("replacement") = false, py::kw_only(), py::arg("generator") = py::none());
  t.def("multinomial", multinomial_fn, py::arg("num_samples"), py::arg("replacement") = false,
        py::kw_only(), py::arg("generator") = py::none());
}

void bind_fills(py::class_<Tensor>& t) {
  t.def(
      "uniform_",
      [](Self self, py::handle from, py::handle to, py::handle generator) {
        self.cast<Tensor&>().uniform_(float_arg(from, "uniform_", "from"),
                                      float_arg(to, "uniform_", "to"),
                                      generator_arg(generator, "uniform_"), python_call_site());
        return self;
      },
      py::arg("from") = 0.0, py::arg("to") = 1.0, py::kw_only(), py::arg("generator") = py::none());
  t.def(
      "normal_",
      [](Self self, py::handle mean, py::handle std, py::handle generator) {
        self.cast<Tensor&>().normal_(float_arg(mean, "normal_", "mean"),
                                     float_arg(std, "normal_", "std"),
                                     generator_arg(generator, "normal_"), python_call_site());
        return self;
      },
      py::arg("mean") = 0.0, py::arg("std") = 1.0, py::kw_only(),
      py::arg("generator") = py::none());
  t.def(
      "exponential_",
      [](Self self, py::handle lambd, py::handle generator) {
        self.cast<Tensor&>().exponential_(float_arg(lambd, "exponential_", "lambd"),
                                          generator_arg(generator, "exponential_"),
                                          python_call_site());
        return self;
      },
      py::arg("lambd") = 1.0, py::kw_only(), py::arg("generator") = py::none());
  t.def(
      "bernoulli_",
      [](Self self, py::handle p, py::handle generator) {
        Tensor& s = self.cast<Tensor&>();
        const std::optional<Generator> gen = generator_arg(generator, "bernoulli_");
        if (py::isinstance<Tensor>(p)) {
          s.bernoulli_(p.cast<Tensor>(), gen, python_call_site());
        } else {
          s.bernoulli_(float_arg(p, "bernoulli_", "p"), gen, python_call_site());
        }
        return self;
      },
      py::arg("p") = 0.5, py::kw_only(), py::arg("generator") = py::none());
  t.def("random_", [](Self self, py::args args, py::kwargs kwargs) {
    random_method(self.cast<Tensor&>(), args, kwargs);
    return self;
  });
}

}  // namespace

void bind_random(py::module_& m) {
  bind_generator(m);
  bind_factories(m);
  auto t = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  bind_samplers(m, t);
  bind_fills(t);
}

}  // namespace mutagrad::python
