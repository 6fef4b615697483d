#!/usr/bin/python3
"""Random-graph differential tester for onnx-fuse (the package scripts/difftest/).
Run it through scripts/difftest.sh; `scripts/difftest.sh --help` lists the options."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from difftest.campaign import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
