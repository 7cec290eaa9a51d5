#!/usr/bin/env bash
# Two "machines" on one: network namespaces joined by a veth pair, each with its own hostname,
# and mpirun starting the second process over its launcher agent (this script, called as
# "two_hosts.sh --agent HOST command...", enters HOST's namespace). The processes talk over
# TCP only. train-gpt2 on the two hosts must print and write what two devices in one process
# do, bit for bit. Skipped (exit 77) where namespaces cannot be made (not root, no iproute2).
# Usage: two_hosts.sh TINYLM SOURCE_DIR
set -euo pipefail
if [ "${1:-}" = "--agent" ]; then
  shift
  while [ "${1#-}" != "$1" ]; do shift; done  # rsh-style options before the host
  host=$1
  shift
  ns=$(cat "$TINYLM_TWO_HOSTS_DIR/ns-$host")
  exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; $*"
fi
tinylm=$1 src=$2
skip() { echo "SKIP: $*"; exit 77; }
"$tinylm" --version | grep -q "mpi: yes" || skip "tinylm was built without MPI"
command -v mpirun >/dev/null || skip "mpirun is not installed"
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null && command -v unshare >/dev/null || skip "needs ip (iproute2) and unshare"

work=$(mktemp -d)
a=tlA$$ b=tlB$$
cleanup() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
ip netns add "$a" 2>/dev/null && ip netns add "$b" 2>/dev/null || skip "cannot create network namespaces here"
ip link add "v$a" type veth peer name "v$b" || skip "cannot create a veth pair here"
ip link set "v$a" netns "$a"
ip link set "v$b" netns "$b"
ip -n "$a" addr add 10.77.0.1/24 dev "v$a"
ip -n "$b" addr add 10.77.0.2/24 dev "v$b"
for ns in "$a" "$b"; do
  ip -n "$ns" link set lo up
  ip -n "$ns" link set "v$ns" up
done
ip netns exec "$a" unshare --uts true 2>/dev/null || skip "cannot give a namespace its own hostname"
echo "$a" > "$work/ns-10.77.0.1"
echo "$b" > "$work/ns-10.77.0.2"
export TINYLM_TWO_HOSTS_DIR=$work OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's plugins keep allocations LeakSanitizer cannot attribute (sanitizer builds).
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"

args=(train-gpt2 --model "$src/tests/fixtures/gpt2/tiny/model.safetensors"
      --tokens "$src/tests/fixtures/gpt2/train/tokens.json" --steps 3 --dropout 0.1 --threads 1)
"$tinylm" "${args[@]}" --devices 2 --metrics-out "$work/one.json" > "$work/one.out"
ip netns exec "$a" unshare --uts sh -c "hostname $a; exec mpirun --host 10.77.0.1,10.77.0.2 \
  -np 2 --bind-to none --mca plm_rsh_agent '$0 --agent' --mca btl tcp,self \
  --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
  sh -c 'echo \$OMPI_COMM_WORLD_RANK \$(hostname) >> $work/hosts; exec $tinylm ${args[*]} \
  --devices 1 --metrics-out $work/two.json'" > "$work/two.out"

hosts=$(sort "$work/hosts" | tr '\n' ' ')
[ "$hosts" = "0 $a 1 $b " ] || { echo "FAIL: ranks ran on: $hosts"; exit 1; }
strip() { sed -E 's/ +[0-9]+\.[0-9]+ ms//; s/"ms": [0-9.e+-]+, //g' "$1"; }
diff <(strip "$work/one.out") <(strip "$work/two.out") || { echo "FAIL: printed lines differ"; exit 1; }
diff <(strip "$work/one.json") <(strip "$work/two.json") || { echo "FAIL: metrics differ"; exit 1; }
echo "two hosts over TCP ($a, $b) = two devices in one process, bit for bit"
