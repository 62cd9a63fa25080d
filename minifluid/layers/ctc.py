"""CTC layers with fluid 1.8's signatures: warpctc (the CTC loss), ctc_greedy_decoder and edit_distance (ops in
ops/ctc.py). Each takes LoD sequences, or padded tensors with their lengths."""
from .activation import check_variable_and_dtype
from .helper import LayerHelper
from .manip import topk
from .tensor import squeeze

__all__ = ["ctc_greedy_decoder", "edit_distance", "warpctc"]


def _paired(first, second, names, op_type):
    if (first is None) != (second is None):
        raise ValueError(f"{op_type}: {names[0]} and {names[1]} go together (the lengths of padded inputs); give "
                         f"both, or neither for LoD inputs")
    return first is not None


def _op(helper, op_type, inputs, outputs, attrs):
    outs = {slot: helper.create_variable_for_type_inference(dtype, stop_gradient=stop)
            for slot, (dtype, stop) in outputs.items()}
    helper.append_op(type=op_type, inputs=inputs, outputs={s: [v] for s, v in outs.items()}, attrs=attrs)
    return outs


def edit_distance(input, label, normalized=True, ignored_tokens=None, input_length=None, label_length=None):
    """Levenshtein distance of each hypothesis in ``input`` to its reference in ``label`` (int64 sequences:
    LoD [T, 1], or padded [B, W] with ``input_length`` / ``label_length`` [B]), divided by the reference length
    when ``normalized``. ``ignored_tokens`` are erased from both first. Returns (distance [B, 1] float32,
    sequence_num [1] int64)."""
    check_variable_and_dtype(input, "input", ("int64",), "edit_distance")
    check_variable_and_dtype(label, "label", ("int64",), "edit_distance")
    padded = _paired(input_length, label_length, ("input_length", "label_length"), "edit_distance")
    helper = LayerHelper("edit_distance")
    inputs = {"Hyps": [input], "Refs": [label]}
    if padded:
        inputs.update(HypsLength=[input_length], RefsLength=[label_length])
    if ignored_tokens:
        for slot, length_slot in (("Hyps", "HypsLength"), ("Refs", "RefsLength")):
            seqs = inputs[slot][0]
            if padded:  # the padded rows become LoD sequences, so the erased ones need no lengths
                seqs = _op(helper, "sequence_unpad", {"X": [seqs], "Length": inputs.pop(length_slot)},
                           {"Out": ("int64", True)}, {})["Out"]
            inputs[slot] = [_op(helper, "sequence_erase", {"X": [seqs]}, {"Out": ("int64", True)},
                                {"tokens": [int(t) for t in ignored_tokens]})["Out"]]
            inputs[slot][0].lod_level = 1
    outs = _op(helper, "edit_distance", inputs, {"Out": ("float32", True), "SequenceNum": ("int64", True)},
               {"normalized": normalized})
    return outs["Out"], outs["SequenceNum"]


def ctc_greedy_decoder(input, blank, input_length=None, padding_value=0, name=None):
    """Greedy CTC decoding: the best class per step, repeats merged, ``blank`` dropped. ``input``: class
    scores [T, C] with LoD (returns the decoded LoD sequences [T', 1] int64; one row -1 when all are empty),
    or [B, N, C] padded with ``input_length`` [B, 1] (returns (decoded [B, N] padded with ``padding_value``,
    lengths [B, 1]))."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "ctc_greedy_decoder")
    helper = LayerHelper("ctc_greedy_decoder", name=name)
    _, best = topk(input, k=1)
    attrs = {"merge_repeated": True, "blank": blank}
    if input_length is None:
        out = _op(helper, "ctc_align", {"Input": [best]}, {"Output": ("int64", True)}, attrs)["Output"]
        out.lod_level = 1
        return out
    check_variable_and_dtype(input_length, "input_length", ("int64",), "ctc_greedy_decoder")
    outs = _op(helper, "ctc_align", {"Input": [squeeze(best, [2])], "InputLength": [input_length]},
               {"Output": ("int64", True), "OutputLength": ("int64", True)}, {**attrs, "padding_value": padding_value})
    return outs["Output"], outs["OutputLength"]


def warpctc(input, label, blank=0, norm_by_times=False, input_length=None, label_length=None):
    """CTC loss [B, 1] of unnormalised logits (a softmax inside): ``input`` [T, C] with LoD and ``label``
    [L, 1] int32 with LoD, or time-major ``input`` [T_max, B, C] with ``label`` [B, L_max] and the int64
    lengths ``input_length`` / ``label_length`` [B]. ``norm_by_times`` scales each sequence's gradient by
    1 / its length (no need when a mean follows)."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "warpctc")
    check_variable_and_dtype(label, "label", ("int32",), "warpctc")
    inputs = {"Logits": [input], "Label": [label]}
    if _paired(input_length, label_length, ("input_length", "label_length"), "warpctc"):
        check_variable_and_dtype(input_length, "LogitsLength", ("int64",), "warpctc")
        check_variable_and_dtype(label_length, "LabelLength", ("int64",), "warpctc")
        inputs.update(LogitsLength=[input_length], LabelLength=[label_length])
    helper = LayerHelper("warpctc")
    outs = _op(helper, "warpctc", inputs, {"WarpCTCGrad": (input.dtype, True), "Loss": (input.dtype, False)},
               {"blank": blank, "norm_by_times": norm_by_times})
    return outs["Loss"]
