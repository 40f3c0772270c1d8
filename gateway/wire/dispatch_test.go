package wire

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startTestServer serves reg's handlers on a plaintext loopback listener
// until the test ends.
func startTestServer(t *testing.T, reg *Registry[*testGateway, string]) *Server[string] {
	t.Helper()
	srv := New(testDeps(t, Config{Listeners: []Listener{{Addr: "127.0.0.1:0", Protocol: Plaintext}}}, reg))
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// registerApiVersions registers an ApiVersions handler answering with the
// server's ranges.
func registerApiVersions(reg *Registry[*testGateway, string]) {
	Register(reg, kmsg.ApiVersions.Int16(), 0, 4, API[*testGateway, string, *kmsg.ApiVersionsRequest]{
		Ordered: func(_ *testGateway, r *Call[string], req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
			resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
			resp.ApiKeys = r.s.srv.Versions()
			return resp, nil
		},
		Errors: func(req *kmsg.ApiVersionsRequest, code int16) kmsg.Response {
			resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
			resp.ErrorCode = code
			return resp
		},
	})
}

// A handler that panics, in its ordered part or its concurrent one, is
// answered with UNKNOWN_SERVER_ERROR in the shape of its API's response;
// the panic is counted, and the connection and the server keep working.
func TestHandlerPanicAnswersUnknownServerError(t *testing.T) {
	var reg Registry[*testGateway, string]
	registerApiVersions(&reg)
	Register(&reg, kmsg.DescribeCluster.Int16(), 0, 1, API[*testGateway, string, *kmsg.DescribeClusterRequest]{
		Ordered: func(*testGateway, *Call[string], *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
			panic("ordered boom")
		},
		Errors: func(req *kmsg.DescribeClusterRequest, code int16) kmsg.Response {
			resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
			resp.ErrorCode = code
			return resp
		},
	})
	Register(&reg, kmsg.DescribeGroups.Int16(), 0, 5, API[*testGateway, string, *kmsg.DescribeGroupsRequest]{
		Concurrent: func(context.Context, *testGateway, *Call[string], *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
			panic("concurrent boom")
		},
		Deadline: func(*testGateway, *kmsg.DescribeGroupsRequest) time.Duration { return time.Minute },
		Errors: func(req *kmsg.DescribeGroupsRequest, code int16) kmsg.Response {
			resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
			for _, g := range req.Groups {
				rg := kmsg.NewDescribeGroupsResponseGroup()
				rg.Group, rg.ErrorCode = g, code
				resp.Groups = append(resp.Groups, rg)
			}
			return resp
		},
	})
	srv := startTestServer(t, &reg)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	b := cl.SeedBrokers()[0]
	apiVersionsWork := func() {
		t.Helper()
		resp, err := b.Request(ctx, kmsg.NewPtrApiVersionsRequest())
		if err != nil || resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 || len(resp.(*kmsg.ApiVersionsResponse).ApiKeys) != 3 {
			t.Fatalf("ApiVersions after the failure: %+v, %v", resp, err)
		}
	}

	resp, err := b.Request(ctx, kmsg.NewPtrDescribeClusterRequest())
	if err != nil || resp.(*kmsg.DescribeClusterResponse).ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("DescribeCluster: %+v, %v; want UNKNOWN_SERVER_ERROR", resp, err)
	}
	apiVersionsWork()
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"a", "b"}
	resp, err = b.Request(ctx, dg)
	if err != nil {
		t.Fatal(err)
	}
	groups := resp.(*kmsg.DescribeGroupsResponse).Groups
	if len(groups) != 2 || groups[0].Group != "a" || groups[1].ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("DescribeGroups answered %+v, want both groups with UNKNOWN_SERVER_ERROR", groups)
	}
	apiVersionsWork()
	var m dto.Metric
	_ = srv.d.Panics.Count.Write(&m)
	if n := m.GetCounter().GetValue(); n != 2 {
		t.Fatalf("disgw_panics_recovered_total = %v, want 2", n)
	}

	other, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.SeedBrokers()[0].Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatalf("another client after the panics: %v", err)
	}
}
