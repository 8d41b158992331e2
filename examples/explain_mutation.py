"""The Python twin of examples/explain_mutation.cc: a safe write into a view, a stale write
and the same under the "snapshot" policy, as pictures, a dry run of backward and a write log.

    ./bazelw build //python:mutagrad && PYTHONPATH=bazel-bin/python \
        python3 examples/explain_mutation.py /tmp/pictures

In Jupyter, `graph.draw(loss)` shows itself inline (_repr_svg_).
"""

import os
import sys

import mutagrad
from mutagrad.autograd import graph


def main(folder):
    os.makedirs(folder, exist_ok=True)
    a = mutagrad.arange(6, dtype=mutagrad.float64).view(2, 3).requires_grad_()
    with graph.mutation_log() as log:
        h = a * 2.0
        h[1].mul_(3.0)  # a view of a non-leaf written in place: CopySlices, nothing stale
        graph.draw(h.sum()).render(os.path.join(folder, "safe.svg"))

        h2 = a.exp()
        loss = (h2 * h2).sum()
        log.watch(loss)
        h2.add_(1.0)  # MulBackward0 saved h2: backward would refuse it, naming this line
        graph.draw(loss).render(os.path.join(folder, "stale.svg"))
        report = graph.check(loss)
        print("dry run of backward:\n", report, sep="")

        with graph.mutation_policy("snapshot"):
            h3 = a.exp()
            snap_loss = (h3 * h3).sum()
            h3.add_(1.0)  # the saved value is copied first
        graph.draw(snap_loss).render(os.path.join(folder, "snapshot.svg"))
        snap_loss.backward()
    log.save(os.path.join(folder, "writes.jsonl"))
    print(log.summary())
    return 0 if not report.ok else 1


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "."
    try:
        sys.exit(main(target))
    except (OSError, RuntimeError) as e:  # an unwritable folder; a library error
        print(f"explain_mutation.py: {e}", file=sys.stderr)
        sys.exit(2)
