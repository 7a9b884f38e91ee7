"""The expression evaluator: one postfix walk per expression, loops over rows inside each op.

Nothing is allocated per evaluation. A :data:`Workspace` ``ws`` is reused: ``buf[row[s]]``
holds the rows of stack slot ``s``; every operator writes into the spare row ``row[-1]`` and
swaps it in, so inputs and output never alias and the row loops vectorise. Leaves are pushed
lazily (``kind`` 1 = a feature column of ``Xt`` referenced by ``ref``, 2 = a scalar in
``sval``), so ``x1 * x2`` reads the two columns directly and a constant subexpression stays a
scalar. ``Xt`` is feature-major (``X.T`` contiguous) so each column is a contiguous row vector.

Invalid values (log of a negative, division by zero, overflow) propagate as NaN/inf; the
loss is then ``inf``, so such candidates always lose.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .._loss_kernels import loss_of_rows, loss_of_scalar
from .._numba import njit
from ._expressions import (
    ABS, ADD, CONST, COS, CUBE, DIV, EXP, FIRST_UNARY, LOG, MUL, SIN, SQRT, SQUARE, SUB,
    VAR,
)
from ._intervals import admissible, inactive_box

# sin/cos: Cody-Waite reduction by pi/2 (fdlibm's 33-bit split of pi/2) and Cephes' minimax
# polynomials on [-pi/4, pi/4], written branch-free so that LLVM vectorises the row loop.
_PIO2_1, _PIO2_2, _PIO2_3 = 1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21
_S0, _S1, _S2 = 1.58962301576546568060e-10, -2.50507477628578072866e-8, 2.75573136213857245213e-6
_S3, _S4, _S5 = -1.98412698295895385996e-4, 8.33333333332211858878e-3, -1.66666666666666307295e-1
_C0, _C1, _C2 = -1.13585365213876817300e-11, 2.08757008419747316778e-9, -2.75573141792967388112e-7
_C3, _C4, _C5 = 2.48015872888517045348e-5, -1.38888888888730564116e-3, 4.16666666666665929218e-2
_TWO_OVER_PI = 0.63661977236758134308
_ROUND = 6755399441055744.0  # 1.5 * 2**52: (v + _ROUND) - _ROUND rounds v to an integer
_TRIG_RANGE = 5e5  # beyond it, fall back to libm

KIND_BUFFER, KIND_FEATURE, KIND_SCALAR = 0, 1, 2

# records (named tuples: numba passes them to kernels, fields by name)
Data = namedtuple("Data", [
    "Xt",               # (features, rows) the features, feature-major
    "y",                # (rows,) targets
    "w",                # (rows,) sample weights
    "wsum",             # their sum
    "loss_kind",        # LOSS_SQUARED, LOSS_ABSOLUTE or LOSS_PINBALL
    "tau",              # quantile level of the pinball loss
    "uniform_weights",  # every weight equals the first
    "box",              # the domain an expression must be certified finite on (an _intervals.Box)
])
Data.__doc__ = "The rows an expression is scored on, and the loss that scores it (:func:`make_data`)."

Workspace = namedtuple("Workspace", [
    "buf",   # (slots + 1, rows) rows of the stack slots, plus a spare
    "kind",  # (slots,) per stack slot: KIND_BUFFER, KIND_FEATURE or KIND_SCALAR
    "ref",   # (slots,) its feature (KIND_FEATURE)
    "sval",  # (slots,) its value (KIND_SCALAR)
    "row",   # (slots + 1,) its row of ``buf`` (KIND_BUFFER); the last is the spare row
    "ranks",  # (rows + 1,) 0, 1, ..., rows: cumulative weights of equally weighted rows (a quantile's rank)
])
Workspace.__doc__ = "The evaluator's preallocated buffers (:func:`make_workspace`)."


def make_data(Xt, y, w, loss, box=None) -> Data:
    """The :data:`Data` record of feature-major ``Xt``, targets ``y`` and weights ``w``, scored by
    ``loss`` (a :class:`~parsimony.losses.Loss`: its code and level go to the kernels); an
    expression not certified on ``box`` (an :data:`~parsimony.symbolic._intervals.Box`; None: no
    check) scores ``inf``."""
    box = inactive_box(Xt.shape[0]) if box is None else box
    return Data(Xt, y, w, float(w.sum()), int(loss.code), float(loss.tau), bool(np.all(w == w[0])), box)


def data_rows(data: Data, rows) -> Data:
    """The :data:`Data` record of ``data``'s rows ``rows`` (an index array; copies), same loss and box."""
    w = data.w[rows]
    return data._replace(Xt=np.ascontiguousarray(data.Xt[:, rows]), y=data.y[rows], w=w, wsum=float(w.sum()),
                         uniform_weights=bool(np.all(w == w[0])))


