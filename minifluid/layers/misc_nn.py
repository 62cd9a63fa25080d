"""fluid 1.8's remaining loss, CTR and selection layers: center_loss, npair_loss, teacher_student_sigmoid_loss,
continuous_value_model, hash, filter_by_instag, spectral_norm, similarity_focus, random_crop, image_resize_short (ops in
ops/center_loss.py, ops/ctr.py, ops/spectral_norm.py and ops/vision_select.py; npair_loss and
image_resize_short are built from existing layers)."""
import numpy as np

from ..framework import unique_name
from ..framework.variable import Variable
from ..initializer import Constant, Normal
from ..param_attr import ParamAttr
from .activation import check_variable_and_dtype
from .compare import equal
from .creation import check_type
from .helper import LayerHelper
from .image import image_resize
from .loss import softmax_with_cross_entropy
from .manip import expand
from .math import matmul, reduce_mean, reduce_sum
from .nn import square
from .tensor import cast, reshape, transpose

__all__ = ["center_loss", "continuous_value_model", "filter_by_instag", "hash", "image_resize_short", "npair_loss",
           "random_crop", "similarity_focus", "spectral_norm", "teacher_student_sigmoid_loss"]

_FLOATS = ("float32", "float64")


def _outputs(helper, op_type, inputs, slots, dtype, attrs):
    outs = {slot: helper.create_variable_for_type_inference(dtype) for slot in slots}
    helper.append_op(type=op_type, inputs=inputs, outputs={k: [v] for k, v in outs.items()}, attrs=attrs)
    return outs


def center_loss(input, label, num_classes, alpha, param_attr, update_center=True):
    """Half the squared distance of each [N, D] feature to its class centre, [N, 1]; the centres (a parameter
    [num_classes, D] made from ``param_attr``) move towards their samples at rate ``alpha`` (a float or a [1]
    Variable) when ``update_center``."""
    check_variable_and_dtype(input, "input", _FLOATS, "center_loss")
    check_variable_and_dtype(label, "label", ("int32", "int64"), "center_loss")
    helper = LayerHelper("center_loss", input=input)
    dtype = input.dtype
    centers = helper.create_parameter(attr=param_attr, shape=[num_classes, input.shape[1]], dtype=dtype)
    centers.stop_gradient = True
    if isinstance(alpha, Variable):
        rate = alpha
    else:
        if not isinstance(alpha, float):
            raise AssertionError(f"center_loss: alpha must be a float or a Variable, got {type(alpha).__name__}")
        rate = helper.create_global_variable(name=unique_name.generate("centerloss_alpha"), shape=[1], dtype=dtype,
                                             persistable=True, stop_gradient=True)
        helper.set_variable_initializer(rate, Constant(alpha))
    loss = helper.create_variable_for_type_inference(dtype)
    diff = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="center_loss", inputs={"X": [input], "Label": [label], "Centers": [centers],
                                                 "CenterUpdateRate": [rate]},
                     outputs={"SampleCenterDiff": [diff], "Loss": [loss], "CentersOut": [centers]},
                     attrs={"cluster_num": num_classes, "need_update": update_center})
    return loss


def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """The N-pair loss [1]: softmax cross entropy of the anchor-positive similarity matrix against the pairs that
    share a label, plus ``l2_reg / 4`` times the mean squared norms of both embeddings."""
    check_variable_and_dtype(anchor, "anchor", _FLOATS, "npair_loss")
    check_variable_and_dtype(positive, "positive", _FLOATS, "positive")
    check_variable_and_dtype(labels, "labels", _FLOATS + ("int64",), "labels")
    batch = labels.shape[0]
    column = reshape(labels, [batch, 1])
    grid = expand(column, [1, batch])
    same = cast(equal(grid, transpose(grid, [1, 0])), anchor.dtype)
    targets = same / reduce_sum(same, dim=1, keep_dim=True)
    l2 = reduce_mean(reduce_sum(square(anchor), 1)) + reduce_mean(reduce_sum(square(positive), 1))
    similarity = matmul(anchor, positive, transpose_x=False, transpose_y=True)
    ce = softmax_with_cross_entropy(similarity, targets, soft_label=True)
    return l2 * (0.25 * l2_reg) + reduce_mean(reduce_sum(targets * ce, 0))


