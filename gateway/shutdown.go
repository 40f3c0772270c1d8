package gateway

import (
	"context"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/metrics"
)

// Readiness and graceful shutdown (docs/operations.md, "Readiness" and
// "Shutdown"). A gateway is ready while DIS answers its probe and it is not
// draining. Draining starts with Close: the gateway turns unready, refuses
// new connections, and hands the groups it coordinates to the other live
// gateways, as a Kafka broker's controlled shutdown moves its coordinators:
// members hear NOT_COORDINATOR and find the new coordinator at once rather
// than after a session timeout (docs/groups.md, "When a gateway stops").

// disNotChecked is the reason a gateway is unready before its first probe.
const disNotChecked = "DIS not checked yet"

// readyProbeTimeout bounds one readiness probe of DIS.
const readyProbeTimeout = 3 * time.Second

// Ready reports whether the gateway should receive traffic, with the reason
// when it should not: DIS did not answer the last probe, or the gateway is
// draining.
func (gw *Gateway) Ready() (ready bool, reason string) {
	if gw.isDraining() {
		return false, "draining: the gateway is shutting down"
	}
	if down := gw.disDown.Load(); down != nil {
		return false, *down
	}
	return true, ""
}

// isDraining reports whether Close has started.
func (gw *Gateway) isDraining() bool {
	select {
	case <-gw.draining:
		return true
	default:
		return false
	}
}

// probeDIS checks every ReadyProbeInterval that DIS answers with the
// gateway's own credentials: a call of the gateway's that succeeded since
// the last check is proof enough, so a busy gateway makes no probe calls;
// otherwise a ListStreams of one stream, the cheapest call that proves
// endpoint, network and signature. A failed probe makes the gateway
// unready until one succeeds again; a change is logged once.
func (gw *Gateway) probeDIS() {
	tick := time.NewTicker(gw.cfg.ReadyProbeInterval)
	defer tick.Stop()
	own := gw.tenant.dis.(*metrics.DISClient) // every tenant's client is instrumented
	for {
		var err error
		if !own.Answered.Swap(false) {
			ctx, cancel := context.WithTimeout(gw.ctx, readyProbeTimeout)
			_, err = own.ListStreams(ctx, 1, "")
			cancel()
			own.Answered.Store(false) // the probe is no call of the gateway's
		}
		if gw.ctx.Err() != nil {
			return
		}
		was := gw.disDown.Load()
		switch {
		case err == nil && was != nil:
			gw.disDown.Store(nil)
			gw.log.Info().Msg("DIS answers again: ready")
		case err != nil:
			reason := "DIS unreachable: " + disclient.ErrorCode(err)
			if disclient.ErrorCode(err) == "" {
				reason = "DIS unreachable: " + err.Error()
			}
			gw.disDown.Store(&reason)
			if was == nil || *was == disNotChecked {
				gw.log.Warn().Err(err).Msg("DIS does not answer the readiness probe: unready")
			}
		}
		select {
		case <-gw.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// groupOwner is the gateway that coordinates the group with key: while
// draining, the owner among the other live gateways, so that this one
// stops coordinating and names its successor in FindCoordinator. A
// gateway alone keeps its groups: there is nobody to hand them to.
func (gw *Gateway) groupOwner(key string) cluster.Peer {
	if gw.isDraining() {
		var others []cluster.Peer
		for _, p := range gw.cfg.Membership.Live() {
			if p.ID != gw.cfg.NodeID {
				others = append(others, p)
			}
		}
		if len(others) > 0 {
			return cluster.Owner(key, others)
		}
	}
	return gw.cfg.Membership.Owner(key)
}

// goroutineWait bounds how long a stopping gateway waits for the
// goroutines it started, once its context is cancelled: they end at
// their next DIS call or wait, which the context cuts short.
const goroutineWait = 5 * time.Second

// close runs the shutdown sequence and logs how long each phase took.
func (gw *Gateway) close(ctx context.Context) error {
	began := time.Now()
	gw.drainOnce.Do(func() { close(gw.draining) })
	gw.log.Info().Msg("draining: unready, refusing new connections, handing groups on")
	gw.groups.Close()
	gw.txns.Close()
	gw.wire.Wait(ctx)
	drained := time.Now()
	unfinished := ctx.Err() != nil
	gw.forEachTenant(func(tn *tenant) { tn.parts.FlushWatermarks(ctx) })
	flushed := time.Now()
	gw.cancel()
	if gw.swept != nil {
		<-gw.swept
	}
	err := gw.wire.Stop()
	wctx, cancel := context.WithTimeout(context.Background(), goroutineWait)
	if n := gw.panics.Wait(wctx); n > 0 {
		gw.log.Warn().Int64("goroutines", n).Dur("waited", goroutineWait).Msg("shutdown: goroutines still running")
	}
	cancel()
	gw.tenantsMu.Lock()
	for _, tn := range gw.tenants {
		closeDIS(tn.dis)
	}
	gw.tenantsMu.Unlock()
	end := time.Now()
	gw.log.Info().Dur("drain", drained.Sub(began)).Bool("drain_timed_out", unfinished).
		Dur("watermarks", flushed.Sub(drained)).Dur("connections", end.Sub(flushed)).
		Dur("total", end.Sub(began)).AnErr("error", err).Msg("shutdown complete")
	return err
}
