"""Losses over sampled classes: nce (noise-contrastive estimation) and sample_logits (the logits of sampled
softmax), with their samplers.

NOTE [ Sampling classes ]
Both ops draw classes with the op's ``seed`` when it is non-zero (a fresh generator each run, so every run
draws the same classes, as in fluid) and otherwise with the program's generator (ExecutionContext.random:
seeded by the Program's ``random_seed``, advancing run after run; numpy's global state when that is 0).
The draws are outputs (nce's SampleLabels, sample_logits' Samples and Probabilities), so a caller can see
them and the gradient reads them instead of drawing again. Samplers over classes [0, range]:
* uniform: every class 1 / (range + 1);
* log_uniform: ``floor(exp(u * log(range + 1))) - 1`` for u uniform in [0, 1), probability
  ``log((k + 2) / (k + 1)) / log(range + 1)``; its rare overflow past range is taken modulo range;
* custom_dist: Walker's alias method over CustomDistProbs (a column uniformly, then the column's own
  class with probability CustomDistAliasProbs, else its CustomDistAlias; an alias of -1 keeps the column).
nce draws ``num_neg_samples`` classes per sample (``range`` = num_total_classes - 1), unless the attr
``custom_neg_classes`` fixes them. sample_logits draws ``num_samples`` distinct classes shared by the batch
from log_uniform (``range`` = the number of classes); a draw it has already taken is drawn again, and the
probabilities become those of at least one hit in that many tries.
"""
import numpy as np

from .registry import register_grad, register_op

SAMPLERS = ("uniform", "log_uniform", "custom_dist")


def _generator(ctx, attrs):
    return np.random.RandomState(attrs["seed"]) if attrs["seed"] else ctx.random


def _log_uniform(rng, size, range_):
    value = np.exp(rng.uniform(size=size) * np.log(range_ + 1)).astype(np.int64) - 1
    return value % range_


def _log_uniform_probability(k, range_):
    return np.log((k + 2.0) / (k + 1.0)) / np.log(range_ + 1.0)


# --- nce -------------------------------------------------------------------------------------------------
def _nce_probability(attrs, samples, probs):
    """The noise probability of each sampled class under the op's sampler."""
    n_class = attrs["num_total_classes"]
    kind = attrs["sampler"]
    if kind == 0:
        return np.full(samples.shape, 1.0 / n_class)
    if kind == 1:
        return _log_uniform_probability(samples, n_class - 1)
    return np.asarray(probs, dtype=np.float64).reshape(-1)[samples]


def _nce_draw(ctx, attrs, n, probs, alias, alias_probs):
    n_class, k = attrs["num_total_classes"], attrs["num_neg_samples"]
    fixed = attrs["custom_neg_classes"]
    if fixed and len(fixed) != k:
        raise ValueError(f"nce: custom_neg_classes has {len(fixed)} classes, but num_neg_samples is {k}")
    if fixed:
        return np.tile(np.asarray(fixed, dtype=np.int64), (n, 1))
    rng, kind = _generator(ctx, attrs), attrs["sampler"]
    if kind == 0:
        return rng.randint(0, n_class, size=(n, k)).astype(np.int64)
    if kind == 1:
        return _log_uniform(rng, (n, k), n_class - 1)
    if kind != 2:
        raise ValueError(f"nce: unsupported sampler {kind} (0 uniform, 1 log_uniform, 2 custom_dist)")
    for slot, value in (("CustomDistProbs", probs), ("CustomDistAlias", alias), ("CustomDistAliasProbs", alias_probs)):
        if value is None or value.size != n_class:
            raise ValueError(f"nce: the custom_dist sampler needs Input({slot}) of {n_class} elements (one per class), "
                             f"got {None if value is None else value.size}")
    column = rng.randint(0, n_class, size=(n, k))
    alias_of = alias.reshape(-1)[column]
    keep = (rng.uniform(size=(n, k)) <= alias_probs.reshape(-1)[column]) | (alias_of < 0)
    return np.where(keep, column, alias_of).astype(np.int64)


def _nce_infer(attrs, x, label, w, *rest):
    width = attrs["num_neg_samples"] + (label.shape[1] if len(label.shape) == 2 else 1)
    return ((x.shape[0], 1), x.dtype), ((x.shape[0], width), x.dtype), ((x.shape[0], width), "int64")


