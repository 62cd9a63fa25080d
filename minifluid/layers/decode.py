"""fluid 1.8's decoding API: Decoder, BeamSearchDecoder, BasicDecoder with its helpers (TrainingHelper,
GreedyEmbeddingHelper, SampleEmbeddingHelper), dynamic_decode and gather_tree.

``dynamic_decode`` calls ``decoder.step`` until every sequence is finished or ``max_step_num`` is passed.
In a static program the steps run in a While: with ``is_test`` the inputs and states are overwritten step
after step; without it every step's inputs and states are kept in tensor arrays, so append_backward can
differentiate the loop (teacher-forced training through BasicDecoder + TrainingHelper). In dygraph mode
the same decoder runs in a Python loop. BeamSearchDecoder keeps ``beam_size`` hypotheses per source as
[batch, beam, ...] tensors; its ``finalize`` backtracks the chosen tokens with gather_tree
(ops/gather_tree.py).
"""
import collections

import numpy as np

from ..framework import dygraph_mode
from ..framework.variable import Variable
from .activation import check_variable_and_dtype, log
from .compare import equal, less_equal, logical_and, logical_not, logical_or
from .control_flow import While, array_read, array_write, create_array, in_parent_block, tensor_array_to_tensor
from .creation import range as arange
from .creation import sampling_id, zeros_like
from .helper import LayerHelper
from .image import pad
from .indexing import gather_nd
from .manip import argmax, expand, fill_constant_batch_size_like, gather, increment, shape, slice, stack, topk
from .math import elementwise_add, elementwise_floordiv, elementwise_mod, elementwise_mul, reduce_all, scale
from .nest import flatten, map_structure, pack_sequence_as
from .nn import softmax
from .tensor import assign, cast, fill_constant, reshape, squeeze, transpose, unsqueeze

__all__ = ["BasicDecoder", "BeamSearchDecoder", "DecodeHelper", "Decoder", "GreedyEmbeddingHelper",
           "SampleEmbeddingHelper", "TrainingHelper", "dynamic_decode", "gather_tree"]


def gather_tree(ids, parents):
    """Backtrack beam search choices: ``ids`` and ``parents`` [max_time, batch, beam] (each step's token and
    the beam it extends) give every final beam's full token sequence, same shape."""
    check_variable_and_dtype(ids, "ids", ("int32", "int64"), "gather_tree")
    check_variable_and_dtype(parents, "parents", ("int32", "int64"), "gather_tree")
    helper = LayerHelper("gather_tree")
    out = helper.create_variable_for_type_inference(ids.dtype)
    helper.append_op(type="gather_tree", inputs={"Ids": [ids], "Parents": [parents]}, outputs={"Out": [out]})
    return out


def _check_type(value, name, types, where):
    if not isinstance(value, types):
        raise TypeError(f"The type of '{name}' in {where} must be Variable, but received {type(value).__name__}. ")


class Decoder:
    """Base class of decoders for ``dynamic_decode``: ``initialize(inits)`` -> (inputs, states, finished);
    ``step(time, inputs, states, **kwargs)`` -> (outputs, next_states, next_inputs, finished); optionally
    ``finalize(outputs, final_states, sequence_lengths)`` -> (final_outputs, final_states)."""

    def initialize(self, inits):
        raise NotImplementedError

    def step(self, time, inputs, states, **kwargs):
        raise NotImplementedError

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError


