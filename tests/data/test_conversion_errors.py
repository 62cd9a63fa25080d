"""Data the reader gives that cannot become the feed variables' tensors (issue 23 point 13, issue 14 point 6).

The error names the variable, the sample's position in the batch, what was expected and what came; it is a
FeedConversionError (still a SystemError, as fluid's), not "the data reader raises an exception", and the
log does not say "Your reader has raised an exception!" when the reader was fine.
"""
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minifluid as fluid
from minifluid.errors import QUEUE_KILLED_MESSAGE, FeedConversionError, ReaderKilledError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOOD = (np.zeros(4, "float32"), np.array([1], "int64"))

SAMPLE_CASES = {  # name: (bad sample at position 1, error class of the cause, what the message must say)
    "dict": ({"image": np.zeros(4), "label": [1]}, TypeError,
             [r"sample 1 of the batch", r"is a dict with keys \['image', 'label'\]", r"expected a tuple or list of 2",
              r"\['image', 'label'\]"]),
    "ragged": (([1.0, 2.0], [1]), ValueError,
               [r"variable 'image'", r"sample 1 of the batch", r"of shape \(2,\) while sample 0 has shape \(4,\)",
                r"shape \[4\] in every sample"]),
    "str": (("abcd", [1]), TypeError,
            [r"variable 'image'", r"sample 1 of the batch", r"is a str 'abcd'", r"numbers convertible to float32"]),
    "none_sample": (None, TypeError, [r"sample 1 of the batch", r"is None", r"one per feed variable"]),
    "none_field": ((None, [1]), TypeError, [r"variable 'image'", r"sample 1 of the batch", r"is None",
                                            r"expected numbers"]),
    "nested_label": ((np.zeros(4), [[1, 2]]), ValueError, [r"variable 'label'", r"sample 1", r"shape \(1, 2\)"]),
}

BATCH_CASES = {  # name: (bad batch, what the message must say, what it must not)
    "none_batch": (None, [r"batch 0 \(counting from 0\) is None", r"one per feed variable", r"\['image', 'label'\]"],
                   "has no len"),
    "none_field": ((None, np.zeros([2, 1], "int64")), [r"field 0 \(feed variable 'image'\)", r"is None"],
                   "nested lists"),
    "str_field": (("abcd", np.zeros([2, 1], "int64")), [r"field 0 \(feed variable 'image'\)", r"is a str 'abcd'"],
                  "nested lists"),
}


def build(iterable=True, use_multiprocess=False):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=4, iterable=iterable,
                                                    use_multiprocess=use_multiprocess)
    return main, loader


def first_error(main, loader, iterable):
    """Run the epoch; the error that ends it (after the batches made before)."""
    if iterable:
        with pytest.raises(ReaderKilledError) as info:
            list(loader())
        return info.value
    exe = fluid.Executor(fluid.CPUPlace())
    loader.start()
    try:
        with pytest.raises(ReaderKilledError) as info:
            while True:
                exe.run(main, fetch_list=["image"])
    finally:
        loader.reset()
    return info.value


def assert_conversion_error(err, cause_cls, patterns):
    assert isinstance(err, FeedConversionError) and isinstance(err, SystemError)
    assert QUEUE_KILLED_MESSAGE not in str(err)  # the reader did not raise
    assert "could not be converted to the feed variables' tensors" in str(err)
    assert isinstance(err.__cause__, cause_cls)
    for pattern in patterns:
        assert any(__import__("re").search(pattern, text) for text in (str(err), str(err.__cause__))), pattern


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["iterable", "non_iterable", "multiprocess"])
@pytest.mark.parametrize("case", sorted(SAMPLE_CASES))
def test_a_bad_sample_is_named_with_its_variable_position_and_what_came(case, mode, caplog):
    bad, cause_cls, patterns = SAMPLE_CASES[case]
    main, loader = build(iterable=mode != "non_iterable", use_multiprocess=mode == "multiprocess")
    loader.set_sample_generator(lambda: iter([GOOD, bad, GOOD, GOOD]), batch_size=2,
                                places=None if mode == "non_iterable" else fluid.CPUPlace())
    with caplog.at_level(logging.WARNING, logger="minifluid.data"):
        err = first_error(main, loader, mode != "non_iterable")
    assert_conversion_error(err, cause_cls, patterns)
    assert "batch 0 (counting from 0)" in str(err)
    assert "Your reader has raised an exception" not in caplog.text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["iterable", "multiprocess"])
@pytest.mark.parametrize("case", sorted(BATCH_CASES))
def test_a_bad_batch_is_named_with_its_field_and_variable(case, mode):
    bad, patterns, wrong_blame = BATCH_CASES[case]
    main, loader = build(use_multiprocess=mode == "multiprocess")
    loader.set_batch_generator(lambda: iter([bad]), places=fluid.CPUPlace())
    err = first_error(main, loader, True)
    assert_conversion_error(err, TypeError, patterns)
    assert wrong_blame not in str(err)


def test_data_feeder_names_the_sample_and_variable():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    feeder = fluid.DataFeeder([image, label], fluid.CPUPlace(), program=main)
    with pytest.raises(TypeError, match=r"sample 1 of the batch .* is a dict with keys"):
        feeder.feed([GOOD, {"image": np.zeros(4), "label": [1]}])
    with pytest.raises(ValueError, match=r"variable 'image'.*sample 2 of the batch .* of shape \(3,\) while sample 0"):
        feeder.feed([GOOD, GOOD, (np.zeros(3), [1])])
    with pytest.raises(AssertionError, match=r"sample 1 of the batch, counting from 0, has 3 field"):
        feeder.feed([GOOD, (np.zeros(4), [1], 7)])
    with pytest.raises(ValueError, match=r"Reshape error\. .* \(feed variable 'image'\)"):
        feeder.feed([(np.zeros(3),), ] * 0 + [(np.zeros([2, 3]), [1])])


@pytest.mark.timeout(60)
def test_lod_field_errors_name_the_variable_and_sample():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        words = fluid.data(name="words", shape=[None, 1], dtype="int64", lod_level=1)
    feeder = fluid.DataFeeder([words], fluid.CPUPlace(), program=main)
    with pytest.raises(TypeError, match=r"variable 'words'.*sample 1 of the batch .* is None"):
        feeder.feed([([1, 2],), (None,)])


PRINTED_ONCE_SCRIPT = textwrap.dedent("""
    import numpy as np, minifluid as fluid
    image = fluid.data(name="image", shape=[None, 4], dtype="float32")
    loader = fluid.io.DataLoader.from_generator(feed_list=[image], capacity=2, iterable=False,
                                                use_multiprocess={multiprocess})
    loss = fluid.layers.mean(image)
    def reader():
        yield (np.zeros(4, "float32"),)
        raise ValueError("cannot open /data/part-3")
    loader.set_sample_generator(reader, batch_size=1)
    exe = fluid.Executor(fluid.CPUPlace())
    loader.start()
    while True:
        exe.run(fetch_list=[loss])
""")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("multiprocess", [False, True])
def test_a_reader_error_prints_its_traceback_once(multiprocess, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(PRINTED_ONCE_SCRIPT.format(multiprocess=multiprocess))
    proc = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=50)
    assert proc.returncode == 1
    assert "ReaderKilledError" in proc.stderr and "ValueError: cannot open /data/part-3" in proc.stderr
    source_line = 'raise ValueError("cannot open /data/part-3")'
    assert sum(source_line in line for line in proc.stderr.splitlines()) == 1, proc.stderr
