# shellcheck shell=bash disable=SC2034  # sourced: repo, scratch and step are for the caller
# Shared by the packaging tests (sourced): the checkout's root, Debian packages the tests need
# beyond ./bazelw's, and a scratch directory removed on exit.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Installs the given Debian packages that are missing (the way ./bazelw does).
need_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "packaging test: installing ${missing[*]} (Debian packages, once)" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
}

scratch="$(mktemp -d "${TMPDIR:-/tmp}/mutagrad-packaging.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

step() { echo "== $*" >&2; }
