package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/gateway/wire"
)

// tenant is whose DIS credentials a connection uses: the gateway's own, or
// in passthrough mode the AK/SK a PLAIN client authenticated with. Each has
// its own DIS client, topic catalog, DIS apps, and partition states (writer
// with its idempotent producer state, reader, offsets), and partition keys carry the
// tenant, so one client's writes, cached records and metadata never serve
// another whose keys may not allow them. What a tenant holds is dropped when
// idle (docs/operations.md, "Idle state"), so memory follows the clients that
// are active, not every client that ever signed in.
type tenant struct {
	// id is "" for the gateway's own credentials; for passthrough tenants
	// it is the access key and a hash of the secret key, so never log it.
	id string
	// accessKey is the passthrough tenant's access key, its SASL user
	// name, and "" for the gateway's own credentials: the tenant label of
	// its metrics series, which must name no secret.
	accessKey string
	dis       disclient.API
	catalog   *topics.Catalog
	// knownApps remembers DIS apps this tenant created or saw, so a
	// commit costs one DIS call, not two.
	knownApps sync.Map
	// groupConfigs are the tenant's group configs as this gateway last
	// read or wrote them.
	groupConfigs groupConfigStore

	// parts is the tenant's partition log: each partition's writer,
	// reader and offsets.
	parts *plog.Tenant
	// shares keeps the tenant's share-partitions for its partition log.
	shares *shareStates

	// conns counts the connections signed in as this tenant and lastActive
	// is when the count last changed; both under Gateway.tenantsMu.
	conns      int
	lastActive time.Time
}

func newTenant(gw *Gateway, id, accessKey string, dis disclient.API) *tenant {
	tn := &tenant{id: id, accessKey: accessKey, dis: gw.metrics.InstrumentDIS(dis, accessKey), lastActive: time.Now()}
	tn.catalog = topics.NewCatalog(gw.topicsDeps(tn))
	tn.shares = newShareStates(gw, tn)
	tn.parts = plog.NewTenant(gw.plogDeps(tn))
	return tn
}

// tenantVerifyTimeout bounds the DIS call that checks passthrough credentials.
const tenantVerifyTimeout = 15 * time.Second

// errTooManyTenants refuses a sign-in with new credentials when the gateway
// already holds MaxTenants passthrough tenants and none of them is idle.
var errTooManyTenants = wire.Busy("the gateway serves the most passthrough credentials it may (--max-tenants) and none is idle; try again later")

// passthroughTenant returns the tenant for an AK/SK pair after DIS accepted
// it with one cheap call, counted as one more connection of the tenant's
// (releaseTenant ends it). Tenants are cached by access key and secret-key
// hash; a pair DIS refuses is never cached.
func (gw *Gateway) passthroughTenant(ctx context.Context, accessKey, secretKey string) (*tenant, error) {
	sum := sha256.Sum256([]byte(secretKey))
	id := accessKey + "/" + hex.EncodeToString(sum[:])
	gw.tenantsMu.Lock()
	tn := gw.tenants[id]
	if tn != nil {
		tn.conns++
	}
	full := tn == nil && !gw.makeRoomLocked()
	gw.tenantsMu.Unlock()
	if full {
		return nil, errTooManyTenants
	}
	fresh := tn == nil
	if fresh {
		dis, err := gw.cfg.NewTenantDIS(accessKey, secretKey)
		if err != nil {
			return nil, fmt.Errorf("building the DIS client: %w", err)
		}
		tn = newTenant(gw, id, accessKey, dis)
	}
	ctx, cancel := context.WithTimeout(ctx, tenantVerifyTimeout)
	defer cancel()
	_, err := tn.dis.ListStreams(ctx, 1, "")
	switch {
	case disclient.IsSignatureAccepted(err):
		// IAM does not let these keys list streams; DIS decides per call
		// from here on.
	case err != nil:
		if fresh {
			closeDIS(tn.dis)
		} else {
			gw.releaseTenant(tn)
		}
		if disclient.IsAuthRefused(err) {
			return nil, fmt.Errorf("%w: %s", wire.ErrRefused, disclient.ErrorCode(err))
		}
		return nil, err
	}
	if !fresh {
		return tn, nil
	}
	gw.tenantsMu.Lock()
	defer gw.tenantsMu.Unlock()
	if prev := gw.tenants[id]; prev != nil {
		closeDIS(tn.dis)
		prev.conns++
		return prev, nil
	}
	if !gw.makeRoomLocked() {
		closeDIS(tn.dis)
		return nil, errTooManyTenants
	}
	tn.conns = 1
	gw.tenants[id] = tn
	return tn, nil
}

// signatureCheckTimeout bounds how long Start waits for DIS to show that
// it checks signatures.
const signatureCheckTimeout = 30 * time.Second