def make_workspace(max_length: int, n_rows: int) -> Workspace:
    """Preallocated buffers for evaluating expressions of up to ``max_length`` nodes."""
    slots = max_length + 1
    return Workspace(np.empty((slots + 1, n_rows)), np.zeros(slots, dtype=np.int64), np.zeros(slots, dtype=np.int64),
                     np.zeros(slots), np.arange(slots + 1, dtype=np.int64), np.arange(n_rows + 1, dtype=np.float64))


@njit(error_model="numpy")
def unary_scalar(op, x):
    if op == SQUARE:
        return x * x
    if op == CUBE:
        return x * x * x
    if op == SQRT:
        return math.sqrt(x) if x >= 0 else np.nan
    if op == EXP:
        return math.exp(x) if x < 709.0 else np.inf
    if op == LOG:
        return math.log(x) if x > 0 else (-np.inf if x == 0 else np.nan)
    if op == SIN:
        return math.sin(x) if math.isfinite(x) else np.nan
    if op == COS:
        return math.cos(x) if math.isfinite(x) else np.nan
    if op == ABS:
        return abs(x)
    return -x


@njit(error_model="numpy")
def binary_scalar(op, a, b):
    if op == ADD:
        return a + b
    if op == SUB:
        return a - b
    if op == MUL:
        return a * b
    if op == DIV:
        return a / b
    return a**b


@njit(error_model="numpy")
def _trig_array(src, out, quarter_turns):
    """``out = sin(src + quarter_turns * pi / 2)``: ``quarter_turns`` 0 gives sin, 1 gives cos."""
    n = out.shape[0]
    n_huge = 0
    for i in range(n):  # integer count: vectorises, unlike a running max
        n_huge += abs(src[i]) >= _TRIG_RANGE
    if n_huge:  # arguments too large (or infinite) for the 3-part reduction: libm
        for i in range(n):
            out[i] = np.cos(src[i]) if quarter_turns == 1.0 else np.sin(src[i])
        return
    for i in range(n):
        x = src[i]
        q = (x * _TWO_OVER_PI + _ROUND) - _ROUND
        r = ((x - q * _PIO2_1) - q * _PIO2_2) - q * _PIO2_3
        z = r * r
        s = r + r * z * (((((_S0 * z + _S1) * z + _S2) * z + _S3) * z + _S4) * z + _S5)
        c = 1.0 - 0.5 * z + z * z * (((((_C0 * z + _C1) * z + _C2) * z + _C3) * z + _C4) * z + _C5)
        m = q + quarter_turns  # quadrant of sin
        h = m * 0.5
        odd = abs(h - ((h + _ROUND) - _ROUND))  # 0.5 for odd quadrants (use the cosine)
        a = (m - 2.0 * odd) * 0.25
        negative = abs(a - ((a + _ROUND) - _ROUND))  # 0.5 for quadrants 2 and 3
        v = c if odd > 0.25 else s
        out[i] = v - 4.0 * negative * v


@njit(error_model="numpy")
def _unary_array(op, src, out):
    n = out.shape[0]
    if op == SQUARE:
        for i in range(n):
            out[i] = src[i] * src[i]
    elif op == CUBE:
        for i in range(n):
            out[i] = src[i] * src[i] * src[i]
    elif op == SQRT:
        for i in range(n):
            out[i] = np.sqrt(src[i])  # NaN below zero
    elif op == EXP:
        for i in range(n):
            out[i] = np.exp(src[i])
    elif op == LOG:
        for i in range(n):
            out[i] = np.log(src[i])  # -inf at 0, NaN below
    elif op == SIN:
        _trig_array(src, out, 0.0)
    elif op == COS:
        _trig_array(src, out, 1.0)
    elif op == ABS:
        for i in range(n):
            out[i] = abs(src[i])
    else:
        for i in range(n):
            out[i] = -src[i]


@njit(error_model="numpy")
def _binary_aa(op, a, b, out):
    n = out.shape[0]
    if op == ADD:
        for i in range(n):
            out[i] = a[i] + b[i]
    elif op == SUB:
        for i in range(n):
            out[i] = a[i] - b[i]
    elif op == MUL:
        for i in range(n):
            out[i] = a[i] * b[i]
    elif op == DIV:
        for i in range(n):
            out[i] = a[i] / b[i]
    else:
        for i in range(n):
            out[i] = a[i] ** b[i]


@njit(error_model="numpy")
def _binary_as(op, a, b, out):
    n = out.shape[0]
    if op == ADD:
        for i in range(n):
            out[i] = a[i] + b
    elif op == SUB:
        for i in range(n):
            out[i] = a[i] - b
    elif op == MUL:
        for i in range(n):
            out[i] = a[i] * b
    elif op == DIV:
        inv = 1.0 / b
        for i in range(n):
            out[i] = a[i] * inv
    elif b == 2.0:
        for i in range(n):
            out[i] = a[i] * a[i]
    else:
        for i in range(n):
            out[i] = a[i] ** b


