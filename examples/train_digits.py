"""The Python twin of examples/train_digits.cc: the same CNN learns the handwritten digits that
Debian's python3-sklearn ships (1,797 8x8 images, 10 classes) with mutagrad.nn, AdamW, a cosine
schedule and mutagrad.utils.data.DataLoader; it saves a checkpoint at the end of every epoch
(mutagrad.save, atomic) and resumes from one bitwise, then shows the safety check on the classic
optimizer mistake (a step between a forward and its backward) and the same under the
"snapshot" mutation policy.

    ./bazelw build //python:mutagrad && PYTHONPATH=bazel-bin/python \\
        python3 examples/train_digits.py --epochs 8 --min-accuracy 95

Flags as the C++ job's: --epochs N (default 15), --min-accuracy P, --data PATH, --checkpoint PATH
(default $TMPDIR or /tmp, mutagrad_train_digits_py.pt; "" for none), --resume PATH,
--stop-after K. The random numbers differ from the C++ job's (another order of draws).
"""

import argparse
import gzip
import hashlib
import os
import sys
import time

import mutagrad as mg
import mutagrad.nn as nn
import mutagrad.nn.functional as F
from mutagrad.autograd import graph
from mutagrad.utils.data import DataLoader, TensorDataset

DEFAULT_DATA = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
BATCH = 32


class DigitsCnn(nn.Module):
    """[n, 1, 8, 8] -> logits [n, 10]: two convolution blocks, the second pooled to 2x2 per
    channel, a linear head (the C++ job's DigitsCnn)."""

    def __init__(self):
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16),
                                    nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.block2 = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                                    nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(2))
        self.head = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        h = self.block2(self.block1(x))  # [n, 16, 4, 4], then [n, 32, 2, 2]
        return self.head(h.flatten(1))


def fail(message, code=2):
    print(f"train_digits.py: {message}", file=sys.stderr)
    sys.exit(code)


def load_digits(path):
    """images [n, 1, 8, 8] float32 (pixel / 16), labels [n] int64."""
    try:
        with gzip.open(path, "rt") as f:
            rows = [line.split(",") for line in f if line.strip()]
    except OSError as e:
        fail(f"cannot open the handwritten digits data set at {path} ({e}). It ships with "
             "Debian's python3-sklearn package: install it with `apt-get install "
             "python3-sklearn`, or pass --data PATH.")
    if any(len(r) != 65 for r in rows):
        fail(f"{path}: every row must be 64 pixels and a label")
    pixels = [float(v) / 16.0 for r in rows for v in r[:64]]
    labels = [int(float(r[64])) for r in rows]
    n = len(labels)
    return mg.tensor(pixels, dtype=mg.float32).reshape(n, 1, 8, 8), mg.tensor(labels)


def accuracy(model, x, y):
    """Percentage of rows of x labelled correctly, in eval mode (running statistics)."""
    with mg.no_grad():
        model.eval()
        hits = model(x).argmax(1).eq(y).sum().item()
        model.train()
    return 100.0 * hits / y.numel()


def blank_random_pixels(xb):
    """Augmentation: 3 random pixels of every image set to 0 in place (an indexing write)."""
    n = xb.shape[0]
    rows = mg.arange(n).repeat(3)
    cols = mg.randint(0, 64, (n * 3,))
    xb.view(n, 64)[rows, cols] = 0.0


def state_digest(model, opt):
    """A digest of the bytes of the model's state_dict and the optimizer's state (equal digests:
    bitwise equal parameters, running statistics and moments)."""
    h = hashlib.sha256()
    values = list(model.state_dict().items())
    for i, state in sorted(opt.state_dict()["state"].items()):
        values += [(f"{i}.{k}", state[k]) for k in sorted(state)]
    for name, v in values:
        h.update(name.encode())
        h.update(v.detach().contiguous().numpy().tobytes() if isinstance(v, mg.Tensor)
                 else repr(v).encode())
    return h.hexdigest()[:16]


