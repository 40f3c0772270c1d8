package gateway

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/cluster"
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
	regKey(apiKeyApiVersions, 0, 4, api[*kmsg.ApiVersionsRequest]{Ordered: handleApiVersions, Errors: apiVersionsError})
}

func apiVersionsError(req *kmsg.ApiVersionsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ErrorCode = code
	return resp
}

func handleApiVersions(gw *Gateway, _ *request, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = gw.wire.Versions()
	if from, live, ok := cluster.ProbeFrom(&req.UnknownTags); ok && live {
		gw.handover.seenLiveBy(from)
	}
	if challenge := cluster.PeerChallenge(&req.UnknownTags); challenge != nil && gw.cfg.PeerSecret != nil {
		// A peer's probe: prove this gateway holds the cluster's secret.
		resp.UnknownTags.Set(cluster.PeerProofTag, cluster.PeerProof(gw.cfg.PeerSecret, challenge))
	}
	return resp, nil
}
