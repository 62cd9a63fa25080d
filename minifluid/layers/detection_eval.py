"""Detection evaluation layer (fluid 1.8's signature and defaults): detection_map (op in ops/detection_map.py);
fluid.metrics.DetectionMAP accumulates it over batches."""
from .helper import LayerHelper

__all__ = ["detection_map"]


def detection_map(detect_res, label, class_num, background_label=0, overlap_threshold=0.3, evaluate_difficult=True,
                  has_state=None, input_states=None, out_states=None, ap_version="integral"):
    """Mean average precision ([1] float32) of ``detect_res`` (rows [label, score, xmin, ymin, xmax, ymax], LoD
    per image) against ``label`` (rows [label, xmin, ymin, xmax, ymax], or [label, difficult, xmin, ...]), with
    ``ap_version`` 'integral' or '11point'; detections matching a difficult box are not counted unless
    ``evaluate_difficult``. ``input_states`` / ``out_states`` ([pos_count, true_pos, false_pos]) and
    ``has_state`` carry the counts of earlier batches, as fluid.metrics.DetectionMAP uses them.
    ``background_label`` is accepted and, as in fluid 1.8, not passed to the op."""
    helper = LayerHelper("detection_map")
    map_out = helper.create_variable_for_type_inference("float32")
    states = list(out_states) if out_states is not None else [
        helper.create_variable_for_type_inference(d) for d in ("int32", "float32", "float32")]
    inputs = {"Label": [label], "DetectRes": [detect_res]}
    if has_state is not None:
        inputs["HasState"] = [has_state]
    if input_states is not None:
        inputs.update(PosCount=[input_states[0]], TruePos=[input_states[1]], FalsePos=[input_states[2]])
    helper.append_op(type="detection_map", inputs=inputs,
                     outputs={"MAP": [map_out], "AccumPosCount": [states[0]], "AccumTruePos": [states[1]],
                              "AccumFalsePos": [states[2]]},
                     attrs={"overlap_threshold": overlap_threshold, "evaluate_difficult": evaluate_difficult,
                            "ap_type": ap_version, "class_num": class_num})
    return map_out
