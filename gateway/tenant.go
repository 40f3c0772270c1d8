package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/disgw/disgw/disclient"
)

// tenant is whose DIS credentials a connection uses: the gateway's own, or
// in passthrough mode the AK/SK a PLAIN client authenticated with. Each has
// its own DIS client and topic catalog, and partition keys carry the tenant,
// so one client's writes, cached records and metadata never serve another
// whose keys may not allow them.
type tenant struct {
	// id is "" for the gateway's own credentials; for passthrough tenants
	// it is the access key and a hash of the secret key, so never log it.
	id      string
	dis     disclient.API
	catalog *catalog
	// knownApps remembers DIS apps this tenant created or saw, so a
	// commit costs one DIS call, not two.
	knownApps sync.Map
}

func newTenant(id string, dis disclient.API, cfg *Config) *tenant {
	tn := &tenant{id: id, dis: dis}
	tn.catalog = newCatalog(tn, cfg.MetadataTTL, cfg.Logger)
	return tn
}

// tenantVerifyTimeout bounds the DIS call that checks passthrough credentials.
const tenantVerifyTimeout = 15 * time.Second

// errDISAuth marks credentials DIS refused, as opposed to DIS being unwell.
var errDISAuth = errors.New("DIS refused the credentials")

// passthroughTenant returns the tenant for an AK/SK pair after DIS accepted
// it with one cheap call. Tenants are cached by access key and secret-key
// hash; a pair DIS refuses is never cached.
func (gw *Gateway) passthroughTenant(ctx context.Context, accessKey, secretKey string) (*tenant, error) {
	sum := sha256.Sum256([]byte(secretKey))
	id := accessKey + "/" + hex.EncodeToString(sum[:])
	gw.tenantsMu.Lock()
	tn := gw.tenants[id]
	gw.tenantsMu.Unlock()
	fresh := tn == nil
	if fresh {
		dis, err := gw.cfg.NewTenantDIS(accessKey, secretKey)
		if err != nil {
			return nil, fmt.Errorf("building the DIS client: %w", err)
		}
		tn = newTenant(id, dis, &gw.cfg)
	}
	ctx, cancel := context.WithTimeout(ctx, tenantVerifyTimeout)
	defer cancel()
	_, err := tn.dis.ListStreams(ctx, 1, "")
	var de *disclient.Error
	switch {
	case errors.As(err, &de) && de.Status == 403:
		// The signature was good; IAM just does not let these keys list
		// streams. DIS decides per call from here on.
	case err != nil:
		if fresh {
			closeDIS(tn.dis)
		}
		if errors.As(err, &de) && (de.Status == 441 || de.Status == 401) {
			return nil, fmt.Errorf("%w: %s", errDISAuth, de.Code)
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
		return prev, nil
	}
	gw.tenants[id] = tn
	return tn, nil
}

// closeDIS releases a DIS client that can be closed.
func closeDIS(dis disclient.API) {
	if c, ok := dis.(interface{ Close() }); ok {
		c.Close()
	}
}
