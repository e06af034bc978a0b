#!/bin/sh
# Fails when the bridge's modules import each other in a cycle (issue #7).
# Usage: scripts/check-module-cycles.sh [SRC_DIR]   (default: bridge/src)
exec python3 "$(dirname "$0")/check-module-cycles.py" "$@"
