#!/usr/bin/env bash
# Runs every test of both Go modules: the gateway's (unit tests, ./...,
# under the race detector, and protocol's allocation checks, which the race
# detector skips, without it) and the end-to-end module in test/ (franz-go,
# sarama, the Java client, kcat and the official DIS SDK). Arguments go to
# every `go test` run, e.g. ./test.sh -count=1 -run TestX.
set -euo pipefail
cd "$(dirname "$0")"
go test -race "$@" ./...
go test "$@" ./protocol
# The end-to-end tests mostly wait (on sockets, timers and JVMs), so four
# run at a time (docs/testing.md); a -parallel among the arguments wins.
go -C test test -parallel 4 "$@" ./...
