package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The end-to-end latency of disgw under --fsync=always is bounded below by
// how long the disk takes to flush, and the virtual disks of shared
// machines stall now and then for tens or hundreds of milliseconds, most
// often while the host writes back what earlier phases wrote (up to 274 ms
// beside a latency phase). A disk probe writes one page and fsyncs it every
// diskProbeInterval beside a latency phase, so that the bench prints the
// disk's own flush latency next to each server's and a reader can tell a
// stall of the disk from one of the server.
const (
	diskProbeInterval = 20 * time.Millisecond
	// diskStall is the flush time counted as a stall.
	diskStall = 20 * time.Millisecond
)

// diskProbe measures the flushes of a page in a file of its own.
type diskProbe struct {
	f    *os.File
	stop chan struct{}
	done sync.WaitGroup
	lat  []time.Duration
	err  error
}

// startDiskProbe starts probing the disk dir is on.
func startDiskProbe(dir string) (*diskProbe, error) {
	f, err := os.CreateTemp(dir, "disk-probe-")
	if err != nil {
		return nil, err
	}
	p := &diskProbe{f: f, stop: make(chan struct{})}
	p.done.Go(p.run)
	return p, nil
}

func (p *diskProbe) run() {
	page := make([]byte, 4096)
	tick := time.NewTicker(diskProbeInterval)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		start := time.Now()
		if _, err := p.f.WriteAt(page, 0); err != nil {
			p.err = err
			return
		}
		if err := p.f.Sync(); err != nil {
			p.err = err
			return
		}
		p.lat = append(p.lat, time.Since(start))
	}
}

// finish stops the probe, removes its file and prints its flush latencies
// under name, with how many took diskStall or longer.
func (p *diskProbe) finish(name, labels string) error {
	close(p.stop)
	p.done.Wait()
	path := p.f.Name()
	err := p.f.Close()
	if rerr := os.Remove(path); err == nil {
		err = rerr
	}
	if p.err != nil {
		return fmt.Errorf("disk probe in %s: %w", filepath.Dir(path), p.err)
	}
	if err != nil || len(p.lat) == 0 {
		return err
	}
	stalls := 0
	for _, d := range p.lat {
		if d >= diskStall {
			stalls++
		}
	}
	printLatency(name, fmt.Sprintf("%s stalls>=%s=%d", labels, diskStall, stalls), quantiles(p.lat), len(p.lat))
	return nil
}
