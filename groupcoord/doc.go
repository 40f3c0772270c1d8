// Package groupcoord will hold the Kafka group coordinator as a deterministic
// state machine (DESIGN.md §5): requests and ticks in, responses, timer
// changes and offset writes out, with no goroutines, clock or network inside.
// It is built under issue 3; until then the gateway advertises no group APIs.
package groupcoord
