"""LoD through the graph (executor/executor.py's NOTE): from feeds, the non-iterable reader and the double
buffer, through ops that share it (fluid's ShareLoD), into LoDTensor fetches and gradients."""
import numpy as np
import pytest

import minifluid as fluid

PLACE = fluid.CPUPlace()


def _embed_program(lod_level):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        words = fluid.data("words", [None, 1], "int64", lod_level=lod_level)
        emb = fluid.layers.embedding(words, size=[10, 3])
        hidden = fluid.layers.relu(fluid.layers.scale(emb, scale=2.0))
        loss = fluid.layers.mean(hidden)
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(PLACE)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return main, exe, scope, words, emb, hidden


def _words(lengths):
    return fluid.create_lod_tensor(np.arange(sum(lengths)).reshape(-1, 1) % 10, [lengths], PLACE)


def test_lod_level_is_tracked_while_building():
    _, _, _, words, emb, hidden = _embed_program(1)
    assert (words.lod_level, emb.lod_level, hidden.lod_level) == (1, 1, 1)


@pytest.mark.parametrize("lod_level", [1, 0])
def test_a_fed_lod_reaches_embedding_and_the_ops_after_it(lod_level):
    """Declared lod_level 1, or a lod_level 0 variable fed a LoDTensor (fluid keeps the fed LoD)."""
    main, exe, scope, _, emb, hidden = _embed_program(lod_level)
    e, h = exe.run(main, feed={"words": _words([3, 1, 2])}, fetch_list=[emb, hidden], scope=scope,
                   return_numpy=False)
    assert e.recursive_sequence_lengths() == [[3, 1, 2]] and h.recursive_sequence_lengths() == [[3, 1, 2]]
    assert np.asarray(e).shape == (6, 3)
    with pytest.raises(RuntimeError, match="Some of your fetched tensors hold LoD information"):
        exe.run(main, feed={"words": _words([3, 1, 2])}, fetch_list=[hidden], scope=scope)


def test_a_plain_feed_after_a_lod_feed_leaves_no_stale_lod():
    main, exe, scope, _, emb, hidden = _embed_program(0)
    exe.run(main, feed={"words": _words([2, 4])}, fetch_list=[hidden], scope=scope, return_numpy=False)
    (h,) = exe.run(main, feed={"words": np.arange(6).reshape(6, 1)}, fetch_list=[hidden], scope=scope)
    assert h.shape == (6, 3)


def test_gradients_carry_the_lod_of_their_forward_values():
    main, exe, scope, _, emb, hidden = _embed_program(1)
    g_emb, g_hidden = exe.run(main, feed={"words": _words([1, 4])}, scope=scope, return_numpy=False,
                              fetch_list=[emb.name + "@GRAD", hidden.name + "@GRAD"])
    assert g_emb.recursive_sequence_lengths() == [[1, 4]] and g_hidden.recursive_sequence_lengths() == [[1, 4]]
    table = main.global_block().all_parameters()[0].name
    (g_table,) = exe.run(main, feed={"words": _words([1, 4])}, scope=scope, fetch_list=[table + "@GRAD"])
    assert g_table.shape == (10, 3)  # a parameter's gradient has no LoD (fluid's lookup_table_grad)


@pytest.mark.parametrize("use_double_buffer", [False, True])
def test_lod_reaches_ops_from_the_non_iterable_reader(use_double_buffer):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        words = fluid.data("words", [None, 1], "int64", lod_level=1)
        loader = fluid.io.DataLoader.from_generator(feed_list=[words], capacity=2, iterable=False,
                                                    use_double_buffer=use_double_buffer)
        emb = fluid.layers.embedding(words, size=[10, 2])
    exe, scope = fluid.Executor(PLACE), fluid.global_scope()  # where the loader keeps its queue
    exe.run(startup, scope=scope)
    samples = [[[1, 2, 3]], [[4]], [[5, 6]]]
    loader.set_sample_list_generator(lambda: iter([samples[:2], samples[2:]]), PLACE)
    loader.start()
    got = []
    try:
        while True:
            got.append(exe.run(main, fetch_list=[emb], scope=scope, return_numpy=False)[0])
    except fluid.core.EOFException:
        loader.reset()
    assert [t.recursive_sequence_lengths() for t in got] == [[[3, 1]], [[2]]]
    assert [np.asarray(t).shape for t in got] == [(4, 2), (2, 2)]


def test_lod_reaches_every_place_of_a_compiled_program():
    main, exe, scope, _, emb, _ = _embed_program(0)
    compiled = fluid.CompiledProgram(main).with_data_parallel(places=[PLACE, PLACE])
    (e,) = exe.run(compiled, feed={"words": _words([2, 1, 3, 1])}, fetch_list=[emb], scope=scope,
                   return_numpy=False, return_merged=False)
    assert [t.recursive_sequence_lengths() for t in e] == [[[2, 1]], [[3, 1]]]
