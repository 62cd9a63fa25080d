"""Matching and NMS layers of SSD-style detection (fluid 1.8's signatures, defaults and argument errors):
bipartite_match, target_assign (ops in ops/detection_match.py), multiclass_nms / multiclass_nms2, matrix_nms,
locality_aware_nms (ops/detection_nms.py) and detection_output."""
from .activation import check_variable_and_dtype
from .creation import check_type
from .detection_box import box_coder
from .helper import LayerHelper
from .nn import softmax
from .tensor import transpose

__all__ = ["bipartite_match", "detection_output", "locality_aware_nms", "matrix_nms", "multiclass_nms",
           "multiclass_nms2", "target_assign"]

_FLOATS = ("float32", "float64")


def bipartite_match(dist_matrix, match_type=None, dist_threshold=None, name=None):
    """Match the columns (priors) of ``dist_matrix`` [K, M] (LoD: the rows of each image) to its rows (ground
    truth) greedily by largest distance; ``match_type='per_prediction'`` then gives every unmatched column its best
    row when that distance is at least ``dist_threshold`` (0.5). Returns (indices [N, M] int32, -1 for unmatched;
    distances [N, M])."""
    attrs = {"match_type": match_type, "dist_threshold": dist_threshold}
    helper = LayerHelper("bipartite_match", name=name)
    indices = helper.create_variable_for_type_inference("int32")
    distances = helper.create_variable_for_type_inference(dist_matrix.dtype)
    helper.append_op(type="bipartite_match", inputs={"DistMat": [dist_matrix]},
                     outputs={"ColToRowMatchIndices": [indices], "ColToRowMatchDist": [distances]},
                     attrs={k: v for k, v in attrs.items() if v is not None})
    return indices, distances


def target_assign(input, matched_indices, negative_indices=None, mismatch_value=None, name=None):
    """Per image i and column j: ``input[lod[i] + matched_indices[i][j]][j % P]`` ([M, P, K] with LoD) with weight
    1, or ``mismatch_value`` with weight 0 where unmatched; the columns in ``negative_indices`` (LoD [Neg, 1])
    get ``mismatch_value`` with weight 1. Returns (out [N, M, K], out_weight [N, M, 1] float32)."""
    inputs = {"X": [input], "MatchIndices": [matched_indices]}
    if negative_indices is not None:
        inputs["NegIndices"] = [negative_indices]
    attrs = {} if mismatch_value is None else {"mismatch_value": int(mismatch_value)}
    helper = LayerHelper("target_assign", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    weight = helper.create_variable_for_type_inference("float32")
    helper.append_op(type="target_assign", inputs=inputs, outputs={"Out": [out], "OutWeight": [weight]}, attrs=attrs)
    return out, weight


def _nms_checks(op, bboxes, scores, **typed):
    check_variable_and_dtype(bboxes, "BBoxes" if op != "locality_aware_nms" else "bboxes", _FLOATS, op)
    check_variable_and_dtype(scores, "Scores" if op != "locality_aware_nms" else "scores", _FLOATS, op)
    for name, (value, types) in typed.items():
        check_type(value, name, types, op)


def _detections(op_type, bboxes, scores, attrs, with_index, name=None):
    """Append an NMS op; its Out (and Index) hold the detections of every image as one LoD sequence."""
    outs = ("Out", "Index") if with_index else ("Out",)
    helper = LayerHelper(op_type, name=name)
    vars_ = [helper.create_variable_for_type_inference(bboxes.dtype if s == "Out" else "int32", stop_gradient=True)
             for s in outs]
    helper.append_op(type=op_type, inputs={"BBoxes": [bboxes], "Scores": [scores]},
                     outputs={s: [v] for s, v in zip(outs, vars_)}, attrs=attrs)
    for v in vars_:
        v.lod_level = max(bboxes.lod_level, 1)
    return vars_


def multiclass_nms(bboxes, scores, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3, normalized=True,
                   nms_eta=1., background_label=0, name=None):
    """Greedy NMS per image and class (``background_label`` skipped): of the ``nms_top_k`` boxes scoring above
    ``score_threshold``, keep those overlapping no better kept box by more than ``nms_threshold`` (lowered by
    ``nms_eta`` after each keep while above 0.5), then the ``keep_top_k`` best of all classes. ``bboxes`` [N, M, 4]
    with ``scores`` [N, C, M], or LoD ``bboxes`` [M, C, 4] with ``scores`` [M, C]. Returns the detections [D, 6]
    (label, score, xmin, ymin, xmax, ymax; LoD: per image, by label then score), or a single row [[-1]] when no
    image has one."""
    _nms_checks("multiclass_nms", bboxes, scores, score_threshold=(score_threshold, (float,)),
                nums_top_k=(nms_top_k, (int,)), keep_top_k=(keep_top_k, (int,)),
                nms_threshold=(nms_threshold, (float,)), normalized=(normalized, (bool,)), nms_eta=(nms_eta, (float,)),
                background_label=(background_label, (int,)))
    attrs = {"background_label": background_label, "score_threshold": score_threshold, "nms_top_k": nms_top_k,
             "nms_threshold": nms_threshold, "nms_eta": nms_eta, "keep_top_k": keep_top_k, "normalized": normalized}
    return _detections("multiclass_nms", bboxes, scores, attrs, False, name)[0]


def multiclass_nms2(bboxes, scores, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3, normalized=True,
                    nms_eta=1., background_label=0, return_index=False, name=None):
    """multiclass_nms that can also return the Index [D, 1] int32 of each detection in the flattened input boxes
    (``return_index``); with no detection at all it gives an empty [0, 6] output, not the -1 row."""
    attrs = {"background_label": background_label, "score_threshold": score_threshold, "nms_top_k": nms_top_k,
             "nms_threshold": nms_threshold, "nms_eta": nms_eta, "keep_top_k": keep_top_k, "normalized": normalized}
    out, index = _detections("multiclass_nms2", bboxes, scores, attrs, True, name)
    return (out, index) if return_index else out


def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k, use_gaussian=False,
               gaussian_sigma=2., background_label=0, normalized=True, return_index=False, name=None):
    """Matrix NMS (SOLOv2): per image and class, every candidate's score decays by its overlaps with better
    candidates (linear, or gaussian with ``gaussian_sigma``); those still above ``post_threshold`` are kept, the
    ``keep_top_k`` best per image. ``bboxes`` [N, M, 4], ``scores`` [N, C, M]. Returns the detections [D, 6]
    (LoD per image, best first; [0, 6] when none), and with ``return_index`` their Index [D, 1]."""
    _nms_checks("matrix_nms", bboxes, scores, score_threshold=(score_threshold, (float,)),
                post_threshold=(post_threshold, (float,)), nums_top_k=(nms_top_k, (int,)),
                keep_top_k=(keep_top_k, (int,)), normalized=(normalized, (bool,)), use_gaussian=(use_gaussian, (bool,)),
                gaussian_sigma=(gaussian_sigma, (float,)), background_label=(background_label, (int,)))
    attrs = {"background_label": background_label, "score_threshold": score_threshold,
             "post_threshold": post_threshold, "nms_top_k": nms_top_k, "gaussian_sigma": gaussian_sigma,
             "use_gaussian": use_gaussian, "keep_top_k": keep_top_k, "normalized": normalized}
    out, index = _detections("matrix_nms", bboxes, scores, attrs, True, name)
    return (out, index) if return_index else out


