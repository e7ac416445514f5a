"""The layout ops of the random graph generator (tests/fuzz_graph_gen.py): Reshape, Transpose, Concat, Slice, Gather,
Unsqueeze and Squeeze, each tracking its output's true shape (the generator's `pick`, `emit`, `ints` and `operand`)."""

from __future__ import annotations

import numpy as np


class LayoutOps:
    """Mixed into `GraphGen`, whose state (`rng`, `values`) and helpers these methods use."""

    def reshape(self):
        v = self.pick(dtype=self.any_type())
        shape = v.shape
        total = int(np.prod(shape))
        if len(shape) >= 2 and self.rng.random() < 0.5:
            target = (int(np.prod(shape[:-1])), shape[-1])
        elif total and self.rng.random() < 0.3:
            target = (-1,) + shape[-1:]  # -1 inferred
            out = (total // max(shape[-1], 1),) + shape[-1:]
            return self.emit("Reshape", [v.name, self.ints(target)], out, dtype=v.dtype)
        else:
            target = (1, total)
        self.emit("Reshape", [v.name, self.ints(target)], target, dtype=v.dtype, **({"allowzero": 1} if 0 in target else {}))


    def transpose(self):
        x = self.pick(dtype=self.any_type())
        r = len(x.shape)
        if self.rng.random() < 0.3:
            return self.emit("Transpose", [x.name], tuple(reversed(x.shape)), dtype=x.dtype)
        perm = [int(p) for p in self.rng.permutation(r)]
        self.emit("Transpose", [x.name], tuple(x.shape[p] for p in perm), dtype=x.dtype, perm=perm)

    def concat(self):
        x = self.pick(dtype=self.any_type())
        r = len(x.shape)
        axis = int(self.rng.integers(-r, r))
        parts, total = [x.name], x.shape[axis]
        for _ in range(int(self.rng.integers(1, 4))):
            shape = list(x.shape)
            shape[axis] = int(self.rng.integers(0, 6))
            same = [v for v in self.values if v.dtype == x.dtype and len(v.shape) == r and all(
                a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != axis % r)]
            if same and self.rng.random() < 0.4:
                v = same[int(self.rng.integers(0, len(same)))]
                parts.append(v.name)
                total += v.shape[axis]
                continue
            parts.append(self.operand(tuple(shape), dtype=x.dtype))
            total += shape[axis]
        out = list(x.shape)
        out[axis] = total
        order = list(self.rng.permutation(len(parts)))
        self.emit("Concat", [parts[i] for i in order], out, dtype=x.dtype, axis=axis)

    def slice(self):
        x = self.pick(dtype=self.any_type())
        r = len(x.shape)
        axes = sorted(int(a) for a in self.rng.choice(r, size=int(self.rng.integers(1, r + 1)), replace=False))
        starts, ends, steps = [], [], []
        out = list(x.shape)
        for a in axes:
            n = x.shape[a]
            step = int(self.rng.choice([1, 1, 1, 2, 3, -1, -2]))
            start = int(self.rng.integers(-n - 2, n + 3))
            if self.rng.random() < 0.25:
                end = 2**62 if step > 0 else -(2**62)  # "to the end", as exporters write it
            else:
                end = int(self.rng.integers(-n - 2, n + 3))
            starts.append(start)
            ends.append(end)
            steps.append(step)
            out[a] = _slice_len(n, start, end, step)
        names = [x.name, self.ints(starts), self.ints(ends)]
        if self.rng.random() < 0.8:
            names.append(self.ints([a - r if self.rng.random() < 0.3 else a for a in axes]))
            if any(s != 1 for s in steps) or self.rng.random() < 0.5:
                names.append(self.ints(steps))
        elif any(s != 1 for s in steps) or axes != list(range(len(axes))):
            names.append(self.ints(axes))
            names.append(self.ints(steps))
        self.emit("Slice", names, out, dtype=x.dtype)

    def gather(self):
        x = self.pick(dtype=self.any_type())
        r = len(x.shape)
        axis = int(self.rng.integers(-r, r))
        n = x.shape[axis]
        if n == 0:
            return self.transpose()
        idx_shape = tuple(int(self.rng.integers(1, 5)) for _ in range(int(self.rng.integers(0, 3))))
        idx = self.rng.integers(-n, n, size=idx_shape).astype(np.int64)
        indices = self.constant(idx, "idx") if self.rng.random() < 0.6 else self.graph_input(idx_shape, idx)
        a = axis % r
        self.emit("Gather", [x.name, indices], x.shape[:a] + idx_shape + x.shape[a + 1:], dtype=x.dtype, axis=axis)

    def unsqueeze(self):
        x = self.pick(dtype=self.any_type(), min_rank=0)
        r = len(x.shape)
        k = int(self.rng.integers(1, 3))
        axes = sorted(int(a) for a in self.rng.choice(r + k, size=k, replace=False))
        out = list(x.shape)
        for a in axes:
            out.insert(a, 1)
        signed = [a - (r + k) if self.rng.random() < 0.3 else a for a in axes]
        self.emit("Unsqueeze", [x.name, self.ints(signed)], out, dtype=x.dtype)

    def squeeze(self):
        x = self.pick(dtype=self.any_type())
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        if not ones:
            return self.unsqueeze()
        r = len(x.shape)
        if self.rng.random() < 0.3:
            return self.emit("Squeeze", [x.name], tuple(d for d in x.shape if d != 1), dtype=x.dtype)
        axes = sorted(int(a) for a in self.rng.choice(ones, size=int(self.rng.integers(1, len(ones) + 1)), replace=False))
        self.emit("Squeeze", [x.name, self.ints([a - r if self.rng.random() < 0.3 else a for a in axes])],
                  tuple(d for i, d in enumerate(x.shape) if i not in axes), dtype=x.dtype)


def _slice_len(n, start, end, step) -> int:
    """Elements ONNX Slice takes from a dim of size n (its clamping, not Python's)."""
    start, end = start + n if start < 0 else start, end + n if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), n), min(max(end, 0), n)
        return max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
    return max(0, -(-(start - end) // -step))
