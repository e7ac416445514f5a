#!/usr/bin/env bash
# Idempotent set-up of a developer or CI machine (Debian 12, x86-64):
#   - Debian packages for the Vulkan software adapter (llvmpipe) that runs our kernels without a GPU;
#   - the Rust components the checks need (rustfmt, clippy);
#   - two pinned Python venvs: .venv (ci/requirements.txt) and .venv-ort124 (ci/requirements-ort124.txt).
# A second run does nothing: apt is skipped when the packages are installed, and a venv is rebuilt only when
# its requirement file (or the base Python) changed, as recorded in a stamp file inside the venv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
APT_PACKAGES=(mesa-vulkan-drivers libvulkan1)
STAMP_NAME=".ci-requirements.sha256"

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

install_apt_packages() {
  local missing=() pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$pkg")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    log "apt: ${APT_PACKAGES[*]} already installed"
    return
  fi
  log "apt: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

check_rust() {
  command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs) first"
  local missing=()
  cargo fmt --version >/dev/null 2>&1 || missing+=(rustfmt)
  cargo clippy --version >/dev/null 2>&1 || missing+=(clippy)
  if [[ ${#missing[@]} -gt 0 ]]; then
    command -v rustup >/dev/null || die "missing Rust components ${missing[*]} and no rustup to add them"
    log "rustup: adding ${missing[*]}"
    rustup component add "${missing[@]}"
  fi
  log "rust: $(cargo --version)"
}

# make_venv DIR REQUIREMENTS: (re)creates DIR unless its stamp matches the requirements and the base Python.
make_venv() {
  local dir=$1 req=$2 want stamp
  want="$({ cat "$req"; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"
  stamp="$dir/$STAMP_NAME"
  if [[ -x $dir/bin/python && -f $stamp && "$(cat "$stamp")" == "$want" ]] && "$dir/bin/python" -c '' 2>/dev/null; then
    log "venv: $dir up to date with $req"
    return
  fi
  log "venv: creating $dir from $req"
  "$PYTHON" -m venv --clear "$dir"
  "$dir/bin/python" -m pip install -q --only-binary=:all: -r "$req"
  echo "$want" >"$stamp"
}

"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 10), sys.version' ||
  die "$PYTHON is older than Python 3.10"

install_apt_packages
check_rust
make_venv .venv ci/requirements.txt
make_venv .venv-ort124 ci/requirements-ort124.txt
log "done"
