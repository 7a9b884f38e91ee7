"""Shared helpers for the SQR tests: a NumPy reference evaluator (the oracle) and LP optima."""

from __future__ import annotations

import numpy as np

from parsimony.symbolic import _expressions as E
from parsimony.symbolic._evaluator import evaluate, make_workspace

ALL_BINARY = np.array([E.ADD, E.SUB, E.MUL, E.DIV, E.POW], dtype=np.int64)
ALL_UNARY = np.array([E.SQUARE, E.CUBE, E.SQRT, E.EXP, E.LOG, E.SIN, E.COS, E.ABS, E.NEG], dtype=np.int64)
WEIGHTS = np.ones(E.N_OPCODES, dtype=np.int64)


def predict_tree(model, X):
    """A postfix ``(ops, feats, vals)`` model evaluated on the rows of ``X`` by the package's kernel."""
    ops, feats, vals = model
    out = np.empty(len(X))
    evaluate(ops, feats, vals, len(ops), np.ascontiguousarray(X.T), make_workspace(len(ops), len(X)), out)
    return out


def stage_losses(stage, X, y):
    """The least training loss of a tiny fit (one short iteration) with the seeder ``stage`` alone,
    and with no seeder: what the stage alone puts on the front."""
    from parsimony.symbolic import SymbolicQuantileRegressor

    kw = dict(niterations=1, populations=2, population_size=10, ncycles_per_iteration=10, random_state=0,
              progress=False)
    return tuple(SymbolicQuantileRegressor(stages=stages, **kw).fit(X, y).equations_.loss.min()
                 for stages in ((stage,), ()))


def reference_eval(ops, feats, vals, X, return_tame=False):
    """Evaluate a postfix expression with plain NumPy (the oracle).

    With ``return_tame`` also return a row mask of where every intermediate value stays within
    1e4 in magnitude: elsewhere the result can be ill-conditioned (e.g. cos of a huge power),
    so one rounding difference upstream changes it completely.
    """
    tame = np.ones(X.shape[0], dtype=bool)
    unary = {E.SQUARE: np.square, E.CUBE: lambda a: a * a * a, E.SQRT: np.sqrt, E.EXP: np.exp, E.LOG: np.log,
             E.SIN: np.sin, E.COS: np.cos, E.ABS: np.abs, E.NEG: np.negative}
    binary = {E.ADD: np.add, E.SUB: np.subtract, E.MUL: np.multiply, E.DIV: np.divide, E.POW: np.power}
    stack = []
    n = X.shape[0]
    with np.errstate(all="ignore"):
        for op, f, v in zip(ops, feats, vals):
            if op == E.CONST:
                stack.append(np.full(n, v))
            elif op == E.VAR:
                stack.append(X[:, f].astype(float))
            elif E.ARITY[op] == 1:
                stack.append(unary[op](stack.pop()))
            else:
                b, a = stack.pop(), stack.pop()
                stack.append(binary[op](a, b))
            tame &= np.abs(stack[-1]) <= 1e4
    return (stack[-1], tame) if return_tame else stack[-1]


def lp_pinball_optimum(cols, y, w, tau):
    """min over (a, b) of sum w rho_tau(y - a - cols' b) as an LP (HiGHS) with free (a, b) = (plus - minus)."""
    from scipy.optimize import linprog

    k, n = cols.shape
    design = np.c_[np.ones(n), cols.T]
    p = k + 1
    cost = np.r_[np.zeros(2 * p), tau * w, (1 - tau) * w]
    equality = np.c_[design, -design, np.eye(n), -np.eye(n)]
    return linprog(cost, A_eq=equality, b_eq=y, bounds=[(0, None)] * (2 * p + 2 * n), method="highs").fun
