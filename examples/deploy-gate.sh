#!/bin/sh
# A deploy that waits for a person: alertctl posts the question to the "ops"
# dashboard and exits 0 only when someone chooses Deploy.
#   ALERTD_URL=http://alertd.internal:8080 ALERTD_TOKEN=... examples/deploy-gate.sh 1234
set -eu
build="${1:?usage: deploy-gate.sh BUILD}"

status=0
alertctl post ops \
    --title "Deploy build $build?" \
    --message "$(git log -1 --format=%s 2>/dev/null || echo "build $build")" \
    --button Deploy --cancel Cancel \
    --expires-in 3600 \
    --wait || status=$?

case "$status" in
0) echo "approved: deploying $build"; exec ./deploy.sh "$build" ;;
1) echo "declined by the operator" >&2; exit 1 ;;
2) echo "no decision (expired or withdrawn): not deploying" >&2; exit 1 ;;
*) echo "alertd could not be asked (exit $status): not deploying" >&2; exit "$status" ;;
esac
