#!/usr/bin/env bash
# Fails when a file under src/tinylm/ includes a folder of a higher layer, or another folder of
# its own layer, or when the folders' includes form a cycle: one line per offending include
# (file:line, the include, both folders and their layers). Bash and coreutils only (tsort finds
# the cycles), so it runs where Python is missing. docs/architecture.md draws the same picture.
set -euo pipefail
cd "$(dirname "$0")/.."

# The layers, lowest first; folders on one line are one layer and may not include each other.
# A folder is src/tinylm/<name>, except that kernels/cpu (the levels and the vector type) is a
# layer of its own below the operations (kernels/<op>), and kernels/vulkan (the GPU backend: its
# runtime and shaders) a layer above them: its ops take the CPU ops' argument types (Trans,
# DropoutSite, AdamStep) from their headers.
layers=(
  "core"
  "kernels/cpu"
  "kernels autograd"
  "kernels/vulkan"
  "io optim backend"
  "tokenizers hub"
  "models"
  "checkpoints"
  "generate distributed"
  "train"
  "families"
  "serve report"
)

declare -A rank
for i in "${!layers[@]}"; do
  for folder in ${layers[$i]}; do rank[$folder]=$i; done
done

folder_of() {  # src/tinylm/kernels/cpu/vec.h -> kernels/cpu; tinylm/io/gguf.h -> io (in $folder)
  local path=${1#src/}
  path=${path#tinylm/}
  case $path in
    kernels/cpu/*) folder=kernels/cpu ;;
    kernels/vulkan/*) folder=kernels/vulkan ;;
    */*) folder=${path%%/*} ;;
    *) folder=. ;;
  esac
}

status=0
edges=""
include_re='"(tinylm/[^"]+)"'
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  [[ $rest =~ $include_re ]] && target=${BASH_REMATCH[1]}
  folder_of "$file" && from=$folder
  folder_of "$target" && to=$folder
  [ "$from" = "$to" ] && continue
  for f in "$from" "$to"; do
    if [ -z "${rank[$f]+x}" ]; then
      echo "$file:$line: $target: folder '$f' is in no layer (add it to scripts/check-layers.sh and docs/architecture.md)"
      status=1
      continue 2
    fi
  done
  edges+="$from $to"$'\n'
  if [ "${rank[$to]}" -ge "${rank[$from]}" ]; then
    echo "$file:$line: $target: $from (layer ${rank[$from]}) may not include $to (layer ${rank[$to]})"
    status=1
  fi
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"tinylm/' src/tinylm --include='*.h' \
           --include='*.cpp' | sort)

# Folder cycles (none can pass the check above, but a cycle is worth naming when it fails).
if loop=$(sort -u <<<"$edges" | sed '/^$/d' | tsort 2>&1 >/dev/null) && [ -z "$loop" ]; then
  :
else
  # tsort names each loop it breaks: "tsort: -: input contains a loop:" and then its folders.
  awk 'function flush() { if (n) print "folder cycle: " c " -> " first; n = 0 }
       /contains a loop/ { flush(); next }
       /^tsort: / { sub(/^tsort: /, ""); if (n++) c = c " -> " $0; else c = first = $0 }
       END { flush() }' <<<"$loop"
  status=1
fi

if [ "$status" -ne 0 ]; then
  echo "check-layers.sh: includes that run up the layers (lowest first: $(printf '%s | ' "${layers[@]}" | sed 's/ | $//'))" >&2
fi
exit "$status"
