#!/usr/bin/env bash
# Data-parallel training across two "hosts": two network namespaces joined
# by a veth pair (10.77.N.1 and 10.77.N.2), each with a hostname of its own,
# Open MPI's TCP transport between them (no shared memory: --mca btl
# tcp,self), its rsh launcher starting the second host's daemon through
# `ip netns exec` instead of ssh. The job (2 ranks, one per host) must meet
# the parity criterion of one process on the whole batch (so_parity.py
# --ranks 2), and the gradients must have crossed the veth pair.
#
# Usage: two_hosts.sh PYTHON SO_PARITY_ARGS...   (needs CAP_NET_ADMIN;
# exits 77, a skip, where namespaces cannot be made)
set -euo pipefail
python="$1"; shift
here="$(cd "$(dirname "$0")" && pwd)"
id=$(( $$ % 200 + 20 ))
h1="trainc-h1-$$"; h2="trainc-h2-$$"
work="$(mktemp -d)"
cleanup() {
  ip netns del "$h1" 2>/dev/null || true
  ip netns del "$h2" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if ! ip netns add "$h1" 2>/dev/null; then
  echo "SKIPPED: cannot create network namespaces here (needs CAP_NET_ADMIN)"
  exit 77
fi
ip netns add "$h2"
ip link add "v1-$$" type veth peer name "v2-$$"
ip link set "v1-$$" netns "$h1"
ip link set "v2-$$" netns "$h2"
ip -n "$h1" addr add "10.77.$id.1/24" dev "v1-$$"
ip -n "$h2" addr add "10.77.$id.2/24" dev "v2-$$"
for ns in "$h1" "$h2"; do
  ip -n "$ns" link set lo up
done
ip -n "$h1" link set "v1-$$" up
ip -n "$h2" link set "v2-$$" up

# Open MPI's launch agent: "AGENT [ssh options] HOST COMMAND...".
cat > "$work/agent" <<AGENT
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host="\$1"; shift
exec ip netns exec "\$host" unshare --uts sh -c "hostname \$host; \$*"
AGENT
chmod +x "$work/agent"
printf '%s slots=1\n%s slots=1\n' "$h1" "$h2" > "$work/hosts"
cat > "$work/first-host" <<FIRST
#!/bin/sh
exec ip netns exec "$h1" unshare --uts sh -c 'hostname $h1; exec "\$@"' sh "\$@"
FIRST
chmod +x "$work/first-host"

root=""
[ "$(id -u)" -eq 0 ] && root="--allow-run-as-root"
launcher="$work/first-host mpirun $root -np 2 --hostfile $work/hosts \
  --mca plm_rsh_agent $work/agent --mca btl tcp,self \
  --mca btl_tcp_if_include 10.77.$id.0/24 --mca oob_tcp_if_include 10.77.$id.0/24"

rx() { ip -n "$h2" -s -j link show "v2-$$" |
         "$python" -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["bytes"])'; }
before=$(rx)
"$python" "$here/so_parity.py" --ranks 2 --launcher "$launcher" "$@"
after=$(rx)
crossed=$(( after - before ))
echo "bytes received by the second host over the veth pair: $crossed"
# 3 steps of the job's gradients (the MLP's: 0.94 MB a step) must have
# crossed, not only the launcher's messages.
if [ "$crossed" -lt 2000000 ]; then
  echo "FAILED: the gradients did not cross the network"
  exit 1
fi
echo "OK: two hosts over TCP"
