"""Sequence labelling layers: linear_chain_crf, crf_decoding, chunk_eval, and cos_sim, with fluid 1.8's
signatures (ops in ops/crf.py and ops/math.py)."""
from .activation import check_variable_and_dtype
from .helper import LayerHelper

__all__ = ["chunk_eval", "cos_sim", "crf_decoding", "linear_chain_crf"]

_FLOATS = ("float32", "float64")


def linear_chain_crf(input, label, param_attr=None, length=None):
    """Linear-chain CRF cost: the negative log-likelihood of ``label`` per sequence ([N, 1]; its mean is the
    loss). ``input``: emissions [T, D] with LoD (the label's LoD gives the sequences), or [N, L, D] padded
    with ``length`` [N]. Creates the transition parameter [D + 2, D] (start row, end row, tag-to-tag rows),
    which crf_decoding reads by the name given in ``param_attr``."""
    check_variable_and_dtype(input, "input", _FLOATS, "linear_chain_crf")
    check_variable_and_dtype(label, "label", ("int64",), "linear_chain_crf")
    helper = LayerHelper("linear_chain_crf", input=input, param_attr=param_attr)
    size = input.shape[2] if length is not None else input.shape[1]
    dtype = helper.input_dtype()
    transition = helper.create_parameter(attr=helper.param_attr, shape=[size + 2, size], dtype=dtype)
    outs = {n: helper.create_variable_for_type_inference(dtype)
            for n in ("Alpha", "EmissionExps", "TransitionExps", "LogLikelihood")}
    inputs = {"Emission": [input], "Transition": transition, "Label": [label]}
    if length is not None:
        inputs["Length"] = [length]
    helper.append_op(type="linear_chain_crf", inputs=inputs, outputs=outs)
    return outs["LogLikelihood"]


def crf_decoding(input, param_attr, label=None, length=None):
    """Viterbi decoding with the transition parameter named by ``param_attr`` (the one linear_chain_crf
    created): the best tag per row ([T, 1] int64 with the input's LoD, or [N, L] padded). With ``label``,
    1 where the decoded tag equals the label and 0 elsewhere."""
    check_variable_and_dtype(input, "input", _FLOATS, "crf_decoding")
    helper = LayerHelper("crf_decoding", input=input, param_attr=param_attr)
    name = getattr(param_attr, "name", param_attr)
    block = helper.main_program.global_block()
    if not isinstance(name, str) or not block.has_var(name):
        raise ValueError(f"crf_decoding: param_attr must name the transition parameter that linear_chain_crf "
                         f"created (ParamAttr(name=...)); no parameter named {name!r} in the program")
    path = helper.create_variable_for_type_inference("int64")
    inputs = {"Emission": [input], "Transition": block.var(name)}
    if label is not None:
        inputs["Label"] = label
    if length is not None:
        inputs["Length"] = length
    helper.append_op(type="crf_decoding", inputs=inputs, outputs={"ViterbiPath": [path]})
    return path


def chunk_eval(input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None, seq_length=None):
    """Chunk-level precision, recall and F1 of tag sequences ``input`` against ``label`` (int64, LoD or padded
    with ``seq_length``) under ``chunk_scheme`` IOB, IOE, IOBES or plain. Returns (precision, recall,
    f1_score, num_infer_chunks, num_label_chunks, num_correct_chunks)."""
    check_variable_and_dtype(input, "input", ("int64",), "chunk_eval")
    check_variable_and_dtype(label, "label", ("int64",), "chunk_eval")
    helper = LayerHelper("chunk_eval")
    names = ("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks")
    dtypes = ("float32",) * 3 + ("int64",) * 3
    outs = {n: helper.create_variable_for_type_inference(d, stop_gradient=True) for n, d in zip(names, dtypes)}
    inputs = {"Inference": [input], "Label": [label]}
    if seq_length is not None:
        inputs["SeqLength"] = [seq_length]
    helper.append_op(type="chunk_eval", inputs=inputs, outputs=outs,
                     attrs={"num_chunk_types": num_chunk_types, "chunk_scheme": chunk_scheme,
                            "excluded_chunk_types": list(excluded_chunk_types or [])})
    return tuple(outs[n] for n in names)


def cos_sim(X, Y):
    """Cosine similarity of the rows of ``X`` [N, D] and ``Y`` [N, D] (or [1, D], compared with every row):
    [N, 1]."""
    check_variable_and_dtype(X, "X", ("float32",), "cos_sim")
    check_variable_and_dtype(Y, "Y", ("float32",), "cos_sim")
    helper = LayerHelper("cos_sim", X=X, Y=Y)
    outs = {n: helper.create_variable_for_type_inference(X.dtype) for n in ("Out", "XNorm", "YNorm")}
    helper.append_op(type="cos_sim", inputs={"X": [X], "Y": [Y]}, outputs=outs)
    return outs["Out"]
