"""DynamicRNN over LoD sequences (fluid 1.8's layers/control_flow.py), the rank-table layers it is made
of, and beam search.

DynamicRNN runs a While over time steps: a LoD rank table orders the sequences longest first, each step
input becomes a tensor array of time steps (lod_tensor_to_array), memories shrink to the sequences still
running (shrink_memory), and each output array is put back in input order with the input's LoD
(array_to_lod_tensor). NOTE [ Time-major batches of sequences ] in ops/lod_rank.py.
"""
import contextlib

from ..framework import unique_name
from ..framework.variable import Variable, VarType
from .activation import check_variable_and_dtype
from .compare import less_than
from .control_flow import While, _check_type, array_read, array_write, create_array, in_parent_block
from .helper import LayerHelper
from .manip import fill_constant_batch_size_like, increment
from .tensor import fill_constant

__all__ = ["DynamicRNN", "array_to_lod_tensor", "beam_search", "beam_search_decode", "lod_rank_table",
           "lod_tensor_to_array", "max_sequence_len", "reorder_lod_tensor_by_rank", "shrink_memory"]


def _op(op_type, inputs, attrs=None, dtype=None, like=None, var=None):
    """Append ``op_type`` with one output ``Out``: a temporary of ``dtype``, or a variable made with the
    keyword arguments ``var`` (an array, a rank table); shape and LoD level copied from ``like``."""
    helper = LayerHelper(op_type)
    out = helper.create_variable(name=unique_name.generate(f"{op_type}.out"), **var) if var else \
        helper.create_variable_for_type_inference(dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs or {})
    if like is not None:
        out.shape, out.lod_level = like.shape, like.lod_level
    return out


def _variables(x, name, where):
    """``x``: a Variable, or a list of Variables (fluid's rank-table layers take either)."""
    _check_type(x, name, (Variable, list), where)
    for k, each in enumerate(x if isinstance(x, list) else ()):
        _check_type(each, f"{name}[{k}]", Variable, where)
    return x if isinstance(x, list) else [x]


def lod_rank_table(x, level=0):
    """The sequences of ``x`` (at LoD ``level``) ordered by length, longest first."""
    return _op("lod_rank_table", {"X": _variables(x, "x", "lod_rank_table")}, {"level": level},
               var={"type": VarType.LOD_RANK_TABLE, "dtype": None, "stop_gradient": True})


def max_sequence_len(rank_table):
    """The length of the longest sequence of ``rank_table``: an int64 [1] tensor."""
    out = _op("max_sequence_len", {"RankTable": [rank_table]}, dtype="int64")
    out.stop_gradient = True
    return out


def lod_tensor_to_array(x, table):
    """``x`` cut into time steps by ``table``: a tensor array whose entry t holds row t of every sequence
    longer than t, longest sequence first."""
    xs = _variables(x, "x", "lod_tensor_to_array")
    out = _op("lod_tensor_to_array", {"X": xs, "RankTable": _variables(table, "table", "lod_tensor_to_array")},
              var={"type": VarType.LOD_TENSOR_ARRAY, "dtype": xs[0].dtype})
    out.shape = xs[0].shape
    return out


def array_to_lod_tensor(x, table):
    """The time steps of array ``x`` put back into sequences in input order, with the input's LoD."""
    xs = _variables(x, "x", "array_to_lod_tensor")
    x = xs[0]
    out = _op("array_to_lod_tensor", {"X": xs, "RankTable": _variables(table, "table", "array_to_lod_tensor")},
              dtype=x.dtype, like=x)
    out.lod_level = 1
    return out


def shrink_memory(x, i, table):
    """The first rows of ``x``: one per sequence of ``table`` longer than step ``i``."""
    return _op("shrink_rnn_memory", {"X": [x], "RankTable": [table], "I": [i]}, dtype=x.dtype, like=x)


def reorder_lod_tensor_by_rank(x, rank_table):
    """The rows (or sequences) of ``x`` in ``rank_table``'s order."""
    _check_type(x, "x", Variable, "reorder_lod_tensor_by_rank")
    _check_type(rank_table, "rank_table", Variable, "reorder_lod_tensor_by_rank")
    if rank_table.type != VarType.LOD_RANK_TABLE:
        raise TypeError(f"The type of rank_table should be LOD_RANK_TABLE, but {rank_table.name!r} is a "
                        f"{rank_table.type} (make it with fluid.layers.lod_rank_table)")
    return _op("reorder_lod_tensor_by_rank", {"X": [x], "RankTable": [rank_table]}, dtype=x.dtype, like=x)