def _row_weights(sample_weight, n):
    """The weights of the N rows, [N, 1]: fluid's kernel reads the first N values of SampleWeight, whatever its
    shape (a [5, 1] constant serves a batch of 1)."""
    flat = sample_weight.reshape(-1)
    if flat.size < n:
        raise ValueError(f"nce: Input(SampleWeight) has {flat.size} values for {n} rows of Input(Input)")
    return flat[:n].reshape(n, 1)


@register_op("nce", inputs=("Input", "Label", "Weight", "Bias", "SampleWeight", "CustomDistProbs", "CustomDistAlias",
                            "CustomDistAliasProbs"),
             outputs=("Cost", "SampleLogits", "SampleLabels"),
             optional=("Bias", "SampleWeight", "CustomDistProbs", "CustomDistAlias", "CustomDistAliasProbs"),
             no_grad_inputs=("Label", "SampleWeight", "CustomDistProbs", "CustomDistAlias", "CustomDistAliasProbs"),
             attrs={"num_total_classes": 1, "num_neg_samples": 10, "sampler": 0, "seed": 0, "is_sparse": False,
                    "remote_prefetch": False, "trainer_id": 0, "height_sections": [], "epmap": [], "table_names": [],
                    "custom_neg_classes": []},
             infer_shape=_nce_infer, context=True)
def _nce_forward(ctx, attrs, x, label, w, bias, sample_weight, probs, alias, alias_probs):
    """Cost [N, 1]: the true classes' and the sampled noise classes' logistic losses against the noise
    probability times num_neg_samples; SampleLogits holds sigmoid(w . x + b) per [true | noise] class."""
    n, n_class = x.shape[0], attrs["num_total_classes"]
    if w.shape[0] != n_class:
        raise ValueError(f"nce: Input(Weight) has {w.shape[0]} rows, but num_total_classes is {n_class}")
    labels = label.reshape(n, -1).astype(np.int64, copy=False) if label.shape[0] == n else None
    if labels is None:
        raise ValueError(f"nce: Input(Input) has {n} rows but Input(Label) {label.shape[0]} (shapes {list(x.shape)} "
                         f"and {list(label.shape)})")
    samples = np.concatenate([labels, _nce_draw(ctx, attrs, n, probs, alias, alias_probs)], axis=1)
    if ((samples < 0) | (samples >= n_class)).any():
        raise ValueError(f"nce: every sample label must be in [0, num_total_classes={n_class}), got "
                         f"{int(samples[(samples < 0) | (samples >= n_class)][0])} (Input(Label) or the noise classes)")
    logits = np.einsum("nkd,nd->nk", w[samples], x)
    if bias is not None:
        logits = logits + bias.reshape(-1)[samples]
    o = 1.0 / (1.0 + np.exp(-logits))
    noise = _nce_probability(attrs, samples, probs) * attrs["num_neg_samples"]
    true = np.arange(samples.shape[1]) < labels.shape[1]
    cost = np.where(true, -np.log(o / (o + noise)), -np.log(noise / (o + noise)))
    if sample_weight is not None:
        cost = cost * _row_weights(sample_weight, n)
    return cost.sum(axis=1, keepdims=True).astype(x.dtype), o.astype(x.dtype), samples


@register_grad("nce", reads=("Input", "Weight", "Bias", "SampleWeight", "CustomDistProbs", "SampleLogits",
                             "SampleLabels"))
def _nce_backward(ctx, attrs, ins, outs, douts, need):
    x, label, w, bias, sample_weight, probs = ins[:6]
    _, o, samples = outs
    n, d = x.shape
    noise = _nce_probability(attrs, samples, probs) * attrs["num_neg_samples"]
    true = np.arange(samples.shape[1]) < samples.shape[1] - attrs["num_neg_samples"]
    g = np.where(true, noise / (o + noise) * (o - 1), o * (1 - o) / (o + noise)) * douts[0].reshape(n, 1)
    if sample_weight is not None:
        g = g * _row_weights(sample_weight, n)
    g = g.astype(x.dtype)
    dx = np.einsum("nk,nkd->nd", g, w[samples]) if need[0] else None
    dw = db = None
    if need[2]:
        dw = np.zeros_like(w)
        np.add.at(dw, samples.reshape(-1), (g[:, :, None] * x[:, None, :]).reshape(-1, d))
    if bias is not None and need[3]:
        db = np.bincount(samples.reshape(-1), g.reshape(-1), minlength=bias.size).reshape(bias.shape).astype(bias.dtype)
    return dx, None, dw, db, None, None, None, None


