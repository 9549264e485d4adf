#!/usr/bin/python3
"""Reads a request's stored per-item logs straight from Redis and prints
each item's line (docs/LOGS.md, "Reading"): `python -m rankwire.logs` run
from this checkout, for a machine where the package is not installed. The
options, output and exit status: python/src/rankwire/_log_tool.py.

    tools/log_decoder.py --redis 127.0.0.1:6379 --request REQ
    tools/log_decoder.py --redis 127.0.0.1:6379 --request REQ --items sku-1,sku-2
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src"))

from rankwire._log_tool import Resp, main  # noqa: E402,F401  (Resp: for bench/)

if __name__ == "__main__":
    sys.exit(main())