class DynamicRNN:
    """A recurrent network over the sequences of a LoD tensor, each running its own length.

    Example::

        rnn = fluid.layers.DynamicRNN()
        with rnn.block():
            word = rnn.step_input(sentence)            # sentence: lod_level 1
            prev = rnn.memory(shape=[200])
            hidden = fluid.layers.fc([word, prev], size=200, act="relu")
            rnn.update_memory(prev, hidden)
            rnn.output(hidden)
        out = rnn()                                     # the hidden states, with sentence's LoD
    """
    BEFORE_RNN, IN_RNN, AFTER_RNN = 0, 1, 2

    def __init__(self, name=None):
        self.helper = LayerHelper("dynamic_rnn", name=name)
        self.status = DynamicRNN.BEFORE_RNN
        self.lod_rank_table = self.max_seq_len = self.step_idx = self.zero_idx = None
        self.mem_dict, self.mem_link = {}, []
        self.output_array, self.outputs, self.input_array = [], [], []
        self.cond = self.helper.create_variable_for_type_inference("bool")
        self.cond.shape = (1,)
        self.while_op = While(self.cond)

    def _assert_in_rnn_block_(self, method):
        if self.status != DynamicRNN.IN_RNN:
            raise ValueError(f"{method} can only be invoked inside rnn block.")

    def _in_parent(self):
        return in_parent_block(self.helper.main_program)

    def step_input(self, x, level=0):
        self._assert_in_rnn_block_("step_input")
        _check_type(x, "x", Variable, "fluid.layers.DynamicRNN.step_input()")
        with self._in_parent():
            if self.lod_rank_table is None:
                self.lod_rank_table = lod_rank_table(x, level)
                self.max_seq_len = max_sequence_len(self.lod_rank_table)
                less_than(self.step_idx, self.max_seq_len, force_cpu=True, cond=self.cond)
            array = lod_tensor_to_array(x, self.lod_rank_table)
        self.input_array.append((array, x.dtype))
        step = array_read(array, self.step_idx)
        step.lod_level = max((x.lod_level or 0) - level - 1, 0)  # a step keeps the LoD levels below ``level``
        return step

    def static_input(self, x):
        self._assert_in_rnn_block_("static_input")
        _check_type(x, "x", Variable, "fluid.layers.DynamicRNN.static_input()")
        if self.lod_rank_table is None:
            raise RuntimeError("static_input() must be called after step_input().")
        with self._in_parent():
            reordered = reorder_lod_tensor_by_rank(x, self.lod_rank_table)
        return shrink_memory(reordered, self.step_idx, self.lod_rank_table)

    @contextlib.contextmanager
    def block(self):
        if self.status != DynamicRNN.BEFORE_RNN:
            raise ValueError("rnn.block() can only be invoke once")
        self.step_idx = fill_constant([1], "int64", 0, force_cpu=True)
        self.status = DynamicRNN.IN_RNN
        with self.while_op.block():
            yield
            if self.lod_rank_table is None:
                raise ValueError("DynamicRNN needs at least one step_input")
            increment(self.step_idx, value=1.0, in_place=True)
            for new_mem, mem_array in self.mem_link:
                array_write(new_mem, self.step_idx, mem_array)
            less_than(self.step_idx, self.max_seq_len, force_cpu=True, cond=self.cond)
        self.status = DynamicRNN.AFTER_RNN
        self.outputs = [array_to_lod_tensor(array, self.lod_rank_table) for array in self.output_array]

    def __call__(self, *args, **kwargs):
        if self.status != DynamicRNN.AFTER_RNN:
            raise ValueError("Output of the dynamic RNN can only be visited outside the rnn block.")
        return self.outputs[0] if len(self.outputs) == 1 else self.outputs

    def memory(self, init=None, shape=None, value=0.0, need_reorder=False, dtype="float32"):
        self._assert_in_rnn_block_("memory")
        if self.zero_idx is None:
            with self._in_parent():
                self.zero_idx = fill_constant([1], "int64", 0, force_cpu=True)
        if shape is not None:
            _check_type(shape, "shape", (list, tuple), "fluid.layers.DynamicRNN.memory()")
        if init is None:
            if not shape:
                raise ValueError("Invoke memory with shape=[] is not allowed: give the shape of one step's row")
            if self.lod_rank_table is None:
                raise ValueError("step_input should be invoked before memory(shape=..., value=...)")
            with self._in_parent():
                first = array_read(self.input_array[0][0], self.zero_idx)
                init = fill_constant_batch_size_like(first, [-1] + list(shape), dtype, value)
            return self.memory(init=init)
        _check_type(init, "init", Variable, "fluid.layers.DynamicRNN.memory()")
        with self._in_parent():
            if need_reorder:
                if self.lod_rank_table is None:
                    raise ValueError("If set need_reorder to True, make sure step_input be invoked before "
                                     "memory(init=init, need_reordered=True, ...).")
                init = reorder_lod_tensor_by_rank(init, self.lod_rank_table)
            mem_array = array_write(init, self.zero_idx, create_array(init.dtype))
        mem = shrink_memory(array_read(mem_array, self.step_idx), self.step_idx, self.lod_rank_table)
        self.mem_dict[mem.name] = mem_array
        return mem

    def update_memory(self, ex_mem, new_mem):
        self._assert_in_rnn_block_("update_memory")
        _check_type(ex_mem, "ex_mem", Variable, "fluid.layers.DynamicRNN.update_memory()")
        _check_type(new_mem, "new_mem", Variable, "fluid.layers.DynamicRNN.update_memory()")
        mem_array = self.mem_dict.get(ex_mem.name)
        if mem_array is None:
            raise ValueError("Please invoke memory before update_memory")
        self.mem_link.append((new_mem, mem_array))

    def output(self, *outputs):
        self._assert_in_rnn_block_("output")
        for each in outputs:
            _check_type(each, "outputs", Variable, "fluid.layers.DynamicRNN.output")
            with self._in_parent():
                array = create_array(each.dtype)
            array_write(each, self.step_idx, array)
            self.output_array.append(array)