def locality_aware_nms(bboxes, scores, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3, normalized=True,
                       nms_eta=1., background_label=-1, name=None):
    """EAST's NMS for one class (``scores`` [N, 1, M]): runs of consecutive boxes overlapping by more than
    ``nms_threshold`` are first merged (score-weighted), then greedy NMS as multiclass_nms."""
    _nms_checks("locality_aware_nms", bboxes, scores, background_label=(background_label, (int,)),
                score_threshold=(score_threshold, (float,)), nms_top_k=(nms_top_k, (int,)),
                nms_eta=(nms_eta, (float,)), nms_threshold=(nms_threshold, (float,)),
                keep_top_k=(keep_top_k, (int,)), normalized=(normalized, (bool,)))
    if len(scores.shape) != 3:
        raise AssertionError("dim size of scores must be 3")
    if scores.shape[1] != 1:
        raise AssertionError("locality_aware_nms only support one class, Tensor score shape must be [N, 1, M]")
    attrs = {"background_label": background_label, "score_threshold": score_threshold, "nms_top_k": nms_top_k,
             "nms_threshold": nms_threshold, "nms_eta": nms_eta, "keep_top_k": keep_top_k, "normalized": normalized}
    return _detections("locality_aware_nms", bboxes, scores, attrs, False, name)[0]


def detection_output(loc, scores, prior_box, prior_box_var, background_label=0, nms_threshold=0.3, nms_top_k=400,
                     keep_top_k=200, score_threshold=0.01, nms_eta=1.0, return_index=False):
    """SSD's detections: decode ``loc`` [N, M, 4] against the priors [M, 4] (``prior_box_var`` a Variable or a list
    of 4), softmax ``scores`` [N, M, C] and run multiclass_nms (multiclass_nms2 with ``return_index``).
    ``background_label`` and ``nms_eta`` reach the NMS (fluid 1.8 passed 0 and 1.0 whatever they were)."""
    decoded = box_coder(prior_box, prior_box_var, loc, code_type="decode_center_size")
    probs = transpose(softmax(scores), perm=[0, 2, 1])
    probs.stop_gradient = True
    attrs = {"background_label": background_label, "nms_threshold": nms_threshold, "nms_top_k": nms_top_k,
             "keep_top_k": keep_top_k, "score_threshold": score_threshold, "nms_eta": nms_eta}
    if return_index:
        return tuple(_detections("multiclass_nms2", decoded, probs, attrs, True))
    return _detections("multiclass_nms", decoded, probs, attrs, False)[0]
