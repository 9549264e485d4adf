#!/usr/bin/env bash
# The Java reader against protobuf-java on the same response (BENCHMARKS.md,
# "Java client"): builds java/ (mvn -o package) and the C++ pieces it needs,
# writes the workload's request 0, starts rankwire-server with the shipped
# model on a free loopback port, fetches each codec's response once, then
# times decoding offline in interleaved rounds (java/src/test/java/io/rankwire/ReaderBench.java).
#
#   scripts/bench_java.sh [--rounds 11] [--log_mode store,inline] [--round_ms 150] \
#       [--warmup_ms 1500]
#   scripts/bench_java.sh --quick   # smoke run: 1 round of 20 ms after 100 ms of warm-up
#                                   # (ctest bench.java)
#
# Both log modes in one run by default: logs in the store (the top-10 allocation target's
# setting) and inline (every item carries its ~1.2 KB log line). The report ends each mode
# with the targets of issue 48 (top 10 >= 50x, full decode >= 3x, <= 2 KB per top-10 read).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$PWD/$BUILD_DIR" ;; esac
args=()
for a in "$@"; do
  case "$a" in
    --quick) args+=(--rounds 1 --round_ms 20 --warmup_ms 100) ;;
    *) args+=("$a") ;;
  esac
done
if [[ ! -x "$BUILD_DIR/server/rankwire-server" || ! -x "$BUILD_DIR/tests/interop/rankwire_conformance_dump" ]]; then
  scripts/setup.sh rankwire-server rankwire_conformance_dump
fi
JAVA_BUILD="$BUILD_DIR/java/maven"
mvn -o -B -q -f java/pom.xml -Drankwire.build.dir="$JAVA_BUILD" package -DskipTests
request=$(mktemp)
trap 'rm -f "$request"' EXIT
"$BUILD_DIR/tests/interop/rankwire_conformance_dump" --request "$request"
java -Xms512m -Xmx512m -cp "$(cat "$JAVA_BUILD/classpath.txt")" io.rankwire.ReaderBench \
  --server "$BUILD_DIR/server/rankwire-server" --model model/models/ecom_search_lr.model \
  --request "$request" "${args[@]}"
