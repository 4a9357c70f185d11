#!/usr/bin/env bash
# Reference libraries for the SKEL and x_xy readers' tests, each in its own virtualenv:
#   .venv-ref/dart  dartpy 6.20.0   (DART's SkelParser; runs one subprocess per file: it segfaults on some)
#   .venv-ref/ring  imt-ring 1.7.1  (the x_xy format's own library; pulls JAX and numpy 2, which would
#                                    break the main .venv's numpy 1.26 / numba / hebi-py)
# Idempotent: a venv whose stamp file exists is left alone. The tests skip (with a reason) while a
# venv is missing. Usage: tools/ref_envs.sh [dart|ring]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m[ref-envs]\033[0m %s\n' "$*" >&2; }

find_python() {
  for py in python3.11 python3.12 python3.13 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  log "Python >= 3.11 is required (none found on PATH)"; exit 1
}

make_env() {  # $1 = name, $2 = module to import, rest = pip requirements
  local name="$1" module="$2"; shift 2
  local dir=".venv-ref/$name" stamp check="import $module"
  stamp="$dir/.stamp-$(printf '%s ' "$@" | sha1sum | cut -c1-12)"
  # an installed env (stamp written after its import worked) is only looked up, not imported again:
  # importing ring pulls JAX, 2-3 s of CPU on every tools/dev test
  if [ -f "$stamp" ] && "$dir/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$module') is None)" \
      >/dev/null 2>&1; then
    return 0
  fi
  log "creating $dir ($*)"
  rm -rf "$dir"
  "$(find_python)" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  "$dir/bin/python" -m pip install --quiet "$@" 2> >(grep -v "^WARNING: Location" >&2)
  "$dir/bin/python" -c "$check"
  touch "$stamp"
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(dart ring)
for t in "${targets[@]}"; do
  case "$t" in
    dart) make_env dart dartpy "dartpy==6.20.0" "numpy<2" ;;
    ring) make_env ring ring "imt-ring==1.7.1" ;;
    *) log "unknown reference env '$t' (dart, ring)"; exit 2 ;;
  esac
done