@njit(error_model="numpy")
def _binary_sa(op, a, b, out):
    n = out.shape[0]
    if op == ADD:
        for i in range(n):
            out[i] = a + b[i]
    elif op == SUB:
        for i in range(n):
            out[i] = a - b[i]
    elif op == MUL:
        for i in range(n):
            out[i] = a * b[i]
    elif op == DIV:
        for i in range(n):
            out[i] = a / b[i]
    else:
        for i in range(n):
            out[i] = a ** b[i]


@njit(error_model="numpy")
def eval_tree(ops, feats, vals, length, Xt, ws):
    """Evaluate a postfix expression; the result is stack slot 0 of ``ws``.

    Returns the kind of the result: ``KIND_BUFFER`` (rows in ``buf[row[0]]``), ``KIND_FEATURE``
    (the column ``Xt[ref[0]]``) or ``KIND_SCALAR`` (``sval[0]``).
    """
    buf, kind, ref, sval, row = ws.buf, ws.kind, ws.ref, ws.sval, ws.row
    spare = row.shape[0] - 1
    sp = 0
    for k in range(length):
        op = ops[k]
        if op == CONST:
            kind[sp] = KIND_SCALAR
            sval[sp] = vals[k]
            sp += 1
        elif op == VAR:
            kind[sp] = KIND_FEATURE
            ref[sp] = feats[k]
            sp += 1
        elif op >= FIRST_UNARY:
            s = sp - 1
            if kind[s] == KIND_SCALAR:
                sval[s] = unary_scalar(op, sval[s])
            else:
                src = Xt[ref[s]] if kind[s] == KIND_FEATURE else buf[row[s]]
                _unary_array(op, src, buf[row[spare]])
                row[s], row[spare] = row[spare], row[s]
                kind[s] = KIND_BUFFER
        else:
            left = sp - 2
            right = sp - 1
            kl = kind[left]
            kr = kind[right]
            if kl == KIND_SCALAR and kr == KIND_SCALAR:
                sval[left] = binary_scalar(op, sval[left], sval[right])
            else:
                out = buf[row[spare]]
                if kl == KIND_SCALAR:
                    b = Xt[ref[right]] if kr == KIND_FEATURE else buf[row[right]]
                    _binary_sa(op, sval[left], b, out)
                elif kr == KIND_SCALAR:
                    a = Xt[ref[left]] if kl == KIND_FEATURE else buf[row[left]]
                    _binary_as(op, a, sval[right], out)
                else:
                    a = Xt[ref[left]] if kl == KIND_FEATURE else buf[row[left]]
                    b = Xt[ref[right]] if kr == KIND_FEATURE else buf[row[right]]
                    _binary_aa(op, a, b, out)
                row[left], row[spare] = row[spare], row[left]
                kind[left] = KIND_BUFFER
            sp -= 1
    return kind[0]


@njit(error_model="numpy")
def evaluate(ops, feats, vals, length, Xt, ws, out):
    """Write the expression's value on every row of ``Xt`` into ``out``."""
    kind = eval_tree(ops, feats, vals, length, Xt, ws)
    n = out.shape[0]
    if kind == KIND_SCALAR:
        v = ws.sval[0]
        for i in range(n):
            out[i] = v
    else:
        src = Xt[ws.ref[0]] if kind == KIND_FEATURE else ws.buf[ws.row[0]]
        for i in range(n):
            out[i] = src[i]


@njit
def last_rows(Xt, ws):
    """The rows of the expression evaluated last in ``ws`` (a view; empty when it is a scalar)."""
    kind = ws.kind[0]
    if kind == KIND_FEATURE:
        return Xt[ws.ref[0]]
    if kind == KIND_BUFFER:
        return ws.buf[ws.row[0]]
    return ws.buf[0][:0]


@njit(error_model="numpy")
def tree_loss(ops, feats, vals, length, data, ws):
    """Weighted mean loss of an expression on ``data`` (a :data:`Data`).

    Returns ``inf`` when any prediction is NaN or infinite, or when the expression is not
    certified on ``data.box`` (:func:`~parsimony.symbolic._intervals.admissible`: its interval
    enclosure over the box is undefined, unbounded or outside the box's bounds).
    """
    # every field read once, before the branches (a record's field read in several places costs
    # reference counting each time: measurable in the hottest function)
    Xt, y, w, wsum, loss_kind, tau = data.Xt, data.y, data.w, data.wsum, data.loss_kind, data.tau
    kind = eval_tree(ops, feats, vals, length, Xt, ws)
    if kind == KIND_SCALAR:
        total = loss_of_scalar(ws.sval[0], y, w, loss_kind, tau)
    elif kind == KIND_FEATURE:
        total = loss_of_rows(Xt[ws.ref[0]], y, w, loss_kind, tau)
    else:
        total = loss_of_rows(ws.buf[ws.row[0]], y, w, loss_kind, tau)
    loss = total / wsum
    if not (loss < np.inf):  # NaN or inf
        return np.inf
    if not admissible(ops, feats, vals, length, data.box):
        return np.inf
    return loss
