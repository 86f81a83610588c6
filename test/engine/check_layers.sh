#!/usr/bin/env bash
# Checks that the engine's folders depend one way: every #include "dir/..."
# in engine/src/<folder>/ names its own folder or one on an earlier line of
# engine/layers.txt, or is listed there as an exception ("except <file>
# <folder>"). Files directly in engine/src/ (the public API's
# implementation) may include anything. Prints each violation; exits 1 on any.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
declare -A rank
declare -A except
n=0
while read -r line; do
  line="${line%%#*}"
  [[ -z "${line// }" ]] && continue
  if [[ "$line" == except\ * ]]; then
    read -r _ file target <<<"$line"
    except["$file:$target"]=1
    continue
  fi
  for folder in $line; do rank[$folder]=$n; done
  n=$((n + 1))
done <"$root/engine/layers.txt"

status=0
for dir in "$root"/engine/src/*/; do
  folder="$(basename "$dir")"
  if [[ -z "${rank[$folder]+x}" ]]; then
    echo "engine/src/$folder is not listed in engine/layers.txt"
    status=1
    continue
  fi
  while IFS=: read -r file include; do
    target="$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$include")"
    [[ "$target" == "$folder" || "$target" == "trellis" ]] && continue
    [[ -n "${except["${file#"$root"/}:$target"]+x}" ]] && continue
    if [[ -z "${rank[$target]+x}" || ${rank[$target]} -ge ${rank[$folder]} ]]; then
      echo "${file#"$root"/}: $folder may not include $target ($include)"
      status=1
    fi
  done < <(grep -H -E '^#include "[a-z_]+/' "$dir"*.h "$dir"*.cc 2>/dev/null || true)
done
exit $status
