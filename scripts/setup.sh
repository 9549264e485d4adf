#!/usr/bin/env bash
# Installs the Debian (bookworm) packages rankwire needs and builds it.
#
#   scripts/setup.sh                 # everything (server, client, tests, benchmarks)
#   scripts/setup.sh rankwire-server rankwire-cli   # just these targets
#
# Idempotent and non-interactive: apt runs only when a package is missing
# (one `apt-get update`, then one install). BUILD_DIR (default build/) and
# BUILD_TYPE (default RelWithDebInfo) choose the build.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  # toolchain
  cmake g++ make pkg-config git ccache
  # gRPC 1.51, protobuf 3.21, and the libraries the code uses
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libhiredis-dev libzstd-dev libcivetweb-dev
  # the server's allocator (server/malloc.cmake; tcmalloc and glibc for comparison)
  libjemalloc-dev libgoogle-perftools-dev
  # tests, fuzzing and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev redis-server redis-tools openssl
  python3-grpcio python3-protobuf python3-zstandard python3-yaml python3-matplotlib
  # `pip install ./python` offline, into a venv (docs/CLIENTS.md, "Python")
  python3-setuptools python3-wheel python3-pip python3-venv
  # the Java client (java/, docs/CLIENTS.md "Java"): `mvn -o` builds it from
  # /usr/share/maven-repo. grpc-java's POMs name gson, animal-sniffer and the
  # common protos, and its run time needs perfmark and javax.annotation, none
  # of which libgrpc-java pulls in; the Maven plugins the pom uses; zstd-jni
  # for rankbin-zstd blocks; JUnit 4 and Surefire for the tests.
  openjdk-17-jdk-headless maven libgrpc-java libnetty-java libprotobuf-java
  protobuf-compiler-grpc-java-plugin libperfmark-java libgeronimo-annotation-1.3-spec-java
  libgoogle-gson-java libanimal-sniffer-java libgoogle-common-protos-java libzstd-jni-java
  libmaven-compiler-plugin-java libmaven-resources-plugin-java libmaven-jar-plugin-java
  libmaven-install-plugin-java libexec-maven-plugin-java libbuild-helper-maven-plugin-java
  junit4 libsurefire-java
  clang-14 libclang-rt-14-dev llvm-14
  # the conventions CI checks: scripts/tidy.sh, scripts/format_check.sh
  clang-tidy-14 clang-format-14
  # XGBoost models (model/xgboost/): simdjson parses the JSON; libxgboost and
  # its Python package train the test models and are the benchmark's baseline
  libsimdjson-dev libxgboost-dev python3-xgboost python3-numpy
  # end-to-end benchmarks (perf: profiling the server under load; iproute2:
  # the shaped veth link)
  hyperfine linux-perf iproute2
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
# ccache makes a rebuild on the same machine (CI after a session, a second
# worktree) cheap; base_dir keeps its keys independent of the checkout path.
LAUNCHER=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)}
  # Debug info may then name another checkout's directory; in exchange the
  # image build (deploy/Dockerfile, in /src) hits the same cache entries.
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# Tests and benchmarks are options (a plain configure builds the product
# only); this script installs what they need, so it turns them on.
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "${LAUNCHER[@]}" \
  -DRANKWIRE_BUILD_TESTS=ON -DRANKWIRE_BUILD_BENCHMARKS=ON ${CMAKE_ARGS:-} >/dev/null
if (($#)); then
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target "$@"
else
  cmake --build "$BUILD_DIR" -j "$(nproc)"
fi
