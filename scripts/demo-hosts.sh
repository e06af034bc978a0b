#!/usr/bin/env bash
# Two-host coupling demo (issue 11, item 7). Three hosts as network
# namespaces joined by a Linux bridge: etcd on host C, a vmd on host A and
# on host B, both keeping their group tables in that etcd (one namespace
# for the virtual machine). The Fortran ocean (Open MPI) is started on host
# A, the C atmosphere (MPICH) on host B, each by its own launcher through
# its own vmd; they find each other through etcd and exchange boundary
# fields directly, over TCP between the two hosts' addresses. Prints which
# host each rank ran on and the addresses the data travelled over, cleans
# up, exits 0 on success. Needs root (network namespaces).
set -euo pipefail
. "$(dirname "$0")/env.sh"
bash "$ISTHMUS_ROOT/scripts/install-deps.sh"
cd "$ISTHMUS_ROOT"
[ "$(id -u)" = 0 ] || { echo "demo-hosts: needs root (network namespaces)" >&2; exit 1; }

echo "== building the vmd and libisthmus (Open MPI, then MPICH)"
build_with openmpi build --release -q -p isthmus-vmd --bins
build_with openmpi build --release -q -p isthmus-capi
build_with mpich build --release -q -p isthmus-capi
OMPI_LIB="$ISTHMUS_TARGET_OPENMPI/release"
MPICH_LIB="$ISTHMUS_TARGET_MPICH/release"

work=$(mktemp -d /tmp/isthmus-demo-hosts.XXXXXX)
NS="isthmus-dh$$"
K=$(( ($$ % 200) + 20 ))
A="10.78.$K.1" B="10.78.$K.2" C="10.78.$K.3"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  netns_remove "$NS" a b c
  rm -rf "$work"
}
trap cleanup EXIT

echo "== hosts: A=$A B=$B C=$C (network namespaces $NS-{a,b,c}, bridge in $NS-sw)"
netns_hosts "$NS" "a:$A" "b:$B" "c:$C"
on() { local h=$1; shift; ip netns exec "$NS-$h" "$@"; }

echo "== etcd on host C ($C:2379)"
on c etcd --name c --data-dir "$work/etcd" \
  --listen-client-urls "http://$C:2379" --advertise-client-urls "http://$C:2379" \
  --listen-peer-urls "http://$C:2380" --initial-advertise-peer-urls "http://$C:2380" \
  --initial-cluster "c=http://$C:2380" --logger zap --log-level error >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  on a etcdctl --endpoints "http://$C:2379" --command-timeout=1s endpoint health >/dev/null 2>&1 && break
  sleep 0.2
done
on a etcdctl --endpoints "http://$C:2379" --command-timeout=2s endpoint health >/dev/null

start_host_vmd() { # start_host_vmd a|b NAME DATA_ADDR
  local h=$1 name=$2
  mkdir -p "$work/$h"
  RUST_LOG=warn on "$h" "$OMPI_LIB/vmd" --runtime-dir "$work/$h/run" --addr-file "$work/$h/addr" \
    --host-name "$name" --data-addr "$3" --etcd "http://$C:2379" --etcd-prefix /isthmus/demo-hosts &
  pids+=($!)
  for _ in $(seq 200); do [ -s "$work/$h/addr" ] && break; sleep 0.05; done
  [ -s "$work/$h/addr" ] || { echo "vmd on $name did not start" >&2; exit 1; }
}
echo "== a vmd on host A and one on host B, both on etcd at $C"
start_host_vmd a host-a "$A"
start_host_vmd b host-b "$B"
VMD_A=$(cat "$work/a/addr") VMD_B=$(cat "$work/b/addr")

echo "== compiling the ocean with mpifort.openmpi and the atmosphere with mpicc.mpich"
mpifort.openmpi -O2 -o "$work/ocean" examples/coupling/ocean.f90 \
  -L"$OMPI_LIB" -listhmus -Wl,-rpath,"$OMPI_LIB"
mpicc.mpich -O2 -Wall -o "$work/atmosphere" examples/coupling/atmosphere.c \
  -I bridge/capi/include -L"$MPICH_LIB" -listhmus -Wl,-rpath,"$MPICH_LIB" -lm

steps="${COUPLING_STEPS:-3}"
# Each vmd tells its jobs the host's data address (--data-addr): the jobs
# get only ISTHMUS_VMD. ISTHMUS_LOG=info makes the library say where each
# data connection goes.
echo "== launching the atmosphere (C, MPICH, 2 ranks) on host B through its vmd"
on b timeout 180 mpiexec.mpich -n 2 -genv ISTHMUS_VMD "$VMD_B" \
  -genv ISTHMUS_LOG isthmus_bridge=info "$work/atmosphere" "$steps" \
  >"$work/atmosphere.out" 2>"$work/atmosphere.err" &
atmosphere=$!
pids+=("$atmosphere")
sleep 1
echo "== launching the ocean (Fortran, Open MPI, 2 ranks) on host A through its vmd, separately"
ocean_ok=0
ISTHMUS_VMD="$VMD_A" ISTHMUS_LOG=isthmus_bridge=info \
  on a timeout 180 mpirun.openmpi --oversubscribe -n 2 \
  -x ISTHMUS_VMD -x ISTHMUS_LOG "$work/ocean" "$steps" \
  >"$work/ocean.out" 2>"$work/ocean.err" || ocean_ok=$?
atmosphere_ok=0
wait "$atmosphere" || atmosphere_ok=$?

echo "== what each rank printed, by host"
sed 's/^/[host-a] /' "$work/ocean.out"
sed 's/^/[host-b] /' "$work/atmosphere.out"
echo "== data connections (from the libraries' log)"
connections() { # connections HOST FILE
  grep 'data connection open' "$2" | sed -E 's/.*transport=([a-z]+) local=([^ ]+) remote=([^ ]+).*/\1 \2 -> \3/' \
    | sort | sed "s/^/[$1] /"
}
connections host-a "$work/ocean.err"
connections host-b "$work/atmosphere.err"
if [ "$ocean_ok" != 0 ] || [ "$atmosphere_ok" != 0 ]; then
  echo "== FAILED (ocean exit $ocean_ok, atmosphere exit $atmosphere_ok)"
  tail -20 "$work/ocean.err" "$work/atmosphere.err" >&2
  exit 1
fi
# Every data connection must have crossed between the two hosts' addresses.
bad=$( (connections host-a "$work/ocean.err"; connections host-b "$work/atmosphere.err") \
  | grep -v -E "tcp ($A|$B):[0-9]+ -> ($A|$B):[0-9]+" || true)
n=$( (connections host-a "$work/ocean.err"; connections host-b "$work/atmosphere.err") | wc -l)
if [ "$n" = 0 ] || [ -n "$bad" ]; then
  echo "== FAILED: expected TCP connections between $A and $B; got: ${bad:-none}" >&2
  exit 1
fi
echo "== two-host coupling done: $n data connections, all TCP between host A ($A) and host B ($B)"
