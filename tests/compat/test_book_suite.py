"""Paddle's fluid book tests (v1.5.1), run unchanged through ``python -m minifluid.compat``.

The files are Paddle's code and never live here: the test runs when ``PADDLE_BOOK_DIR`` names their
folder and skips otherwise. ``tools/run_book_tests.py`` runs each file from a scratch copy on small
synthetic data (``tools/make_book_data.py``); the files below ran to the end when they were listed and
must keep doing so (add a file here once it does).
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BOOK_DIR = os.environ.get("PADDLE_BOOK_DIR")
RUN_TO_THE_END = [
    "test_fit_a_line.py",
    "test_fit_a_line_new_api.py",
    "test_image_classification.py",
    "test_image_classification_resnet_new_api.py",
    "test_image_classification_vgg_new_api.py",
    "test_label_semantic_roles.py",
    "test_label_semantic_roles_new_api.py",
    "test_machine_translation.py",
    "test_machine_translation_new_api.py",
    "test_memopt_image_classification_train.py",
    "test_recognize_digits.py",
    "test_recognize_digits_conv_new_api.py",
    "test_recognize_digits_mlp_new_api.py",
    "test_recommender_system.py",
    "test_recommender_system_new_api.py",
    "test_rnn_encoder_decoder.py",
    "test_understand_sentiment_conv_new_api.py",
    "test_understand_sentiment_dynamic_rnn_new_api.py",
    "test_understand_sentiment_stacked_lstm_new_api.py",
    "test_word2vec.py",
    "test_word2vec_new_api.py",
]


@pytest.mark.timeout(1800)
@pytest.mark.skipif(not BOOK_DIR, reason="PADDLE_BOOK_DIR does not name the folder of Paddle's book tests")
def test_book_tests_that_ran_to_the_end_still_do():
    files = [arg for name in RUN_TO_THE_END for arg in ("--file", name)]
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "run_book_tests.py"), BOOK_DIR, *files],
                         capture_output=True, text=True, check=True, timeout=1780).stdout
    report = json.loads(out)
    assert sorted(report) == sorted(RUN_TO_THE_END)
    stopped = {name: (entry["status"], entry.get("error")) for name, entry in report.items()
               if entry["status"] != "end"}
    assert not stopped, f"book tests that no longer run to the end: {stopped}"
    failed = {name: entry["methods"] for name, entry in report.items()
              if any(outcome not in ("ok", "skipped") for outcome in entry.get("methods", {}).values())}
    assert not failed, f"book tests with methods that did not pass: {failed}"


def test_first_error_line_is_the_end_of_the_first_traceback():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import run_book_tests
    finally:
        sys.path.remove(str(ROOT / "tools"))
    out = ("loss 0.5\nTraceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    f()\n"
           "ValueError: bad shape\n\nDuring handling...\nTraceback (most recent call last):\n  x\nKeyError: 1\n")
    assert run_book_tests.first_error(out) == "ValueError: bad shape"
    assert run_book_tests.first_error("all fine\n") is None
    verbose = ("test_a (__main__.T.test_a) ... loss 1\nok\ntest_b (__main__.T.test_b) ... ERROR\n"
               "test_c (__main__.T.test_c) ... skipped 'no gpu'\n")
    assert run_book_tests.methods(verbose) == {"test_a": "ok", "test_b": "ERROR", "test_c": "skipped"}


def test_a_file_past_its_timeout_is_reported_as_such(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import run_book_tests
    finally:
        sys.path.remove(str(ROOT / "tools"))
    (tmp_path / "test_slow.py").write_text("print('training', flush=True)\nwhile True:\n    pass\n")
    entry, _ = run_book_tests.run_file(tmp_path / "test_slow.py", tmp_path, tmp_path, timeout=2)
    assert entry["status"] == "timeout" and entry["rc"] is None
    assert entry["error"].startswith("timed out after 2 s; last output line: ")  # "training" once it got that far
