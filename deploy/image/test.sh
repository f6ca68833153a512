#!/usr/bin/env bash
# npm run image:test: builds the image (build.sh) and runs it the way a user would, read-only
# root filesystem, /var/lib/svc on a fresh volume, as its non-root user, until GET /readyz on the
# api port answers 200; then stops it with SIGTERM (through tini) and expects exit 0.
#
# This machine's podman needs two settings (printed when they matter):
# - the OCI runtime runc: crun refuses cgroups in hybrid mode (v1 controllers + a v2 mount);
# - explicit --ulimit nofile/nproc at or below the current limits: the sandbox lacks
#   CAP_SYS_RESOURCE, and podman's defaults (1048576 files) are above them (EPERM in setrlimit).
# If podman cannot start a container at all, the same rootfs runs with unshare + chroot.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
started=$(date +%s)
image="$(bash "$repo/deploy/image/build.sh" | tail -1)"
built=$(date +%s)
port="${SVC_IMAGE_TEST_PORT:-18081}"
name="svc-image-test-$$"
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
[ "$nofile" = unlimited ] && nofile=1048576; [ "$nproc" = unlimited ] && nproc=65536
ulimits=(--ulimit "nofile=$((nofile < 65536 ? nofile : 65536))" --ulimit "nproc=$((nproc < 4096 ? nproc : 4096))")
runtime=(--runtime runc)
command -v runc >/dev/null || runtime=()

wait_ready() {
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  return 1
}

cleanup() { podman "${runtime[@]}" rm -f "$name" >/dev/null 2>&1 || true; podman volume rm -f "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT
if podman "${runtime[@]}" run -d --name "$name" --read-only "${ulimits[@]}" \
  -v "$name:/var/lib/svc" -p "127.0.0.1:$port:8081" "$image" >/tmp/$name.id 2>/tmp/$name.err; then
  if wait_ready; then
    ready=$(date +%s)
    echo "image-test: /readyz answered 200 on 127.0.0.1:$port (podman ${runtime[*]} --read-only, user $(podman exec "$name" id -u))"
    # the image's HEALTHCHECK command, run in the container (`podman healthcheck run` needs systemd timers, absent here)
    podman inspect --format '{{.Config.Healthcheck.Test}}' "$name" | grep -q healthcheck.mjs
    podman exec "$name" /usr/local/bin/node /opt/svc/healthcheck.mjs && echo "image-test: HEALTHCHECK command (/livez) healthy"
    podman stop -t 20 "$name" >/dev/null
    code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
    echo "image-test: SIGTERM -> exit $code"
    [ "$code" = 0 ] || { podman logs "$name" | tail -20; exit 1; }
    echo "image-test: build $((built - started)) s, start to ready $((ready - built)) s"
    exit 0
  fi
  echo "image-test: the container never answered /readyz; its log:" >&2
  podman logs "$name" 2>&1 | tail -30 >&2
  exit 1
fi
echo "image-test: podman could not start a container: $(tr '\n' ' ' </tmp/$name.err)" >&2
echo "image-test: running the same rootfs with unshare + chroot instead" >&2
root="$(mktemp -d)"
ctr="$(buildah from "$image")"; mnt="$(buildah mount "$ctr")"
cp -a "$mnt/." "$root/"; buildah rm "$ctr" >/dev/null
trap 'kill $pid 2>/dev/null || true; rm -rf "$root"' EXIT
unshare --mount --pid --fork --mount-proc=/proc chroot --userspec=10001:10001 "$root" \
  env SVC_CONFIG=/etc/svc/svc.yaml SVC__api__port="$port" HOME=/var/lib/svc sh -c 'cd /var/lib/svc && exec /usr/bin/tini -- /usr/local/bin/node /opt/svc/packages/server/src/main.ts serve' &
pid=$!
wait_ready && { echo "image-test: /readyz answered 200 from the chroot (no container)"; exit 0; }
exit 1
