"""Losses over many classes that look at a few per sample: hsigmoid (the classes on a tree path,
ops/hsigmoid.py), nce and sampled_softmax_with_cross_entropy (sampled classes, ops/sampled_loss.py)."""
import numpy as np

from ..initializer import NumpyArrayInitializer
from ..param_attr import ParamAttr
from .activation import check_variable_and_dtype
from .helper import LayerHelper
from .manip import one_hot

__all__ = ["hsigmoid", "nce", "sampled_softmax_with_cross_entropy"]


def hsigmoid(input, label, num_classes, param_attr=None, bias_attr=None, name=None, path_table=None, path_code=None,
             is_custom=False, is_sparse=False):
    """Hierarchical sigmoid loss [N, 1] of ``input`` [N, D] for int64 ``label`` [N, 1]: the default complete
    binary tree over ``num_classes`` classes (weight [num_classes - 1, D]), or with ``is_custom`` each sample's
    path rows ``path_table`` and bits ``path_code`` ([N, L], -1 after the path's end; weight [num_classes, D]).
    NOTE [ hsigmoid's paths ] in ops/hsigmoid.py. ``is_sparse`` is accepted; the gradient is dense."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "hsigmoid")
    check_variable_and_dtype(label, "label", ("int64",), "hsigmoid")
    helper = LayerHelper("hierarchical_sigmoid", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    dtype = input.dtype
    if (num_classes is None or num_classes < 2) and not is_custom:
        raise ValueError("num_classes must not be less than 2 with default tree")
    if not is_custom and (path_table is not None or path_code is not None):
        raise ValueError("only num_classes should be passed without custom tree")
    if is_custom and path_code is None:
        raise ValueError("path_code should not be None with custom tree")
    if is_custom and path_table is None:
        raise ValueError("path_table should not be None with custom tree")
    if is_custom and num_classes is None:
        raise ValueError("num_classes should not be None with custom tree")
    is_sparse = bool(is_sparse and is_custom)  # fluid drops sparse mode without a custom tree
    rows = num_classes if is_custom else num_classes - 1
    weights = helper.create_parameter(attr=helper.param_attr, shape=[rows, input.shape[1]], dtype=dtype)
    inputs = {"X": [input], "W": [weights], "Label": [label]}
    if is_custom:
        inputs.update(PathTable=[path_table], PathCode=[path_code])
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[rows, 1], dtype=dtype, is_bias=True)]
    out = helper.create_variable_for_type_inference(dtype)
    pre_out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="hierarchical_sigmoid", inputs=inputs,
                     outputs={"Out": [out], "PreOut": [pre_out], "W_Out": [weights]},
                     attrs={"num_classes": num_classes, "is_sparse": is_sparse, "remote_prefetch": is_sparse})
    return out


def _alias_table(probs):
    """Walker's alias table of ``probs`` (Vose's construction): (alias, alias_probs), alias -1 where a column
    holds only its own class. Built once per layer call, over the classes."""
    n = len(probs)
    scaled = np.asarray(probs, dtype=np.float64) * n
    alias, keep = np.full(n, -1, dtype=np.int32), np.ones(n, dtype=np.float32)
    small, large = [i for i in range(n) if scaled[i] < 1.0], [i for i in range(n) if scaled[i] > 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        keep[s], alias[s] = scaled[s], g
        scaled[g] -= 1.0 - scaled[s]
        if scaled[g] < 1.0:
            small.append(g)
        elif scaled[g] > 1.0:
            large.append(g)
    return alias, keep


def nce(input, label, num_total_classes, sample_weight=None, param_attr=None, bias_attr=None, num_neg_samples=None,
        name=None, sampler="uniform", custom_dist=None, seed=0, is_sparse=False):
    """Noise-contrastive estimation loss [N, 1] of ``input`` [N, D] for int64 ``label`` [N, num_true]: each true
    class against ``num_neg_samples`` (default 10) noise classes drawn from ``sampler`` ("uniform",
    "log_uniform" or "custom_dist" over the probabilities ``custom_dist``), divided by num_neg_samples + 1 as
    fluid does. Weight [num_total_classes, D], bias [num_total_classes, 1]. NOTE [ Sampling classes ] in
    ops/sampled_loss.py says how the classes are drawn and seeded."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "nce")
    check_variable_and_dtype(label, "label", ("int64",), "nce")
    helper = LayerHelper("nce", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    dtype = input.dtype
    weight = helper.create_parameter(attr=helper.param_attr, shape=[num_total_classes, input.shape[1]], dtype=dtype)
    inputs = {"Input": [input], "Label": [label], "Weight": [weight]}
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[num_total_classes, 1], dtype=dtype,
                                                  is_bias=True)]
    if sample_weight is not None:
        inputs["SampleWeight"] = [sample_weight]
    if sampler not in ("uniform", "log_uniform", "custom_dist"):
        raise ValueError(f"Unsupported sampler type {sampler!r}: nce takes 'uniform', 'log_uniform' or 'custom_dist'")
    if sampler == "custom_dist":
        probs = None if custom_dist is None else np.asarray(custom_dist, dtype=np.float64).reshape(-1)
        if probs is None or probs.size != num_total_classes:
            raise ValueError(f"nce: sampler 'custom_dist' needs custom_dist, one probability per class "
                             f"({num_total_classes}), got {None if probs is None else probs.size}")
        alias, alias_probs = _alias_table(probs)
        for slot, value in (("CustomDistProbs", probs.astype(np.float32)), ("CustomDistAlias", alias),
                            ("CustomDistAliasProbs", alias_probs)):
            table = helper.create_parameter(attr=ParamAttr(), shape=list(value.shape), dtype=str(value.dtype),
                                            default_initializer=NumpyArrayInitializer(value))
            table.stop_gradient = True
            inputs[slot] = [table]
    num_neg_samples = 10 if num_neg_samples is None else int(num_neg_samples)
    cost = helper.create_variable_for_type_inference(dtype)
    sample_logits = helper.create_variable_for_type_inference(dtype)
    sample_labels = helper.create_variable_for_type_inference(label.dtype)
    helper.append_op(type="nce", inputs=inputs,
                     outputs={"Cost": [cost], "SampleLogits": [sample_logits], "SampleLabels": [sample_labels]},
                     attrs={"num_total_classes": int(num_total_classes), "num_neg_samples": num_neg_samples,
                            "seed": int(seed), "sampler": ("uniform", "log_uniform", "custom_dist").index(sampler),
                            "is_sparse": is_sparse, "remote_prefetch": is_sparse})
    return cost / (num_neg_samples + 1)