// requireSignatureChecks refuses passthrough in front of a DIS that checks
// no signatures: there the one call a sign-in makes succeeds with any
// secret, so a client could sign in as any access key, a super user's
// included (docs/security.md, "Passthrough"). A call signed with made-up
// keys must be refused; while DIS gives no answer about them it is asked
// again, up to signatureCheckTimeout.
func (gw *Gateway) requireSignatureChecks() error {
	keys := disclient.ProbeSigner()
	probe, err := gw.cfg.NewTenantDIS(keys.AccessKey, keys.SecretKey)
	if err != nil {
		return fmt.Errorf("gateway: building the DIS client that checks signatures: %w", err)
	}
	defer closeDIS(probe)
	ctx, cancel := context.WithTimeout(gw.ctx, signatureCheckTimeout)
	defer cancel()
	for {
		err := disclient.ChecksSignatures(ctx, probe)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, disclient.ErrSignaturesNotChecked):
			return fmt.Errorf("gateway: SASL passthrough needs a DIS that verifies signatures, or any password signs in: %w; "+
				"start the embedded DIS with keys (--embedded-dis-ak, and its secret in DISGW_EMBEDDED_DIS_SK) or point --dis-endpoint at a DIS that checks them", err)
		}
		gw.log.Warn().Err(err).Msg("SASL passthrough: asking DIS whether it checks signatures failed; asking again")
		select {
		case <-ctx.Done():
			return fmt.Errorf("gateway: SASL passthrough needs proof that DIS verifies signatures, and DIS gave none within %s: %w", signatureCheckTimeout, err)
		case <-time.After(time.Second):
		}
	}
}

// releaseTenant ends one connection of tn's.
func (gw *Gateway) releaseTenant(tn *tenant) {
	if tn == gw.tenant {
		return
	}
	gw.tenantsMu.Lock()
	tn.conns--
	tn.lastActive = time.Now()
	gw.tenantsMu.Unlock()
}

// makeRoomLocked reports whether one more passthrough tenant fits, dropping
// the least recently active idle one when the gateway holds MaxTenants.
func (gw *Gateway) makeRoomLocked() bool {
	if len(gw.tenants) < gw.cfg.MaxTenants {
		return true
	}
	var idle []*tenant
	for _, tn := range gw.tenants {
		if tn.conns == 0 {
			idle = append(idle, tn)
		}
	}
	slices.SortFunc(idle, func(a, b *tenant) int { return a.lastActive.Compare(b.lastActive) })
	now := time.Now()
	for _, tn := range idle {
		if gw.dropTenantLocked(tn, now) {
			return true
		}
	}
	return false
}

// dropTenantLocked forgets a passthrough tenant without connections whose
// writers and readers unused since before cutoff are all gone, and closes
// its DIS client.
func (gw *Gateway) dropTenantLocked(tn *tenant, cutoff time.Time) bool {
	if tn.conns > 0 || !tn.parts.EvictIdle(cutoff) {
		return false
	}
	delete(gw.tenants, tn.id)
	closeDIS(tn.dis)
	gw.log.Info().Msg("dropped an idle passthrough tenant and its DIS client")
	return true
}

// forEachTenant calls fn for the gateway's own tenant and every passthrough
// tenant.
func (gw *Gateway) forEachTenant(fn func(*tenant)) {
	gw.tenantsMu.Lock()
	tns := make([]*tenant, 0, len(gw.tenants)+1)
	tns = append(tns, gw.tenant)
	for _, tn := range gw.tenants {
		tns = append(tns, tn)
	}
	gw.tenantsMu.Unlock()
	for _, tn := range tns {
		fn(tn)
	}
}

// sweepIdle runs until the gateway closes, dropping idle writers, readers
// and passthrough tenants and expired unknown-topic entries every quarter
// of StateIdleTimeout.
func (gw *Gateway) sweepIdle() {
	defer close(gw.swept)
	every := max(gw.cfg.StateIdleTimeout/4, 10*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-gw.ctx.Done():
			return
		case <-tick.C:
		}
		gw.sweepOnce(time.Now())
	}
}

// sweepOnce drops what has been idle for StateIdleTimeout as of now.
func (gw *Gateway) sweepOnce(now time.Time) {
	cutoff := now.Add(-gw.cfg.StateIdleTimeout)
	gw.forEachTenant(func(tn *tenant) {
		tn.parts.EvictIdle(cutoff)
		tn.catalog.PruneUnknown(now)
	})
	gw.tenantsMu.Lock()
	defer gw.tenantsMu.Unlock()
	for _, tn := range gw.tenants {
		if tn.lastActive.Before(cutoff) {
			gw.dropTenantLocked(tn, cutoff)
		}
	}
}

// closeDIS releases a DIS client that can be closed.
func closeDIS(dis disclient.API) {
	if c, ok := dis.(interface{ Close() }); ok {
		c.Close()
	}
}
