#!/usr/bin/env bash
# Builds the container image from deploy/Dockerfile with buildah and
# smoke-tests it, with no container registry: the Dockerfile's base images
# (debian:bookworm, debian:bookworm-slim) are made from Debian's archive with
# mmdebstrap first. On a machine that reaches a registry the same Dockerfile
# pulls the official images instead (docker build / podman build).
#
#   scripts/container.sh            # base images (cached), image, smoke test
#   scripts/container.sh build      # base images and image only
#   scripts/container.sh smoke      # smoke-test the image built before
#
# The smoke test runs the image's own entrypoint (production flagfile) with
# an in-process log store and loopback ports, and from outside the container
# rankwire-cli checks Health (SERVING) and a 500-candidate rankbin Rank; then
# SIGTERM must drain the server and exit 0. Prints the build time and the
# image size (the runtime image must stay <= MAX_IMAGE_MB, default 150).
#
# How it runs here (root, no daemon): buildah with the vfs storage driver in
# its own storage root, `buildah bud --isolation chroot` to build and
# `buildah run --isolation chroot` to run (podman run is refused on these
# machines when it sets rlimits). If buildah is installed but the machine
# refuses it, this script fails: it never skips.
#
# Environment: CONTAINER_CACHE (base tarballs, default ~/.cache/rankwire-container),
# CONTAINER_ROOT (buildah storage, default /var/lib/rankwire-containers),
# DEBIAN_MIRROR (default http://deb.debian.org/debian), BUILD_DIR (the host
# build with rankwire-cli, default build/), IMAGE (default rankwire:latest).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-all}
case "$MODE" in all | build | smoke) ;; *) echo "usage: $0 [all|build|smoke]" >&2; exit 2 ;; esac
CACHE=${CONTAINER_CACHE:-$HOME/.cache/rankwire-container}
ROOT=${CONTAINER_ROOT:-/var/lib/rankwire-containers}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
BUILD_DIR=${BUILD_DIR:-build}
IMAGE=${IMAGE:-rankwire:latest}
MAX_IMAGE_MB=${MAX_IMAGE_MB:-150}
SUITE=bookworm

log() { echo "container.sh: $*"; }
die() { echo "container.sh: FAILED: $*" >&2; exit 1; }

