"""An API minifluid lacks names a written replacement or its API family, never a guess (issue 14.7)."""
import importlib
import re
import types

import pytest

from minifluid import compat
from minifluid.compat import MODULE_MAP, UnsupportedAPIError, UnsupportedModuleError
from minifluid.compat.hints import NOT_SUPPORTED_YET, REPLACEMENTS, hint, not_supported_yet


@pytest.fixture
def paddle():
    compat.install()
    try:
        yield importlib.import_module("paddle")
    finally:
        compat.uninstall()


def _missing(qualified):
    """The error message for ``qualified``, which must not exist."""
    module, _, name = qualified.rpartition(".")
    try:
        getattr(importlib.import_module(module), name)
    except UnsupportedAPIError as exc:
        return str(exc)
    pytest.fail(f"{qualified} exists now: take it out of minifluid/compat/hints.py's tables "
                "(then python tools/gen_api_table.py)")


def _resolve(reference):
    """``fluid.dygraph.Linear`` / ``paddle.nn.MSELoss`` as a legacy script would reach it."""
    obj = importlib.import_module("paddle")
    for part in (["fluid"] if reference.startswith("fluid.") else []) + reference.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def test_the_wrong_guesses_of_issue_14_are_gone(paddle):
    message = _missing("paddle.fluid.AsyncExecutor")
    assert "fluid.Executor(place).run" in message and "optimizer" not in message
    assert _missing("paddle.is_empty") == "paddle.is_empty is not supported yet by minifluid (API family: control flow)"
    message = _missing("paddle.roll")
    assert message.endswith("(API family: tensor manipulation and indexing)") and "math" not in message
    assert _missing("paddle.fluid.save_dygraph").endswith("what to write instead: fluid.dygraph.save_dygraph("
                                                          "state_dict, model_path)")


def test_a_name_in_no_table_gets_no_suggestion(paddle):
    assert _missing("paddle.fluid.layers.fcc") == "paddle.fluid.layers.fcc is not implemented by minifluid"
    assert _missing("paddle.fluid.Executr") == "paddle.fluid.Executr is not implemented by minifluid"


def test_from_import_and_module_import_get_the_same_hints(paddle):
    with pytest.raises(ImportError, match=r"paddle\.fluid\.dygraph\.declarative is not supported yet by "
                                          r"minifluid \(API family: dygraph to static \(jit\)\)"):
        from paddle.fluid.dygraph import declarative  # noqa: F401
    with pytest.raises(UnsupportedModuleError, match=r"^paddle\.fluid\.contrib\.mixed_precision is not supported yet "
                                                     r"by minifluid \(API family: mixed precision"):
        importlib.import_module("paddle.fluid.contrib.mixed_precision")
    with pytest.raises(UnsupportedModuleError, match=r"^paddle\.fluid\.nosuch is not implemented by minifluid$"):
        importlib.import_module("paddle.fluid.nosuch")
    assert hint("paddle.vision.datasets.MNIST") == ("paddle.vision.datasets.MNIST is not supported yet by minifluid "
                                                    "(API family: datasets and models (paddle.vision, paddle.text))")


@pytest.mark.parametrize("qualified", sorted(REPLACEMENTS))
def test_each_replacement_is_for_a_missing_name_and_names_apis_that_exist(paddle, qualified):
    assert _missing(qualified).endswith(f"what to write instead: {REPLACEMENTS[qualified]}")
    references = re.findall(r"\b(?:fluid|paddle)(?:\.\w+)+", REPLACEMENTS[qualified])
    assert references or "delete the call" in REPLACEMENTS[qualified] or "**" in REPLACEMENTS[qualified] or \
        "program." in REPLACEMENTS[qualified]
    for reference in references:
        assert not isinstance(_resolve(reference), types.ModuleType), f"{qualified} suggests the module {reference}"


def test_each_not_supported_name_is_missing_and_reported_with_its_family(paddle):
    flat = not_supported_yet()
    assert set(flat) <= set(MODULE_MAP), "a family lists names of a module the compat layer does not map"
    counted = sum(len(names.split()) for modules in NOT_SUPPORTED_YET.values() for names in modules.values())
    assert counted == sum(len(names) for names in flat.values()), "a name is listed twice in one module"
    for module, names in flat.items():
        for name, family in names.items():
            assert f"{module}.{name}" not in REPLACEMENTS
            assert _missing(f"{module}.{name}") == \
                f"{module}.{name} is not supported yet by minifluid (API family: {family})"
