// mutagrad._C._func, continued: func::verify, func::alias_report and the DOT pictures
// (func/verify.h, func/report.h, func/render.h), for python/src/mutagrad/func/_tools.py.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "func/func.h"
#include "python/bindings.h"

namespace mutagrad::python {

namespace {

py::dict report_dict(const func::AliasReport& r) {
  py::list writes;
  for (const func::WriteReport& w : r.writes) {
    py::dict d;
    d["node"] = w.node;
    d["op"] = w.op;
    d["value"] = w.value;
    d["storage"] = w.storage;
    d["chain"] = w.chain;
    d["seen_by"] = w.seen_by;
    py::object site = py::none();
    if (w.site) {
      py::dict s;
      s["version"] = w.site->version;
      s["op"] = w.site->op;
      s["file"] = w.site->file;
      s["line"] = w.site->line;
      site = s;
    }
    d["site"] = site;
    d["invalidates"] = w.invalidates;
    writes.append(d);
  }
  // Note [Stale saved tensors] (func/graph.h); -1 reads as None.
  auto opt = [](int64_t v) { return v < 0 ? py::object(py::none()) : py::object(py::int_(v)); };
  py::list saved;
  for (const func::SavedTensor& s : r.saved) {
    py::dict d;
    d["backward"] = s.backward;
    d["name"] = s.name;
    d["node"] = opt(s.node);
    d["value"] = opt(s.value);
    d["storage"] = opt(s.storage);
    d["version"] = s.version;
    d["version_now"] = s.version_now;
    d["stale_by"] = opt(s.stale_by);
    saved.append(d);
  }
  py::list outputs;
  for (const func::OutputReport& o : r.outputs) {
    py::dict d;
    d["value"] = o.value;
    d["storage"] = o.storage;
    d["input"] = o.input < 0 ? py::object(py::none()) : py::object(py::int_(o.input));
    d["constant"] = o.constant;
    d["other_outputs"] = o.other_outputs;
    outputs.append(d);
  }
  py::list regenerated;
  for (const func::Regeneration& g : r.regenerated) {
    py::dict d;
    d["value"] = g.value;
    d["node"] = g.node < 0 ? py::object(py::none()) : py::object(py::int_(g.node));
    d["write"] = g.write;
    regenerated.append(d);
  }
  py::dict out;
  out["mutated_inputs"] = r.mutated_inputs;
  out["writes"] = writes;
  out["outputs"] = outputs;
  out["regenerated"] = regenerated;
  out["saved"] = saved;
  out["text"] = r.text();
  return out;
}

}  // namespace

void bind_func_tools(py::module_& m) {
  py::module_ f = m.attr("_func").cast<py::module_>();
  static py::exception<func::VerifyError> verify_error(f, "VerifyError", PyExc_AssertionError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const func::VerifyError& e) {
      PyErr_SetString(verify_error.ptr(), e.what());
    }
  });
  f.def("alias_report", [](const func::Graph& g) { return report_dict(func::alias_report(g)); });
  f.def("to_dot", &func::to_dot, py::arg("graph"), py::arg("title") = "");
  f.def("side_by_side_dot", &func::side_by_side_dot, py::arg("program"), py::arg("functional"));
  f.def("drop_view_regeneration", &func::testing::drop_view_regeneration);
  // fn returns a list of tensors (mutagrad/func/_tools.py normalizes); transform is None (then
  // functionalize with `remove`) or a callable Graph -> Graph.
  f.def(
      "verify",
      [](py::function fn, const std::vector<Tensor>& inputs, const std::string& remove,
         py::object transform) {
        func::Program program = [fn](const std::vector<Tensor>& in) {
          return fn(in).cast<std::vector<Tensor>>();
        };
        func::GraphPass pass;
        if (transform.is_none()) {
          const func::Remove mode = remove == "mutations_and_views"
                                        ? func::Remove::kMutationsAndViews
                                        : func::Remove::kMutations;
          pass = [mode](const func::Graph& g) { return func::functionalize(g, mode); };
        } else {
          pass = [transform](const func::Graph& g) { return transform(g).cast<func::Graph>(); };
        }
        const func::VerifyResult r = func::verify(program, inputs, pass);
        py::list differences;
        for (const func::Difference& d : r.differences) {
          differences.append(py::make_tuple(d.run, d.what, d.detail));
        }
        py::dict out;
        out["differences"] = differences;
        out["first_divergent_node"] = r.first_divergent_node < 0
                                          ? py::object(py::none())
                                          : py::object(py::int_(r.first_divergent_node));
        out["first_divergent_code"] = r.first_divergent_code;
        out["summary"] = r.summary();
        out["captured"] = r.captured;
        out["functional"] = r.functional;
        return out;
      },
      py::arg("fn"), py::arg("inputs"), py::arg("remove"), py::arg("transform"));
}

}  // namespace mutagrad::python
