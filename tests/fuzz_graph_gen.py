"""The random graph generator of tests/test_fuzz_graphs.py: builds a valid small ONNX graph op by op, tracking each
value's true shape, element type and exactness (see EXACT_OPS there and below)."""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

import models
from fuzz_graph_layout import LayoutOps

FLOAT_TYPES = (np.float32, np.float16)
# Ops whose result is bit-exact on any correct implementation given bit-exact inputs (no rounding, or rounding
# fixed by IEEE). Only such values feed discontinuous ops (comparisons, Floor/Ceil/Round, IsNaN, Cast to an integer
# or bool): a last-bit difference in a computed value must not flip a comparison or a truncation.
EXACT_OPS = {
    "Neg", "Abs", "Relu", "Max", "Min", "Clip", "Where", "Floor", "Ceil", "Round", "IsNaN", "Not", "And", "Or",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Transpose", "Reshape", "Squeeze", "Unsqueeze",
    "Concat", "Slice", "Gather", "Expand", "Identity",
}
UNARY = ["Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Erf", "Tanh", "Sigmoid", "Relu", "LeakyRelu", "Sin", "Cos"]
# Ill-conditioned near 0 (a last-bit difference becomes a large one, or a sign flip NaN against a number), or for
# large arguments (Sin/Cos: an argument's last bit at 173 in float16 is 0.125, which the result keeps; seed
# 1003054942, where a fused Div → Div kept its intermediate in f32 and the CPU EP rounded it): their sensitive
# operand (Div's divisor, Pow's both) must be exact.
SENSITIVE = {"Log", "Sqrt", "Reciprocal", "Div", "Pow", "Sin", "Cos"}
DISCONTINUOUS_UNARY = ["Floor", "Ceil", "Round"]
BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"]
COMPARE = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]


class Value:
    __slots__ = ("name", "shape", "dtype", "exact")

    def __init__(self, name, shape, dtype, exact):
        self.name, self.shape, self.dtype, self.exact = name, tuple(int(d) for d in shape), np.dtype(dtype).type, exact

    def __iter__(self):  # (name, shape), as the product builders unpack it
        return iter((self.name, self.shape))


