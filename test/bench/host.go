package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Free page reporting. A virtual machine whose balloon device reports free
// pages gives the memory its kernel frees back to the host, and the first
// touch of such a page afterwards costs the toucher the host's fault. The
// phases then pay for pages the page cache grows into, each server where
// its data is first touched by a CPU: Kafka in its produce (its writes
// copy into the page cache), disgw's consumers in their receive copy
// (the embedded DIS's direct appends and read-ahead fill pages without
// the CPU, and sendfile never touches them): about 10 µs a page, enough to
// halve some rounds. The settings line says whether it was on.

// virtioBalloonReporting is VIRTIO_BALLOON_F_REPORTING, the feature bit of
// a balloon device that takes free page reports.
const virtioBalloonReporting = 5

// maxPageOrder is the largest buddy order of x86-64 kernels: free page
// reporting set to an order above it reports nothing.
const maxPageOrder = 10

// pageReporting describes the machine's free page reporting for the
// settings line: "on(order=N)", "off(order=N)" when the order is set
// beyond any free block, or "none" without a reporting balloon device.
func pageReporting() string {
	devices, _ := filepath.Glob("/sys/bus/virtio/drivers/virtio_balloon/virtio*/features")
	reporting := false
	for _, d := range devices {
		b, err := os.ReadFile(d)
		reporting = reporting || err == nil && len(b) > virtioBalloonReporting && b[virtioBalloonReporting] == '1'
	}
	if !reporting {
		return "none"
	}
	b, err := os.ReadFile("/sys/module/page_reporting/parameters/page_reporting_order")
	if err != nil {
		return "on"
	}
	order, err := strconv.Atoi(strings.TrimSpace(string(b)))
	switch {
	case err != nil:
		return "on"
	case order > maxPageOrder:
		return "off(order=" + strconv.Itoa(order) + ")"
	default:
		return "on(order=" + strconv.Itoa(order) + ")"
	}
}