def sampled_softmax_with_cross_entropy(logits, label, num_samples, num_true=1, remove_accidental_hits=True,
                                       use_customized_samples=False, customized_samples=None,
                                       customized_probabilities=None, seed=0):
    """Softmax cross entropy [N, 1] over the ``num_true`` true classes (``label`` [N, num_true] int64) and
    ``num_samples`` classes drawn log-uniformly, or the ``customized_samples`` [N, num_true + num_samples] with
    their ``customized_probabilities``; logits are corrected by the log of the sampling probabilities. NOTE
    [ Sampling classes ] in ops/sampled_loss.py."""
    helper = LayerHelper("sample_logits", input=logits)
    if use_customized_samples:
        samples, probabilities = customized_samples, customized_probabilities
    else:
        samples = helper.create_variable_for_type_inference("int64")
        probabilities = helper.create_variable_for_type_inference(logits.dtype)
    sampled_logits = helper.create_variable_for_type_inference(logits.dtype)
    sampled_label = helper.create_variable_for_type_inference("int64")
    logits_dim = helper.create_variable_for_type_inference(logits.dtype)
    labels_dim = helper.create_variable_for_type_inference(label.dtype)
    inputs = {"Logits": [logits], "Labels": [label]}
    if customized_samples is not None:
        inputs["CustomizedSamples"] = [customized_samples]
    if customized_probabilities is not None:
        inputs["CustomizedProbabilities"] = [customized_probabilities]
    helper.append_op(type="sample_logits", inputs=inputs,
                     outputs={"Samples": [samples], "Probabilities": [probabilities], "SampledLabels": [sampled_label],
                              "SampledLogits": [sampled_logits], "LogitsDim": [logits_dim],
                              "LabelsDim": [labels_dim]},
                     attrs={"use_customized_samples": use_customized_samples, "uniq": True,
                            "remove_accidental_hits": remove_accidental_hits, "num_samples": num_samples,
                            "seed": seed})
    soft_label = one_hot(sampled_label, depth=num_samples + 1)
    loss = helper.create_variable_for_type_inference(logits.dtype)
    softmax = helper.create_variable_for_type_inference(logits.dtype)
    helper.append_op(type="softmax_with_cross_entropy", inputs={"Logits": [sampled_logits], "Label": [soft_label]},
                     outputs={"Softmax": [softmax], "Loss": [loss]},
                     attrs={"soft_label": True, "ignore_index": False, "numeric_stable_mode": False})
    return loss / num_true
