// Package dislocal is disgw's embedded DIS: an HTTP server that serves the
// DIS REST API (paths, JSON shapes, status codes, error bodies, cursors and
// their expiry, dense sequence numbers) closely enough that disgw's own
// client and the official Huawei Cloud Go SDK work against it unchanged.
// It is the default backend when no DIS account is configured, so it keeps
// record data in an append-only record log (package recordlog) and everything
// else in a pebble database (key schema in keys.go), and acknowledges
// writes only once they are as durable as Config.Sync asks.
//
// Where DIS is silent or the embedded server differs, it does this:
//   - Without Config.Credentials or Config.Tokens authentication is not
//     checked: any signature, token or none is accepted. With them, every
//     request needs an SDK-HMAC-SHA256 signature in the Go SDK's layout
//     (Access=AK; the legacy Credential= layout is refused) with an
//     X-Sdk-Date within 15 minutes of Config.Now, or an X-Auth-Token from
//     Tokens; failures are HTTP 441 with DIS.4101 (no Authorization),
//     4102 (unparsable), 4103/4104/4105 (X-Sdk-Date empty, unparsable, too
//     far off), 4106/4107 (AK empty, unknown), 4109 (fields missing) or
//     4100 (signature or token does not match). A key bound to a project
//     gets 403 DIS.4116 on other projects. X-Security-Token is signed but
//     not checked. Each project id is its own namespace of streams and
//     apps. Bodies are JSON; PutRecords and GetRecords also take the DIS
//     Java SDK's protobuf bodies (protobuf.go). Errors are always JSON.
//   - Streams have 1 to 1000 partitions. data_schema, compression_format
//     and the auto_scale_* bounds are accepted and ignored. Scaling in marks
//     the highest partitions DELETED (readable, not writable); scaling out
//     reactivates them before adding new ones, so a partition number always
//     means the same records. DIS's account and scaling limits
//     (Config.Limits, limits.go) and its per-partition traffic limits
//     (Config.Quotas, DIS.4303, quotas.go) are enforced only when
//     configured; by default none is.
//   - PutRecords takes up to 10000 records and a 16 MiB body; a record's
//     data is at most 1 MiB. A record's optional timestamp (ms) is kept as
//     its timestamp; otherwise the server's write time is. Retention always
//     goes by write time.
//   - GetRecords reads up to limit (default 1000, at most 10000) records
//     and max_fetch_bytes (default 4 MiB, at most 32 MiB) of key and data,
//     but always at least one record when one is available.
//   - A cursor's starting-sequence-number is always the resolved position
//     where reading starts (AFTER_SEQUENCE_NUMBER n holds n+1); next cursors
//     are AT_SEQUENCE_NUMBER cursors.
//   - ShowCheckpoint without a checkpoint answers sequence_number "-1".
//     DeleteCheckpoint without partition_id deletes the app's checkpoints
//     on every partition of the stream. Deleting a stream deletes every
//     app's checkpoints on it; deleting an app deletes its checkpoints.
//   - ListStreams' partition_count counts ACTIVE partitions.
//     ShowConsumerState's start_partition_id is exclusive, like
//     DescribeStream's start_partitionId, and latest_offset is the next
//     sequence number.
package dislocal