def teacher_student_sigmoid_loss(input, label, soft_max_up_bound=15.0, soft_max_lower_bound=-15.0):
    """Sigmoid cross entropy of logits [N, 1] against the click in ``label`` plus, where the label carries a
    teacher's score (label = click + score, in [0, 2)), against that score; labels -2 / -1 are a non-click / click
    without one."""
    check_variable_and_dtype(input, "input", _FLOATS, "teacher_student_sigmoid_loss")
    check_variable_and_dtype(label, "label", _FLOATS, "teacher_student_sigmoid_loss")
    helper = LayerHelper("teacher_student_sigmoid_loss", input=input)
    return _outputs(helper, "teacher_student_sigmoid_loss", {"X": [input], "Label": [label]}, ("Y",), input.dtype,
                    {"soft_max_lower_bound": float(soft_max_lower_bound),
                     "soft_max_up_bound": float(soft_max_up_bound)})["Y"]


def continuous_value_model(input, cvm, use_cvm=True):
    """The CVM of embeddings [N, D] whose first two columns are show and click counts: with ``use_cvm``
    ``log(show + 1)`` and ``log(click + 1) - log(show + 1)`` replace them, else they are dropped ([N, D - 2]);
    ``cvm`` [N, 2] holds the counts the backward hands to them."""
    check_variable_and_dtype(input, "input", ("float16",) + _FLOATS, "cvm")
    helper = LayerHelper("cvm", input=input)
    return _outputs(helper, "cvm", {"X": [input], "CVM": [cvm]}, ("Y",), input.dtype, {"use_cvm": use_cvm})["Y"]


def spectral_norm(weight, dim=0, power_iters=1, eps=1e-12, name=None):
    """``weight`` divided by its largest singular value, estimated by ``power_iters`` rounds of power iteration
    from the vectors U [weight.shape[dim]] and V [the other dims' product] (parameters drawn from N(0, 1), never
    trained)."""
    check_variable_and_dtype(weight, "weight", _FLOATS, "spectral_norm")
    check_type(dim, "dim", (int,), "spectral_norm")
    check_type(power_iters, "power_iters", (int,), "spectral_norm")
    check_type(eps, "eps", (float,), "spectral_norm")
    helper = LayerHelper("spectral_norm", name=name)
    dtype, shape = weight.dtype, list(weight.shape)
    h = shape[dim]
    w = int(np.prod(shape)) // h
    u, v = (helper.create_parameter(attr=ParamAttr(), shape=[n], dtype=dtype, default_initializer=Normal(0.0, 1.0),
                                    stop_gradient=True) for n in (h, w))
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="spectral_norm", inputs={"Weight": [weight], "U": [u], "V": [v]}, outputs={"Out": [out]},
                     attrs={"dim": dim, "power_iters": power_iters, "eps": eps})
    return out


def similarity_focus(input, axis, indexes, name=None):
    """A 0/1 mask shaped like the [N, A, B, C] ``input``: for each channel in ``indexes`` along ``axis``, the
    greedy largest entries of distinct rows and columns of its plane, marked along the whole axis."""
    check_variable_and_dtype(input, "input", _FLOATS, "similarity_focus")
    check_type(axis, "axis", (int,), "similarity_focus")
    check_type(indexes, "indexes", (list,), "similarity_focus")
    if axis not in (1, 2, 3):
        raise ValueError("axis must be 1, 2 or 3.")
    if not indexes:
        raise ValueError("indexes can not be empty.")
    helper = LayerHelper("similarity_focus", name=name)
    return _outputs(helper, "similarity_focus", {"X": [input]}, ("Out",), input.dtype,
                    {"axis": axis, "indexes": list(indexes)})["Out"]


