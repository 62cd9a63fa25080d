"""fluid.dataset: MultiSlot files, QueueDataset / InMemoryDataset, DataLoader.from_dataset, train_from_dataset."""
import gc
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minifluid as fluid
from minifluid.data import multislot
from minifluid.data.file_dataset import PipeCommandError, read_chunks
from minifluid.data.loader import PRODUCER_THREAD_NAME
from minifluid.data.multislot import MalformedLineError, parse_lines, slot_formats
from minifluid.errors import ReaderKilledError
from minifluid.data.leak_checks import live_threads

pytestmark = pytest.mark.timeout(60)


def write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def slots(ids_lod=1):
    """ids: int64 LoD slot; dense: float32 [2]; label: int64 [1]."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=ids_lod)
        dense = fluid.data(name="dense", shape=[None, 2], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    return main, [ids, dense, label]


def dataset(kind, variables, files, batch_size=2, thread=1, pipe="cat"):
    ds = fluid.DatasetFactory().create_dataset(kind)
    ds.set_use_var(variables)
    ds.set_batch_size(batch_size)
    ds.set_thread(thread)
    ds.set_filelist(files)
    ds.set_pipe_command(pipe)
    return ds


LINES = ["3 11 12 13 2 0.5 1.5 1 0",   # ids [11, 12, 13]
         "1 21 2 2.5 3.5 1 1",         # ids [21]
         "2 31 32 2 4.5 5.5 1 0",      # ids [31, 32]
         "4 41 42 43 44 2 6.5 7.5 1 1"]


def steps(loader):
    return [[{k: (np.asarray(v), v.lod()) for k, v in d.items()} for d in step] for step in loader]


# --- the format ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["QueueDataset", "InMemoryDataset"])
def test_lod_and_dense_slots_from_the_counts(tmp_path, kind):
    _, variables = slots()
    ds = dataset(kind, variables, [write(tmp_path, "a.txt", LINES)], batch_size=3)
    if kind == "InMemoryDataset":
        ds.load_into_memory()
    got = steps(fluid.io.DataLoader.from_dataset(ds, [fluid.CPUPlace()], drop_last=False))
    assert len(got) == 2
    ids, lod = got[0][0]["ids"]
    assert lod == [[0, 3, 4, 6]] and ids.shape == (6, 1) and ids.dtype == np.int64
    assert ids.ravel().tolist() == [11, 12, 13, 21, 31, 32]
    dense, dense_lod = got[0][0]["dense"]
    assert dense_lod == [] and dense.dtype == np.float32
    np.testing.assert_array_equal(dense, [[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]])
    assert got[0][0]["label"][0].ravel().tolist() == [0, 1, 0] and got[0][0]["label"][0].shape == (3, 1)
    ids, lod = got[1][0]["ids"]
    assert lod == [[0, 4]] and ids.ravel().tolist() == [41, 42, 43, 44]


def test_numbers_are_read_as_c_reads_them():
    fmt = slot_formats([fluid.data(name="i", shape=[None, 1], dtype="int64", lod_level=1),
                        fluid.data(name="f", shape=[None, 1], dtype="float32", lod_level=1)])
    floats = ["0.1", "-2.5e-05", "1e3", "+7", ".5", "3.", "inf", "-0.0", "123456789.123"]
    ids = ["0", "-5", "+9", "9223372036854775807", "18446744073709551615", "9223372036854775808"]
    line = f"{len(ids)} {' '.join(ids)} {len(floats)} {' '.join(floats)}\t\r\n"
    table = parse_lines(line.encode(), fmt)
    assert table.values[0].tolist() == [0, -5, 9, 2 ** 63 - 1, -1, -2 ** 63]  # uint64 bits, as fluid stores them
    np.testing.assert_array_equal(table.values[1], np.array([float(x) for x in floats], np.float32))
    with pytest.raises(MalformedLineError, match=r"integer ids \(in the uint64 range\), got '18446744073709551616'"):
        parse_lines(b"1 18446744073709551616 1 1\n", fmt)
    assert parse_lines(b"1 1 1 18446744073709551616\n", fmt).values[1].tolist() == [2.0 ** 64]


def test_random_decimals_read_exactly_as_float_then_float32():
    fmt = slot_formats([fluid.data(name="f", shape=[None, 1], dtype="float32", lod_level=1)])
    rng = np.random.RandomState(5)
    x = rng.standard_normal(3000) * 10.0 ** rng.randint(-8, 9, 3000)
    tokens = [f % v for f, v in zip(rng.choice(["%.6f", "%r", "%.3e", "%g", "%.17f", "%.1f"], 3000), x.tolist())]
    tokens += ["-0.0", "-0", "0.000000000000001", "123456789012345.5", "-.25"]
    table = parse_lines(f"{len(tokens)} {' '.join(tokens)}\n".encode(), fmt)
    expected = np.array([float(t) for t in tokens]).astype(np.float32)
    np.testing.assert_array_equal(table.values[0], expected)
    assert np.signbit(table.values[0][-5]) and not np.signbit(table.values[0][-4])  # "-0" is the integer 0


def test_blank_lines_are_skipped_and_line_numbers_still_count_them():
    fmt = slot_formats(slots()[1])
    table = parse_lines(b"\n1 5 2 1 2 1 0\n\n   \n1 6 2 3 4 1 1\n", fmt)
    assert len(table) == 2
    with pytest.raises(MalformedLineError) as info:
        parse_lines(b"\n1 5 2 1 2 1 0\n\n1 6 2 3 4 1\n", fmt, "f.txt", first_line=7)
    assert info.value.line == 10 and info.value.slot == "label"


@pytest.mark.parametrize("line, slot, words", [
    ("0 2 1 2 1 0", "ids", "value count is 0"),
    ("-1 5 2 1 2 1 0", "ids", "value count is -1"),
    ("x 2 1 2 1 0", "ids", "expected the slot's value count, got 'x'"),
    ("1 5 3 1 2 3 1 0", "dense", "needs 2 values per sample, got 3"),
    ("1 5 2 1 abc 1 0", "dense", "float32 slots take numbers, got 'abc'"),
    ("1 5.5 2 1 2 1 0", "ids", "int64 slots take integer ids (in the uint64 range), got '5.5'"),
    ("1 5 2 1 2", "label", "the slot is missing"),
    ("1 5 2 1 2 3 0", "label", "the count says 3 values but the line has only 1 left"),
    ("1 5 2 1 2 1 0 9", None, "1 more value(s) after the last slot 'label'"),
])
def test_a_malformed_line_names_file_line_and_slot(line, slot, words):
    fmt = slot_formats(slots()[1])
    data = "\n".join(["1 5 2 1 2 1 0"] * 4 + [line] + ["1 5 2 1 2 1 0", line]) + "\n"
    with pytest.raises(MalformedLineError) as info:
        parse_lines(data.encode(), fmt, "/data/part-3", first_line=11)
    err = info.value
    assert (err.path, err.line, err.slot) == ("/data/part-3", 15, slot)  # the first bad line, not the last
    assert "'/data/part-3', line 15" in str(err) and words in str(err)
    if slot:
        assert f"slot {slot!r}" in str(err)


def test_slot_checks_at_set_use_var():
    ds = fluid.DatasetFactory().create_dataset()
    with pytest.raises(ValueError, match="only supports dtype=float32 and dtype=int64"):
        ds.set_use_var([fluid.data(name="x", shape=[None, 1], dtype="float64")])
    with pytest.raises(ValueError, match="unknown dimension"):
        ds.set_use_var([fluid.data(name="y", shape=[None, -1], dtype="float32")])
    with pytest.raises(ValueError, match="datafeed class FooDataset does not exist"):
        fluid.DatasetFactory().create_dataset("FooDataset")


def test_chunks_split_between_lines_give_the_same_samples(tmp_path):
    rng = np.random.RandomState(0)
    lines = [f"{n} {' '.join(map(str, rng.randint(0, 10 ** 6, n)))} 2 {rng.rand():.4f} 1.25 1 {i % 3}"
             for i, n in enumerate(rng.randint(1, 9, 300))]
    path = write(tmp_path, "a.txt", lines)
    fmt = slot_formats(slots()[1])
    whole = parse_lines(open(path, "rb").read(), fmt)
    chunks = list(read_chunks(path, chunk_bytes=97))
    assert len(chunks) > 10 and all(c.endswith(b"\n") for c, _ in chunks)
    assert [line for _, line in chunks] == list(np.cumsum([1] + [c.count(b"\n") for c, _ in chunks[:-1]]))
    parts = multislot.SampleTable.concat([parse_lines(c, fmt, path, line) for c, line in chunks])
    for a, b in zip(whole.values + whole.counts, parts.values + parts.counts):
        np.testing.assert_array_equal(a, b)


# --- files, pipes, errors ------------------------------------------------------------------------------
def test_pipe_command_transforms_each_file(tmp_path):
    _, variables = slots()
    a = write(tmp_path, "a.txt", ["ID 2 1 2 1 0", "ID 2 3 4 1 1"])
    b = write(tmp_path, "b.txt", ["ID 2 5 6 1 1"])
    # the sed turns the marker into a slot; awk appends the line's number in its file to the label slot
    ds = dataset("QueueDataset", variables, [a, b], batch_size=8,
                 pipe="sed 's/^ID/2 7 8/' | awk '{ $NF = $NF + 10 * NR; print }'")
    (step,) = steps(fluid.io.DataLoader.from_dataset(ds, [fluid.CPUPlace()], drop_last=False))
    assert step[0]["ids"][0].ravel().tolist() == [7, 8] * 3 and step[0]["ids"][1] == [[0, 2, 4, 6]]
    assert step[0]["label"][0].ravel().tolist() == [10, 21, 11]  # NR restarts: one command per file


def test_gzip_files_are_read_through_zcat(tmp_path):
    import gzip
    path = tmp_path / "a.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("1 5 2 1 2 1 0\n1 6 2 3 4 1 1\n")
    _, variables = slots()
    ds = dataset("QueueDataset", variables, [str(path)], batch_size=8)
    (step,) = steps(fluid.io.DataLoader.from_dataset(ds, [fluid.CPUPlace()], drop_last=False))
    assert step[0]["ids"][0].ravel().tolist() == [5, 6]


def test_a_failing_pipe_command_and_a_missing_file_are_errors(tmp_path):
    path = write(tmp_path, "a.txt", LINES)
    with pytest.raises(PipeCommandError, match=r"a\.txt.*exited with status 3: oops"):
        list(read_chunks(path, "cat; echo oops >&2; exit 3"))
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        list(read_chunks(str(tmp_path / "nope.txt")))


def test_a_malformed_file_fails_loading_and_reading(tmp_path):
    _, variables = slots()
    bad = write(tmp_path, "bad.txt", LINES[:2] + ["2 1 2 2 0.5 oops 1 0"] + LINES)
    ds = dataset("InMemoryDataset", variables, [write(tmp_path, "ok.txt", LINES), bad], thread=2)
    with pytest.raises(MalformedLineError, match=r"bad\.txt', line 3 in slot 'dense'"):
        ds.load_into_memory()
    ds = dataset("QueueDataset", variables, [bad], batch_size=1)
    loader = fluid.io.DataLoader.from_dataset(ds, [fluid.CPUPlace()], drop_last=False)
    with pytest.raises(ReaderKilledError) as info:
        list(loader)
    assert isinstance(info.value.__cause__, MalformedLineError)
    assert "bad.txt', line 3 in slot 'dense'" in str(info.value)
    assert live_threads(PRODUCER_THREAD_NAME) == []


def test_breaking_out_stops_the_readers_and_their_pipe_commands(tmp_path):
    _, variables = slots()
    files = [write(tmp_path, f"{k}.txt", LINES) for k in range(2)]
    marker = f"minifluid-test-{os.getpid()}"
    # the command outputs 1000 lines, then stays silent for a minute
    ds = dataset("QueueDataset", variables, files,
                 pipe=f"yes '1 5 2 1 2 1 {os.getpid()}' | head -n 1000; sleep 59.{os.getpid()}; : {marker}")
    loader = fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(2))
    for i, _ in enumerate(loader):
        if i == 3:
            break
    gc.collect()
    assert live_threads(PRODUCER_THREAD_NAME) == []
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert marker not in ps and f"sleep 59.{os.getpid()}" not in ps


# --- readers, threads, drop_last -----------------------------------------------------------------------
def numbered(tmp_path, name, first, n):
    """n samples whose label is their number (first, first + 1, ...)."""
    return write(tmp_path, name, [f"1 {i} 2 0 1 1 {i}" for i in range(first, first + n)])


def labels(step):
    return [np.asarray(d["label"]).ravel().tolist() for d in step]


def test_queue_dataset_readers_split_the_files_and_rounds_follow_fluid(tmp_path):
    _, variables = slots()
    files = [numbered(tmp_path, "a", 0, 5), numbered(tmp_path, "b", 100, 3), numbered(tmp_path, "c", 200, 2)]
    ds = dataset("QueueDataset", variables, files, batch_size=2)
    # reader 0: a, c -> [0 1] [2 3] [4 200] [201]; reader 1: b -> [100 101] [102]
    got = [labels(s) for s in fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(2), drop_last=False)]
    assert got == [[[0, 1], [100, 101]], [[2, 3], [102]], [[4, 200], [201]]]
    got = [labels(s) for s in fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(2), drop_last=True)]
    assert got == [[[0, 1], [100, 101]], [[2, 3], [4, 200]]]  # reader 1 ends at its short batch


def test_in_memory_channels_and_shared_readers(tmp_path):
    _, variables = slots()
    ds = dataset("InMemoryDataset", variables, [numbered(tmp_path, "a", 0, 7), numbered(tmp_path, "b", 7, 4)],
                 batch_size=2)
    ds.load_into_memory()  # thread 1: one channel that both readers share, taking its batches in turn
    assert ds.get_memory_data_size() == 11
    got = [labels(s) for s in fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(2), drop_last=False)]
    assert got == [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10]]]
    ds.set_queue_num(2)  # two channels of 11 // 2 + 1 = 6 samples (fluid's block size)
    got = [labels(s) for s in fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(2), drop_last=True)]
    assert got == [[[0, 1], [6, 7]], [[2, 3], [8, 9]]]


def test_from_dataset_checks(tmp_path):
    _, variables = slots()
    ds = dataset("QueueDataset", variables, [numbered(tmp_path, "a", 0, 3)])
    with pytest.raises(ValueError, match="Filelist number of dataset 1 must be not less than place number 2"):
        fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(2))
    with pytest.raises(TypeError, match="dataset must be type of DatasetBase"):
        fluid.io.DataLoader.from_dataset([1, 2], fluid.cpu_places(1))
    ds = dataset("InMemoryDataset", variables, [numbered(tmp_path, "a", 0, 3)])
    with pytest.raises(RuntimeError, match="call load_into_memory"):
        list(fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(1)))


# --- memory ---------------------------------------------------------------------------------------------
def all_samples(ds, places=1):
    return sorted(x for step in fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(places), drop_last=False)
                  for d in labels(step) for x in d)


def test_shuffles_keep_every_sample_and_release_memory_drops_them(tmp_path):
    _, variables = slots()
    ds = dataset("InMemoryDataset", variables, [numbered(tmp_path, "a", 0, 40), numbered(tmp_path, "b", 40, 23)],
                 batch_size=5, thread=2)
    ds.load_into_memory()
    before = [labels(s)[0] for s in fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(1), drop_last=False)]
    assert sum(before, []) == list(range(63)) and ds.get_shuffle_data_size() == 0
    np.random.seed(3)
    ds.local_shuffle()
    after = [labels(s)[0] for s in fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(1), drop_last=False)]
    assert sum(after, []) != list(range(63)) and sorted(sum(after, [])) == list(range(63))
    ds.global_shuffle()
    assert all_samples(ds) == list(range(63)) and ds.get_shuffle_data_size() == 63
    ds.release_memory()
    assert ds.get_memory_data_size() == 0
    with pytest.raises(RuntimeError, match="no data in memory"):
        all_samples(ds)


def test_shuffle_moves_whole_samples(tmp_path):
    _, variables = slots()
    lines = [f"{i % 4 + 1} {' '.join([str(i)] * (i % 4 + 1))} 2 {i} {i} 1 {i}" for i in range(30)]
    ds = dataset("InMemoryDataset", variables, [write(tmp_path, "a.txt", lines)], batch_size=7)
    ds.load_into_memory()
    ds.local_shuffle()
    for step in steps(fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(1), drop_last=False)):
        d = step[0]
        label = d["label"][0].ravel()
        np.testing.assert_array_equal(d["dense"][0], np.stack([label, label], 1))
        np.testing.assert_array_equal(np.diff(d["ids"][1][0]), label % 4 + 1)
        np.testing.assert_array_equal(d["ids"][0].ravel(), np.repeat(label, label % 4 + 1))


def test_in_memory_drops_zero_ids_as_fluid_does(tmp_path):
    _, variables = slots()
    path = write(tmp_path, "a.txt", ["3 0 7 0 2 0 0 1 0", "2 0 0 2 0 1 1 0"])
    queue = dataset("QueueDataset", variables, [path], batch_size=2)
    memory = dataset("InMemoryDataset", variables, [path], batch_size=2)
    memory.load_into_memory()
    (q,) = steps(fluid.io.DataLoader.from_dataset(queue, [fluid.CPUPlace()]))
    (m,) = steps(fluid.io.DataLoader.from_dataset(memory, [fluid.CPUPlace()]))
    assert q[0]["ids"][0].ravel().tolist() == [0, 7, 0, 0, 0] and q[0]["ids"][1] == [[0, 3, 5]]
    assert m[0]["ids"][0].ravel().tolist() == [7, 0] and m[0]["ids"][1] == [[0, 1, 2]]
    np.testing.assert_array_equal(m[0]["dense"][0], q[0]["dense"][0])  # dense slots keep their zeros
    assert m[0]["label"][0].ravel().tolist() == [0, 0]


def test_preload_and_instance_id_fields(tmp_path):
    _, variables = slots()
    path = write(tmp_path, "a.txt", [f"1 ins{i} 1 c{i} 1 {i} 2 0 1 1 {i}" for i in range(5)])
    ds = dataset("InMemoryDataset", variables, [path], batch_size=5)
    ds.set_parse_ins_id(True)
    ds.set_parse_content(True)
    ds.preload_into_memory()
    ds.wait_preload_done()
    assert all_samples(ds) == list(range(5))
    ds.set_parse_content(False)
    with pytest.raises(MalformedLineError, match="line 1 in slot 'ids'"):
        ds.load_into_memory()


# --- training -------------------------------------------------------------------------------------------
def regression(tmp_path, nfiles=2, n=64):
    rng = np.random.RandomState(0)
    files = []
    for k in range(nfiles):
        x = rng.rand(n, 3).astype("float32")
        y = x @ np.array([1.0, -2.0, 3.0], "float32") + 0.5
        files.append(write(tmp_path, f"r{k}.txt", [f"3 {' '.join(map(str, a))} 1 {b}" for a, b in zip(x, y)]))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        test = main.clone(for_test=True)
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, test, [x, y], loss, files


def test_train_from_dataset_trains_and_prints_fetches(tmp_path, capsys):
    main, startup, test, feed_vars, loss, files = regression(tmp_path)
    ds = dataset("QueueDataset", feed_vars, files, batch_size=8, thread=2)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    whole = {"x": np.zeros([0, 3], "float32"), "y": np.zeros([0, 1], "float32")}
    for step in fluid.io.DataLoader.from_dataset(ds, fluid.cpu_places(2), drop_last=False):
        for d in step:
            whole = {k: np.concatenate([whole[k], np.asarray(d[k])]) for k in whole}
    (first,) = exe.run(test, feed=whole, fetch_list=[loss], scope=scope)
    for _ in range(3):
        assert exe.train_from_dataset(main, ds, scope=scope, fetch_list=[loss], fetch_info=["mse"],
                                      print_period=3) is None
    (last,) = exe.run(test, feed=whole, fetch_list=[loss], scope=scope)
    assert float(last) < 0.2 * float(first)
    out = capsys.readouterr().out
    printed = [line for line in out.splitlines() if line.startswith("mse\t")]
    assert len(printed) == 3 * (8 // 3)  # reader 0 runs 8 batches per pass: printed after its 3rd and 6th
    assert printed[0] == f"mse\t{loss.name}\t  - place: CPUPlace" and out.count("  - shape: [1]\n") == 6
    values = [float(v) for v in re.findall(r"- data: \[([-\d.e]+)\]\t", out)]
    assert len(values) == 6 and values[-1] < values[0]
    exe.infer_from_dataset(test, ds, scope=scope, fetch_list=[loss], print_period=1)
    out = capsys.readouterr().out
    assert out.count(f"{loss.name}\t{loss.name}\t") == 8  # fetch_info defaults to the names


def test_train_from_dataset_reads_every_sample_once_with_more_threads_than_files(tmp_path, capsys):
    _, _, _, feed_vars, _, files = regression(tmp_path, nfiles=1, n=50)
    ds = paddle_style_dataset(feed_vars, files)
    ds.load_into_memory()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):  # counts the samples it is run on
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        seen = fluid.layers.create_global_var([1], 0.0, "float32", persistable=True, name="seen")
        fluid.layers.assign(seen + fluid.layers.reduce_sum(fluid.layers.scale(y, 0.0, 1.0)), seen)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.train_from_dataset(main, ds, scope=scope, thread=3, fetch_list=[seen], print_period=1)
    assert float(np.asarray(scope.find_var("seen").get_tensor())[0]) == 50
    # 3 channels of 17, 17, 16 samples in batches of 8; printed after reader 0's batches (8, 8, 1) in rounds
    assert [float(v) for v in re.findall(r"seen\tseen\t.*\n.*\n.*\n.*\n  - data: \[([\d.]+)\]",
                                         capsys.readouterr().out)] == [8, 32, 49]


def paddle_style_dataset(feed_vars, files):
    from minifluid.compat.paddle_distributed import InMemoryDataset
    ds = InMemoryDataset()
    ds.init(batch_size=8, thread_num=2, use_var=feed_vars, pipe_command="cat")
    ds.set_filelist(files)
    return ds


def test_train_from_dataset_debug_prints_op_times(tmp_path, capsys):
    main, startup, test, feed_vars, loss, files = regression(tmp_path, nfiles=1, n=100)
    ds = dataset("QueueDataset", feed_vars, files, batch_size=1)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        exe.train_from_dataset(main, ds, debug=True)
    err = capsys.readouterr().err
    assert err.count("op_name:[0][mul], op_mean_time:[") == 1 and "mean read time:" in err
    assert "IO percent:" in err and "instances/s" in err


def test_train_from_dataset_errors(tmp_path):
    main, startup, test, feed_vars, loss, files = regression(tmp_path, nfiles=1, n=4)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(RuntimeError, match="dataset is need"):
        exe.train_from_dataset(main)
    ds = dataset("QueueDataset", feed_vars, files, thread=0)
    with pytest.raises(RuntimeError, match="You should set thread num first"):
        exe.train_from_dataset(main, ds)
    with pytest.raises(ValueError, match="fetch_info needs one entry per fetch_list variable"):
        exe.train_from_dataset(main, ds, thread=1, fetch_list=[loss], fetch_info=["a", "b"])


# --- the legacy and paddle 2.0 surfaces ----------------------------------------------------------------
def test_desc_and_the_paddle_2_setters(tmp_path):
    _, variables = slots()
    ds = paddle_style_dataset(variables, [])
    assert ds.thread_num == 2 and ds.batch_size == 8
    ds.update_settings(batch_size=16, queue_num=1, thread_num=3, parse_ins_id=True, fs_name="afs", fs_ugi="u")
    ds._set_pipe_command("awk '{print}'")
    desc = ds.desc()
    assert 'name: "MultiSlotInMemoryDataFeed"' in desc and "batch_size: 16" in desc
    assert 'name: "dense"\n    type: "float"\n    is_dense: true' in desc and 'type: "uint64"' in desc
    assert "pipe_command: \"awk '{print}'\"" in desc and ds.queue_num == 1 and ds.thread_num == 3
    assert ds.parse_ins_id and (ds.fs_name, ds.fs_ugi) == ("afs", "u")
    with pytest.raises(NotImplementedError, match="parameter-server"):
        ds._init_distributed_settings(merge_size=2)
    with pytest.raises(NotImplementedError, match="QueueDataset does not support local shuffle"):
        fluid.DatasetFactory().create_dataset("QueueDataset").local_shuffle()


def test_legacy_script_through_the_compat_entry_point(tmp_path):
    script = tmp_path / "ctr.py"
    script.write_text(textwrap.dedent("""
        import paddle
        import paddle.fluid as fluid
        from paddle.fluid.dataset import DatasetFactory
        assert fluid.DatasetFactory is DatasetFactory and fluid.InMemoryDataset is paddle.distributed.InMemoryDataset
        assert paddle.io.DataLoader.from_dataset is fluid.io.DataLoader.from_dataset
        with open("part-0", "w") as f:
            for i in range(40):
                f.write("2 %d %d 1 %d\\n" % (i, i + 1, i % 2))
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[64, 4])
        pooled = fluid.layers.reduce_sum(emb)
        ds = fluid.DatasetFactory().create_dataset("InMemoryDataset")
        ds.set_use_var([ids, label])
        ds.set_batch_size(8)
        ds.set_thread(1)
        ds.set_filelist(["part-0"])
        ds.load_into_memory()
        ds.local_shuffle()
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(fluid.default_startup_program())
        exe.train_from_dataset(fluid.default_main_program(), ds, fetch_list=[label], fetch_info=["lbl"],
                               print_period=1)
        print("samples", ds.get_memory_data_size())
    """))
    proc = subprocess.run([sys.executable, "-m", "minifluid.compat", str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("lbl\tlabel\t") == 5 and "samples 40" in proc.stdout


def test_the_earliest_malformed_line_is_reported_whatever_check_fails():
    fmt = slot_formats(slots()[1])
    data = b"1 5 2 1 2 1 0\n1 5 2 1 2\n1 5 2 1 2 1 0\n0 5 2 1 2 1 0\n"  # line 2: label missing; line 4: count 0
    with pytest.raises(MalformedLineError) as info:
        parse_lines(data, fmt, "f.txt")
    assert (info.value.line, info.value.slot) == (2, "label")
