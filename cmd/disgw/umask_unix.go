//go:build unix

package main

import "syscall"

// ownerOnlyFiles makes every file and directory the process creates from
// now on readable and writable by its owner alone, whatever mode the code
// or a library (pebble) asks for.
func ownerOnlyFiles() { syscall.Umask(0o077) }