# --- sample_logits --------------------------------------------------------------------------------------------
def _distinct_draws(rng, count, n_class):
    """``count`` distinct log-uniform classes in the order first drawn, and how many draws that took."""
    if count > n_class:
        raise ValueError(f"sample_logits: num_samples ({count}) must not exceed the number of classes ({n_class})")
    draws = np.empty(0, dtype=np.int64)
    while True:
        draws = np.concatenate([draws, _log_uniform(rng, max(2 * count, 16), n_class)])
        values, first = np.unique(draws, return_index=True)
        if len(values) >= count:
            order = np.sort(first)[:count]
            return draws[order], int(order[-1]) + 1 if count else 0


def _sample_logits_infer(attrs, logits, labels, *rest):
    n, width = logits.shape[0], labels.shape[1] + attrs["num_samples"]
    return (((n, width), "int64"), ((n, width), logits.dtype), (logits.shape, logits.dtype),
            (labels.shape, "int64"), ((n, width), logits.dtype), ((n, labels.shape[1]), "int64"))


@register_op("sample_logits", inputs=("Logits", "Labels", "CustomizedSamples", "CustomizedProbabilities"),
             outputs=("Samples", "Probabilities", "LogitsDim", "LabelsDim", "SampledLogits", "SampledLabels"),
             optional=("CustomizedSamples", "CustomizedProbabilities"),
             no_grad_inputs=("Labels", "CustomizedSamples", "CustomizedProbabilities"),
             attrs={"use_customized_samples": False, "uniq": True, "remove_accidental_hits": True, "num_samples": 1,
                    "seed": 0},
             infer_shape=_sample_logits_infer, context=True)
def _sample_logits_forward(ctx, attrs, logits, labels, custom_samples, custom_probs):
    """SampledLogits [N, num_true + num_samples]: the logits of the true and the sampled classes minus the log
    of their sampling probabilities; a sampled class that is one of the row's true classes loses 1e20."""
    n, n_class = logits.shape
    labels = labels.astype(np.int64, copy=False)
    num_true = labels.shape[1]
    if attrs["use_customized_samples"]:
        if custom_samples is None or custom_probs is None:
            raise ValueError("sample_logits: use_customized_samples needs Input(CustomizedSamples) and "
                             "Input(CustomizedProbabilities)")
        samples, probs = custom_samples.astype(np.int64, copy=False), custom_probs
    else:
        drawn, tries = _distinct_draws(_generator(ctx, attrs), attrs["num_samples"], n_class)
        samples = np.concatenate([labels, np.broadcast_to(drawn, (n, len(drawn)))], axis=1)
        p = _log_uniform_probability(samples, n_class)
        k = attrs["num_samples"]
        probs = (p * k if tries == k else -np.expm1(tries * np.log1p(-p))).astype(logits.dtype)
    if samples.shape[0] != n or ((samples < 0) | (samples >= n_class)).any():
        raise ValueError(f"sample_logits: the samples must be [N={n}, num_true + num_samples] classes in "
                         f"[0, {n_class}), got shape {list(samples.shape)}")
    sampled = np.take_along_axis(logits, samples, axis=1)
    if attrs["remove_accidental_hits"]:
        hits = (samples[:, num_true:, None] == labels[:, None, :]).any(axis=2)
        sampled[:, num_true:] -= np.where(hits, 1e20, 0).astype(sampled.dtype)
    with np.errstate(divide="ignore"):
        sampled = sampled - np.log(probs)
    sampled = np.where(np.isinf(sampled), np.copysign(1e20, sampled), sampled).astype(logits.dtype)
    sampled_labels = np.broadcast_to(np.arange(num_true, dtype=np.int64), (n, num_true)).copy()
    return samples, probs, None, None, sampled, sampled_labels


@register_grad("sample_logits", reads=("Logits", "Samples"))
def _sample_logits_backward(ctx, attrs, ins, outs, douts, need):
    logits, samples, dsampled = ins[0], outs[0], douts[4]
    dlogits = np.zeros_like(logits)
    np.add.at(dlogits, (np.arange(len(samples))[:, None], samples), dsampled)
    return dlogits, None, None, None