def random_crop(x, shape, seed=None):
    """A random window of ``shape`` (the trailing axes) from every instance of ``x``; ``seed``: an int to start
    from, a persistable int64 Variable holding the seed (updated every run), or None for a random start."""
    check_variable_and_dtype(x, "x", _FLOATS + ("uint8", "int16", "int32"), "random_crop")
    check_type(shape, "shape", (list, Variable), "random_crop")
    if isinstance(shape, Variable):
        raise NotImplementedError("random_crop: a Variable shape is not supported yet; pass a list of ints")
    helper = LayerHelper("random_crop")
    if seed is None:
        seed = int(np.random.randint(-65536, 65536))
    attrs = {"shape": [int(d) for d in shape]}
    if isinstance(seed, int):
        attrs["startup_seed"] = seed
        seed = helper.create_global_variable(name=unique_name.generate("random_crop_seed"), shape=[1], dtype="int64",
                                             persistable=True, stop_gradient=True)
        helper.set_variable_initializer(seed, Constant(float(attrs["startup_seed"])))
    elif not isinstance(seed, Variable):
        raise ValueError("'seed' must be a Variable or an int.")
    out = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type="random_crop", inputs={"X": [x], "Seed": [seed]}, outputs={"Out": [out], "SeedOut": [seed]},
                     attrs=attrs)
    return out


def image_resize_short(input, out_short_len, resample="BILINEAR"):
    """Resize [N, C, H, W] images so that their shorter side is ``out_short_len``, keeping the aspect ratio (the
    longer side rounded)."""
    shape = list(input.shape)
    if len(shape) != 4:
        raise ValueError("The rank of input must be 4 (num_batches, channels, in_h, in_w).")
    hw = shape[2:4]
    short = hw.index(min(hw))
    out = list(hw)
    out[short] = out_short_len
    out[1 - short] = int(float(hw[1 - short]) * (float(out_short_len) / float(hw[short])) + 0.5)
    return image_resize(input=input, out_shape=out, resample=resample)


def hash(input, hash_size, num_hash=1, name=None):
    """XXH64 of each row of the int32 / int64 [N, D] ``input`` with seeds 0 .. num_hash - 1, modulo ``hash_size``:
    [N, num_hash, 1] of the input's dtype (LoD kept)."""
    check_variable_and_dtype(input, "input", ("int32", "int64"), "hash")
    check_type(hash_size, "hash_size", (int,), "hash")
    check_type(num_hash, "num_hash", (int,), "hash")
    helper = LayerHelper("hash", name=name)
    out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="hash", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"num_hash": num_hash, "mod_by": hash_size})
    return out


def filter_by_instag(ins, ins_tag, filter_tag, is_lod, out_val_if_empty=0):
    """The instances of ``ins`` (LoD sequences, or single rows when not ``is_lod``) one of whose tags (``ins_tag``,
    int64 with one LoD sequence per instance) is in ``filter_tag``; returns [out, loss_weight], loss_weight [K, 1]
    ones, or a single ``out_val_if_empty`` row with weight 0 when none is kept."""
    check_variable_and_dtype(ins_tag, "ins_tag", ("int64",), "filter_by_instag")
    check_variable_and_dtype(filter_tag, "filter_tag", ("int64",), "filter_by_instag")
    helper = LayerHelper("filter_by_instag")
    out = helper.create_variable_for_type_inference(ins.dtype)
    loss_weight = helper.create_variable_for_type_inference("float32", stop_gradient=True)
    index_map = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="filter_by_instag", inputs={"Ins": [ins], "Ins_tag": [ins_tag], "Filter_tag": [filter_tag]},
                     outputs={"Out": [out], "LossWeight": [loss_weight], "IndexMap": [index_map]},
                     attrs={"is_lod": is_lod, "out_val_if_empty": out_val_if_empty})
    return [out, loss_weight]