# --- beam search --------------------------------------------------------------------------------------
def beam_search(pre_ids, pre_scores, ids, scores, beam_size, end_id, level=0, is_accumulated=True, name=None,
                return_parent_idx=False):
    """One step of beam search: for each source sentence, the ``beam_size`` best (prefix, next id) pairs
    among every prefix's candidates (``ids`` / ``scores``, [prefixes, k]); a prefix that ended carries
    its end id on; a source whose every branch ended is dropped. Returns selected ids and scores with a
    2-level LoD (source -> prefixes -> selected), and each one's prefix row with ``return_parent_idx``."""
    check_variable_and_dtype(pre_ids, "pre_ids", ("int64",), "beam_search")
    check_variable_and_dtype(pre_scores, "pre_scores", ("float32", "float64"), "beam_search")
    _check_type(ids, "ids", (Variable, type(None)), "beam_search")
    check_variable_and_dtype(scores, "scores", ("float32", "float64"), "beam_search")
    helper = LayerHelper("beam_search", name=name)
    inputs = {"pre_ids": [pre_ids], "pre_scores": [pre_scores], "scores": [scores]}
    if ids is not None:
        inputs["ids"] = [ids]
    selected_scores = helper.create_variable_for_type_inference(pre_scores.dtype)
    selected_ids = helper.create_variable_for_type_inference(pre_ids.dtype)
    parent_idx = helper.create_variable_for_type_inference("int32")
    helper.append_op(type="beam_search", inputs=inputs,
                     outputs={"selected_ids": [selected_ids], "selected_scores": [selected_scores],
                              "parent_idx": [parent_idx]},
                     attrs={"level": level, "beam_size": beam_size, "end_id": end_id, "is_accumulated": is_accumulated})
    for var in (selected_ids, selected_scores):
        var.shape, var.lod_level = (-1, 1), 2
    return (selected_ids, selected_scores, parent_idx) if return_parent_idx else (selected_ids, selected_scores)


def beam_search_decode(ids, scores, beam_size, end_id, name=None):
    """The sentences of a beam search: backtracks the arrays of every step's selected ids and scores.
    Returns ids and scores with a 2-level LoD (source -> hypotheses -> words), best hypothesis first."""
    check_variable_and_dtype(ids, "ids", ("int64",), "beam_search_encode")
    check_variable_and_dtype(scores, "scores", ("float32",), "beam_search_encode")
    helper = LayerHelper("beam_search_decode", name=name)
    sentence_ids = helper.create_variable_for_type_inference(ids.dtype)
    sentence_scores = helper.create_variable_for_type_inference(ids.dtype)
    helper.append_op(type="beam_search_decode", inputs={"Ids": [ids], "Scores": [scores]},
                     outputs={"SentenceIds": [sentence_ids], "SentenceScores": [sentence_scores]},
                     attrs={"beam_size": beam_size, "end_id": end_id})
    for var in (sentence_ids, sentence_scores):
        var.lod_level = 2
    return sentence_ids, sentence_scores
