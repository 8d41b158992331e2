"""mutagrad.func.verify, report and the pictures (docs/functionalization.md) against
hand-derived expectations, on the CPU and the host-run CUDA device; verify catches a
deliberately broken functionalize (a pass that drops a view regeneration)."""

import inspect

import pytest

import mutagrad as mg
from mutagrad._C import _func

DEVICES = ["cpu", "cuda"]


def two_views(x):
    # %1 = clone(%0)  %2 = slice(%1)[0:2]  %3 = slice(%1)[1:3]  %4 = mul_(%2, 2.0)
    # %5 = add(%3, 1.0)  %6 = add_(%0, 1.0)  %7 = t(%0)   return (%1, %3, %5, %7)
    y = x.clone()
    a = y[0:2]
    b = y[1:3]
    a.mul_(2.0)
    c = b + 1.0
    x.add_(1.0)
    return y, b, c, x.t()


def line_of(fn, code):
    """The file and line of the one line of `fn` that holds `code`."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, text in enumerate(lines) if code in text]
    assert len(hits) == 1, (code, hits)
    return fn.__code__.co_filename, hits[0]


def drop_view_regeneration(graph):
    return mg.func.Graph(_func.drop_view_regeneration(graph._graph), False)


@pytest.mark.parametrize("device", DEVICES)
def test_report_of_two_views(device):
    x = mg.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    r = mg.func.report(two_views, x)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]  # captured on a copy
    assert r.mutated_inputs == [0]
    mul_file, mul_line = line_of(two_views, "a.mul_(2.0)")
    add_file, add_line = line_of(two_views, "x.add_(1.0)")
    Write, Site = mg.func._tools.Write, mg.func._tools.Site
    assert r.writes == [
        Write(node=3, op="mul_", value=2, storage=1, chain=[1, 2], seen_by=[1, 3],
              site=Site(version=0, op="mul_", file=mul_file, line=mul_line), invalidates=[]),
        Write(node=5, op="add_", value=0, storage=0, chain=[0], seen_by=[],
              site=Site(version=0, op="add_", file=add_file, line=add_line), invalidates=[]),
    ]
    assert r.saved == []  # x does not require grad: nothing is saved
    assert [(o.value, o.storage, o.input, o.other_outputs) for o in r.outputs] == [
        (1, 1, None, [1]), (3, 1, None, [0]), (5, 5, None, []), (7, 0, 0, [])]
    assert [tuple(g) for g in r.regenerated] == [(3, 4, 0)]
    assert str(r) == (
        "mutated inputs: 0\n"
        "write 0: node 3, mul_ writes %2 through %1 -> %2, in the storage of %1; seen by %1, %3; "
        f"version 0 -> 1, mul_ at {mul_file}:{mul_line}\n"
        "write 1: node 5, add_ writes %0, in the storage of input 0; seen by no other value; "
        f"version 0 -> 1, add_ at {add_file}:{add_line}\n"
        "output 0: %1, in the storage of %1; aliases output 1\n"
        "output 1: %3, in the storage of %1; aliases output 0\n"
        "output 2: %5, in the storage of %5\n"
        "output 3: %7, in the storage of input 0\n"
        "regenerated %3 before node 4, after write 0\n")
    assert r.to_dict()["writes"][0]["chain"] == [1, 2]
    assert r.to_dict()["writes"][1]["site"] == {
        "version": 0, "op": "add_", "file": add_file, "line": add_line}
    html = r._repr_html_()
    assert html.startswith("<pre>mutated inputs: 0\n")
    assert "<svg" in html and "storage of %1" in html


@pytest.mark.parametrize("device", DEVICES)
def test_verify_agrees_and_catches_a_dropped_view_regeneration(device):
    def fresh():
        return mg.tensor([1.0, 2.0, 3.0, 4.0], device=device)

    x = fresh()
    for remove in ("mutations", "mutations_and_views"):
        ok = mg.func.verify(two_views, x, remove=remove)
        assert ok and ok.ok and ok.differences == [] and ok.first_divergent_node is None
        ok.check()
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]  # verify runs on copies

    bad = mg.func.verify(two_views, fresh(), transform=drop_view_regeneration)
    assert not bad
    # y = [2, 4, 3, 4]: b = y[1:3] is [4, 3], the stale b [2, 3]; c = b + 1 likewise.
    assert [(d.run, d.what) for d in bad.differences] == [
        ("functionalized", "output 1"), ("functionalized", "output 2")]
    assert bad.differences[0].detail.startswith("element 0 (flat) is 2")
    assert bad.differences[1].detail.startswith("element 0 (flat) is 3")
    # The prefix ending at the write returns the written view, regenerated after it too.
    assert bad.first_divergent_node == 3
    assert bad.first_divergent_code.startswith("%4 = mul_(%2, 2.0")
    with pytest.raises(mg.func.VerifyError, match="first divergent node: 3"):
        bad.check()
    assert "functionalized: output 1" in bad._repr_html_()

    # A transform written in Python, wrong: a graph of the program on a copy of its input, so
    # the input is never written; it ignores the graph, so already node 0's prefix differs.
    def on_a_copy(graph):
        return mg.func.capture(lambda x: two_views(x.clone()), fresh())

    lost = mg.func.verify(two_views, fresh(), transform=on_a_copy)
    assert [(d.run, d.what) for d in lost.differences] == [
        ("functionalized", "input 0"), ("functionalized", "input 0")]
    assert lost.differences[0].detail == "element 0 (flat) is 1, eager 2"
    assert lost.differences[1].detail == "written by eager only"
    assert lost.first_divergent_node == 0


@pytest.mark.parametrize("device", DEVICES)
def test_writes_name_the_versions_they_move_and_their_lines(device):
    # capture runs on its inputs: x enters at version 2, so its writes move 2 -> 3 -> 4; y is
    # made inside the program, at version 0.
    def f(x):
        x[1] = 7.0
        x.neg_()
        y = x * 2.0
        y[0:2].sub_(1.0)
        return y

    x = mg.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    x.add_(1.0)
    x.add_(1.0)
    r = mg.func.capture(f, x).report()
    assert x._version == 4
    Site = mg.func._tools.Site
    # x[1] = 7.0 is captured as select + fill_; its version counter names the Python write.
    assert [(w.node, w.op, w.site) for w in r.writes] == [
        (1, "fill_", Site(2, "set_item_", *line_of(f, "x[1] = 7.0"))),
        (2, "neg_", Site(3, "neg_", *line_of(f, "x.neg_()"))),
        (5, "sub_", Site(0, "sub_", *line_of(f, "y[0:2].sub_(1.0)"))),
    ]
    file, line = line_of(f, "x.neg_()")
    assert ("write 1: node 2, neg_ writes %0, in the storage of input 0; seen by %1; "
            f"version 3 -> 4, neg_ at {file}:{line}\n") in str(r)
    assert all(w.site is None for w in mg.func._tools.report(r.functional).writes)


@pytest.mark.parametrize("device", DEVICES)
def test_saved_tensors_name_the_write_that_made_them_stale(device):
    # Note [Stale saved tensors]: sin saves y, mul_ then writes y; cos saves y after the write.
    def f(x):
        y = x * 2.0
        s = y.sin()
        y.mul_(3.0)
        c = y.cos()
        return s, c

    x = mg.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    r = mg.func.report(f, x)
    Saved = mg.func._tools.Saved
    assert sorted(r.saved) == [  # discovery order: sorted here
        Saved("CosBackward0", "self", node=3, value=1, storage=1, version=1, version_now=1,
              stale_by=None),
        Saved("SinBackward0", "self", node=1, value=1, storage=1, version=0, version_now=1,
              stale_by=2),
    ]
    stale = [i for i, s in enumerate(r.saved) if s.backward == "SinBackward0"][0]
    current = 1 - stale
    assert [w.invalidates for w in r.writes] == [[stale]]
    assert (f"saved {stale}: SinBackward0.self (%1) by %2 = sin(%1, None, None), in the storage of %1, "
            "saved at version 0, now 1: STALE, made stale by write 0 (node 2: %3 = mul_(%1, "
            "3.0))\n") in str(r)
    assert (f"saved {current}: CosBackward0.self (%1) by %4 = cos(%1, None, None), in the storage of %1, "
            "saved at version 1, current\n") in str(r)
    assert r.to_dict()["saved"][stale]["stale_by"] == 2
    dot = r.picture().source
    assert f'pv3 -> ps{stale} [color=red, fontcolor=red, penwidth=2, label="makes stale"];' in dot
    # Eager backward refuses the tensor the report calls stale.
    with pytest.raises(RuntimeError):
        f(mg.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True))[0].sum().backward()


def test_graph_dot_and_side_by_side_picture(tmp_path):
    g = mg.func.capture(two_views, mg.tensor([1.0, 2.0, 3.0, 4.0]))
    dot = g.side_by_side().source
    assert 'subgraph cluster_ps1 {\n      label="storage of %1"' in dot
    assert 'pv1 -> pv2 [style=dashed, label="slice"];' in dot
    assert 'pv2 -> pv4 [color=red, penwidth=2, fontcolor=red, label="writes"];' in dot
    mul_file, mul_line = line_of(two_views, "a.mul_(2.0)")
    assert ('pv4 [shape=box, label="%4 = mul_(%2, 2.0)\\nfloat32[2]\\nwrite 0\\n'
            f'version 0 -> 1, mul_ at {mul_file}:{mul_line}", color=red') in dot
    assert 'pv0 [shape=ellipse, label="%0\\ninput 0 (mutated)\\nfloat32[4]", color=red' in dot
    assert 'pv3 [shape=box, label="%3 = slice(%1, 0, 1, 3, 1)\\nfloat32[2]\\nregenerated x1"' \
        in dot
    assert 'fv4 [shape=box, label="%4 = slice_scatter(%1, %3, 0, 0, 2, 1)\\nfloat32[4]"' in dot
    assert g.dot.startswith("digraph program {")
    assert "<svg" in g._repr_svg_()
    path = g.side_by_side().render(tmp_path / "two_views.svg")
    assert "storage of %1" in open(path).read()
