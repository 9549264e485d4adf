#!/usr/bin/env bash
# The soak with a nemesis (issue 49; docs/OPERATING.md "Soak"): three
# replicas behind one round_robin channel, a real Redis (--cluster: a
# 3-master Redis Cluster) and a ConfigMap-style model directory, under
# open-loop load at a fraction of the peak it measures first, while a
# seeded nemesis kills, drains and restarts replicas, freezes and restarts
# Redis, swaps good and bad models (and restarts a replica while a bad one
# is mounted), sends hostile requests and overloads the fleet. Every
# invariant is checked while it runs and at the end; exit status 1 if one
# broke.
#
#   scripts/soak.sh                          # the CI run: every fault twice, < 5 min
#   scripts/soak.sh --minutes 60             # a release's soak
#   scripts/soak.sh --minutes 60 --cluster   # the same on a Redis Cluster
#   scripts/soak.sh --minutes 60 --seed 7    # another schedule
#
# The report (report.txt), its numbers (report.json) and the timeline
# (timeline.png) go to build/soak/<short|60min>[-cluster]/ (--out DIR
# elsewhere), beside a work-*/ directory with every process's log. Other
# arguments go to tests/soak/soak.py (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_DIR="$BUILD_DIR" scripts/setup.sh rankwire-server rankwire-loadgen rankwire-cli >/dev/null
mode=(--short)
for arg in "$@"; do
  case "$arg" in --minutes|--minutes=*|--short) mode=() ;; esac
done
exec /usr/bin/python3 tests/soak/soak.py --build "$BUILD_DIR" "${mode[@]}" "$@"
