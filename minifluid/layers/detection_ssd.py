"""SSD's training head and loss with fluid 1.8's signatures: multi_box_head (per feature map, prior boxes and the
conv predictions of their offsets and class scores) and ssd_loss (matching, hard negative mining, confidence and
smooth-L1 location losses). Both are compositions of other layers, so the loss's gradient reaches the predictions
through the differentiable ops (flatten, softmax_with_cross_entropy, smooth_l1, elementwise math)."""
import math

from .detection_box import box_coder, iou_similarity, prior_box
from .detection_nms import bipartite_match, target_assign
from .helper import LayerHelper
from .loss import smooth_l1, softmax_with_cross_entropy
from .manip import shape, slice
from .math import reduce_sum
from .nn import conv2d
from .sequence import lod_reset
from .tensor import cast, concat, flatten, reshape, transpose

__all__ = ["multi_box_head", "ssd_loss"]


def _is_list_or_tuple(data):
    return isinstance(data, (list, tuple))


def _per_layer(value, count, what):
    if not (_is_list_or_tuple(value) and len(value) == count):
        raise ValueError(f"{what} should be list or tuple, and the length of inputs and {what} should be the same.")
    return value


def ssd_loss(location, confidence, gt_box, gt_label, prior_box, prior_box_var=None, background_label=0,
             overlap_threshold=0.5, neg_pos_ratio=3.0, neg_overlap=0.5, loc_loss_weight=1.0, conf_loss_weight=1.0,
             match_type='per_prediction', mining_type='max_negative', normalize=True, sample_size=None):
    """SSD's multibox loss [N, 1]: match the priors [Np, 4] to the ground truth ``gt_box`` [Ng, 4] (LoD: the boxes
    of each image; labels ``gt_label`` [Ng, 1]) by IoU, mine the hardest negatives (``neg_pos_ratio`` per
    positive among priors overlapping no box by ``neg_overlap``), then sum the softmax cross entropy of
    ``confidence`` [N, Np, C] over positives and negatives and the smooth L1 of ``location`` [N, Np, 4] against the
    encoded matches over positives, per image; ``normalize`` divides by the number of positives."""
    if mining_type != "max_negative":
        raise ValueError("Only support mining_type == max_negative now.")
    helper = LayerHelper("ssd_loss")
    num_prior = confidence.shape[1]
    rows = slice(shape(confidence), axes=[0], starts=[0], ends=[2])  # [N, Np] at run time
    rows.stop_gradient = True

    def per_image(x):  # [N * Np, 1] -> [N, Np]
        return reshape(x, shape=[-1, num_prior], actual_shape=rows)

    # 1. match every prior to a ground-truth box of its image
    iou = iou_similarity(x=gt_box, y=prior_box)
    matched, matched_dist = bipartite_match(iou, match_type, overlap_threshold)
    # 2. the loss of each prior against its matched label, to mine hard negatives by
    labels = lod_reset(reshape(gt_label, shape=[-1, 1, 1]), y=gt_label)  # [Ng, 1, 1], keeping the images' LoD
    labels.stop_gradient = True
    target_label, _ = target_assign(labels, matched, mismatch_value=background_label)
    confidence = flatten(confidence, axis=2)
    target_label = flatten(cast(target_label, "int64"), axis=2)
    target_label.stop_gradient = True
    conf_loss = per_image(softmax_with_cross_entropy(confidence, target_label))
    conf_loss.stop_gradient = True
    # 3. hard negatives
    negatives = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    negatives.lod_level = 1
    updated = helper.create_variable_for_type_inference(matched.dtype, stop_gradient=True)
    helper.append_op(type="mine_hard_examples",
                     inputs={"ClsLoss": [conf_loss], "MatchIndices": [matched], "MatchDist": [matched_dist]},
                     outputs={"NegIndices": [negatives], "UpdatedMatchIndices": [updated]},
                     attrs={"neg_pos_ratio": float(neg_pos_ratio), "neg_dist_threshold": float(neg_overlap),
                            "mining_type": mining_type, **({} if sample_size is None else
                                                           {"sample_size": int(sample_size)})})
    # 4. regression and classification targets
    encoded = box_coder(prior_box=prior_box, prior_box_var=prior_box_var, target_box=gt_box,
                        code_type="encode_center_size")
    target_bbox, loc_weight = target_assign(encoded, updated, mismatch_value=background_label)
    target_label, conf_weight = target_assign(labels, updated, negative_indices=negatives,
                                              mismatch_value=background_label)
    for v in (target_bbox, loc_weight, target_label, conf_weight):
        v.stop_gradient = True
    # 5. the losses, summed per image
    target_label = cast(flatten(target_label, axis=2), "int64")
    conf_loss = softmax_with_cross_entropy(confidence, target_label) * flatten(conf_weight, axis=2)
    loc_loss = smooth_l1(flatten(location, axis=2), flatten(target_bbox, axis=2)) * flatten(loc_weight, axis=2)
    loss = reduce_sum(per_image(conf_loss_weight * conf_loss + loc_loss_weight * loc_loss), dim=1, keep_dim=True)
    if normalize:
        loss = loss / reduce_sum(loc_weight)
    return loss