def step_between_forward_and_backward(model, opt, x, y):
    """The classic mistake: opt.step() between a forward and its backward. Returns whether the
    backward went through; prints the loss or the error."""
    opt.zero_grad()
    F.cross_entropy(model(x[:BATCH]), y[:BATCH]).backward()
    loss = F.cross_entropy(model(x[BATCH:2 * BATCH]), y[BATCH:2 * BATCH])  # saves the weights
    opt.step()  # writes the weights: the mistake
    try:
        loss.backward()
    except RuntimeError as e:
        print(f"  caught: {e}")
        return False
    print(f"  backward succeeded (loss {loss.item():.4f}): the gradients are those of the "
          "parameters the forward saw")
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--min-accuracy", type=float, default=0.0)
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--checkpoint", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                        "mutagrad_train_digits_py.pt"))
    p.add_argument("--resume", default="")
    p.add_argument("--stop-after", type=int, default=0)
    args = p.parse_args(argv)
    if args.epochs < 1:
        fail("--epochs must be at least 1", 64)

    images, labels = load_digits(args.data)
    n = labels.numel()
    mg.manual_seed(2026)  # one random stream: split, initialisation, shuffles, augmentation
    perm = mg.randperm(n)
    n_train = n * 4 // 5
    train_x, train_y = images[perm[:n_train]], labels[perm[:n_train]]
    test_x, test_y = images[perm[n_train:]], labels[perm[n_train:]]

    model = DigitsCnn()
    opt = mg.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
    schedule = mg.optim.lr_scheduler.CosineAnnealingLR(opt, args.epochs)
    first_epoch = 1
    if args.resume:
        try:
            ckpt = mg.load(args.resume)
            saved_epochs = ckpt["epochs"]
        except (OSError, RuntimeError, ValueError, KeyError, TypeError) as e:
            fail(f"--resume {args.resume}: cannot read a train_digits checkpoint there: {e}")
        if saved_epochs != args.epochs:
            fail(f"--resume {args.resume}: the checkpoint is of a run of {saved_epochs} epochs; "
                 f"pass --epochs {saved_epochs}", 64)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        schedule.load_state_dict(ckpt["scheduler"])
        mg.set_rng_state(ckpt["generator"])
        first_epoch = ckpt["epoch"] + 1

    print(f"digits: {n} images ({args.data}), {n_train} train, {n - n_train} test; CNN, AdamW "
          f"with a cosine schedule, batch {BATCH}, {args.epochs} epochs"
          + (f", resumed after epoch {first_epoch - 1}" if first_epoch > 1 else ""))
    print(model)
    loader = DataLoader(TensorDataset(train_x, train_y), batch_size=BATCH, shuffle=True)
    for epoch in range(first_epoch, args.epochs + 1):
        start = time.perf_counter()
        loss_sum = 0.0
        for xb, yb in loader:  # a fresh order each epoch
            blank_random_pixels(xb)
            loss = F.cross_entropy(model(xb), yb)
            loss_sum += loss.item() * xb.shape[0]
            opt.zero_grad()
            loss.backward()
            opt.step()
        schedule.step()
        seconds = time.perf_counter() - start
        print(f"epoch {epoch:3d}/{args.epochs}  loss {loss_sum / n_train:.4f}  train acc "
              f"{accuracy(model, train_x, train_y):5.1f}%  test acc "
              f"{accuracy(model, test_x, test_y):5.1f}%  {n_train / seconds:8.0f} examples/s",
              flush=True)
        if args.checkpoint:
            try:
                mg.save({"epoch": epoch, "epochs": args.epochs, "model": model.state_dict(),
                         "optimizer": opt.state_dict(), "scheduler": schedule.state_dict(),
                         "generator": mg.get_rng_state()}, args.checkpoint)
            except (OSError, RuntimeError) as e:
                fail(f"cannot save the checkpoint: {e}")
        if epoch == args.stop_after:
            print(f"stopped after epoch {epoch}; continue with --resume {args.checkpoint}")
            return 0

    final = accuracy(model, test_x, test_y)
    print(f"final test accuracy: {final:.2f}% ({test_y.numel()} images)")
    print(f"state digest: {state_digest(model, opt)}")

    print("\nThe classic mistake: opt.step() between a forward and its backward.")
    unsafe_went_through = step_between_forward_and_backward(model, opt, train_x, train_y)
    print("\nThe same under the snapshot policy (saved values are copied before the step "
          "writes them):")
    with graph.mutation_policy("snapshot"):
        snapshot_ok = step_between_forward_and_backward(model, opt, train_x, train_y)

    status = 0
    if final < args.min_accuracy:
        print(f"FAIL: test accuracy {final:.2f}% is below --min-accuracy {args.min_accuracy:.2f}%")
        status = 1
    if unsafe_went_through or not snapshot_ok:
        print("FAIL: the unsafe write was not caught, or the snapshot policy did not recover")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
