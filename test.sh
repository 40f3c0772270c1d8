#!/usr/bin/env bash
# Runs every test of both Go modules: the gateway's (unit tests, ./...) and
# the end-to-end module in test/ (franz-go, sarama, the Java client, kcat and
# the official DIS SDK). Arguments go to both `go test` runs, e.g.
# ./test.sh -count=1 -run TestX.
set -euo pipefail
cd "$(dirname "$0")"
go test "$@" ./...
# The end-to-end tests mostly wait (on sockets, timers and JVMs), so four
# run at a time (docs/testing.md); a -parallel among the arguments wins.
go -C test test -parallel 4 "$@" ./...
