#!/usr/bin/env bash
# Builds the svc container image on this machine, where no registry image can be pulled: the
# equivalent of deploy/image/Dockerfile, from a Debian rootfs made by mmdebstrap (cached) plus
# the app, assembled with buildah and committed to podman's local storage.
#   usage: deploy/image/build.sh            (npm run image:build)
#   env:   SVC_IMAGE (default localhost/svc:<version>), SVC_IMAGE_REBUILD_ROOTFS=1
# Needs (Debian): mmdebstrap buildah podman runc. Prints the image name on its last line.
set -euo pipefail
export BUILDAH_FORMAT=docker   # HEALTHCHECK is a Docker-format field
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
version="$(node -p 'require("./packages/server/package.json").version' 2>/dev/null || echo 0.1.0)"
image="${SVC_IMAGE:-localhost/svc:$version}"
cache="$repo/node_modules/.cache/svc-image"
suite=bookworm
packages="tini,ca-certificates"
mkdir -p "$cache"
for tool in mmdebstrap buildah podman; do
  command -v "$tool" >/dev/null || { echo "image: $tool is missing (apt-get install -y mmdebstrap buildah podman runc)" >&2; exit 1; }
done

# 1. The Debian rootfs, the runtime stage of the Dockerfile (debian:bookworm-slim + tini), cached
#    under node_modules/.cache by suite and package list.
rootfs="$cache/rootfs-$suite-${packages//,/-}.tar"
if [ ! -s "$rootfs" ] || [ "${SVC_IMAGE_REBUILD_ROOTFS:-}" = 1 ]; then
  echo "image: mmdebstrap $suite ($packages)"
  mmdebstrap --variant=minbase --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --format=tar "$suite" "$rootfs.partial" http://deb.debian.org/debian
  mv "$rootfs.partial" "$rootfs"
fi

# 2. The app: what `npm ci --omit=dev` of the runtime workspaces installs, their sources and the
#    built UI bundles. Today the server runs its TypeScript sources (Node's type stripping);
#    once `npm run build` writes dist/, switch app_files to "dist" (the one line to change).
app_files="workspace-sources"
stage="$cache/app"
rm -rf "$stage" && mkdir -p "$stage"
node packages/server/ui/build.ts >/dev/null
cp package.json package-lock.json "$stage/"
for ws in domain sql cluster server cli; do
  mkdir -p "$stage/packages/$ws"
  cp packages/$ws/package.json "$stage/packages/$ws/"
  case "$app_files" in
    workspace-sources)
      cp -r packages/$ws/src "$stage/packages/$ws/"
      find "$stage/packages/$ws/src" -name '*.test.ts' -delete
      ;;
    dist) cp -r packages/$ws/dist "$stage/packages/$ws/" ;;
  esac
  [ -d packages/$ws/bin ] && cp -r packages/$ws/bin "$stage/packages/$ws/"
done
mkdir -p "$stage/packages/server/ui" "$stage/test"
cp -r packages/server/ui/dist "$stage/packages/server/ui/"
cp test/package.json "$stage/test/"   # a workspace of the lockfile; none of its dependencies is installed
(cd "$stage" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  -w @svc/server -w @svc/cli --include-workspace-root >/dev/null)
rm -rf "$stage/test" "$stage/node_modules/@svc/test"
cp "$(readlink -f node_modules/node/bin/node)" "$stage/node"
cp deploy/image/svc.yaml deploy/image/healthcheck.mjs "$stage/"

# 3. Assemble with buildah: the rootfs, the app in /opt/svc, Node 24 (the `node` package the
#    repository pins), a non-root user, the same metadata as the Dockerfile.
ctr="$(buildah from scratch)"
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt="$(buildah mount "$ctr")"
tar -xf "$rootfs" -C "$mnt"
install -m 0755 "$stage/node" "$mnt/usr/local/bin/node"
mkdir -p "$mnt/opt/svc" "$mnt/etc/svc" "$mnt/var/lib/svc"
(cd "$stage" && tar -cf - --exclude=./node --exclude=./svc.yaml --exclude=./healthcheck.mjs .) | tar -xf - -C "$mnt/opt/svc"
install -m 0644 "$stage/svc.yaml" "$mnt/etc/svc/svc.yaml"
install -m 0644 "$stage/healthcheck.mjs" "$mnt/opt/svc/healthcheck.mjs"
echo "svc:x:10001:10001:svc:/var/lib/svc:/usr/sbin/nologin" >> "$mnt/etc/passwd"
echo "svc:x:10001:" >> "$mnt/etc/group"
chown 10001:10001 "$mnt/var/lib/svc" && chmod 0700 "$mnt/var/lib/svc"
rm -rf "$mnt/var/cache/apt/"* "$mnt/var/lib/apt/lists/"*
buildah umount "$ctr" >/dev/null
buildah config \
  --user 10001:10001 --workingdir /var/lib/svc \
  --env SVC_CONFIG=/etc/svc/svc.yaml --env NODE_ENV=production \
  --entrypoint '["/usr/bin/tini", "--", "/usr/local/bin/node", "/opt/svc/packages/server/src/main.ts"]' \
  --cmd serve \
  --port 8080 --port 8081 --port 8082 --port 8083 \
  --volume /var/lib/svc \
  --healthcheck 'CMD ["/usr/local/bin/node", "/opt/svc/healthcheck.mjs"]' \
  --healthcheck-interval 30s --healthcheck-timeout 5s --healthcheck-start-period 60s \
  --label org.opencontainers.image.title=svc --label "org.opencontainers.image.version=$version" \
  "$ctr"
buildah commit --format docker --rm "$ctr" "$image" >/dev/null
trap - EXIT
echo "image: $(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}') $image"
echo "$image"
