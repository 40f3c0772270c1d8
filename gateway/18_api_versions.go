package gateway

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/protocol"
)

// ApiVersions v0–v4.
//
// v3 made the request flexible and added the client's software name and
// version; v4 (KIP-511 follow-up) changed nothing on the wire. The response
// header is always v0 so that a client can read it before it knows which
// versions we speak. A request at a version we do not have is answered at v0
// with UNSUPPORTED_VERSION and our ranges, so the client can retry lower
// instead of failing (docs/kafka-compat.md item 1).

const apiKeyApiVersions = 18

func init() {
	regKey(apiKeyApiVersions, 0, 4, api[*kmsg.ApiVersionsRequest]{ordered: handleApiVersions, errors: apiVersionsError})
}

func apiVersionsError(req *kmsg.ApiVersionsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ErrorCode = code
	return resp
}

func handleApiVersions(gw *Gateway, _ *request, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = supportedKeys(gw)
	if challenge := cluster.PeerChallenge(&req.UnknownTags); challenge != nil && gw.cfg.PeerSecret != nil {
		// A peer's probe: prove this gateway holds the cluster's secret.
		resp.UnknownTags.Set(cluster.PeerProofTag, cluster.PeerProof(gw.cfg.PeerSecret, challenge))
	}
	return resp, nil
}

// supportedKeys lists every key gw serves with its range.
func supportedKeys(gw *Gateway) []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for _, h := range handlers {
		if h == nil || !h.advertised(gw) {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = h.key, h.min, h.max
		keys = append(keys, k)
	}
	return keys
}

// apiVersionsUnsupported builds the v0 answer to an ApiVersions request at a
// version beyond ours.
func apiVersionsUnsupported(gw *Gateway, hdr protocol.RequestHeader) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = supportedKeys(gw)
	hdr.Version = 0
	return protocol.AppendResponse(nil, hdr, resp)
}