class BeamSearchDecoder(Decoder):
    """Beam search over ``cell``'s outputs: every step keeps the ``beam_size`` best-scoring (summed log
    probability) extensions of each source's beams; a finished beam only extends with ``end_token`` at no
    cost. ``embedding_fn`` maps chosen ids to the cell's next inputs; ``output_fn`` maps the cell's
    outputs to logits. Tensors the cell uses besides its inputs and states (an encoder output for
    attention) must be tiled to [batch * beam, ...] with ``tile_beam_merge_with_batch`` first."""

    OutputWrapper = collections.namedtuple("OutputWrapper", ("scores", "predicted_ids", "parent_ids"))
    StateWrapper = collections.namedtuple("StateWrapper", ("cell_states", "log_probs", "finished", "lengths"))

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None, output_fn=None):
        self.cell, self.embedding_fn, self.output_fn = cell, embedding_fn, output_fn
        self.start_token, self.end_token, self.beam_size = start_token, end_token, beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """[batch, ...] -> [batch * beam_size, ...], each row repeated ``beam_size`` times in a row."""
        _check_type(x, "x", Variable, "BeamSearchDecoder.tile_beam_merge_with_batch")
        x = unsqueeze(x, [1])
        x = expand(x, [1, beam_size] + [1] * (len(x.shape) - 2))
        rank = len(x.shape)
        x = transpose(x, list(range(2, rank)) + [0, 1])  # [..., batch, beam]: the leading dims are copied by 0
        x = reshape(x, [0] * (rank - 2) + [-1])
        return transpose(x, [rank - 2] + list(range(rank - 2)))

    def _split_batch_beams(self, x):
        _check_type(x, "x", Variable, "BeamSearchDecoder._split_batch_beams")
        return reshape(x, [-1, self.beam_size] + list(x.shape[1:]))

    def _merge_batch_beams(self, x):
        _check_type(x, "x", Variable, "BeamSearchDecoder._merge_batch_beams")
        return reshape(x, [-1] + list(x.shape[2:]))

    def _expand_to_beam_size(self, x):
        _check_type(x, "x", Variable, "BeamSearchDecoder._expand_to_beam_size")
        x = unsqueeze(x, [1])
        return expand(x, [1, self.beam_size] + [1] * (len(x.shape) - 2))

    def _mask_probs(self, probs, finished):
        """Finished beams put all their probability on end_token; the others keep ``probs``."""
        finished = cast(finished, probs.dtype)
        ended = elementwise_mul(expand(unsqueeze(finished, [2]), [1, 1, self.vocab_size]), self.noend_mask_tensor,
                                axis=-1)
        return elementwise_add(ended, elementwise_mul(probs, scale(finished, -1.0, 1.0), axis=0))

    def _gather(self, x, indices, batch_size):
        """``x[b, indices[b, k]]`` for each source b and beam k (x: [batch, beam, ...])."""
        batch_size = cast(batch_size, indices.dtype) if batch_size.dtype != indices.dtype else batch_size
        batch_size.stop_gradient = True
        batch_pos = expand(unsqueeze(arange(0, batch_size, 1, dtype=indices.dtype), [1]), [1, self.beam_size])
        coordinates = stack([batch_pos, indices], axis=2)
        coordinates.stop_gradient = True
        return gather_nd(x, coordinates)

    def initialize(self, initial_cell_states):
        self.kinf = 1e9
        state = flatten(initial_cell_states)[0]
        self.batch_size = slice(shape(state), axes=[0], starts=[0], ends=[1])
        self.end_token_tensor = fill_constant([1], "int64", self.end_token)
        cell_states = map_structure(self._expand_to_beam_size, initial_cell_states)
        inputs = fill_constant_batch_size_like(state, [-1, self.beam_size], "int64", self.start_token)
        first_only = assign(np.array([[0.0] + [-self.kinf] * (self.beam_size - 1)], "float32"))
        log_probs = elementwise_add(
            fill_constant_batch_size_like(state, [-1, self.beam_size], "float32", 0.0), first_only)
        finished = fill_constant_batch_size_like(state, [-1, self.beam_size], "bool", False)
        lengths = zeros_like(inputs)
        inputs = self.embedding_fn(inputs) if self.embedding_fn else inputs
        return inputs, self.StateWrapper(cell_states, log_probs, finished, lengths), finished

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        self.vocab_size = logits.shape[-1]
        vocab = fill_constant([1], "int64", self.vocab_size)
        noend = np.full([self.vocab_size], -self.kinf, "float32")
        noend[self.end_token] = 0
        self.noend_mask_tensor = assign(noend)
        step_log_probs = self._mask_probs(log(softmax(logits)), beam_state.finished)
        log_probs = elementwise_add(step_log_probs, unsqueeze(beam_state.log_probs, [2]))
        scores = reshape(log_probs, [-1, self.beam_size * self.vocab_size])
        topk_scores, topk_indices = topk(scores, k=self.beam_size)
        beam_indices = elementwise_floordiv(topk_indices, vocab)
        token_indices = elementwise_mod(topk_indices, vocab)
        next_log_probs = self._gather(scores, topk_indices, self.batch_size)
        next_cell_states = map_structure(lambda x: self._gather(x, beam_indices, self.batch_size), next_cell_states)
        next_finished = self._gather(beam_state.finished, beam_indices, self.batch_size)
        next_lengths = self._gather(beam_state.lengths, beam_indices, self.batch_size)
        next_lengths = elementwise_add(next_lengths, cast(logical_not(next_finished), beam_state.lengths.dtype))
        next_finished = logical_or(next_finished, equal(token_indices, self.end_token_tensor))
        return (self.OutputWrapper(topk_scores, token_indices, beam_indices),
                self.StateWrapper(next_cell_states, next_log_probs, next_finished, next_lengths))

    def step(self, time, inputs, states, **kwargs):
        inputs = map_structure(self._merge_batch_beams, inputs)
        cell_states = map_structure(self._merge_batch_beams, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = map_structure(self._split_batch_beams, cell_outputs)
        next_cell_states = map_structure(self._split_batch_beams, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        output, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        sample_ids = output.predicted_ids
        sample_ids.stop_gradient = True
        next_inputs = self.embedding_fn(sample_ids) if self.embedding_fn else sample_ids
        return output, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        """The full token sequence of every final beam: gather_tree over the stacked [time, batch, beam]
        choices and parents."""
        return gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states


# --- dynamic_decode ------------------------------------------------------------------------------------------
def _keep_finished(state, new_state, finished):
    """``state`` for finished rows, ``new_state`` for the others (bool states through float32)."""
    dtype = state.dtype
    if dtype == "bool":
        state, new_state = cast(state, "float32"), cast(new_state, "float32")
    mask = cast(finished, state.dtype)
    mask.stop_gradient = True
    out = elementwise_add(elementwise_mul(state, mask, axis=0),
                          elementwise_mul(new_state, scale(mask, -1.0, 1.0), axis=0))
    return cast(out, dtype) if dtype == "bool" else out


def _transpose_batch_time(x):
    return transpose(x, [1, 0] + list(range(2, len(x.shape))))


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False, impute_finished=False,
                   is_test=False, return_length=False, **kwargs):
    """Run ``decoder`` from ``decoder.initialize(inits)`` until every sequence is finished, or for at most
    ``max_step_num + 1`` steps. Returns ``(final_outputs, final_states)`` and, with ``return_length``, the
    int64 length of each decoded sequence: the steps' outputs stacked on the time axis ([batch, time, ...],
    or [time, batch, ...] with ``output_time_major``) after ``decoder.finalize`` when it has one.
    ``impute_finished`` keeps a finished sequence's states unchanged; ``kwargs`` go to ``decoder.step``."""
    inputs, states, finished = decoder.initialize(inits)
    finished.stop_gradient = True
    run = _eager_decode if dygraph_mode._tracer is not None else _static_decode
    outputs, final_states, lengths = run(decoder, inputs, states, finished, max_step_num, impute_finished, is_test,
                                         kwargs)
    try:
        outputs, final_states = decoder.finalize(outputs, final_states, lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        outputs = map_structure(_transpose_batch_time, outputs)
    return (outputs, final_states, lengths) if return_length else (outputs, final_states)


def _one_step(decoder, time, inputs, states, finished, lengths, impute_finished, kwargs):
    outputs, next_states, next_inputs, next_finished = decoder.step(time, inputs, states, **kwargs)
    next_finished = logical_or(next_finished, finished)
    next_lengths = elementwise_add(lengths, cast(logical_not(finished), lengths.dtype))
    if impute_finished:
        next_states = map_structure(lambda s, n: _keep_finished(s, n, finished), states, next_states)
    return outputs, next_states, next_inputs, next_finished, next_lengths


def _eager_decode(decoder, inputs, states, finished, max_step_num, impute_finished, is_test, kwargs):
    time = fill_constant([1], "int64", 0)
    lengths = cast(zeros_like(finished), "int64")
    collected, step, structure = [], 0, None
    while not bool(np.all(finished.numpy())) and (max_step_num is None or step <= max_step_num):
        structure, states, inputs, finished, lengths = _one_step(decoder, time, inputs, states, finished, lengths,
                                                                 impute_finished, kwargs)
        collected.append(flatten(structure))
        time = increment(time, 1.0, in_place=False)
        step += 1
    if structure is None:
        raise ValueError("dynamic_decode: every sequence is finished before the first step; nothing to decode")
    stacked = [stack([outs[k] for outs in collected], axis=0) for k in range(len(collected[0]))]
    return pack_sequence_as(structure, stacked), states, lengths


def _static_decode(decoder, inputs, states, finished, max_step_num, impute_finished, is_test, kwargs):
    program = LayerHelper("dynamic_decode").main_program
    time = fill_constant([1], "int64", 0)
    cond = logical_not(reduce_all(finished))
    limit = fill_constant([1], "int64", max_step_num) if max_step_num is not None else None
    lengths = cast(zeros_like(finished), "int64")
    lengths.stop_gradient = True
    if not is_test:  # every step's inputs and states kept for the backward pass
        input_arrays = map_structure(lambda x: array_write(x, time), inputs)
        state_arrays = map_structure(lambda x: array_write(x, time), states)
    loop = While(cond, is_test=is_test)
    with loop.block():
        step_inputs, step_states = inputs, states
        if not is_test:
            step_inputs = map_structure(lambda a: array_read(a, time), input_arrays)
            step_states = map_structure(lambda a: array_read(a, time), state_arrays)
        outputs, next_states, next_inputs, next_finished, next_lengths = _one_step(
            decoder, time, step_inputs, step_states, finished, lengths, impute_finished, kwargs)
        with in_parent_block(program):
            output_arrays = map_structure(lambda x: create_array(x.dtype), outputs)
        map_structure(lambda x, a: array_write(x, time, a), outputs, output_arrays)
        increment(time, 1.0, in_place=True)
        if is_test:
            map_structure(assign, next_inputs, inputs)
            map_structure(assign, next_states, states)
        else:
            map_structure(lambda x, a: array_write(x, time, a), next_inputs, input_arrays)
            map_structure(lambda x, a: array_write(x, time, a), next_states, state_arrays)
        assign(next_finished, finished)
        assign(next_lengths, lengths)
        going = logical_not(reduce_all(finished))
        if limit is not None:
            logical_and(going, less_equal(time, limit), out=cond)
        else:
            assign(going, cond)
    final_outputs = map_structure(lambda a: tensor_array_to_tensor(a, axis=0, use_stack=True)[0], output_arrays)
    final_states = states if is_test else map_structure(lambda a: array_read(a, time), state_arrays)
    return final_outputs, final_states, lengths


# --- BasicDecoder and its helpers ------------------------------------------------------------------------------
class DecodeHelper:
    """How BasicDecoder samples and feeds its next step: ``initialize()`` -> (inputs, finished);
    ``sample(time, outputs, states)`` -> ids; ``next_inputs(time, outputs, states, sample_ids)`` ->
    (finished, next_inputs, next_states)."""

    def initialize(self):
        pass

    def sample(self, time, outputs, states):
        pass

    def next_inputs(self, time, outputs, states, sample_ids):
        pass


class TrainingHelper(DecodeHelper):
    """Teacher forcing: step t's input is step t of ``inputs`` ([batch, time, ...], or time-major); a
    sequence is finished once ``sequence_length`` steps are decoded. Samples are the argmax ids."""

    def __init__(self, inputs, sequence_length, time_major=False):
        self.inputs, self.sequence_length, self.time_major = inputs, sequence_length, time_major

        def time_major_padded(x):  # one step of zeros past the end: the input after the last step
            x = x if time_major else _transpose_batch_time(x)
            return pad(x, paddings=[0, 1] + [0, 0] * (len(x.shape) - 1))
        self.inputs_ = map_structure(time_major_padded, inputs)

    def initialize(self):
        finished = equal(self.sequence_length, fill_constant([1], self.sequence_length.dtype, 0))
        return map_structure(lambda x: self._at(x, fill_constant([1], "int64", 0)), self.inputs_), finished

    @staticmethod
    def _at(x, time):
        step = gather(x, time)
        return squeeze(step, [0])

    def sample(self, time, outputs, states):
        return argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        next_time = increment(cast(time, "int64"), 1.0, in_place=False)
        lengths = self.sequence_length
        if lengths.dtype != "int64":
            lengths = cast(lengths, "int64")
        finished = less_equal(lengths, next_time)
        return finished, map_structure(lambda x: self._at(x, next_time), self.inputs_), states


class GreedyEmbeddingHelper(DecodeHelper):
    """Greedy decoding: the argmax id of each step's logits, through ``embedding_fn``, is the next input;
    a sequence is finished when it samples ``end_token``. ``start_tokens``: int64 [batch]."""

    def __init__(self, embedding_fn, start_tokens, end_token):
        self.embedding_fn, self.start_tokens = embedding_fn, start_tokens
        self.end_token = fill_constant([1], "int64", end_token)

    def initialize(self):
        finished = fill_constant_batch_size_like(self.start_tokens, [-1], "bool", False)
        return self.embedding_fn(self.start_tokens), finished

    def sample(self, time, outputs, states):
        return argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        return equal(sample_ids, self.end_token), self.embedding_fn(sample_ids), states


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """As GreedyEmbeddingHelper, but each id is drawn from softmax(logits / softmax_temperature)."""

    def __init__(self, embedding_fn, start_tokens, end_token, softmax_temperature=None, seed=None):
        super().__init__(embedding_fn, start_tokens, end_token)
        self.softmax_temperature = softmax_temperature
        self.seed = seed

    def sample(self, time, outputs, states):
        logits = scale(outputs, 1.0 / self.softmax_temperature) if self.softmax_temperature is not None else outputs
        probs = softmax(logits)
        probs.stop_gradient = True
        return sampling_id(probs, seed=self.seed or 0, dtype=self.start_tokens.dtype)


class BasicDecoder(Decoder):
    """A cell plus a DecodeHelper: each step runs the cell (then ``output_fn``), samples ids with the helper
    and takes the next inputs and finished flags from it. Outputs: (cell_outputs, sample_ids)."""

    OutputWrapper = collections.namedtuple("OutputWrapper", ("cell_outputs", "sample_ids"))

    def __init__(self, cell, helper, output_fn=None):
        self.cell, self.helper, self.output_fn = cell, helper, output_fn

    def initialize(self, initial_cell_states):
        inputs, finished = self.helper.initialize()
        return inputs, initial_cell_states, finished

    def step(self, time, inputs, states, **kwargs):
        cell_outputs, cell_states = self.cell(inputs, states, **kwargs)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        sample_ids = self.helper.sample(time=time, outputs=cell_outputs, states=cell_states)
        sample_ids.stop_gradient = True
        finished, next_inputs, next_states = self.helper.next_inputs(time=time, outputs=cell_outputs,
                                                                     states=cell_states, sample_ids=sample_ids)
        return self.OutputWrapper(cell_outputs, sample_ids), next_states, next_inputs, finished