def _default_sizes(num_layer, base_size, min_ratio, max_ratio):
    """SSD's sizes for more than two maps: 10% / 20% of ``base_size`` for the first, then ratios from
    ``min_ratio`` to ``max_ratio`` percent in equal integer steps."""
    step = int(math.floor((max_ratio - min_ratio) / (num_layer - 2)))
    mins = [base_size * .10] + [base_size * r / 100. for r in range(min_ratio, max_ratio + 1, step)]
    maxs = [base_size * .20] + [base_size * (r + step) / 100. for r in range(min_ratio, max_ratio + 1, step)]
    return mins, maxs


def multi_box_head(inputs, image, base_size, num_classes, aspect_ratios, min_ratio=None, max_ratio=None,
                   min_sizes=None, max_sizes=None, steps=None, step_w=None, step_h=None, offset=0.5,
                   variance=[0.1, 0.1, 0.2, 0.2], flip=True, clip=False, kernel_size=1, pad=0, stride=1, name=None,
                   min_max_aspect_ratios_order=False):
    """SSD's prediction head: for each feature map of ``inputs``, prior boxes (prior_box with that map's sizes and
    aspect ratios) and two convolutions predicting 4 offsets and ``num_classes`` scores per prior. Returns
    (mbox_locs [N, P, 4], mbox_confs [N, P, num_classes], boxes [P, 4], variances [P, 4]) over all maps (with a
    single map, fluid's shapes: the predictions flattened per image and the boxes [H, W, priors, 4])."""
    if not _is_list_or_tuple(inputs):
        raise ValueError("inputs should be a list or tuple.")
    num_layer = len(inputs)
    if num_layer <= 2:
        if min_sizes is None or max_sizes is None or len(min_sizes) != num_layer or len(max_sizes) != num_layer:
            raise AssertionError(f"multi_box_head: with {num_layer} input(s), give min_sizes and max_sizes, one per "
                                 f"input")
    elif min_sizes is None and max_sizes is None:
        min_sizes, max_sizes = _default_sizes(num_layer, base_size, min_ratio, max_ratio)
    if aspect_ratios:
        _per_layer(aspect_ratios, num_layer, "aspect_ratios")
    for value, what in ((step_h, "step_h"), (step_w, "step_w"), (steps, "steps")):
        if value is not None:
            _per_layer(value, num_layer, what)
    if steps is not None:
        step_w = step_h = steps
    locs, confs, boxes, variances = [], [], [], []
    for i, x in enumerate(inputs):
        min_size = min_sizes[i] if _is_list_or_tuple(min_sizes[i]) else [min_sizes[i]]
        max_size = None if max_sizes is None else max_sizes[i]
        max_size = max_size if max_size is None or _is_list_or_tuple(max_size) else [max_size]
        ratio = [] if aspect_ratios is None else aspect_ratios[i]
        ratio = ratio if _is_list_or_tuple(ratio) else [ratio]
        step = [step_w[i] if step_w else 0.0, step_h[i] if step_h else 0.0]
        box, var = prior_box(x, image, min_size, max_size, ratio, variance, flip, clip, step, offset, None,
                             min_max_aspect_ratios_order)
        boxes.append(box)
        variances.append(var)
        for outputs, per_prior in ((locs, 4), (confs, num_classes)):
            pred = conv2d(x, num_filters=box.shape[2] * per_prior, filter_size=kernel_size, padding=pad,
                          stride=stride)
            outputs.append(flatten(transpose(pred, perm=[0, 2, 3, 1]), axis=1))
    if num_layer == 1:
        box, var, loc, conf = boxes[0], variances[0], locs[0], confs[0]
    else:
        box = concat([flatten(b, axis=3) for b in boxes])
        var = concat([flatten(v, axis=3) for v in variances])
        loc = reshape(concat(locs, axis=1), shape=[0, -1, 4])
        conf = reshape(concat(confs, axis=1), shape=[0, -1, num_classes])
    box.stop_gradient = True
    var.stop_gradient = True
    return loc, conf, box, var
