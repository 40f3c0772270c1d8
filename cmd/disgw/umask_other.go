//go:build !unix

package main

// ownerOnlyFiles does nothing where there is no umask; the data directory
// is still created owner-only.
func ownerOnlyFiles() {}
