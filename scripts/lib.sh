# Shared by scripts/run and scripts/test: install what is missing, then build.
# Sourced, not run.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${JOBS:-$(nproc)}"

# Debian packages the build and the tests need.
SA_PACKAGES=(cmake ninja-build g++ pkg-config libgtest-dev libgmock-dev libbenchmark-dev
             nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev
             # PyTorch 1.13: swapadvisor-capture and its tests (/usr/bin/python3), and
             # libtorch for the ATen kernel backend (docs/capture.md)
             python3-torch python3-torchvision libtorch-dev
             # pybind11 and Python's headers: the swapadvisor Python package's
             # compiled module (docs/python.md)
             pybind11-dev python3-pybind11 python3-dev
             # OpenMPI: `mpirun -np N swapadvisor run` of data-parallel plans (docs/runtime.md)
             libopenmpi-dev openmpi-bin
             # io_uring for the NVMe tier's store (docs/runtime.md, "The NVMe store");
             # without it the store uses its threads engine
             liburing-dev
             # scripts/check-format (run by scripts/test)
             clang-format)

# Debian packages only the tests need: Chromium loads the HTML report headless
# (tests/report/browser_test.sh, which is skipped without it).
SA_TEST_PACKAGES=(chromium)

# Installs the given Debian packages that are not installed yet (as root, or
# through sudo). Fast when nothing is missing: one dpkg query.
ensure_packages() {
  local missing=()
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "scripts: installing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# build DIR [cmake args...]: configure once, then build incrementally; only the
# targets in the array SA_TARGETS when it is set.
build() {
  local dir="$1"
  shift
  if [ ! -f "$ROOT/$dir/build.ninja" ]; then
    cmake -S "$ROOT" -B "$ROOT/$dir" -G Ninja "$@" >&2
  fi
  local targets=()
  [ -z "${SA_TARGETS+x}" ] || targets=(--target "${SA_TARGETS[@]}")
  cmake --build "$ROOT/$dir" -j "$JOBS" "${targets[@]}" >&2
}
