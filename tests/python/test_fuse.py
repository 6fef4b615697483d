"""onnxfuse.fuse: the fused model file and the report as a dict."""
import json

import onnx
import onnxfuse
import pytest


def test_fuse_writes_functions_and_returns_the_report(resnet18, tmp_path):
    out, report_path = tmp_path / "fused.onnx", tmp_path / "report.json"
    report = onnxfuse.fuse(resnet18[0], out, strategy="postdom", report=report_path)
    fused = onnx.load(str(out))
    onnx.checker.check_model(fused, full_check=True)
    functions = {f.name for f in fused.functions}
    assert functions and all(f.domain == "ai.onnxfuse" for f in fused.functions)
    assert {n.op_type for n in fused.graph.node if n.domain == "ai.onnxfuse"} <= functions
    assert report["strategy"] == "postdom"
    assert len(report["groups"]) == report["totals"]["fused_groups"] > 0
    assert all(len(g["nodes"]) >= 2 for g in report["groups"])
    assert json.loads(report_path.read_text()) == report


def test_fuse_strategies_differ(resnet18, tmp_path):
    pattern = onnxfuse.fuse(resnet18[0], tmp_path / "pattern.onnx", strategy="pattern")
    assert pattern["strategy"] == "pattern" and pattern["patterns"]
    assert any(g["rule"] == "pattern:ConvBnRelu" for g in pattern["groups"])
    matched = {p["pattern"]: p["groups"] for p in pattern["patterns"]}
    assert matched["ConvBnRelu"]


def test_fuse_errors(resnet18, tmp_path):
    with pytest.raises(onnxfuse.UsageError):
        onnxfuse.fuse(resnet18[0], resnet18[0])  # never overwrites its input
    with pytest.raises(onnxfuse.UsageError, match="nostrategy"):
        onnxfuse.fuse(resnet18[0], tmp_path / "x.onnx", strategy="nostrategy")
    with pytest.raises(onnxfuse.IoError, match="missing.onnx"):
        onnxfuse.fuse(tmp_path / "missing.onnx", tmp_path / "y.onnx")
    assert not (tmp_path / "x.onnx").exists() and not (tmp_path / "y.onnx").exists()
