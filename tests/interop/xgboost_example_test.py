#!/usr/bin/python3
"""docs/MODELS.md's worked example, as written there: examples/xgboost/train.py
trains a rank:ndcg model with python3-xgboost, a real rankwire-server serves
the file it saved (on a free loopback port), and examples/xgboost/query.py
ranks a request through the rankwire package and checks every score and the
order against Booster.predict (ctest xgboost.example).

    RANKWIRE_SERVER_BIN=build/server/rankwire-server PYTHONPATH=python/src \\
        /usr/bin/python3 tests/interop/xgboost_example_test.py
"""
import os
import re
import subprocess
import sys
import tempfile
import time

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "xgboost")


def main():
    with tempfile.TemporaryDirectory() as workdir:
        model = os.path.join(workdir, "ranker.json")
        subprocess.run([sys.executable, os.path.join(EXAMPLE, "train.py"), model], check=True,
                       timeout=240)
        log_path = os.path.join(workdir, "server.log")
        with open(log_path, "w") as log:
            server = subprocess.Popen(
                [os.environ["RANKWIRE_SERVER_BIN"], "--port=0", "--address=127.0.0.1",
                 "--health_port=-1", "--metrics_port=-1", "--model=" + model,
                 "--model_poll_interval=0"], stdout=log, stderr=subprocess.STDOUT)
        try:
            match, deadline = None, time.time() + 30
            while match is None and time.time() < deadline and server.poll() is None:
                time.sleep(0.05)
                with open(log_path) as f:
                    match = re.search(r"listening port=(\d+)", f.read())
            if match is None:
                print("rankwire-server did not start:\n" + open(log_path).read())
                return 1
            query = subprocess.run(
                [sys.executable, os.path.join(EXAMPLE, "query.py"),
                 "--target=127.0.0.1:" + match.group(1), "--check=" + model],
                stdout=subprocess.PIPE, text=True, timeout=60)
            print(query.stdout, end="")
            if query.returncode != 0:
                print("server log:\n" + open(log_path).read()[-4000:])
                return 1
            if "search_ranker@2026.12.06" not in query.stdout:
                print("FAIL: the response does not name train.py's model")
                return 1
            if "explain.1" in query.stdout or not re.search(r"sku-\d+ .* [+-]\d", query.stdout):
                print("FAIL: no explanations on the shown items")
                return 1
        finally:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
