"""The OSRT search's state: named records of plain arrays (numba passes them by reference,
fields by name) and the constants they hold."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._numba import njit
from ..losses import LOSS_SQUARED

UNLIMITED = 1 << 30
BOUND_NONE = 0
BOUND_EQUIVALENT = 1
BOUND_KMEANS = 2
#: The k-Means bound computed by the caller (a Julia twin of ``cluster_costs``): the kernel lists the
#: subproblems whose bound it needs (``Frames.requests``) and returns NEED_BOUNDS; the caller
#: registers them with their bounds (``_register.store_bounds``) and resumes the search.
BOUND_HOST = 3


Problem = namedtuple("Problem", [
    "loss_kind",        # LOSS_SQUARED, LOSS_ABSOLUTE or LOSS_PINBALL
    "bound_kind",       # BOUND_NONE, BOUND_EQUIVALENT, BOUND_KMEANS or BOUND_HOST
    "tau",              # quantile level of the pinball loss (LOSS_PINBALL)
    "lam",              # penalty per leaf
    "unlimited",        # no depth limit (the remaining depth never decreases)
    "class_ones",       # (classes, 1 + width): per equivalence class the number of its features that
    #                     are 1, then those features ascending (padded)
    "feature_bits",     # (features, words) uint64: the classes where each feature is 1, as a bitset
    "class_weight",     # per class: weight, weighted sum, weighted sum of squares, weighted mean of
    "class_sum",        # the scaled targets, and the loss of the class about its own best constant
    "class_sumsq",
    "class_mean",
    "class_within",
    "row_class",        # rows sorted by target (absolute and pinball losses): class, target, weight
    "row_y",
    "row_w",
])
Problem.__doc__ = "The fixed data of a search: loss, bound, penalty and per-class / per-row statistics."


Memo = namedtuple("Memo", [
    "keys",      # (capacity, words) bitset of each stored subproblem
    "depth",     # its remaining depth (-1: empty slot)
    "lower",     # proven lower bound on its optimum
    "value",     # its exact optimum (inf: not solved)
    "feature",   # best split feature (-1: leaf, -2: unknown; with its children's, see pack_splits)
    "counters",  # [0] entries, [1] expansions, [2] bounds computed, [3] entry limit before growing
])
Memo.__doc__ = "The open-addressing table of subproblems (grown by the caller on NEED_SPACE)."


Frames = namedtuple("Frames", [
    "words",          # (frames, words) the subproblem of each frame
    "depth",          # its remaining depth
    "budget",         # solve strictly below this or prove a bound >= it
    "best",           # best objective found so far (starts at the leaf)
    "best_feature",   # its split feature (-1: the leaf)
    "n_candidates",   # number of candidate features (-1: not expanded yet)
    "position",       # candidate being solved
    "phase",          # 0: solving its false child, 1: its true child
    "false_value",    # exact value of the current candidate's false child (in phase 1)
    "order",          # (frames, features) candidate features, best bound first
    "false_bound",    # (frames, features) lower bound of each candidate's false child
    "true_bound",     # (frames, features) and of its true child
    "bounds_final",   # (frames, features) 1 once both children's bounds are computed
    "dropped",        # least bound of the features its expansion ruled out (inf: none)
    "top",            # [0] stack height (0 when the root has returned), [1] unused
    "parent_pairs",   # (features, features, 4) pair sums of the expanded depth-three frame (squared
    #                   loss, depth limit; else (1, 1, 4)): its terminal children's come from them
    "parent_kept",    # (1 + features,) their index: the features that split it (see _index_features)
    "parent_slot",    # (features,) and each feature's place in that list
    "parent_count",   # [0] its number of classes
    "grand_pairs",    # (features, features, 4) and (features, features) pair sums and their within-class
    "grand_within",   #   losses of the expanded depth-four frame (squared loss, depth limit >= 4, not too
    #                   many features; else (1, 1), and children of depth three get no lookahead bound):
    #                   the lookahead bounds of its depth-three children come from them
    "grand_kept",     # (1 + features,) their index (see _index_features)
    "grand_slot",     # (features,)
    "grand_count",    # [0] its number of classes
    "child_pairs",    # (2, features, features, 4) and (2, features, features): the pair sums of the false
    "child_within",   #   and true child of the depth-four frame's candidate ``child_key`` (its index),
    "child_key",      #   kept for their expansion; [side] the candidate feature (-1: none)
    "child_derived",  # [side] 1 when those sums are differences (the frame's minus the other child's)
    "requests",       # (2 features + 2, words) under BOUND_HOST: the new subproblems whose bounds the
    "request_depth",  #   caller is to compute, their remaining depths, the bounds the search proved of
    "request_known",  #   them already (a bound is stored at least that) and their number ([0])
    "n_requests",
])
Frames.__doc__ = "The explicit depth-first stack, so a paused search resumes where it stopped."


Buffers = namedtuple("Buffers", [
    "members", "buf_w", "buf_v",                                    # class lists, clustering and quantile input
    "feat_weight", "feat_sum", "feat_sumsq", "feat_within",         # per-feature sums on the 1 side
    "child", "other", "buf_c",                                      # three child bitsets
    "cand_feature", "cand_key", "cand_slot_false", "cand_slot_true",  # candidate splits
    "cand_false", "cand_true", "cand_known",
    "pairs", "pair_within",                                         # (features, features, 4) pair sums
    "cells", "cells_up",                                            # and the parts they score (_score_pairs)
    "kept", "slot", "active", "ones",                               # feature index, a class's features
])


def make_problem(loss_kind, bound_kind, lam, unlimited, class_features, feature_bits, class_weight, class_sum,
                 class_sumsq, class_mean, class_within, row_class=None, row_y=None, row_w=None, tau=0.5):
    """A :data:`Problem` with empty row arrays when the loss needs none."""
    if row_class is None:
        row_class, row_y, row_w = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    n_ones = class_features.sum(axis=1).astype(np.int64)
    ones = np.zeros((class_features.shape[0], 1 + int(n_ones.max(initial=0))), dtype=np.int64)
    ones[:, 0] = n_ones
    cls, feat = np.nonzero(class_features)  # by class, then feature
    ones[cls, 1 + np.arange(cls.size) - (np.cumsum(n_ones) - n_ones)[cls]] = feat
    return Problem(loss_kind, bound_kind, float(tau), float(lam), bool(unlimited), ones, feature_bits, class_weight,
                   class_sum, class_sumsq, class_mean, class_within, row_class, row_y, row_w)


def pair_width(problem):
    """Side of the pair-sum arrays: the number of features under the squared loss and a depth limit
    (the lookahead and the terminal solver use them), else 1."""
    n_feat = problem.feature_bits.shape[0]
    return n_feat if problem.loss_kind == LOSS_SQUARED and not problem.unlimited else 1


@njit
def new_buffers(problem, n_pairs):
    """Work buffers for one kernel call (pair sums of side ``n_pairs``, see :func:`pair_width`)."""
    n_feat = problem.feature_bits.shape[0]
    n_classes = problem.class_weight.shape[0]
    nw = problem.feature_bits.shape[1]
    buf_n = max(n_classes, problem.row_y.shape[0])
    return Buffers(
        np.empty(n_classes, dtype=np.int64), np.empty(buf_n + 1), np.empty(buf_n),  # buf_w: also cumulative weights
        np.empty(n_feat), np.empty(n_feat), np.empty(n_feat), np.empty(n_feat),
        np.empty(nw, dtype=np.uint64), np.empty(nw, dtype=np.uint64), np.empty(nw, dtype=np.uint64),
        np.empty(n_feat, dtype=np.int64), np.empty(n_feat), np.empty(n_feat, dtype=np.int64),
        np.empty(n_feat, dtype=np.int64), np.empty(n_feat), np.empty(n_feat), np.empty(n_feat, dtype=np.int64),
        np.empty((n_pairs, n_pairs, 4)), np.empty((n_pairs, n_pairs)), np.empty((n_pairs, n_pairs, 4)),
        np.empty((n_pairs, n_pairs, 4)),
        np.empty(n_feat + 1, dtype=np.int64), np.empty(n_feat, dtype=np.int64), np.empty(n_feat, dtype=np.int64),
        np.empty(n_feat, dtype=np.int64),
    )
