package peers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// benchRecords is how many records each peer exports.
const benchRecords = 10_000

// benchExport is cluster i's export of benchRecords records: 100 owners, each publishing 50 hosts
// as A records with their ownership TXT. Half the hosts are published by every cluster (the A
// record holds each one's address), half by this cluster alone.
func benchExport(b *testing.B, i int) *dnsserver.Export {
	b.Helper()
	id := fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
	ex := &dnsserver.Export{Cluster: lease.Key(id), Changed: time.Unix(1_800_000_000, 0)}
	for o := 0; len(ex.Endpoints) < benchRecords-1; o++ {
		owner := fmt.Sprintf("c%d-owner-%03d", i, o)
		for h := 0; h < 50 && len(ex.Endpoints) < benchRecords-1; h++ {
			name := fmt.Sprintf("own-%d-%03d-%02d.%s", i, o, h, testZone)
			if h%2 == 0 {
				name = fmt.Sprintf("shared-%03d-%02d.%s", o, h, testZone)
			}
			rec := v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeA, 60, fmt.Sprintf("10.%d.%d.%d", i, o%256, h))
			txt, err := registry.NewTXT(owner, rec)
			if err != nil {
				b.Fatal(err)
			}
			ex.Endpoints = append(ex.Endpoints, rec, txt)
		}
	}
	ex.Endpoints = append(ex.Endpoints, lease.Renew(id, time.Unix(1_800_000_000, 0), 5*time.Second, 20*time.Second).Record(testZone))
	return ex
}

func benchServer(b *testing.B, ex *dnsserver.Export) *dnsserver.Server {
	b.Helper()
	s, err := dnsserver.New(dnsserver.Options{Addr: "127.0.0.1:0", TSIGKeys: []dnsserver.TSIGKey{peerKey},
		Exports:      map[string]dnsserver.ExportAccess{testZone: {Keys: []string{peerKey.Name}}},
		TransferKeys: map[string][]string{testZone: {peerKey.Name}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	if _, err := s.SetZone(testZone, dnsserver.ZoneData{Endpoints: ex.Endpoints, Export: ex}); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPullAndMerge pulls the exports of two peers of 10,000 records each and merges them with
// this cluster's 10,000 (docs/benchmarks.md). Beside it, in the same run: the pulls alone, a pull
// of exports that did not change (IXFR, answered by the SOA), the merge alone, and the peer to
// compare the pull with: a plain signed AXFR of the same zone.
func BenchmarkPullAndMerge(b *testing.B) {
	local := benchExport(b, 0)
	key := peerKey
	var peers []Peer
	for i := 1; i <= 2; i++ {
		s := benchServer(b, benchExport(b, i))
		peers = append(peers, Peer{Zone: testZone, Addr: s.Addr().String(), Key: &key})
	}
	ctx := context.Background()
	pullAll := func(b *testing.B) []Contribution {
		out := []Contribution{{Cluster: local.Cluster, Changed: local.Changed, Endpoints: local.Endpoints}}
		for _, p := range peers {
			pulled, err := Pull(ctx, p, 30*time.Second, 0, 0, 0)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, Contribution{Cluster: pulled.Export.Cluster, Changed: pulled.Export.Changed, Endpoints: pulled.Export.Endpoints})
		}
		return out
	}
	b.Run("pull+merge", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := Merge(testZone, pullAll(b))
			if err != nil {
				b.Fatal(err)
			}
			if len(m.Owners) != 300 {
				b.Fatalf("%d owners merged", len(m.Owners))
			}
		}
	})
	b.Run("pull", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pullAll(b)
		}
	})
	b.Run("pull-unchanged", func(b *testing.B) {
		serials := map[string]uint32{}
		for _, p := range peers {
			pulled, err := Pull(ctx, p, 30*time.Second, 0, 0, 0)
			if err != nil {
				b.Fatal(err)
			}
			serials[p.Addr] = pulled.Serial
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range peers {
				if pulled, err := Pull(ctx, p, 30*time.Second, 0, 0, serials[p.Addr]); err != nil || !pulled.Unchanged {
					b.Fatalf("%+v, %v", pulled, err)
				}
			}
		}
	})
	contributions := pullAll(b)
	b.Run("merge", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Merge(testZone, contributions); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("axfr-of-the-zone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range peers {
				m := new(dns.Msg)
				m.SetAxfr(dns.Fqdn(testZone))
				m.SetTsig(peerKey.Name, dns.HmacSHA256, 300, time.Now().Unix())
				tr := &dns.Transfer{TsigSecret: map[string]string{peerKey.Name: peerKey.Secret}}
				ch, err := tr.In(m, p.Addr)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for env := range ch {
					if env.Error != nil {
						b.Fatal(env.Error)
					}
					n += len(env.RR)
				}
				if n < benchRecords {
					b.Fatalf("%d records transferred", n)
				}
			}
		}
	})
}
