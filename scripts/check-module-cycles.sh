#!/bin/sh
# Fails when a crate's modules import each other in a cycle (issues #7, #24).
# Usage: scripts/check-module-cycles.sh [SRC_DIR...]
# Default: the src/ of every workspace member, none exempt. What several
# modules of a crate share (a trait, a state, a result type) sits in a
# module of its own below all of them, re-exported where its public path
# was, rather than in a parent or root that also imports them.
set -eu
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  for member in $(python3 -c 'import tomllib; print(" ".join(tomllib.load(open("Cargo.toml", "rb"))["workspace"]["members"]))'); do
    set -- "$@" "$member/src"
  done
fi
exec python3 scripts/check-module-cycles.py "$@"
