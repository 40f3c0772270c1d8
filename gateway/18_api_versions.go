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
//
// From v3 the response lists features (KIP-584): transaction.version,
// supported up to 2 and finalized at 2, which tells Java 4.x and franz-go
// clients to run transaction version 2 (KIP-890 part 2) with Produce v12,
// EndTxn v5 and TxnOffsetCommit v5, all advertised with it
// (docs/design.md §13). Clients that know no features run version 1.

const apiKeyApiVersions = 18

// transactionVersionFeature is the feature that names the transaction
// protocol version clients run.
const transactionVersionFeature = "transaction.version"

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
	if req.Version >= 3 {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersionFeature, 0, 2
		resp.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{sf}
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersionFeature, 2, 2
		resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{ff}
		// Features never change here: every gateway answers the same
		// epoch, so clients never see two finalized sets to choose from.
		resp.FinalizedFeaturesEpoch = 1
	}
	if from, live, ok := cluster.ProbeFrom(&req.UnknownTags); ok && live {
		gw.handover.seenLiveBy(from)
	}
	if challenge := cluster.PeerChallenge(&req.UnknownTags); challenge != nil && gw.cfg.PeerSecret != nil {
		// A peer's probe: prove this gateway holds the cluster's secret.
		resp.UnknownTags.Set(cluster.PeerProofTag, cluster.PeerProof(gw.cfg.PeerSecret, challenge))
	}
	return resp, nil
}
