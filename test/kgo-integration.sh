#!/usr/bin/env bash
# Runs franz-go's own pkg/kgo integration tests against a fresh disgw (with
# its embedded DIS), as a new user pointing KGO_SEEDS at a gateway would, and
# prints PASS or FAIL per test. franz-go is taken at the version test/go.mod
# requires. Not part of ./test.sh: it takes several minutes.
#
#   test/kgo-integration.sh                  # the default set below
#   test/kgo-integration.sh TestGroupETL ... # just these
#
# Environment: KGO_TEST_RECORDS (records per ETL run, default 50000),
# KGO_TIMEOUT (per test, default 10m), KEEP=1 keeps the work directory,
# whose gateway.log and TEST.log hold every test's output.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

# The tests for produce, consume, regex, pause, purge, partition changes,
# group ETL, transactional ETL (consume, produce and commit offsets in
# transactions, read_committed), large messages and share groups (KIP-932:
# share consumers, acknowledgements, the share offsets admin APIs).
default_tests=(
	TestClient_Produce TestIssue769 TestIssue831
	TestConsumeTopicRetrieval TestIssue325 TestIssue337 TestIssue434
	TestIssue523 TestIssue648 TestIssue810 TestIssue865 TestGroupSimple
	TestPooling TestConsumeMaxDecompressBatchBytes
	TestConsumeRegex
	TestPauseIssue489 TestPauseIssueOct2023
	TestDirectPartitionPurge
	TestAddRemovePartitions
	TestGroupETL TestTxnEtl
	TestClient_ProduceLargeMessages TestIssueFetchLargerThanBrokerMaxReadBytes
	TestShareGroup TestShareGroupETL TestShareGroupAckOnClose
	TestShareGroupOffsetsAdmin TestConsumeRegexShareSkipsInternal
)
# franz-go skips its share tests unless ApiVersions advertises ShareFetch v2
# and ShareAcknowledge v2 (Kafka 4.2's): against disgw a skip of one of
# these is a failure.
must_run=" TestShareGroup TestShareGroupETL TestShareGroupAckOnClose TestShareGroupOffsetsAdmin TestConsumeRegexShareSkipsInternal "
if [ $# -gt 0 ]; then
	tests=("$@")
else
	tests=("${default_tests[@]}")
fi

version=$(awk '$1 == "github.com/twmb/franz-go" { print $2 }' "$root/test/go.mod")
[ -n "$version" ] || { echo "franz-go not found in test/go.mod" >&2; exit 1; }
go -C "$root/test" mod download "github.com/twmb/franz-go@$version"
src=$(go -C "$root/test" list -m -f '{{.Dir}}' "github.com/twmb/franz-go@$version")

work=$(mktemp -d "${TMPDIR:-/tmp}/kgo-integration.XXXXXX")
gwpid=
cleanup() {
	if [ -n "$gwpid" ]; then
		kill "$gwpid" 2>/dev/null || true
		wait "$gwpid" 2>/dev/null || true
	fi
	if [ "${KEEP:-}" = 1 ]; then
		echo "work directory kept: $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

echo "franz-go $version, work directory $work"
cp -r "$src" "$work/franz-go"
chmod -R u+w "$work/franz-go"
(cd "$work/franz-go" && go test -c -o "$work/kgo.test" ./pkg/kgo/)
go -C "$root" build -o "$work/disgw" ./cmd/disgw

# A free port: bind to :0, read the port back, let it go.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$work/disgw" --listen "127.0.0.1:$port" --admin-listen "" \
	--data-dir "$work/data" --fsync none --auto-create-topics true \
	>"$work/gateway.log" 2>&1 &
gwpid=$!
for _ in $(seq 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		break
	fi
	kill -0 "$gwpid" 2>/dev/null || { cat "$work/gateway.log"; exit 1; }
	sleep 0.1
done
echo "disgw $(git -C "$root" rev-parse --short HEAD) on 127.0.0.1:$port"

export KGO_SEEDS="127.0.0.1:$port" KGO_TEST_RF=1
export KGO_TEST_RECORDS="${KGO_TEST_RECORDS:-50000}"
export KGO_LOG_LEVEL="${KGO_LOG_LEVEL:-info}"

declare -A result
failed=0
for t in "${tests[@]}"; do
	start=$(date +%s)
	if (cd "$work/franz-go/pkg/kgo" && "$work/kgo.test" -test.run "^${t}\$" -test.count 1 \
		-test.timeout "${KGO_TIMEOUT:-10m}" -test.v >"$work/$t.log" 2>&1); then
		if grep -q -- "--- SKIP: $t " "$work/$t.log"; then
			result[$t]=SKIP
			if [[ $must_run == *" $t "* ]]; then
				echo "    $t skipped: disgw does not advertise ShareFetch v2 and ShareAcknowledge v2" >>"$work/$t.log"
				result[$t]=FAIL
				failed=$((failed + 1))
			fi
		else
			result[$t]=PASS
		fi
	else
		result[$t]=FAIL
		failed=$((failed + 1))
	fi
	result[$t]="${result[$t]} $(($(date +%s) - start))s"
	echo "${result[$t]%% *} $t (${result[$t]#* })"
	if [ "${result[$t]%% *}" = FAIL ]; then
		grep -m 5 -E -- '^\s+\S+_test\.go:[0-9]+:|^panic|--- FAIL|skipped: disgw' "$work/$t.log" | sed 's/^/    /' || true
	fi
done

echo
echo "summary (franz-go $version, KGO_TEST_RECORDS=$KGO_TEST_RECORDS):"
for t in "${tests[@]}"; do
	printf '  %-45s %s\n' "$t" "${result[$t]}"
done
[ "$failed" -eq 0 ]
