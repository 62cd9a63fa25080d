"""beam_search and beam_search_decode on small beams worked out by hand: choices, their 2-level LoD,
pruning of finished sources, and backtracked sentences best first."""
import numpy as np

import minifluid as fluid
from minifluid.op import Operator

L = fluid.layers


def _lod(data, lod, dtype):
    return fluid.create_lod_tensor(np.array(data, dtype).reshape(-1, 1), lod, fluid.CPUPlace())


def _step_program():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        pre_ids = fluid.data("pre_ids", [None, 1], "int64", lod_level=2)
        pre_scores = fluid.data("pre_scores", [None, 1], "float32", lod_level=2)
        ids = fluid.data("ids", [None, 2], "int64", lod_level=2)
        scores = fluid.data("scores", [None, 2], "float32", lod_level=2)
        out = L.beam_search(pre_ids, pre_scores, ids, scores, beam_size=2, end_id=9, return_parent_idx=True)
        finished = L.is_empty(out[0])
    return main, list(out) + [finished]


def _step(pre_ids, pre_scores, ids, scores, lod):
    main, fetch = _step_program()
    rows = len(pre_ids)
    feed = {"pre_ids": _lod(pre_ids, lod, "int64"), "pre_scores": _lod(pre_scores, lod, "float32"),
            "ids": fluid.create_lod_tensor(np.array(ids, "int64").reshape(rows, 2), lod, fluid.CPUPlace()),
            "scores": fluid.create_lod_tensor(np.array(scores, "float32").reshape(rows, 2), lod, fluid.CPUPlace())}
    return fluid.Executor().run(main, feed=feed, fetch_list=fetch, return_numpy=False, scope=fluid.Scope())


def test_beam_search_keeps_the_best_candidates_of_each_source_grouped_by_prefix():
    # source 0: prefixes (rows) 0 and 1; source 1: prefix 2; each offers its top-2 (id, accumulated score)
    sel_ids, sel_scores, parent, finished = _step(
        [1, 2, 3], [0.5, 0.3, 0.9], [[4, 5], [6, 7], [8, 9]], [[0.6, 0.4], [0.7, 0.1], [1.2, 1.0]],
        [[2, 1], [1, 1, 1]])
    assert np.array(sel_ids).ravel().tolist() == [4, 6, 8, 9]
    np.testing.assert_allclose(np.array(sel_scores).ravel(), [0.6, 0.7, 1.2, 1.0], rtol=1e-6)
    assert sel_ids.recursive_sequence_lengths() == [[2, 1], [1, 1, 2]]
    assert np.array(parent).tolist() == [0, 1, 2, 2] and not np.array(finished).item()


def test_an_ended_prefix_carries_itself_and_a_source_whose_branches_all_ended_is_dropped():
    # source 0: row 0 ended (id 9) and row 1 goes on; source 1: its only prefix ended a step ago
    sel_ids, sel_scores, parent, finished = _step(
        [9, 6, 9], [2.0, 0.5, 1.5], [[1, 2], [3, 4], [5, 6]], [[5.0, 4.0], [0.8, 0.6], [3.0, 2.0]],
        [[2, 1], [1, 1, 1]])
    assert np.array(sel_ids).ravel().tolist() == [9, 3]  # the ended prefix offers only end_id, score 2.0
    np.testing.assert_allclose(np.array(sel_scores).ravel(), [2.0, 0.8], rtol=1e-6)
    assert sel_ids.recursive_sequence_lengths() == [[2, 1], [1, 1, 0]] and np.array(parent).tolist() == [0, 1]
    _, _, _, finished = _step([9], [1.0], [[1, 2]], [[3.0, 2.0]], [[1], [1]])
    assert np.array(finished).item()  # every source ended: the decoding loop stops


def test_beam_search_decode_backtracks_each_hypothesis_best_first():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        zero, one = L.fill_constant([1], "int64", 0), L.fill_constant([1], "int64", 1)
        names = ("ids0", "scores0", "ids1", "scores1")
        ids0, scores0, ids1, scores1 = (fluid.data(n, [None, 1], "int64" if n[0] == "i" else "float32", lod_level=2)
                                        for n in names)
        ids = L.array_write(ids1, one, L.array_write(ids0, zero))
        scores = L.array_write(scores1, one, L.array_write(scores0, zero))
        sent_ids, sent_scores = L.beam_search_decode(ids, scores, beam_size=2, end_id=9)
    feed = {"ids0": _lod([1, 1], [[1, 1], [1, 1]], "int64"), "scores0": _lod([1, 1], [[1, 1], [1, 1]], "float32"),
            "ids1": _lod([4, 5, 8, 9], [[1, 1], [2, 2]], "int64"),
            "scores1": _lod([0.4, 0.6, 1.2, 1.0], [[1, 1], [2, 2]], "float32")}
    got_ids, got_scores = fluid.Executor().run(main, feed=feed, fetch_list=[sent_ids, sent_scores],
                                               return_numpy=False, scope=fluid.Scope())
    assert np.array(got_ids).tolist() == [1, 5, 1, 4, 1, 8, 1, 9]  # per source, the best hypothesis first
    np.testing.assert_allclose(np.array(got_scores), [1, 0.6, 1, 0.4, 1, 1.2, 1, 1.0], rtol=1e-6)
    assert got_ids.recursive_sequence_lengths() == [[2, 2], [2, 2, 2, 2]]


def test_beam_search_decode_reads_arrays_filled_through_the_scope():
    """Steps appended as LoDTensors to ``scope.var(name).get_lod_tensor_array()`` decode as written ones do."""
    scope = fluid.Scope()
    arrays = {name: scope.var(name).get_lod_tensor_array() for name in ("ids", "scores")}
    for data, lod in (([1, 1], [[1, 1], [1, 1]]), ([4, 5, 8, 9], [[1, 1], [2, 2]])):
        for name, dtype in (("ids", "int64"), ("scores", "float32")):
            values = data if name == "ids" else [{1: 1.0, 4: 0.4, 5: 0.6, 8: 1.2, 9: 1.0}[d] for d in data]
            arrays[name].append(_lod(values, lod, dtype))
    Operator("beam_search_decode", Ids="ids", Scores="scores", SentenceIds="sent", SentenceScores="sent_scores",
             beam_size=2, end_id=9).run(scope, fluid.CPUPlace())
    got = scope.find_var("sent").get_tensor()
    assert np.array(got).tolist() == [1, 5, 1, 4, 1, 8, 1, 9]
    assert got.recursive_sequence_lengths() == [[2, 2], [2, 2, 2, 2]]
