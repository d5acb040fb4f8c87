#!/bin/sh
# signals.sh — the command killed at random moments (see signals.py): no temporary file
# and no partial row or output after SIGINT/SIGTERM; SIGKILL's leftovers counted.
# Usage: signals.sh build/linattn
exec python3 "$(dirname "$0")/signals.py" "${1:?usage: signals.sh path/to/linattn}"
