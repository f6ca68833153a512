#!/usr/bin/env bash
# Writes the development secrets the dev overlay's secretGenerator reads, into secrets/ beside
# this script (git-ignored): a random PostgreSQL password and the store URLs, an encryption
# root key, an RS256 JWT key pair (the private half stays here, to sign tokens with
# `cli sign-jwt`), the runner mutual-TLS set from `svc certs` (a wildcard SAN for the workers'
# DNS names in the namespace) and a self-signed admin-api certificate.
#   usage: make-secrets.sh [namespace]   (default svc-dev, the overlay's namespace)
# Refuses to overwrite an existing secrets/ (delete it to start over).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="${SVC_REPO:-$(cd "$here/../../../.." && pwd)}"
namespace="${1:-svc-dev}"
out="$here/secrets"
node="${NODE:-$repo/node_modules/.bin/node}"
if [ -e "$out" ]; then
  echo "make-secrets: $out exists; delete it to make new secrets" >&2
  exit 1
fi
mkdir -m 700 "$out"
umask 077
password="$(openssl rand -hex 24)"
printf '%s' "$password" > "$out/postgres-password"
printf 'postgres://svc:%s@postgres:5432/svc' "$password" > "$out/database-url"
printf 'redis://redis:6379/0' > "$out/redis-url"
openssl rand -base64 32 | tr -d '\n' > "$out/root-key"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072 -out "$out/jwt-private.pem" 2>/dev/null
openssl pkey -in "$out/jwt-private.pem" -pubout -out "$out/jwt-public.pem"
"$node" "$repo/packages/server/src/main.ts" certs --out "$out" \
  --host "*.svc-runners.$namespace.svc.cluster.local" >/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj "/CN=svc-admin-api" \
  -addext "subjectAltName=DNS:svc-admin-api,DNS:svc-admin-api.$namespace.svc,DNS:localhost" \
  -keyout "$out/admin-api.key" -out "$out/admin-api.crt" 2>/dev/null
echo "make-secrets: wrote $out (namespace $namespace)"
