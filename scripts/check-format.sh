#!/usr/bin/env bash
# Fails (and lists the files) when a C++ source is not formatted as .clang-format says.
# scripts/check-format.sh --fix formats them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -- 'src/*.h' 'src/*.cpp' 'apps/*.h' 'apps/*.cpp' 'tests/*.h' \
                     'tests/*.cpp' 'bench/*.h' 'bench/*.cpp' |
                     while read -r f; do [ -e "$f" ] && echo "$f"; done)
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/tinylm-format.$$; then
  grep -o '^[^:]*\.\(h\|cpp\)' /tmp/tinylm-format.$$ | sort -u | sed 's/^/  not formatted: /' >&2
  rm -f /tmp/tinylm-format.$$
  echo "check-format.sh: run scripts/check-format.sh --fix (clang-format, .clang-format)" >&2
  exit 1
fi
rm -f /tmp/tinylm-format.$$
