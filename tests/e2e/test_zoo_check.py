"""scripts/zoo_check.py's tolerance: max(rtol, min(2 s, 10 s, 1e-3)) for the
torch-vs-ORT spread s, rtol the floor, and a NaN or infinite spread an error;
and the export scripts' exit status when a model is not exported.

    /usr/bin/python3 -m pytest -q tests/e2e/test_zoo_check.py
"""

import json
import math
import os
import sys

import pytest

sys.dont_write_bytecode = True  # no scripts/__pycache__ left in the tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import zoo_check  # noqa: E402  (after the path is set)
from zoo_check import TOLERANCE_CAP, model_spread, tolerance  # noqa: E402

RTOL = 1e-4


def test_no_spread_is_the_floor():
    assert tolerance(RTOL, 0.0) == RTOL


def test_small_spread_keeps_the_floor():
    # 2 s = 6e-5 is under rtol: rtol stays.
    assert tolerance(RTOL, 3e-5) == RTOL


def test_spread_above_the_floor_widens_to_twice_it():
    # fcn_resnet50 with random weights: s = 1.24e-4.
    assert tolerance(RTOL, 1.24e-4) == pytest.approx(2.48e-4)


def test_widening_is_capped_at_1e_3():
    assert TOLERANCE_CAP == 1e-3
    assert tolerance(RTOL, 4e-4) == pytest.approx(8e-4)
    assert tolerance(RTOL, 6e-4) == pytest.approx(1e-3)
    assert tolerance(RTOL, 0.5) == pytest.approx(1e-3)
    assert tolerance(RTOL, 1e30) == pytest.approx(1e-3)


@pytest.mark.parametrize("spread", [1e-9, 1e-6, 5e-5, 1e-4, 3e-4, 5e-4, 1e-3, 1e-2, 1.0])
def test_widening_never_beyond_ten_times_the_spread(spread):
    tol = tolerance(RTOL, spread)
    assert tol <= max(RTOL, 10 * spread)
    assert tol <= max(RTOL, TOLERANCE_CAP)
    assert tol >= RTOL


def test_floor_is_kept_above_the_cap():
    # An explicit --rtol wider than the cap is the caller's choice: it stays.
    assert tolerance(1e-2, 0.0) == 1e-2
    assert tolerance(1e-2, 0.5) == 1e-2


@pytest.mark.parametrize("spread", [math.nan, math.inf, -math.inf, -1e-5])
def test_nan_infinite_or_negative_spread_is_an_error(spread):
    with pytest.raises(ValueError, match="torch vs ORT spread"):
        tolerance(RTOL, spread)


@pytest.mark.parametrize(
    "field, expected",
    [
        (None, 0.0),
        ([], 0.0),
        ([None], 0.0),
        (2e-5, 2e-5),
        ([1e-6, 3e-5, None], 3e-5),
    ],
)
def test_model_spread(field, expected):
    manifest = {} if field is None else {"torch_vs_ort_max_rel": field}
    assert model_spread(manifest) == expected


@pytest.mark.parametrize("field", [math.nan, [1e-5, math.nan], [math.nan, 1e-5], [1e-5, math.inf]])
def test_model_spread_keeps_nan_and_inf_of_any_output(field):
    # max() alone would drop a NaN that is not the first entry.
    spread = model_spread({"torch_vs_ort_max_rel": field})
    assert not math.isfinite(spread)
    with pytest.raises(ValueError):
        tolerance(RTOL, spread)


def test_an_export_that_fails_or_raises_makes_the_exit_status_1(capsys):
    from export_zoo import export_each  # noqa: E402  (imports torch)

    def one(name):
        if name == "raises":
            raise RuntimeError("boom")
        return None if name == "ok" else "no opset works"

    assert export_each("export_zoo", ["ok"], one, 10) == 0
    assert export_each("export_zoo", ["raises", "ok", "fails"], one, 10) == 1
    out, err = capsys.readouterr()
    assert "raises     FAILED: RuntimeError: boom" in out
    assert "export_zoo: 2 of 3 models not exported:" in err
    assert "  fails: no opset works" in err


def test_slow_steps_are_read_from_run_json():
    line = json.dumps({"median_ms": 1.0, "slow_steps": [{"kind": "binary", "impl": "ref:any", "label": "Add_5"}]})
    assert zoo_check.slow_steps("progress\n" + line + "\n") == ["binary ref:any (Add_5)"]
    assert zoo_check.slow_steps(json.dumps({"slow_steps": []})) == []
    assert "slow step" in zoo_check.FAILING
