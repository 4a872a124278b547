#!/bin/sh
# One-shot MinIO set-up for Canary Gate, run by the `minio-init` compose service (minio/mc image).
#
# Creates the artifact and quarantine buckets, keeps both private, and turns on default
# server-side encryption (SSE-S3) for the quarantine bucket. Safe to run again: every step is
# idempotent. Exits non-zero, with a message, when any step fails, so the worker (which waits for
# this service to complete successfully) never starts against a half-made store.
set -eu

: "${MINIO_ENDPOINT:=http://minio:9000}"
: "${MINIO_ROOT_USER:?MINIO_ROOT_USER is required}"
: "${MINIO_ROOT_PASSWORD:?MINIO_ROOT_PASSWORD is required}"
: "${ARTIFACT_BUCKET:=canary-artifacts}"
: "${QUARANTINE_BUCKET:=canary-quarantine}"

say() { printf 'minio-init: %s\n' "$*"; }
die() { printf 'minio-init: ERROR: %s\n' "$*" >&2; exit 1; }

# The compose healthcheck already waits for MinIO; retry briefly anyway for runs outside compose.
tries=0
until mc alias set canary "$MINIO_ENDPOINT" "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ "$tries" -lt 30 ] || die "MinIO at $MINIO_ENDPOINT did not accept the root credentials after 30 tries"
    sleep 1
done
say "connected to $MINIO_ENDPOINT"

for bucket in "$ARTIFACT_BUCKET" "$QUARANTINE_BUCKET"; do
    mc mb --ignore-existing "canary/$bucket" || die "could not create bucket $bucket"
    mc anonymous set none "canary/$bucket" >/dev/null || die "could not make bucket $bucket private"
done

# Needs MINIO_KMS_SECRET_KEY (or KES) on the server; MinIO refuses SSE-S3 without a KMS.
mc encrypt set sse-s3 "canary/$QUARANTINE_BUCKET" \
    || die "could not enable SSE-S3 on $QUARANTINE_BUCKET (is MINIO_KMS_SECRET_KEY set on the minio service?)"
mc encrypt info "canary/$QUARANTINE_BUCKET"

say "buckets ready: $ARTIFACT_BUCKET, $QUARANTINE_BUCKET (SSE-S3 by default)"
