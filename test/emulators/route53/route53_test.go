package route53

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"
)

// client is the real SDK with retries off, so every answer of the emulator is seen.
func client(t *testing.T, opts Options) (*Server, *r53.Client, string) {
	t.Helper()
	emu := New(opts)
	srv, url, err := emu.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c := r53.New(r53.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")})
	return emu, c, emu.AddZone("example.com")
}

func set(name string, rrType types.RRType, values ...string) *types.ResourceRecordSet {
	rs := &types.ResourceRecordSet{Name: aws.String(name), Type: rrType, TTL: aws.Int64(60)}
	for _, v := range values {
		rs.ResourceRecords = append(rs.ResourceRecords, types.ResourceRecord{Value: aws.String(v)})
	}
	return rs
}

func change(action types.ChangeAction, rs *types.ResourceRecordSet) types.Change {
	return types.Change{Action: action, ResourceRecordSet: rs}
}

func submit(t *testing.T, c *r53.Client, zoneID string, changes ...types.Change) error {
	t.Helper()
	_, err := c.ChangeResourceRecordSets(t.Context(), &r53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(zoneID), ChangeBatch: &types.ChangeBatch{Changes: changes}})
	return err
}

func code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return fmt.Sprint(err)
}

func TestChangeBatchRules(t *testing.T) {
	_, c, zoneID := client(t, Options{RequestsPerSecond: -1})
	a := set("a.example.com", types.RRTypeA, "192.0.2.1")
	if err := submit(t, c, zoneID, change(types.ChangeActionCreate, a),
		change(types.ChangeActionCreate, set("c.example.com", types.RRTypeCname, "t.example.net"))); err != nil {
		t.Fatal(err)
	}
	badGeo := set("g.example.com", types.RRTypeA, "192.0.2.1")
	badGeo.SetIdentifier, badGeo.GeoLocation = aws.String("x"), &types.GeoLocation{CountryCode: aws.String("XX")}
	var many []types.Change
	for i := range 501 {
		many = append(many, change(types.ChangeActionUpsert, set(fmt.Sprintf("u%d.example.com", i), types.RRTypeA, "192.0.2.1")))
	}
	for _, tc := range []struct {
		name    string
		changes []types.Change
		want    string
	}{
		{"delete missing", []types.Change{change(types.ChangeActionDelete, set("x.example.com", types.RRTypeA, "192.0.2.1"))}, "not found"},
		{"delete mismatched", []types.Change{change(types.ChangeActionDelete, set("a.example.com", types.RRTypeA, "192.0.2.9"))}, "do not match"},
		{"create existing", []types.Change{change(types.ChangeActionCreate, a)}, "already exists"},
		{"CNAME beside A", []types.Change{change(types.ChangeActionCreate, set("a.example.com", types.RRTypeCname, "t.example.net"))},
			"RRSet of type CNAME with DNS name a.example.com. is not permitted as it conflicts with other records with the same DNS name in zone example.com."},
		{"TXT beside CNAME", []types.Change{change(types.ChangeActionCreate, set("c.example.com", types.RRTypeTxt, `"x"`))},
			"RRSet of type TXT with DNS name c.example.com. is not permitted because a conflicting RRSet of type  CNAME with the same DNS name already exists in zone example.com."},
		{"CNAME at apex", []types.Change{change(types.ChangeActionCreate, set("example.com", types.RRTypeCname, "t.example.net"))}, "apex"},
		{"unknown country", []types.Change{change(types.ChangeActionCreate, badGeo)}, "geolocation"},
		{"unquoted TXT", []types.Change{change(types.ChangeActionCreate, set("t.example.com", types.RRTypeTxt, "some text"))}, "quotation marks"},
		{"UPSERT counts twice", many, "records limit of 1000"},
		{"one set changed twice", []types.Change{
			change(types.ChangeActionCreate, set("d.example.com", types.RRTypeA, "192.0.2.1")),
			change(types.ChangeActionUpsert, set("d.example.com", types.RRTypeA, "192.0.2.2")),
		}, "invalid set of changes"},
		{"values over 32000 characters", func() []types.Change {
			var long []types.Change
			for i := range 130 {
				long = append(long, change(types.ChangeActionCreate, set(fmt.Sprintf("l%d.example.com", i), types.RRTypeTxt, `"`+strings.Repeat("x", 250)+`"`)))
			}
			return long
		}(), "characters limit of 32000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := submit(t, c, zoneID, tc.changes...)
			var invalid *types.InvalidChangeBatch
			if !errors.As(err, &invalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want InvalidChangeBatch containing %q", err, tc.want)
			}
		})
	}
	// DELETE then CREATE of one set is how a set is replaced atomically.
	if err := submit(t, c, zoneID, change(types.ChangeActionDelete, a),
		change(types.ChangeActionCreate, set("a.example.com", types.RRTypeA, "192.0.2.2"))); err != nil {
		t.Errorf("DELETE then CREATE of one set: %v", err)
	}
}

