"""Regularized evolution over flat-array expressions (numba kernels).

One call of :func:`evolve_population` runs one iteration of one population: ``ncycles``
cycles of tournament selection, mutation or crossover and age-based replacement (the oldest
member dies), then simplification and, with some probability per member, constant
optimisation. Every population owns its arrays and its random state, so populations can run
on any thread in any order and give the same result; the orchestration in ``_search.py`` then
merges the per-population halls of fame and migrates members at deterministic sync points.

Mutations follow PySR's set: mutate a constant, mutate an operator, mutate a feature, swap
operands, add a node (at the root or at a leaf), insert a node, delete a node, simplify,
randomize, do nothing; plus subtree crossover. All mutations are splices of postfix arrays into
scratch buffers. New feature leaves are drawn from a given distribution over the features
(uniform, or leaning to the features most rank-correlated with the target: ``_search.py``).
Beyond PySR, every new candidate ``f`` is offered its loss-optimal additive constant (a weighted
quantile of its residuals for the pinball loss, :func:`free_offset`), so a promising shape is not
lost to a wrong level before constant optimisation reaches it; with linear scaling on, its
loss-optimal line ``a + b f`` too (scale by weighted least squares), so shapes are judged
whatever their scale.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .._numba import argsort, njit
from .._loss_kernels import loss_of_rows, lower_quantile_position
from ..losses import LOSS_PINBALL, LOSS_SQUARED
from ._evaluator import binary_scalar, last_rows, tree_loss, unary_scalar
from ._expressions import (
    ADD, ARITY, CONST, DIV, MUL, N_OPCODES, NEG, POW, SUB, VAR,
)
from ._optimize import optimize_constants
from ._random import new_state, normal, randint, uniform

# mutation kinds (index into the mutation weight vector)
(M_CONSTANT, M_OPERATOR, M_SWAP, M_ADD, M_INSERT, M_DELETE, M_SIMPLIFY, M_RANDOMIZE,
 M_NOTHING, M_FEATURE) = range(10)
MUTATION_NAMES = ("mutate_constant", "mutate_operator", "swap_operands", "add_node", "insert_node",
                  "delete_node", "simplify", "randomize", "do_nothing", "mutate_feature")


# ----------------------------------------------------------------------------------------------
# records (named tuples: numba passes them to kernels, fields by name)
# ----------------------------------------------------------------------------------------------
KernelSettings = namedtuple("KernelSettings", [
    "maxsize",                      # int: largest complexity of an expression
    "ncycles_per_iteration",        # int: cycles of one evolve_population call
    "tournament_selection_n",       # int: members sampled per tournament
    "tournament_selection_p",       # float: chance that the best of the sample wins (then the next...)
    "crossover_probability",        # float
    "parsimony",                    # float: cost per unit of complexity, relative to the baseline
    "adaptive_parsimony_scaling",   # float: weight of the complexity frequencies in tournaments
    "optimize_probability",         # float: chance per member per iteration of a constant optimisation
    "optimizer_evaluations",        # int: its evaluations per Nelder-Mead run
    "optimizer_nrestarts",          # int: and its restarts
    "perturbation_factor",          # float: scale of a constant mutation
    "should_simplify",              # bool: simplify every member once per iteration
    "baseline",                     # float: loss of the best constant (the unit of losses in costs)
    "free_offset",                  # bool: offer every candidate its loss-optimal offset (free_offset)
    "linear_scaling",               # bool: and its loss-optimal line a + b f
])
KernelSettings.__doc__ = "The settings the kernels read (:func:`kernel_settings`)."

Grammar = namedtuple("Grammar", [
    "binops",       # opcodes of the binary operators
    "unops",        # and of the unary ones
    "weights",      # per opcode, the complexity of a token
    "feature_cdf",  # running sum of the probabilities with which a new feature leaf draws each feature
])
Grammar.__doc__ = "What expressions are built from."

Search = namedtuple("Search", [
    "grammar",           # Grammar
    "mutation_weights",  # per mutation kind (M_*), its relative frequency
    "settings",          # KernelSettings
    "freq_global",       # per complexity, its frequency in every population up to the last sync point
])
Search.__doc__ = "What every population of a search shares: read, never written, by the kernels."

HallOfFame = namedtuple("HallOfFame", [
    "ops", "feats", "vals",  # (maxsize + 1, max_length) per complexity, the best expression found
    "length",                # its number of nodes
    "loss",                  # and its loss (inf: none yet)
])
HallOfFame.__doc__ = "Per complexity, the best expression one population has found."

Population = namedtuple("Population", [
    "ops", "feats", "vals",  # (members, max_length) every member's expression
    "length",                # its number of nodes
    "loss",                  # its loss
    "complexity",            # its complexity
    "birth",                 # its birth number (the oldest member dies first)
    "births",                # [0]: the next birth number
    "state",                 # the population's random state
    "freq_local",            # per complexity, how many candidates entered it since the last sync point
    "hof",                   # the HallOfFame its candidates are offered to
])
Population.__doc__ = "One population and what it owns: the kernels change only these arrays."

EvolutionBuffers = namedtuple("EvolutionBuffers", [
    "child",            # (ops, feats, vals) of cap nodes: the candidate being built
    "spare",            # (ops, feats, vals) of cap nodes: scratch of the mutations
    "cap",              # their capacity
    "max_length",       # nodes a population member holds
    "tournament_idx",   # (members,) a tournament's sample
    "tournament_cost",  # (members,) and its costs
    "resid",            # (rows,) residuals of the free offset (empty when it is off)
])
EvolutionBuffers.__doc__ = "The working buffers of one init_population or evolve_population call (:func:`_buffers`)."


def kernel_settings(maxsize, baseline, *, ncycles_per_iteration=0, tournament_selection_n=0,
                    tournament_selection_p=0.0, crossover_probability=0.0, parsimony=0.0,
                    adaptive_parsimony_scaling=0.0, optimize_probability=0.0, optimizer_evaluations=0,
                    optimizer_nrestarts=0, perturbation_factor=0.0, should_simplify=False, free_offset=False,
                    linear_scaling=False) -> KernelSettings:
    """A :data:`KernelSettings` with each field of the type the kernels are compiled for (the
    settings a caller leaves out are off)."""
    return KernelSettings(
        int(maxsize), int(ncycles_per_iteration), int(tournament_selection_n), float(tournament_selection_p),
        float(crossover_probability), float(parsimony), float(adaptive_parsimony_scaling),
        float(optimize_probability), int(optimizer_evaluations), int(optimizer_nrestarts),
        float(perturbation_factor), bool(should_simplify), float(baseline), bool(free_offset), bool(linear_scaling))


# ------------------------------------------------------------------------------ tree helpers
@njit
def subtree_start(ops, end):
    """Index of the first node of the subtree whose root is at ``end``."""
    need = 1
    j = end
    while True:
        need += ARITY[ops[j]] - 1
        if need == 0:
            return j
        j -= 1


@njit
def tree_complexity(ops, length, weights):
    total = 0
    for i in range(length):
        total += weights[ops[i]]
    return total


@njit
def _copy(src, s, e, dst, at):
    """Copy nodes ``s..e-1`` of the expression ``src = (ops, feats, vals)`` to position ``at`` of ``dst``."""
    src_ops, src_feats, src_vals = src
    dst_ops, dst_feats, dst_vals = dst
    for t in range(e - s):
        dst_ops[at + t] = src_ops[s + t]
        dst_feats[at + t] = src_feats[s + t]
        dst_vals[at + t] = src_vals[s + t]


@njit
def _set(ops, feats, vals, at, op, feat, val):
    ops[at] = op
    feats[at] = feat
    vals[at] = val


@njit
def sample_feature(state, feature_cdf):
    """A feature index drawn with the probabilities whose running sum is ``feature_cdf``."""
    u = uniform(state) * feature_cdf[-1]
    lo, hi = 0, feature_cdf.shape[0] - 1  # the first j with feature_cdf[j] > u (the last if none)
    while lo < hi:
        mid = (lo + hi) // 2
        if feature_cdf[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit
def _random_leaf(out, at, state, feature_cdf):
    """Write a random leaf (a constant or a feature, even odds) at node ``at`` of ``out``."""
    ops, feats, vals = out
    if uniform(state) < 0.5:
        _set(ops, feats, vals, at, CONST, 0, normal(state))
    else:
        _set(ops, feats, vals, at, VAR, sample_feature(state, feature_cdf), 0.0)


@njit
def _random_operator(state, grammar):
    binops, unops = grammar.binops, grammar.unops
    nb = binops.shape[0]
    nu = unops.shape[0]
    k = randint(state, nb + nu)
    return binops[k] if k < nb else unops[k - nb]


@njit
def _nth(ops, length, mode, n):
    """Position of the n-th node of a kind: 0 constants, 1 operators, 2 binary, 3 leaves, 4 any,
    5 features."""
    count = 0
    for i in range(length):
        a = ARITY[ops[i]]
        hit = ((mode == 0 and ops[i] == CONST) or (mode == 1 and a > 0) or (mode == 2 and a == 2)
               or (mode == 3 and a == 0) or mode == 4 or (mode == 5 and ops[i] == VAR))
        if hit:
            if count == n:
                return i
            count += 1
    return -1


@njit
def _count(ops, length, mode):
    count = 0
    for i in range(length):
        a = ARITY[ops[i]]
        if ((mode == 0 and ops[i] == CONST) or (mode == 1 and a > 0) or (mode == 2 and a == 2)
                or (mode == 3 and a == 0) or mode == 4 or (mode == 5 and ops[i] == VAR)):
            count += 1
    return count


# ---------------------------------------------------------------------------------- mutations
# Each writes a mutation of ``parent = (ops, feats, vals)`` (its first ``length`` nodes) into
# ``out`` (arrays of ``cap`` nodes) and returns the new length, or -1 when it does not apply.
@njit(error_model="numpy")
def _mutate_constant(parent, length, out, state, perturbation):
    ops = parent[0]
    n = _count(ops, length, 0)
    if n == 0:
        return -1
    i = _nth(ops, length, 0, randint(state, n))
    _copy(parent, 0, length, out, 0)
    o_vals = out[2]
    max_change = perturbation + 1.1
    factor = max_change ** uniform(state)
    if uniform(state) < 0.5:
        o_vals[i] *= factor
    else:
        o_vals[i] /= factor
    if uniform(state) < 0.01:
        o_vals[i] = -o_vals[i]
    return length


@njit
def _mutate_operator(parent, length, out, state, grammar):
    ops = parent[0]
    n = _count(ops, length, 1)
    if n == 0:
        return -1
    i = _nth(ops, length, 1, randint(state, n))
    choices = grammar.binops if ARITY[ops[i]] == 2 else grammar.unops
    if choices.shape[0] < 2:
        return -1
    _copy(parent, 0, length, out, 0)
    out[0][i] = choices[randint(state, choices.shape[0])]
    return length


@njit
def _mutate_feature(parent, length, out, state, grammar):
    """Point one feature leaf at another feature (the mutation fails if the draw repeats it)."""
    ops, feats, _ = parent
    n = _count(ops, length, 5)
    if n == 0:
        return -1
    i = _nth(ops, length, 5, randint(state, n))
    j = sample_feature(state, grammar.feature_cdf)
    if j == feats[i]:
        return -1
    _copy(parent, 0, length, out, 0)
    out[1][i] = j
    return length


@njit
def _swap_operands(parent, length, out, state):
    ops = parent[0]
    n = _count(ops, length, 2)
    if n == 0:
        return -1
    i = _nth(ops, length, 2, randint(state, n))
    right = subtree_start(ops, i - 1)
    left = subtree_start(ops, right - 1)
    _copy(parent, 0, left, out, 0)
    _copy(parent, right, i, out, left)
    _copy(parent, left, right, out, left + i - right)
    _copy(parent, i, length, out, i)
    return length


@njit
def _wrap_subtree(parent, length, s, e, out, cap, state, grammar, new_leaves):
    """Put a random operator above nodes ``s..e``; with ``new_leaves`` the subtree is replaced
    by fresh random leaves (PySR's append at a leaf), otherwise it becomes an operand."""
    op = _random_operator(state, grammar)
    feature_cdf = grammar.feature_cdf
    arity = ARITY[op]
    if new_leaves:
        new_length = length - (e - s + 1) + arity + 1
    else:
        new_length = length + arity
    if new_length > cap:
        return -1
    _copy(parent, 0, s, out, 0)
    at = s
    if new_leaves:
        for _ in range(arity):
            _random_leaf(out, at, state, feature_cdf)
            at += 1
    elif arity == 1 or uniform(state) < 0.5:  # subtree on the left (or the only operand)
        _copy(parent, s, e + 1, out, at)
        at += e - s + 1
        if arity == 2:
            _random_leaf(out, at, state, feature_cdf)
            at += 1
    else:
        _random_leaf(out, at, state, feature_cdf)
        at += 1
        _copy(parent, s, e + 1, out, at)
        at += e - s + 1
    _set(out[0], out[1], out[2], at, op, 0, 0.0)
    at += 1
    _copy(parent, e + 1, length, out, at)
    return new_length


@njit
def _add_node(parent, length, out, cap, state, grammar):
    if uniform(state) < 0.5:  # prepend at the root
        return _wrap_subtree(parent, length, 0, length - 1, out, cap, state, grammar, False)
    ops = parent[0]
    n = _count(ops, length, 3)
    i = _nth(ops, length, 3, randint(state, n))
    return _wrap_subtree(parent, length, i, i, out, cap, state, grammar, True)


@njit
def _insert_node(parent, length, out, cap, state, grammar):
    i = randint(state, length)
    return _wrap_subtree(parent, length, subtree_start(parent[0], i), i, out, cap, state, grammar, False)


@njit
def _delete_node(parent, length, out, state):
    ops = parent[0]
    n = _count(ops, length, 1)
    if n == 0:
        return -1
    i = _nth(ops, length, 1, randint(state, n))
    s = subtree_start(ops, i)
    if ARITY[ops[i]] == 1 or uniform(state) < 0.5:
        cs, ce = subtree_start(ops, i - 1), i - 1  # the (right) child
    else:
        ce = subtree_start(ops, i - 1) - 1  # the left child
        cs = subtree_start(ops, ce)
    _copy(parent, 0, s, out, 0)
    _copy(parent, cs, ce + 1, out, s)
    _copy(parent, i + 1, length, out, s + ce - cs + 1)
    return length - (i - s + 1) + (ce - cs + 1)


@njit
def random_tree(out, spare, cap, target_complexity, state, grammar):
    """A random expression grown in ``out`` by appending operators at random leaves, up to a
    complexity (``spare``: scratch arrays of ``cap`` nodes, like ``out``); returns its length."""
    out_ops, spare_ops, weights = out[0], spare[0], grammar.weights  # read once, not per step
    _random_leaf(out, 0, state, grammar.feature_cdf)
    length = 1
    for _ in range(4 * target_complexity):
        n = _count(out_ops, length, 3)
        i = _nth(out_ops, length, 3, randint(state, n))
        new = _wrap_subtree(out, length, i, i, spare, cap, state, grammar, True)
        if new < 0 or tree_complexity(spare_ops, new, weights) > target_complexity:
            break
        _copy(spare, 0, new, out, 0)
        length = new
    return length


def random_expressions(count, n_features, max_complexity=15, seed=0, binops=None, unops=None):
    """``count`` random postfix expressions as (ops, feats, vals) triples of :func:`random_tree`,
    each of a complexity drawn in [1, ``max_complexity``] (unit token weights) over ``binops`` and
    ``unops`` (default: every operator); what the tests and the benchmarks fit and evaluate."""
    binops = np.flatnonzero(ARITY == 2).astype(np.int64) if binops is None else binops
    unops = np.flatnonzero(ARITY == 1).astype(np.int64) if unops is None else unops
    grammar = Grammar(binops, unops, np.ones(N_OPCODES, dtype=np.int64), np.arange(1.0, n_features + 1))
    state, rng, cap = new_state(seed), np.random.default_rng(seed), 2 * max_complexity + 4
    out = []
    for _ in range(count):
        tree = (np.zeros(cap, np.int64), np.zeros(cap, np.int64), np.zeros(cap))
        spare = (np.zeros(cap, np.int64), np.zeros(cap, np.int64), np.zeros(cap))
        n = random_tree(tree, spare, cap, int(rng.integers(1, max_complexity + 1)), state, grammar)
        out.append(tuple(a[:n].copy() for a in tree))
    return out


@njit
def _crossover(a, a_len, b, b_len, out, cap, state):
    """Replace a random subtree of the expression ``a`` by a random subtree of ``b``."""
    i = randint(state, a_len)
    si = subtree_start(a[0], i)
    j = randint(state, b_len)
    sj = subtree_start(b[0], j)
    new_length = a_len - (i - si + 1) + (j - sj + 1)
    if new_length > cap:
        return -1
    _copy(a, 0, si, out, 0)
    _copy(b, sj, j + 1, out, si)
    _copy(a, i + 1, a_len, out, si + j - sj + 1)
    return new_length


# ----------------------------------------------------------------------------- simplification
@njit
def _same_subtree(ops, feats, vals, a0, a1, b0, b1):
    if a1 - a0 != b1 - b0:
        return False
    for t in range(a1 - a0 + 1):
        op = ops[a0 + t]
        if op != ops[b0 + t]:
            return False
        if op == VAR and feats[a0 + t] != feats[b0 + t]:
            return False
        if op == CONST and vals[a0 + t] != vals[b0 + t]:
            return False
    return True


@njit
def _drop_range(ops, feats, vals, s, e, m):
    """Remove nodes ``s..e-1`` of a sequence of length ``m``; return the new length."""
    for t in range(e, m):
        ops[t - (e - s)] = ops[t]
        feats[t - (e - s)] = feats[t]
        vals[t - (e - s)] = vals[t]
    return m - (e - s)


FOLD_NONE, FOLD_DROP_OPERAND, FOLD_DROP_TERM = 0, 1, 2  # what _fold_sum_constant asks the caller to do


@njit
def _sum_constant(o_ops, root):
    """A constant term of the sum rooted at ``root``: ``(slot, sign)``, or ``(-1, 0.0)`` if none.

    Searches the terms reachable through + and - nodes (both operands; the right operand of a
    - flips the sign); ``sign`` is the term's sign in the sum.
    """
    nodes = np.empty(root + 1, dtype=np.int64)
    signs = np.empty(root + 1)
    nodes[0], signs[0] = root, 1.0
    top = 1
    while top > 0:
        top -= 1
        node, sign = nodes[top], signs[top]
        op = o_ops[node]
        if op == CONST:
            return node, sign
        if op == ADD or op == SUB:
            right_start = subtree_start(o_ops, node - 1)
            nodes[top], signs[top] = right_start - 1, sign  # the left operand
            nodes[top + 1], signs[top + 1] = node - 1, sign if op == ADD else -sign
            top += 2
    return -1, 0.0


@njit(error_model="numpy")
def _fold_sum_constant(o_ops, o_vals, sl, sr, m, op, lconst):
    """Fold the constant operand ``k`` of ``L op R`` (op + or -) into a constant term of the other side.

    ``T +- k`` and ``k + T``, where the sum ``T`` has a constant term ``c`` (anywhere among its
    terms joined by + and -), update ``c``, and ``k - (c +- B)`` becomes ``(k - c) -+ B``: the
    caller then drops ``k`` and its operator (``FOLD_DROP_OPERAND``). ``k - (A +- c)`` becomes
    ``(k -+ c) - A`` by updating ``k``: the caller then drops ``c`` and T's operator
    (``FOLD_DROP_TERM``). Returns ``FOLD_NONE``, changing nothing, when no rule applies or the
    folded constant is not finite.
    """
    s = 1.0 if op == ADD else -1.0
    troot = m - 1 if lconst else sr - 1
    t_start = sr if lconst else sl
    top = o_ops[troot]
    if troot == t_start or (top != ADD and top != SUB):
        return FOLD_NONE
    k = o_vals[sl] if lconst else o_vals[sr]
    if not lconst or s > 0:  # T +- k, or k + T: update a constant term of T in place
        slot, sign = _sum_constant(o_ops, troot)
        if slot < 0:
            return FOLD_NONE
        v = o_vals[slot] + sign * (s * k if not lconst else k)
        if not math.isfinite(v):
            return FOLD_NONE
        o_vals[slot] = v
        return FOLD_DROP_OPERAND
    st = 1.0 if top == ADD else -1.0
    b_start = subtree_start(o_ops, troot - 1)
    if b_start == troot - 1 and o_ops[b_start] == CONST:  # k - (A +- c) = (k -+ c) - A
        v = k - st * o_vals[b_start]
        if not math.isfinite(v):
            return FOLD_NONE
        o_vals[sl] = v
        return FOLD_DROP_TERM
    if b_start - 1 == t_start and o_ops[t_start] == CONST:  # k - (c +- B) = (k - c) -+ B
        v = k - o_vals[t_start]
        if not math.isfinite(v):
            return FOLD_NONE
        o_vals[t_start] = v
        o_ops[troot] = SUB if st > 0 else ADD
        return FOLD_DROP_OPERAND
    return FOLD_NONE


NOT_APPLIED = -1  # a simplification rule that does not apply returns this instead of a new length


@njit(error_model="numpy")
def _simplify_unary(op, o_ops, o_feats, o_vals, s, m):
    """Append unary ``op`` over the operand starting at ``s`` (output length ``m``): fold a
    constant operand, cancel ``-(-x)``; returns the new length."""
    if m - 1 == s and o_ops[s] == CONST:
        v = unary_scalar(op, o_vals[s])
        if math.isfinite(v):
            o_vals[s] = v
            return m
    if op == NEG and o_ops[m - 1] == NEG:
        return m - 1
    _set(o_ops, o_feats, o_vals, m, op, 0, 0.0)
    return m + 1


@njit(error_model="numpy")
def _fold_constants(op, o_vals, sl, sr, lconst, rconst):
    """``c1 op c2`` -> its value (when finite)."""
    if lconst and rconst:
        v = binary_scalar(op, o_vals[sl], o_vals[sr])
        if math.isfinite(v):
            o_vals[sl] = v
            return sl + 1
    return NOT_APPLIED


@njit
def _drop_neutral(op, o_ops, o_feats, o_vals, sl, sr, m, lconst, rconst):
    """``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``, ``1 * x``, ``x / 1``, ``x ^ 1`` -> ``x``;
    ``x * 0``, ``0 * x`` -> ``0``; ``x - x`` -> ``0``; ``x / x`` -> ``1``."""
    lv = o_vals[sl]
    rv = o_vals[sr]
    if rconst and ((rv == 0.0 and (op == ADD or op == SUB)) or
                   (rv == 1.0 and (op == MUL or op == DIV or op == POW))):
        return sr
    if lconst and ((lv == 0.0 and op == ADD) or (lv == 1.0 and op == MUL)):
        return _drop_range(o_ops, o_feats, o_vals, sl, sr, m)
    if op == MUL and ((lconst and lv == 0.0) or (rconst and rv == 0.0)):
        _set(o_ops, o_feats, o_vals, sl, CONST, 0, 0.0)
        return sl + 1
    if (op == SUB or op == DIV) and _same_subtree(o_ops, o_feats, o_vals, sl, sr - 1, sr, m - 1):
        _set(o_ops, o_feats, o_vals, sl, CONST, 0, 0.0 if op == SUB else 1.0)
        return sl + 1
    return NOT_APPLIED


@njit(error_model="numpy")
def _merge_sum_constant(op, o_ops, o_feats, o_vals, sl, sr, m, lconst, rconst):
    """A constant operand of ``+``/``-`` folds into a constant term of the other side
    (:func:`_fold_sum_constant`)."""
    if not ((op == ADD or op == SUB) and lconst != rconst):
        return NOT_APPLIED
    fold = _fold_sum_constant(o_ops, o_vals, sl, sr, m, op, lconst)
    if fold == FOLD_DROP_OPERAND:
        return sr if rconst else _drop_range(o_ops, o_feats, o_vals, sl, sr, m)
    if fold == FOLD_DROP_TERM:  # k - (A +- c) became k' - A
        _set(o_ops, o_feats, o_vals, m - 2, SUB, 0, 0.0)
        return m - 1
    return NOT_APPLIED


@njit(error_model="numpy")
def _merge_product_constant(op, o_ops, o_feats, o_vals, sl, sr, m, lconst, rconst):
    """``c1 * (x * c2)`` (either side, either order) -> ``x * (c1 * c2)``."""
    if not (op == MUL and lconst != rconst):
        return NOT_APPLIED
    root = m - 1 if lconst else sr - 1
    other_start = sr if lconst else sl
    if o_ops[root] != op:
        return NOT_APPLIED
    rc_start = subtree_start(o_ops, root - 1)
    target = -1
    if rc_start == root - 1 and o_ops[rc_start] == CONST:
        target = rc_start
    elif rc_start - 1 == other_start and o_ops[other_start] == CONST:
        target = other_start
    if target < 0:
        return NOT_APPLIED
    v = binary_scalar(op, o_vals[target], o_vals[sl] if lconst else o_vals[sr])
    if not math.isfinite(v):
        return NOT_APPLIED
    o_vals[target] = v
    return _drop_range(o_ops, o_feats, o_vals, sl, sr, m) if lconst else sr


@njit(error_model="numpy")
def _simplify_binary(op, o_ops, o_feats, o_vals, sl, sr, m):
    """Append binary ``op`` over the operands starting at ``sl`` and ``sr`` (output length ``m``),
    applying the first simplification rule that fits; returns the new length."""
    lconst = sr - 1 == sl and o_ops[sl] == CONST
    rconst = m - 1 == sr and o_ops[sr] == CONST
    new_m = _fold_constants(op, o_vals, sl, sr, lconst, rconst)
    if new_m == NOT_APPLIED:
        new_m = _drop_neutral(op, o_ops, o_feats, o_vals, sl, sr, m, lconst, rconst)
    if new_m == NOT_APPLIED:
        new_m = _merge_sum_constant(op, o_ops, o_feats, o_vals, sl, sr, m, lconst, rconst)
    if new_m == NOT_APPLIED:
        new_m = _merge_product_constant(op, o_ops, o_feats, o_vals, sl, sr, m, lconst, rconst)
    if new_m == NOT_APPLIED:
        _set(o_ops, o_feats, o_vals, m, op, 0, 0.0)
        new_m = m + 1
    return new_m


@njit(error_model="numpy")
def simplify_tree(ops, feats, vals, length, o_ops, o_feats, o_vals):
    """Constant folding and algebraic simplification in one bottom-up pass; returns the length.

    Each operator is appended to the output over its (already simplified) operands by
    :func:`_simplify_unary` or :func:`_simplify_binary`, whose rules are: an operator on
    constants becomes a constant (when finite); ``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``,
    ``1 * x``, ``x / 1``, ``x ^ 1`` -> ``x``; ``x * 0`` -> ``0``; ``x - x`` -> ``0``;
    ``x / x`` -> ``1``; ``-(-x)`` -> ``x``; a constant operand of ``+`` or ``-`` folds into a
    constant term of the other side (``(x - c1) + c2`` -> ``x - c``, :func:`_fold_sum_constant`);
    ``c1 * (x * c2)`` -> ``x * (c1 * c2)``. Values are preserved wherever the original is finite.
    """
    operand_starts = np.empty(length + 1, dtype=np.int64)  # a stack: where each operand begins
    depth = 0
    m = 0
    for k in range(length):
        op = ops[k]
        arity = ARITY[op]
        if arity == 0:
            operand_starts[depth] = m
            depth += 1
            _set(o_ops, o_feats, o_vals, m, op, feats[k], vals[k])
            m += 1
        elif arity == 1:
            m = _simplify_unary(op, o_ops, o_feats, o_vals, operand_starts[depth - 1], m)
        else:
            depth -= 1
            m = _simplify_binary(op, o_ops, o_feats, o_vals, operand_starts[depth - 1], operand_starts[depth], m)
    return m


# --------------------------------------------------------------------------------- evolution
@njit
def _tournament_winner(pop_loss, pop_cplx, state, freq, settings, scratch_idx, scratch_cost):
    """:func:`_tournament` on the arrays it reads."""
    size = pop_loss.shape[0]
    n = min(settings.tournament_selection_n, size)
    for i in range(size):
        scratch_idx[i] = i
    total = 0.0
    for c in range(freq.shape[0]):
        total += freq[c]
    for t in range(n):  # partial Fisher-Yates
        r = t + randint(state, size - t)
        scratch_idx[t], scratch_idx[r] = scratch_idx[r], scratch_idx[t]
        i = scratch_idx[t]
        c = pop_cplx[i]
        cost = pop_loss[i] / settings.baseline + settings.parsimony * c
        if total > 0:
            cost *= math.exp(settings.adaptive_parsimony_scaling * freq[c] / total)
        scratch_cost[t] = cost
    for t in range(1, n):  # sort the sample by cost
        j = t
        while j > 0 and scratch_cost[j] < scratch_cost[j - 1]:
            scratch_cost[j], scratch_cost[j - 1] = scratch_cost[j - 1], scratch_cost[j]
            scratch_idx[j], scratch_idx[j - 1] = scratch_idx[j - 1], scratch_idx[j]
            j -= 1
    p = settings.tournament_selection_p
    for t in range(n - 1):
        if uniform(state) < p:
            return scratch_idx[t]
    return scratch_idx[n - 1]


@njit(inline="always")  # (a call would count references to every array of the records)
def _tournament(population, freq, settings, buffers):
    """Index of the tournament winner among the population's members: sample, rank by adjusted
    cost, pick rank k w.p. p(1-p)^k."""
    return _tournament_winner(population.loss, population.complexity, population.state, freq, settings,
                              buffers.tournament_idx, buffers.tournament_cost)


@njit
def _oldest(pop_birth):
    best = 0
    for i in range(1, pop_birth.shape[0]):
        if pop_birth[i] < pop_birth[best]:
            best = i
    return best


@njit
def _update_hof(ops, feats, vals, length, loss, cplx, hof):
    """Enter the expression in the :data:`HallOfFame` ``hof`` when it is the best of its complexity."""
    if loss < hof.loss[cplx]:
        hof.loss[cplx] = loss
        hof.length[cplx] = length
        _copy((ops, feats, vals), 0, length, (hof.ops[cplx], hof.feats[cplx], hof.vals[cplx]), 0)


@njit(error_model="numpy")
def _mutate(kind, parent, length, child, spare, cap, state, search):
    """Write a mutation of kind ``kind`` of ``parent`` (its first ``length`` nodes) into ``child``
    (``spare`` is scratch); returns the child's length, -1 when the mutation failed."""
    grammar = search.grammar
    if kind == M_CONSTANT:
        return _mutate_constant(parent, length, child, state, search.settings.perturbation_factor)
    if kind == M_OPERATOR:
        return _mutate_operator(parent, length, child, state, grammar)
    if kind == M_FEATURE:
        return _mutate_feature(parent, length, child, state, grammar)
    if kind == M_SWAP:
        return _swap_operands(parent, length, child, state)
    if kind == M_ADD:
        return _add_node(parent, length, child, cap, state, grammar)
    if kind == M_INSERT:
        return _insert_node(parent, length, child, cap, state, grammar)
    if kind == M_DELETE:
        return _delete_node(parent, length, child, state)
    if kind == M_SIMPLIFY:
        return simplify_tree(parent[0], parent[1], parent[2], length, child[0], child[1], child[2])
    if kind == M_RANDOMIZE:
        target = 1 + randint(state, search.settings.maxsize)
        return random_tree(child, spare, cap, target, state, grammar)
    _copy(parent, 0, length, child, 0)
    return length


@njit
def _pick(weights, state):
    total = 0.0
    for w in weights:
        total += w
    u = uniform(state) * total
    for k in range(weights.shape[0]):
        u -= weights[k]
        if u < 0:
            return k
    return weights.shape[0] - 1


@njit(error_model="numpy")
def _accept(child, length, max_length, weights, maxsize):
    """Complexity of a candidate, or -1 when it breaks the size limits."""
    if length < 1 or length > max_length:
        return -1
    c = tree_complexity(child[0], length, weights)
    return c if c <= maxsize else -1


@njit(error_model="numpy", inline="always")  # (a call would count references to every array of the records)
def _enter(child, length, loss, cplx, population):
    """The candidate replaces the oldest member of the :data:`Population`, counts once in its
    complexity frequencies and enters its hall of fame when it is the best of its complexity."""
    birth, births = population.birth, population.births
    slot = _oldest(birth)
    _copy(child, 0, length, (population.ops[slot], population.feats[slot], population.vals[slot]), 0)
    population.length[slot] = length
    population.loss[slot] = loss
    population.complexity[slot] = cplx
    birth[slot] = births[0]
    births[0] += 1
    population.freq_local[cplx] += 1.0
    _update_hof(child[0], child[1], child[2], length, loss, cplx, population.hof)


@njit
def select_kth(a, n, k):
    """The ``k``-th smallest of ``a[:n]`` (0-based), by in-place quickselect."""
    lo = 0
    hi = n - 1
    while hi > lo:
        x, y, z = a[lo], a[(lo + hi) // 2], a[hi]
        pivot = max(min(x, y), min(max(x, y), z))  # median of three
        i = lo
        j = hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return a[k]
    return a[k]


@njit(error_model="numpy")
def optimal_offset(resid, data, ranks):
    """The constant ``b`` minimising the weighted loss of ``resid - b`` with the weights and loss
    of ``data``: the weighted mean for the squared loss, else the lower weighted quantile at the
    loss's level (:func:`~parsimony._loss_kernels.lower_quantile_position`). Reorders ``resid``
    when the weights are uniform (a selection, no sort; ``ranks`` holds 0, 1, ..., n: the
    cumulative weights of equal weights)."""
    n = resid.shape[0]
    w = data.w
    if data.loss_kind == LOSS_SQUARED:
        acc = 0.0
        for i in range(n):
            acc += w[i] * resid[i]
        return acc / data.wsum
    level = data.tau if data.loss_kind == LOSS_PINBALL else 0.5
    if data.uniform_weights:  # the rank alone decides
        return select_kth(resid, n, lower_quantile_position(ranks, 0, n, level))
    cum = np.empty(n + 1)  # cumulative weights of the residuals in increasing order
    cum[0] = 0.0
    order = argsort(resid)
    for i in range(n):
        cum[i + 1] = cum[i] + w[order[i]]
    return resid[order[lower_quantile_position(cum, 0, n, level)]]


LineForm = namedtuple("LineForm", ["add_slot", "sa", "sh", "h_root", "mul_slot"])
LineForm.__doc__ = "Where an expression already holds the constants of a line (:func:`_line_form`)."


@njit(error_model="numpy")
def _line_form(ops, length):
    """Where ``f`` already holds the constants of a line: ``f = sa * a0 + sh * h`` with ``h = c * g``.

    Returns the :data:`LineForm` ``(add_slot, sa, sh, h_root, mul_slot)``: ``add_slot`` is the
    position of ``a0`` when the root is ``+``/``-`` with a constant operand (else -1, ``h = f``), ``sa`` and ``sh``
    the signs of ``a0`` and of the other operand ``h`` (ending at ``h_root``), and ``mul_slot``
    the position of ``c`` when ``h`` is a product with a constant operand (else -1).
    """
    root = ops[length - 1]
    add_slot, sa, sh, h_start, h_root = -1, 1.0, 1.0, 0, length - 1
    if (root == ADD or root == SUB) and length >= 3:
        if ops[length - 2] == CONST:
            add_slot, h_root = length - 2, length - 3
            sa = 1.0 if root == ADD else -1.0
        elif ops[0] == CONST and subtree_start(ops, length - 2) == 1:
            add_slot, h_start, h_root = 0, 1, length - 2
            sh = 1.0 if root == ADD else -1.0
    mul_slot = -1
    if ops[h_root] == MUL and h_root - h_start >= 2:
        if ops[h_root - 1] == CONST:
            mul_slot = h_root - 1
        elif ops[h_start] == CONST and subtree_start(ops, h_root - 1) == h_start + 1:
            mul_slot = h_start
    return LineForm(add_slot, sa, sh, h_root, mul_slot)


@njit(error_model="numpy")
def least_squares_slope(f, y, w, wsum):
    """The weighted least-squares slope of ``y`` on ``f`` (NaN when ``f`` is constant)."""
    n = y.shape[0]
    mf = 0.0
    my = 0.0
    for i in range(n):
        mf += w[i] * f[i]
        my += w[i] * y[i]
    mf /= wsum
    my /= wsum
    sff = 0.0
    sfy = 0.0
    for i in range(n):
        d = f[i] - mf
        sff += w[i] * d * d
        sfy += w[i] * d * (y[i] - my)
    return sfy / sff if sff > 0 else np.nan


@njit(error_model="numpy")
def _offset_for_slope(rows, data, resid, ranks, b):
    """``(a, loss)``: the loss-optimal offset of ``b * f`` and the mean loss of ``f * b + a`` on
    ``data``, whose values are computed as the evaluator computes them (``resid`` is scratch,
    ``ranks`` those of :func:`optimal_offset`)."""
    y = data.y
    n = y.shape[0]
    for i in range(n):
        resid[i] = y[i] - b * rows[i]
    a = optimal_offset(resid, data, ranks)
    for i in range(n):
        resid[i] = rows[i] * b + a
    return a, loss_of_rows(resid, y, data.w, data.loss_kind, data.tau) / data.wsum


@njit(error_model="numpy")
def _put_line(child, length, a, b, form):
    """Rewrite ``f`` (``child``, its first ``length`` nodes, of :data:`LineForm` ``form``) as ``a + b * f``;
    returns the new length.

    Constants already in place absorb ``a`` and ``b``; a missing factor ``b`` is inserted
    after ``h`` and a missing offset appended at the root.
    """
    o_ops, o_feats, o_vals = child
    add_slot, sa, mul_slot, h_root = form.add_slot, form.sa, form.mul_slot, form.h_root
    if add_slot >= 0:  # a + b (sa a0 + sh h) = sa (sa a + b a0) + sh (b h)
        o_vals[add_slot] = sa * a + b * o_vals[add_slot]
    if b != 1.0:
        if mul_slot >= 0:
            o_vals[mul_slot] *= b
        else:
            for t in range(length - 1, h_root, -1):
                o_ops[t + 2], o_feats[t + 2], o_vals[t + 2] = o_ops[t], o_feats[t], o_vals[t]
            _set(o_ops, o_feats, o_vals, h_root + 1, CONST, 0, b)
            _set(o_ops, o_feats, o_vals, h_root + 2, MUL, 0, 0.0)
            length += 2
    if add_slot < 0:
        _set(o_ops, o_feats, o_vals, length, CONST, 0, a)
        _set(o_ops, o_feats, o_vals, length + 1, ADD, 0, 0.0)
        length += 2
    return length


@njit(error_model="numpy")
def free_offset(child, length, loss, cplx, max_length, data, ws, resid, weights, settings):
    """Give a just-evaluated candidate ``child = (ops, feats, vals)`` (its first ``length`` nodes,
    of loss ``loss`` and complexity ``cplx``, at most ``max_length`` nodes) its loss-optimal
    offset (and, with ``settings.linear_scaling``, scale) when that lowers its cost.

    The offset ``a`` of ``f + a`` is the loss-optimal constant (a weighted quantile of the
    residuals for the pinball loss). With linear scaling, ``a + b * f`` is tried too, with
    ``b`` the weighted least-squares slope and ``a`` its loss-optimal offset: an O(n)
    approximation of the exact pinball line that rewards a shape whatever its scale. The
    constants of ``f`` that already play these roles (``f = c * g + a0``, any order and sign)
    absorb them; missing ones are added as tokens, whose complexity counts: a change is kept
    when its loss gain outweighs the parsimony cost of the extra tokens (up to
    ``settings.maxsize``). Reads the candidate's values from ``ws`` (it must be the last
    expression evaluated); ``resid`` is scratch of one value per row. Returns ``(length, loss,
    cplx)`` of the (possibly) new candidate.
    """
    o_ops, o_feats, o_vals = child
    y = data.y
    rows, ranks = last_rows(data.Xt, ws), ws.ranks
    scaling = settings.linear_scaling
    if length < (1 if scaling else 2) or rows.shape[0] == 0 or not loss < np.inf:
        return length, loss, cplx
    form = _line_form(o_ops, length)
    add_slot, mul_slot = form.add_slot, form.mul_slot
    base, parsimony, maxsize = settings.baseline, settings.parsimony, settings.maxsize
    best_cost, best_a, best_b, best_loss, best_extra = loss / base, 0.0, np.nan, loss, 0
    for option in range(2 if scaling else 1):
        b = 1.0 if option == 0 else least_squares_slope(rows, y, data.w, data.wsum)
        if option == 1 and (b == 0.0 or b == 1.0 or not abs(b) < np.inf):
            break
        a, new_loss = _offset_for_slope(rows, data, resid, ranks, b)
        if (option == 0 and a == 0.0) or not abs(a) < np.inf:
            continue
        extra, nodes = 0, 0
        if add_slot < 0:
            extra, nodes = extra + weights[CONST] + weights[ADD], nodes + 2
        if b != 1.0 and mul_slot < 0:
            extra, nodes = extra + weights[CONST] + weights[MUL], nodes + 2
        if cplx + extra > maxsize or length + nodes > max_length:
            continue
        cost = new_loss / base + parsimony * extra
        if cost < best_cost:
            best_cost, best_a, best_b, best_loss, best_extra = cost, a, b, new_loss, extra
    if not best_b == best_b:  # NaN: nothing better
        return length, loss, cplx
    # moved constants give a + b f up to rounding, unless the move cancels large values
    largest = max(abs(best_a), abs(best_b * o_vals[add_slot]) if add_slot >= 0 else 0.0)
    for i in range(y.shape[0]):
        largest = max(largest, abs(best_b * rows[i]))
    exact = (add_slot >= 0 or (mul_slot >= 0 and best_b != 1.0)) and not largest < 1e6 * loss
    keep = length if exact else 0
    saved = (o_ops[:keep].copy(), o_feats[:keep].copy(), o_vals[:keep].copy())
    new_length = _put_line(child, length, best_a, best_b, form)
    if exact:
        best_loss = tree_loss(o_ops, o_feats, o_vals, new_length, data, ws)
        if not best_loss / base + parsimony * best_extra < loss / base:
            _copy(saved, 0, length, child, 0)
            return length, loss, cplx
    return new_length, best_loss, cplx + best_extra


@njit(error_model="numpy", inline="always")  # (a call would count references to every array of the records)
def _score_candidate(child, length, cplx, hof, data, ws, search, buffers):
    """Evaluate a new candidate; with the free offset on, offer it to the hall of fame ``hof`` and
    offer it its loss-optimal offset (:func:`free_offset`). Returns ``(length, loss, cplx)`` of
    what enters the population."""
    o_ops, o_feats, o_vals = child
    settings = search.settings
    loss = tree_loss(o_ops, o_feats, o_vals, length, data, ws)
    if settings.free_offset:
        _update_hof(o_ops, o_feats, o_vals, length, loss, cplx, hof)
        return free_offset(child, length, loss, cplx, buffers.max_length, data, ws, buffers.resid,
                           search.grammar.weights, settings)
    return length, loss, cplx


@njit
def _tree_buffers(cap):
    """Scratch ``(ops, feats, vals)`` arrays for one expression of up to ``cap`` nodes."""
    return np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64), np.empty(cap)


@njit
def _buffers(population, data, use_offset):
    """The :data:`EvolutionBuffers` of one call on ``population``: the candidate (``child``) and a
    spare expression, the tournament's sample and costs, the residuals of the free offset (when
    on, else empty)."""
    size, max_length = population.ops.shape[0], population.ops.shape[1]
    cap = 2 * max_length + 4
    return EvolutionBuffers(_tree_buffers(cap), _tree_buffers(cap), cap, max_length, np.empty(size, dtype=np.int64),
                            np.empty(size), np.empty(data.y.shape[0] if use_offset else 0))


@njit(error_model="numpy")
def init_population(population, data, ws, search):
    """Fill a :data:`Population` with random small expressions (at most 3 operators each) scored
    on ``data``, offering each to its hall of fame."""
    grammar, state, hof = search.grammar, population.state, population.hof
    pop_ops, pop_feats, pop_vals, pop_len = population.ops, population.feats, population.vals, population.length
    pop_loss, pop_cplx, birth, births = population.loss, population.complexity, population.birth, population.births
    weights = grammar.weights
    buffers = _buffers(population, data, False)
    child, spare, cap, max_length = buffers.child, buffers.spare, buffers.cap, buffers.max_length
    maxsize = search.settings.maxsize
    for i in range(pop_ops.shape[0]):
        cplx = -1
        while cplx < 0:
            target = 1 + randint(state, min(maxsize, 7))
            length = random_tree(child, spare, cap, target, state, grammar)
            cplx = _accept(child, length, max_length, weights, maxsize)
        loss = tree_loss(child[0], child[1], child[2], length, data, ws)
        _copy(child, 0, length, (pop_ops[i], pop_feats[i], pop_vals[i]), 0)
        pop_len[i] = length
        pop_loss[i] = loss
        pop_cplx[i] = cplx
        birth[i] = births[0]
        births[0] += 1
        _update_hof(child[0], child[1], child[2], length, loss, cplx, hof)


@njit(error_model="numpy", inline="always")  # (a call would count references to every array of the records)
def _crossover_step(population, freq, data, ws, search, buffers):
    """Two tournament winners swap subtrees; each valid child is scored and replaces the oldest
    member. Returns the evaluations used."""
    pop_ops, pop_feats, pop_vals, pop_len = population.ops, population.feats, population.vals, population.length
    settings, state, hof, weights = search.settings, population.state, population.hof, search.grammar.weights
    child, cap, max_length = buffers.child, buffers.cap, buffers.max_length
    a = _tournament(population, freq, settings, buffers)
    b = _tournament(population, freq, settings, buffers)
    evals = 0
    for child_index in range(2):
        x, y = (a, b) if child_index == 0 else (b, a)
        length = _crossover((pop_ops[x], pop_feats[x], pop_vals[x]), pop_len[x],
                            (pop_ops[y], pop_feats[y], pop_vals[y]), pop_len[y], child, cap, state)
        cplx = _accept(child, length, max_length, weights, settings.maxsize)
        if cplx < 0:
            continue
        length, loss, cplx = _score_candidate(child, length, cplx, hof, data, ws, search, buffers)
        evals += 1
        _enter(child, length, loss, cplx, population)
    return evals


@njit(error_model="numpy", inline="always")  # (a call would count references to every array of the records)
def _mutation_step(population, freq, data, ws, search, buffers):
    """A tournament winner is mutated (up to 10 tries for a valid child, else copied unchanged);
    the child replaces the oldest member. Returns the evaluations used."""
    pop_ops, pop_feats, pop_vals, pop_len = population.ops, population.feats, population.vals, population.length
    settings, state, weights = search.settings, population.state, search.grammar.weights
    mutation_weights = search.mutation_weights
    child, spare, cap, max_length = buffers.child, buffers.spare, buffers.cap, buffers.max_length
    parent = _tournament(population, freq, settings, buffers)
    p_len = pop_len[parent]
    cplx = -1
    kind = M_NOTHING
    length = p_len
    for _attempt in range(10):  # PySR skips failed mutations: try another one
        kind = _pick(mutation_weights, state)
        length = _mutate(kind, (pop_ops[parent], pop_feats[parent], pop_vals[parent]), p_len, child, spare, cap,
                         state, search)
        cplx = _accept(child, length, max_length, weights, settings.maxsize)
        if cplx >= 0:
            break
    if cplx < 0:
        length = p_len
        _copy((pop_ops[parent], pop_feats[parent], pop_vals[parent]), 0, p_len, child, 0)
        cplx = population.complexity[parent]
        kind = M_NOTHING
    evals = 0
    if kind == M_NOTHING:
        loss = population.loss[parent]
    else:
        length, loss, cplx = _score_candidate(child, length, cplx, population.hof, data, ws, search, buffers)
        evals = 1
    _enter(child, length, loss, cplx, population)
    return evals


@njit(error_model="numpy")
def _tidy_population(population, data, ws, search, buffers):
    """Simplify every member, optimise the constants of some (probability
    ``optimize_probability``), and offer each to the hall of fame. Returns the evaluations used."""
    pop_ops, pop_feats, pop_vals, pop_len = population.ops, population.feats, population.vals, population.length
    pop_loss, pop_cplx = population.loss, population.complexity
    settings, state, hof, weights = search.settings, population.state, population.hof, search.grammar.weights
    child = buffers.child
    evals = 0
    for i in range(pop_ops.shape[0]):
        length = pop_len[i]
        if settings.should_simplify:
            new_length = simplify_tree(pop_ops[i], pop_feats[i], pop_vals[i], length, child[0], child[1], child[2])
            if new_length < length:
                _copy(child, 0, new_length, (pop_ops[i], pop_feats[i], pop_vals[i]), 0)
                pop_len[i] = new_length
                pop_cplx[i] = tree_complexity(pop_ops[i], new_length, weights)
                pop_loss[i] = tree_loss(pop_ops[i], pop_feats[i], pop_vals[i], new_length, data, ws)
                evals += 1
        if uniform(state) < settings.optimize_probability and pop_loss[i] < np.inf:
            before = pop_loss[i]
            pop_loss[i] = optimize_constants(pop_ops[i], pop_feats[i], pop_vals[i], pop_len[i], data, ws, state, before,
                                             settings.optimizer_evaluations, settings.optimizer_nrestarts)
            evals += settings.optimizer_evaluations * (settings.optimizer_nrestarts + 1)
        _update_hof(pop_ops[i], pop_feats[i], pop_vals[i], pop_len[i], pop_loss[i], pop_cplx[i], hof)
    return evals


@njit(error_model="numpy")
def evolve_population(population, data, ws, search):
    """One iteration of regularized evolution of a :data:`Population` on ``data`` (``ws`` the
    evaluator's :data:`~parsimony.symbolic._evaluator.Workspace`, ``search`` the :data:`Search`);
    returns the evaluations used."""
    settings = search.settings
    buffers = _buffers(population, data, settings.free_offset)
    freq_global, freq_local, state = search.freq_global, population.freq_local, population.state
    freq = np.empty(freq_global.shape[0])
    n_tournament = max(settings.tournament_selection_n, 1)
    per_cycle = (population.ops.shape[0] + n_tournament - 1) // n_tournament
    evals = 0
    for _cycle in range(settings.ncycles_per_iteration):
        for c in range(freq.shape[0]):
            freq[c] = freq_global[c] + freq_local[c]
        for _ in range(per_cycle):
            if uniform(state) < settings.crossover_probability:
                evals += _crossover_step(population, freq, data, ws, search, buffers)
            else:
                evals += _mutation_step(population, freq, data, ws, search, buffers)
    return evals + _tidy_population(population, data, ws, search, buffers)
