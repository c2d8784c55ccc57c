#!/bin/sh
# Stands in for the front end's python in supervisor tests: the seed is faked (exit 3 until
# FAKE_ADMIN_FILE exists, as the real one does before the first admin); everything else
# (the manifest export) runs on the real python3.
case "$*" in
  *--seed*)
    echo "seed" >> "$FAKE_SEED_LOG"
    [ -f "$FAKE_ADMIN_FILE" ] || { echo "seed: no admin has signed up yet" >&2; exit 3; }
    echo '{"owner":"u-admin","items":{"svc":"installed","svc_guard":"installed","acme_crm":"installed","acme_tickets":"installed"}}'
    exit 0 ;;
esac
exec python3 "$@"