func TestTokenBucketThrottles(t *testing.T) {
	emu, c, _ := client(t, Options{})
	// A stopped clock: no token comes back unless the test moves it.
	emu.mu.Lock()
	clock := emu.lastToken
	emu.now = func() time.Time { return clock }
	emu.mu.Unlock()
	throttled := func(n int) int {
		count := 0
		for range n {
			if _, err := c.ListHostedZones(t.Context(), &r53.ListHostedZonesInput{}); err != nil {
				if code(err) != "Throttling" {
					t.Fatalf("got %v, want Throttling", err)
				}
				count++
			}
		}
		return count
	}
	if got := throttled(60); got != 10 {
		t.Errorf("%d of 60 calls throttled with a burst of 50, want 10", got)
	}
	emu.mu.Lock()
	clock = clock.Add(time.Second)
	emu.mu.Unlock()
	if got := throttled(15); got != 5 {
		t.Errorf("%d of 15 calls throttled a second later at 10 per second, want 5", got)
	}
	if n := emu.Calls()[OpListHostedZones]; n != 75 {
		t.Errorf("Calls()[ListHostedZones] = %d, want 75", n)
	}
}

func TestChangeGoesPendingThenInsync(t *testing.T) {
	_, c, zoneID := client(t, Options{InsyncAfter: 200 * time.Millisecond})
	out, err := c.ChangeResourceRecordSets(t.Context(), &r53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zoneID),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{change(types.ChangeActionCreate, set("a.example.com", types.RRTypeA, "192.0.2.1"))}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.ChangeInfo.Status != types.ChangeStatusPending {
		t.Errorf("status %s at once, want PENDING", out.ChangeInfo.Status)
	}
	time.Sleep(250 * time.Millisecond)
	got, err := c.GetChange(t.Context(), &r53.GetChangeInput{Id: out.ChangeInfo.Id})
	if err != nil {
		t.Fatal(err)
	}
	if got.ChangeInfo.Status != types.ChangeStatusInsync {
		t.Errorf("status %s after InsyncAfter, want INSYNC", got.ChangeInfo.Status)
	}
}

// Calls are counted per access key, and a hold lets a client's change through and keeps its next
// requests until released, while other clients go on.
func TestCallsByKeyAndHoldAfterChange(t *testing.T) {
	emu, c, zoneID := client(t, Options{RequestsPerSecond: -1})
	other := r53.New(r53.Options{Region: "us-east-1", BaseEndpoint: c.Options().BaseEndpoint, Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDOTHER", "secret", "")})
	hold := emu.HoldAfterChange("AKID")
	if err := submit(t, c, zoneID, change(types.ChangeActionCreate, set("a.example.com", types.RRTypeA, "192.0.2.1"))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hold.Holding():
	default:
		t.Fatal("the hold did not start after the client's change")
	}
	listed := make(chan error, 1)
	go func() {
		_, err := c.ListResourceRecordSets(t.Context(), &r53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zoneID)})
		listed <- err
	}()
	if err := submit(t, other, zoneID, change(types.ChangeActionCreate, set("b.example.com", types.RRTypeA, "192.0.2.2"))); err != nil {
		t.Fatalf("another client is held too: %v", err)
	}
	select {
	case err := <-listed:
		t.Fatalf("the held client's read was answered before the release (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	hold.Release()
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
	if got := emu.CallsBy("AKID"); got[OpChangeResourceRecordSets] != 1 || got[OpListResourceRecordSets] != 1 {
		t.Errorf("CallsBy(AKID) = %v, want one change and one listing", got)
	}
	if got := emu.CallsBy("AKIDOTHER"); got[OpChangeResourceRecordSets] != 1 || len(got) != 1 {
		t.Errorf("CallsBy(AKIDOTHER) = %v, want one change", got)
	}
}