class GraphGen(LayoutOps):
    """Builds a valid graph op by op, tracking each value's true shape, element type and exactness."""

    def __init__(self, rng: np.random.Generator, dtype):
        self.rng, self.dtype = rng, np.dtype(dtype).type
        self.opset = int(rng.choice([17, 17, 20]))  # 20: Gelu, Reduce* axes as an input
        self.nodes, self.inits, self.inputs, self.feeds = [], [], [], {}
        self.values: list[Value] = []
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def dim(self):
        return int(self.rng.integers(1, 40)) if self.rng.random() > 0.03 else 0

    def data(self, shape, dtype=None):
        x = self.rng.uniform(-1, 1, size=shape).astype(dtype or self.dtype)
        if x.size and self.rng.random() < 0.05:
            x.reshape(-1)[self.rng.integers(0, x.size)] = self.rng.choice([np.nan, np.nan, np.inf, -np.inf])
        return x

    def graph_input(self, shape, data=None):
        name = self.name("in")
        data = self.data(shape) if data is None else data
        # Some dims symbolic, so placement sees unknown shapes and the run resolves them.
        decl = [f"{name}_d{i}" if self.rng.random() < 0.3 else d for i, d in enumerate(shape)]
        self.inputs.append(helper.make_tensor_value_info(name, models.elem(data.dtype), decl))
        self.feeds[name] = data
        return name

    def constant(self, array, prefix="w"):
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def operand(self, shape, constant_p=0.6, dtype=None):
        if dtype is not None and np.dtype(dtype).kind != "f":
            return self.constant(self.rng.integers(-3, 4, size=shape).astype(dtype))
        data = self.data(shape, dtype)
        return self.constant(data) if self.rng.random() < constant_p else self.graph_input(shape, data)

    def scalar(self, value):
        return self.constant(np.array(value, dtype=self.dtype), "c")

    def ints(self, values):
        return self.constant(np.array(values, dtype=np.int64), "i")

    def pick(self, dtype=None, exact=False, min_rank=1):
        """A value of the graph's float type (or `dtype`) and rank ≥ min_rank, recent ones more likely."""
        want = self.dtype if dtype is None else np.dtype(dtype).type
        ranked = [v for v in self.values if v.dtype == want and len(v.shape) >= min_rank and (v.exact or not exact)]
        if not ranked:
            return None
        i = len(ranked) - 1 if self.rng.random() < 0.6 else int(self.rng.integers(0, len(ranked)))
        return ranked[i]

    def emit(self, op, inputs, shape, dtype=None, exact=None, **attrs):
        out = self.name("v")
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.name(op.lower()), **attrs))
        if exact is None:
            by_name = {v.name: v for v in self.values}
            exact = op in EXACT_OPS and all(by_name[i].exact for i in inputs if i in by_name)
        self.values.append(Value(out, shape, self.dtype if dtype is None else dtype, exact))
        return self.values[-1]

    # --- products (the original generator) ---

    def matmul(self):
        x, shape = self.pick()
        k, n = shape[-1], self.dim()
        # ORT 1.31's CPU EP leaves the output of [M, 0]·[0] uninitialised, so the reference would be garbage.
        kind = self.rng.integers(0 if k else 1, 5)
        batch = shape[-3] if len(shape) >= 3 and self.rng.random() < 0.7 else 1
        b_shape = (k,) if kind == 0 else (batch, k, n) if kind == 1 else (k, n)
        if kind == 0:
            out = shape[:-1]
        else:
            a_batch = shape[:-2] if len(shape) >= 2 else ()
            out = np.broadcast_shapes(a_batch, b_shape[:-2]) + ((shape[-2],) if len(shape) >= 2 else ()) + (n,)
        self.emit("MatMul", [x, self.operand(b_shape)], out)

    def fork_join(self):
        """Two products of one value, summed (gated and residual blocks)."""
        x, shape = self.pick()
        n = self.dim()
        outs = []
        for _ in range(2):
            outs.append(self.emit("MatMul", [x, self.operand((shape[-1], n), 0.8)], shape[:-1] + (n,)).name)
        self.emit("Add", outs if self.rng.random() < 0.5 else outs[::-1], shape[:-1] + (n,))

    def cross(self):
        """A product of two computed values (two partitions may meet here)."""
        a, a_shape = self.pick()
        fits = [v for v in self.values if v.dtype == self.dtype and len(v.shape) == 2 and v.shape[0] == a_shape[-1] and v.name != a]
        if not fits:
            return self.matmul()
        b = fits[int(self.rng.integers(0, len(fits)))]
        self.emit("MatMul", [a, b.name], a_shape[:-1] + (b.shape[1],))

    def gemm(self):
        x, shape = self.pick()
        if len(shape) != 2:
            rows = int(np.prod(shape[:-1]))
            x, shape = self.reshape_to(x, shape, (rows, shape[-1]))
        ta, tb = int(self.rng.random() < 0.3), int(self.rng.random() < 0.4)
        # transA reads x as [K, M].
        k, m = shape if ta else shape[::-1]
        n = self.dim()
        b = self.operand((n, k) if tb else (k, n), 0.7)
        inputs = [x, b]
        c_kind = self.rng.integers(0, 6)
        if c_kind:
            c_shape = [(n,), (1, n), (m, n), (m, 1), ()][c_kind - 1]
            inputs.append(self.operand(c_shape))
        alpha, beta = (float(self.rng.choice([1.0, 0.5, -2.0, 0.0])) for _ in range(2))
        if k == 0 and beta != 0.0:
            beta = 1.0  # ORT 1.31's CPU EP does not scale C by beta when K = 0 (the ONNX spec does)
        self.emit("Gemm", inputs, (m, n), transA=ta, transB=tb, alpha=alpha, beta=beta)

    def reshape_to(self, x, shape, target):
        target = tuple(int(d) for d in target)
        # A 0 in the target means "keep that input dim" unless allowzero is set.
        return self.emit("Reshape", [x, self.ints(target)], target, **({"allowzero": 1} if 0 in target else {}))

    def add(self):
        x, shape = self.pick()
        kind = self.rng.integers(0, 4)
        other_shape = shape[-1:] if kind < 2 else () if kind == 2 else shape
        other = self.operand(other_shape)
        inputs = [x, other] if self.rng.random() < 0.5 else [other, x]
        self.emit("Add", inputs, np.broadcast_shapes(shape, other_shape))

    def clip(self):
        x, shape = self.pick()
        lo, hi = sorted(self.rng.uniform(-1, 1, 2))
        inputs = [x, self.scalar(lo), self.scalar(hi)] if self.rng.random() < 0.7 else [x, "", self.scalar(hi)]
        self.emit("Clip", inputs, shape)

    # --- elementwise ---

    def any_type(self):
        """The graph's float type mostly; now and then an integer or bool type that some value has."""
        others = sorted({v.dtype for v in self.values if v.dtype != self.dtype and v.shape}, key=lambda t: np.dtype(t).name)
        if others and self.rng.random() < 0.25:
            return others[int(self.rng.integers(0, len(others)))]
        return self.dtype

    def broadcast_partner(self, shape):
        """A shape that broadcasts with `shape`: some dims 1 or dropped, sometimes an extra leading dim, or a dim
        where `shape` has 1 widened."""
        out = [d if self.rng.random() < 0.6 else 1 for d in shape]
        for i, d in enumerate(shape):
            if d == 1 and self.rng.random() < 0.3:
                out[i] = int(self.rng.integers(1, 5))
        drop = int(self.rng.integers(0, len(out) + 1)) if self.rng.random() < 0.3 else 0
        out = out[drop:]
        if not drop and self.rng.random() < 0.15:
            out = [int(self.rng.integers(1, 4))] + out
        return tuple(out)

    def unary(self, op=None):
        op = op or str(self.rng.choice(UNARY + ["Gelu"] * (self.opset >= 20)))
        x = self.pick(exact=op in SENSITIVE)
        if x is None:
            return self.unary("Tanh")
        attrs = {}
        if op == "LeakyRelu":
            attrs["alpha"] = float(self.rng.choice([0.01, 0.2, 1.5]))
        if op == "Gelu" and self.rng.random() < 0.5:
            attrs["approximate"] = "tanh"
        self.emit(op, [x.name], x.shape, **attrs)

    def discontinuous(self):
        """Floor/Ceil/Round, IsNaN (to bool) or Not of an exact value."""
        x = self.pick(exact=True, min_rank=0)
        if x is None:
            return self.unary()
        op = str(self.rng.choice(DISCONTINUOUS_UNARY + ["IsNaN"]))
        if op == "IsNaN":
            v = self.emit("IsNaN", [x.name], x.shape, dtype=np.bool_)
            if self.rng.random() < 0.5:
                self.emit("Not", [v.name], v.shape, dtype=np.bool_)
        else:
            self.emit(op, [x.name], x.shape)

    def binary(self):
        op = str(self.rng.choice(BINARY))
        x = self.pick(exact=op == "Pow")
        if x is None:
            op, x = "Mul", self.pick()
        other = None
        if self.rng.random() < 0.3:  # two computed values that broadcast
            fits = [v for v in self.values if v.dtype == self.dtype and v.name != x.name and _broadcasts(v.shape, x.shape)
                    and (v.exact or op not in SENSITIVE)]
            if fits:
                other = fits[int(self.rng.integers(0, len(fits)))]
                other_name, other_shape = other.name, other.shape
        if other is None:
            other_shape = self.broadcast_partner(x.shape)
            other_name = self.operand(other_shape)
        first = self.rng.random() < 0.6 or (op == "Div" and not x.exact)  # x divides only when exact
        inputs = [x.name, other_name] if first else [other_name, x.name]
        self.emit(op, inputs, np.broadcast_shapes(x.shape, other_shape))

    def compare(self):
        """A comparison of exact values (a bool), now and then combined with another bool by And/Or."""
        x = self.pick(dtype=self.any_type(), exact=True, min_rank=0)
        if x is None or x.dtype == np.bool_:
            return self.sanitized_cast()
        if self.rng.random() < 0.2:  # x against itself: every element ties (NaN excepted)
            other, other_shape = x.name, x.shape
        else:
            other_shape = self.broadcast_partner(x.shape)
            other = self.operand(other_shape, dtype=x.dtype)
        op = str(self.rng.choice(COMPARE))
        v = self.emit(op, [x.name, other], np.broadcast_shapes(x.shape, other_shape), dtype=np.bool_, exact=True)
        bools = [b for b in self.values if b.dtype == np.bool_ and b.name != v.name and _broadcasts(b.shape, v.shape)]
        if bools and self.rng.random() < 0.5:
            b = bools[int(self.rng.integers(0, len(bools)))]
            self.emit(str(self.rng.choice(["And", "Or"])), [v.name, b.name], np.broadcast_shapes(v.shape, b.shape), dtype=np.bool_, exact=True)

    def where(self):
        cond = self.pick(dtype=np.bool_, min_rank=0)
        if cond is None:
            return self.compare()
        fits = [v for v in self.values if v.dtype == self.dtype and v.shape and _broadcasts(v.shape, cond.shape)]
        if not fits:
            return self.compare()
        a = fits[-1] if self.rng.random() < 0.6 else fits[int(self.rng.integers(0, len(fits)))]
        b_shape = self.broadcast_partner(a.shape)
        if self.rng.random() < 0.7 and _broadcasts(np.broadcast_shapes(a.shape, cond.shape), b_shape):
            b = self.operand(b_shape)
        else:
            b_shape, b = (), self.scalar(0.0)
        inputs = [cond.name, a.name, b] if self.rng.random() < 0.5 else [cond.name, b, a.name]
        self.emit("Where", inputs, np.broadcast_shapes(cond.shape, a.shape, b_shape))

    def sanitized_cast(self):
        """Where(IsNaN(x), 0, x) → Clip → Mul → Cast to an integer or bool type (an exact x), then maybe integer
        arithmetic, and Cast back to the float type; or a Cast between the float types."""
        if self.rng.random() < 0.3:
            x = self.pick()
            other = np.float32 if self.dtype == np.float16 else np.float16
            v = self.emit("Cast", [x.name], x.shape, dtype=other, exact=self.dtype == np.float16 and x.exact, to=models.elem(other))
            if self.rng.random() < 0.7:
                self.emit("Cast", [v.name], v.shape, exact=False, to=models.elem(self.dtype))
            return
        x = self.pick(exact=True, min_rank=0)
        if x is None:
            return self.unary()
        nan = self.emit("IsNaN", [x.name], x.shape, dtype=np.bool_)
        clean = self.emit("Where", [nan.name, self.scalar(0.0), x.name], x.shape)
        clipped = self.emit("Clip", [clean.name, self.scalar(-100.0), self.scalar(100.0)], x.shape)
        scaled = self.emit("Mul", [clipped.name, self.scalar(4.0)], x.shape, exact=True)  # × a power of two: exact
        target = self.rng.choice([np.int32, np.int64, np.bool_])
        v = self.emit("Cast", [scaled.name], x.shape, dtype=target, exact=True, to=models.elem(target))
        if target != np.bool_ and self.rng.random() < 0.6:
            op = str(self.rng.choice(["Add", "Sub", "Max", "Min", "Abs", "Neg"]))
            if op in ("Abs", "Neg"):
                v = self.emit(op, [v.name], v.shape, dtype=target, exact=True)
            else:
                c_shape = self.broadcast_partner(v.shape)
                c = self.constant(self.rng.integers(-5, 6, size=c_shape).astype(target))
                v = self.emit(op, [v.name, c], np.broadcast_shapes(v.shape, c_shape), dtype=target, exact=True)
        if self.rng.random() < 0.7:
            self.emit("Cast", [v.name], v.shape, exact=True, to=models.elem(self.dtype))

    # --- normalisations and reductions ---

    def softmax(self):
        x = self.pick()
        r = len(x.shape)
        self.emit(str(self.rng.choice(["Softmax", "Softmax", "LogSoftmax"])), [x.name], x.shape, axis=int(self.rng.integers(-r, r)))

    def layer_norm(self):
        x = self.pick()
        r = len(x.shape)
        axis = int(self.rng.integers(-r, r)) if self.rng.random() < 0.4 else -1
        norm_shape = x.shape[axis:]
        if not np.prod(norm_shape):
            return self.softmax()  # the CPU EP refuses to normalise over nothing
        inputs = [x.name, self.operand(norm_shape, 0.8)]
        if self.rng.random() < 0.7:
            inputs.append(self.operand(norm_shape, 0.8))
        eps = float(self.rng.choice([1e-5, 1e-12, 0.1]))
        self.emit("LayerNormalization", inputs, x.shape, axis=axis, epsilon=eps)

    def reduce(self):
        x = self.pick()
        if not np.prod(x.shape):
            return self.unary()  # the CPU EP's reductions of empty tensors disagree with the spec's shapes
        r = len(x.shape)
        op = str(self.rng.choice(["ReduceMean", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare",
                                  "ReduceL1", "ReduceL2"]))
        axes = sorted(int(a) for a in self.rng.choice(r, size=int(self.rng.integers(1, r + 1)), replace=False))
        if op in ("ReduceMax", "ReduceMin"):
            # ORT's CPU EP propagates a NaN only when it comes first along the axis (the spec and numpy: always),
            # so NaN never reaches these: Where(IsNaN(x), 0, x) first.
            nan = self.emit("IsNaN", [x.name], x.shape, dtype=np.bool_)
            x = self.emit("Where", [nan.name, self.scalar(0.0), x.name], x.shape)
        keep = int(self.rng.random() < 0.5)
        out = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keep else tuple(d for i, d in enumerate(x.shape) if i not in axes)
        signed = [a - r if self.rng.random() < 0.3 else a for a in axes]
        # ReduceSum takes axes as an input from opset 13, the others from 18.
        if op == "ReduceSum" or self.opset >= 18:
            self.emit(op, [x.name, self.ints(signed)], out, keepdims=keep)
        else:
            self.emit(op, [x.name], out, axes=signed, keepdims=keep)

    def chain(self):
        """A run of elementwise ops on one value (what fusion merges into one kernel)."""
        for _ in range(int(self.rng.integers(2, 6))):
            [self.unary, self.binary, self.clip, self.add][int(self.rng.integers(0, 4))]()

    def build(self, n_ops):
        for _ in range(int(self.rng.integers(1, 3))):
            rank = int(self.rng.integers(1, 4))
            name = self.graph_input(tuple(self.dim() for _ in range(rank)))
            self.values.append(Value(name, self.feeds[name].shape, self.dtype, True))
        ops = [self.matmul, self.matmul, self.gemm, self.add, self.clip, self.reshape, self.transpose]
        ops += [lambda: self.unary("Relu"), lambda: self.unary("Sigmoid"), self.fork_join, self.cross]
        ops += [self.unary, self.unary, self.binary, self.binary, self.chain, self.discontinuous, self.compare, self.where]
        ops += [self.sanitized_cast, self.softmax, self.layer_norm, self.reduce, self.concat, self.slice, self.gather]
        ops += [self.unsqueeze, self.squeeze]
        for _ in range(n_ops):
            ops[int(self.rng.integers(0, len(ops)))]()
        produced = [v for v in self.values if v.name not in self.feeds]
        outputs = {self.values[-1].name} | {v.name for v in produced if self.rng.random() < 0.15}
        outputs -= set(self.feeds)
        if not outputs:  # the last value is a graph input: output something computed, or an Identity of it
            self.emit("Identity", [self.values[-1].name], self.values[-1].shape, dtype=self.values[-1].dtype)
            outputs = {self.values[-1].name}
        types = {v.name: models.elem(v.dtype) for v in self.values}
        graph = helper.make_graph(
            self.nodes, "fuzz", self.inputs, [helper.make_tensor_value_info(o, types[o], None) for o in sorted(outputs)], self.inits
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        return model, self.feeds


def _broadcasts(a, b) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False