# --- tools -----------------------------------------------------------------
need=()
command -v buildah >/dev/null || need+=(buildah)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if ((${#need[@]})); then
  log "installing ${need[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" uidmap
fi

# Every buildah call uses its own storage root with the vfs driver, so it
# does not depend on (or disturb) the machine's default container storage.
B=(buildah --root "$ROOT/storage" --runroot "$ROOT/run" --storage-driver vfs)
if ! probe=$("${B[@]}" info 2>&1); then
  echo "$probe" >&2
  die "buildah is installed but does not work on this machine (see above)"
fi

# --- base images from Debian's archive -------------------------------------
# debian:bookworm is mmdebstrap's minbase variant (what the official image
# is made from); debian:bookworm-slim is the same without documentation,
# man pages and translations, as the official slim image. Each tarball is
# cached, keyed by everything that shapes it, so a second run reuses it.
SOURCES="deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main"
SLIM_OPTS=(--dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/lintian/*')

base_image() {  # base_image TAG [mmdebstrap options...]
  local tag=$1
  shift
  local key
  key=$(printf '%s\n' "$SUITE" "$SOURCES" merged-usr "$@" | sha256sum | cut -c1-12)
  local tarball="$CACHE/debian-$tag-$key.tar"
  local name="docker.io/library/debian:$tag"
  if [[ ! -f "$tarball" || ! -s "$tarball" ]]; then
    mkdir -p "$CACHE"
    log "mmdebstrap $tag -> $tarball"
    local t0=$SECONDS
    # merged-usr hook: /usr merged by symlinks and usr-is-merged installed,
    # as in the official images (otherwise usrmerge pulls in perl, +50 MB).
    mmdebstrap --variant=minbase --format=tar --quiet --aptopt='Acquire::Retries "3"' \
      --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr "$@" \
      "$SUITE" "$tarball.tmp" "$SOURCES" || { rm -rf "$tarball.tmp"; die "mmdebstrap $tag"; }
    mv "$tarball.tmp" "$tarball"
    log "mmdebstrap $tag took $((SECONDS - t0)) s"
  else
    log "base tarball $tag cached: $tarball"
  fi
  # Re-import only if the tag does not already come from this tarball.
  local have
  have=$("${B[@]}" inspect --type image --format '{{index .ImageAnnotations "org.rankwire.base-key"}}' \
    "$name" 2>/dev/null || true)
  if [[ "$have" != "$key" ]]; then
    local ctr
    ctr=$("${B[@]}" from --pull=never scratch)
    "${B[@]}" add "$ctr" "$tarball" / >/dev/null
    "${B[@]}" config --cmd /bin/bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --annotation "org.rankwire.base-key=$key" "$ctr"
    "${B[@]}" commit --quiet --rm "$ctr" "$name" >/dev/null
    log "imported $name"
  fi
}

# The image's size: the sum of its layers' uncompressed sizes (what a node
# stores), in MB.
image_mb() {
  "${B[@]}" images --format '{{.Size}}' "$IMAGE" | head -1 | /usr/bin/python3 -c '
import re, sys
n, unit = re.match(r"([0-9.]+)\s*([kKMG]?B)", sys.stdin.read().strip()).groups()
print(round(float(n) * {"B": 1e-6, "kB": 1e-3, "KB": 1e-3, "MB": 1, "GB": 1e3}[unit], 1))'
}

if [[ "$MODE" != smoke ]]; then
  t0=$SECONDS
  base_image bookworm
  base_image bookworm-slim "${SLIM_OPTS[@]}"
  t_base=$((SECONDS - t0))
  # vfs stores every layer whole, and each build with changed sources leaves
  # the previous image's layers behind: drop unused ones when space runs low
  # (this also drops the build cache, so the next build reinstalls packages).
  mkdir -p "$ROOT"
  avail_gb=$(df -Pk "$ROOT" | awk 'NR==2 {print int($4 / 1048576)}')
  if ((avail_gb < ${CONTAINER_MIN_FREE_GB:-20})); then
    log "only ${avail_gb} GB free under $ROOT: removing unused images"
    "${B[@]}" rmi --prune >/dev/null || true
  fi
  log "building $IMAGE from deploy/Dockerfile"
  t1=$SECONDS
  # --layers: an unchanged step (the apt installs) is reused on the next run.
  # The host's ccache at /ccache: the build stage reuses what scripts/setup.sh
  # compiled (see deploy/Dockerfile).
  volumes=()
  if command -v ccache >/dev/null; then
    cache_dir=$(ccache -k cache_dir)
    mkdir -p "$cache_dir"
    volumes=(-v "$cache_dir:/ccache")
  fi
  # CMAKE_ARGS: the host build's configure options (test.sh exports CI's
  # -DRANKWIRE_WERROR=ON), so the image compiles with the same flags and the
  # ccache entries match.
  "${B[@]}" bud --isolation chroot --layers --pull=never "${volumes[@]}" -f deploy/Dockerfile \
    --build-arg CMAKE_ARGS="${CMAKE_ARGS:-}" -t "$IMAGE" . || die "buildah bud"
  t_build=$((SECONDS - t1))
  size=$(image_mb)
  log "built $IMAGE: base images ${t_base} s, image build ${t_build} s, size ${size} MB"
  /usr/bin/python3 -c "import sys; sys.exit(0 if $size <= $MAX_IMAGE_MB else 1)" \
    || die "image is ${size} MB, more than ${MAX_IMAGE_MB} MB"
fi
[[ "$MODE" == build ]] && exit 0

# --- smoke test --------------------------------------------------------------
CLI="$BUILD_DIR/client/rankwire-cli"
[[ -x "$CLI" ]] || scripts/setup.sh rankwire-cli
WORK=$(mktemp -d)
CTR=""
RUN_PID=""
cleanup() {
  if [[ -n "$RUN_PID" ]] && kill -0 "$RUN_PID" 2>/dev/null; then
    kill -KILL "$RUN_PID" 2>/dev/null || true
  fi
  [[ -n "$CTR" ]] && "${B[@]}" rm "$CTR" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
metrics_port=$(free_port)
# The image's own entrypoint and user, not a copy of them. Overridden: the
# log store (no Redis here) and the listening address and ports (free
# loopback ones); the drain and the rest are the production flagfile's.
mapfile -t entrypoint < <("${B[@]}" inspect --type image \
  --format '{{range .OCIv1.Config.Entrypoint}}{{println .}}{{end}}' "$IMAGE")
user=$("${B[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' "$IMAGE")
((${#entrypoint[@]})) || die "$IMAGE has no entrypoint"
CTR=$("${B[@]}" from --pull=never "$IMAGE")
log "smoke: ${entrypoint[*]} (user ${user:-root}) on 127.0.0.1:$port, metrics $metrics_port"
t2=$SECONDS
"${B[@]}" run --isolation chroot ${user:+--user "$user"} "$CTR" -- "${entrypoint[@]}" \
  --logstore=memory --address=127.0.0.1 --port="$port" --metrics_port="$metrics_port" \
  >"$WORK/server.log" 2>&1 &
RUN_PID=$!
started=""
for _ in $(seq 300); do
  if grep -q "listening port=$port" "$WORK/server.log"; then started=1; break; fi
  kill -0 "$RUN_PID" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$started" ]]; then
  cat "$WORK/server.log" >&2
  die "the server in the container did not start (is buildah run refused here?)"
fi

"$CLI" --target="127.0.0.1:$port" --health | tee "$WORK/health.txt"
grep -q "^health 127.0.0.1:$port: server=SERVING " "$WORK/health.txt" \
  || die "server health is not SERVING"
grep -q "^health 127.0.0.1:$port: .* rank.v1.RankService=SERVING$" "$WORK/health.txt" \
  || die "service health is not SERVING"
"$CLI" --target="127.0.0.1:$port" --codec=rankbin --candidates=500 --top_n=10 >"$WORK/rank.txt" \
  || { cat "$WORK/rank.txt"; die "Rank call failed"; }
grep "^response:" "$WORK/rank.txt"
grep -q "^response: codec=rankbin .*items=500 " "$WORK/rank.txt" \
  || die "expected codec=rankbin and 500 items"
# The server's own account, from /metrics.
metrics=$(/usr/bin/python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$metrics_port/metrics', timeout=5).read().decode())")
grep -q '^rankwire_responses_total{codec="rankbin"} 1$' <<<"$metrics" \
  || die "/metrics does not count the rankbin response"

# SIGTERM the server itself (the process buildah runs in the chroot, a
# descendant of RUN_PID): it must drain and exit 0, and buildah with it.
server_pid=""
queue=("$RUN_PID")
while ((${#queue[@]})) && [[ -z "$server_pid" ]]; do
  p=${queue[0]}
  queue=("${queue[@]:1}")
  for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
    if [[ "$(readlink /proc/"$c"/exe 2>/dev/null)" == */rankwire-server ]]; then server_pid=$c; fi
    queue+=("$c")
  done
done
[[ -n "$server_pid" ]] || die "cannot find the server process under buildah run ($RUN_PID)"
kill -TERM "$server_pid"
rc=0
wait "$RUN_PID" || rc=$?
RUN_PID=""
t_smoke=$((SECONDS - t2))
cat "$WORK/server.log"
((rc == 0)) || die "the server exited $rc after SIGTERM"
grep -q "draining" "$WORK/server.log" || die "no drain after SIGTERM"
grep -q "rankwire-server stopped" "$WORK/server.log" || die "no clean stop after SIGTERM"
log "smoke test passed in ${t_smoke} s: health SERVING, rankbin Rank of 500 items, SIGTERM drained, exit 0; image $(image_mb) MB"
