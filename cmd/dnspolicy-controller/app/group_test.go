package app

import (
	"strings"
	"testing"
	"time"
)

// --group as Kuadrant's: at most 16 characters, none of its separators; GROUP is Kuadrant's
// variable, DNSPOLICY_GROUP and the command line win over it.
func TestParseGroup(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
		err  string
	}{
		{name: "unset", want: ""},
		{name: "flag", args: []string{"--group=primary"}, want: "primary"},
		{name: "Kuadrant's variable", env: map[string]string{"GROUP": "east"}, want: "east"},
		{name: "ours over Kuadrant's", env: map[string]string{"GROUP": "east", "DNSPOLICY_GROUP": "west"}, want: "west"},
		{name: "flag over both", args: []string{"--group=north"}, env: map[string]string{"GROUP": "east", "DNSPOLICY_GROUP": "west"}, want: "north"},
		{name: "sixteen characters", args: []string{"--group=" + strings.Repeat("a", 16)}, want: strings.Repeat("a", 16)},
		{name: "seventeen characters", args: []string{"--group=" + strings.Repeat("a", 17)}, err: "maximum length of 16"},
		{name: "separator", args: []string{"--group=a&&b"}, err: "cannot contain"},
		{name: "bad value from GROUP", env: map[string]string{"GROUP": "a;b"}, err: "cannot contain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args, env(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--group") {
					t.Fatalf("Parse = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Group != tc.want {
				t.Errorf("group %q, want %q", o.Group, tc.want)
			}
		})
	}
}

// Automatic failover is off by default; --group-failover-order turns it on, and is refused without
// --group, without this controller's group in it, or with a bad or repeated name.
func TestParseGroupFailover(t *testing.T) {
	o, err := Parse(nil, env(nil))
	if err != nil || len(o.FailoverOrder) != 0 || o.FailoverAfter != time.Minute || o.FailoverHoldDown != 10*time.Minute {
		t.Fatalf("defaults: order %v, after %v, hold-down %v, %v", o.FailoverOrder, o.FailoverAfter, o.FailoverHoldDown, err)
	}
	o, err = Parse([]string{"--group=g2", "--group-failover-order= g1, g2 ", "--group-failover-after=5s", "--group-failover-hold-down=40s"}, env(nil))
	if err != nil || strings.Join(o.FailoverOrder, ",") != "g1,g2" || o.FailoverAfter != 5*time.Second || o.FailoverHoldDown != 40*time.Second {
		t.Fatalf("order %v, after %v, hold-down %v, %v", o.FailoverOrder, o.FailoverAfter, o.FailoverHoldDown, err)
	}
	for _, bad := range [][]string{
		{"--group-failover-order=g1,g2"},
		{"--group=g3", "--group-failover-order=g1,g2"},
		{"--group=g1", "--group-failover-order=g1,g1"},
		{"--group=g1", "--group-failover-order=g1,a;b"},
		{"--group=g1", "--group-failover-order=g1,g2", "--group-failover-after=0s"},
	} {
		if _, err := Parse(bad, env(nil)); err == nil || !strings.Contains(err.Error(), "--group-failover") {
			t.Errorf("Parse(%v) = %v, want a --group-failover error", bad, err)
		}
	}
}
