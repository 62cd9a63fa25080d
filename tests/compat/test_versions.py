"""Version strings and fluid.require_version as legacy scripts check them (issue 14.3)."""
import configparser
import importlib.metadata
import pathlib
import re

import pytest

import minifluid
from minifluid import compat

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def paddle_modules():
    compat.install()
    try:
        import paddle  # noqa: PLC0415 - only resolvable while the compat finder is installed
        import paddle.fluid as fluid  # noqa: PLC0415
        yield paddle, fluid
    finally:
        compat.uninstall()


def test_paddle_and_fluid_report_the_emulated_fluid_level(paddle_modules):
    paddle, fluid = paddle_modules
    assert paddle.__version__ == fluid.__version__ == "1.8.5"
    assert paddle.__version__ >= "1.6" and fluid.__version__.startswith("1.8")  # what legacy scripts test
    assert paddle.version.full_version == "1.8.5" and (paddle.version.major, paddle.version.minor) == ("1", "8")
    assert paddle.version.mkl() == "OFF"


def test_minifluid_reports_its_own_version_from_the_one_source():
    assert re.fullmatch(r"\d+\.\d+\.\d+", minifluid.__version__) and minifluid.__version__ != "1.8.5"
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["metadata"]["version"] == "attr: minifluid.version.__version__"
    assert importlib.metadata.version("minifluid") == minifluid.__version__


@pytest.mark.parametrize("args", [("1.8.5",), ("1.6",), ("0.1.0", "10.0.0"), ("1.8", "1.8.5"), ("1.8.5.0",)])
def test_require_version_accepts_ranges_holding_1_8_5(paddle_modules, args):
    _, fluid = paddle_modules
    assert fluid.require_version(*args) is None


@pytest.mark.parametrize("args, error, message", [
    (("2.0",), Exception, "VersionError: PaddlePaddle version 2.0 or higher is required, but 1.8.5 installed, "
                          "please upgrade your PaddlePaddle to 2.0 or other higher version."),
    (("1.8.5.1",), Exception, "VersionError: PaddlePaddle version 1.8.5.1 or higher is required"),
    (("1.0", "1.8.4"), Exception, "VersionError: PaddlePaddle version in [1.0, 1.8.4] required, but 1.8.5 installed."),
    ((1.6,), TypeError, "The type of 'min_version' in require_version must be str, but received <class 'float'>."),
    (("1.6", 2), TypeError, "The type of 'max_version' in require_version must be str or type(None), but received "
                            "<class 'int'>."),
    (("1.x",), ValueError, "The value of 'min_version' in require_version must be in format '\\d+(\\.\\d+){0,3}', "
                           "like '1.5.2.0', but received 1.x"),
    (("1.6", "1.2.3.4.5"), ValueError, "'max_version' in require_version must be in format"),
])
def test_require_version_rejects_with_fluids_messages(args, error, message):
    with pytest.raises(error) as info:
        minifluid.require_version(*args)
    assert type(info.value) is error and message in str(info.value)
