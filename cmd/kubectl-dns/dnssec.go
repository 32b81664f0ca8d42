package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/miekg/dns"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsservercontroller "github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
)

// The dnssec commands read a signed zone's keys where the controller keeps them, in the Secret
// dnssec-<zone> of the controller's namespace (-n), and ask for rollovers through the annotation the
// controller consumes. They print public data only: key IDs, tags, states and DS records, never a
// private key. `ds --server` asks the zone's server instead, and needs no cluster at all.

func (c *cli) dnssecCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dnssec",
		Short: "Show a signed zone's keys and the DS for its parent, and ask for key rollovers",
		Long: `dnssec works on the zones the embedded DNS server signs (--dnssec-zones): their keys are in the
Secret dnssec-<zone, dots as dashes> of the controller's namespace; give it with -n.`,
	}
	cmd.AddCommand(c.dnssecDSCommand(), c.dnssecStatusCommand(), c.dnssecRolloverCommand())
	return cmd
}

func (c *cli) dnssecDSCommand() *cobra.Command {
	var servers []string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "ds ZONE [--server HOST:PORT ...]",
		Short: "Print the DS records the zone's parent should hold",
		Long: `ds prints, one per line in zone-file form, the DS records (SHA-256 digests) the parent of ZONE
should hold: those of the keys whose DS is wanted, read from the keys' Secret. During a KSK or CSK
rollover there are two, the old key's and the new one's. With --server it asks that server for the
zone's CDS set instead (RFC 7344), or for its DNSKEY set's key-signing keys where it has no CDS
set, and reads nothing from the cluster. Given several servers (every cluster's, for a zone that
several clusters serve), it also compares their DNSKEY sets and fails, naming the keys each lacks,
when they differ: servers signing with different keys make resolvers fail to validate.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			zone := dns.CanonicalName(args[0])
			var ds []string
			var err error
			if len(servers) > 0 {
				ds, err = askServersDS(cmd.Context(), servers, zone, timeout)
			} else {
				var ring dnssec.Keyring
				if ring, _, err = c.keyring(cmd.Context(), zone); err == nil {
					ds = ring.DSRecords()
				}
			}
			if err != nil {
				return err
			}
			if len(ds) == 0 {
				return fmt.Errorf("zone %s wants no DS: no key of it is a KSK or CSK whose DS is wanted", zone)
			}
			for _, line := range ds {
				fmt.Fprintln(c.out, line)
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&servers, "server", nil, "host:port of a server of the zone to ask for its CDS (or DNSKEY) set instead of reading the Secret; repeat (or comma-separate) to compare several servers' keys")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "time to wait for each answer of --server")
	return cmd
}

// askServersDS asks each server for the zone's DS (askServerDS), and fails when the servers'
// DNSKEY sets differ.
func askServersDS(ctx context.Context, servers []string, zone string, timeout time.Duration) ([]string, error) {
	var first []string
	var firstKeys map[string]bool
	for i, server := range servers {
		ds, err := askServerDS(ctx, server, zone, timeout)
		if err != nil {
			return nil, err
		}
		set, err := askApex(ctx, server, zone, dns.TypeDNSKEY, timeout)
		if err != nil {
			return nil, err
		}
		keys := map[string]bool{}
		for _, rr := range set {
			if k, ok := rr.(*dns.DNSKEY); ok {
				keys[fmt.Sprintf("%d (tag %d, flags %d)", k.Algorithm, k.KeyTag(), k.Flags)] = true
			}
		}
		if i == 0 {
			first, firstKeys = ds, keys
			continue
		}
		if lacks, extra := missing(firstKeys, keys), missing(keys, firstKeys); len(lacks)+len(extra) > 0 {
			return nil, fmt.Errorf("the servers of zone %s publish different DNSKEY sets, so they sign with different keys and resolvers fail to validate one of them: %s lacks %s of %s, and has %s that %s lacks (docs/dnssec.md: copy the keys' Secret to every cluster)",
				zone, server, orNone(lacks), servers[0], orNone(extra), servers[0])
		}
	}
	return first, nil
}

// missing are the keys of want that have lacks, sorted.
func missing(want, have map[string]bool) []string {
	var out []string
	for k := range want {
		if !have[k] {
			out = append(out, "algorithm "+k)
		}
	}
	slices.Sort(out)
	return out
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func (c *cli) dnssecStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status ZONE",
		Short: "List the zone's keys, their states and the DS for the parent",
		Long: `status lists the keys of ZONE from their Secret: role, key tag, algorithm, state (published,
active, retired, removed), whether its DS is wanted at the parent, and when it entered its state
(and when the parent was first seen holding its DS); then the DS records for the parent and a
rollover asked for and not yet taken up by the controller. The DNSRecords of the zone say in their
Signed condition what a rollover waits for.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			zone := dns.CanonicalName(args[0])
			ring, secret, err := c.keyring(cmd.Context(), zone)
			if err != nil {
				return err
			}
			writeKeyStatus(c.out, ring, secret)
			return nil
		},
	}
}

func (c *cli) dnssecRolloverCommand() *cobra.Command {
	var zsk, ksk bool
	cmd := &cobra.Command{
		Use:   "rollover ZONE --zsk|--ksk",
		Short: "Ask the controller to roll the zone's ZSK, or its KSK (a CSK with --ksk)",
		Long: `rollover asks the controller to begin a key rollover of ZONE by annotating the keys' Secret
(dnspolicy.io/dnssec-rollover); the controller begins it at its next pass of the zone, takes the
annotation away, and refuses (with an event on the Secret) a rollover while another is under way.
--zsk rolls the ZSK by pre-publication; --ksk rolls the KSK, or the CSK, by double DS: the new key's
DS must be given to the parent (kubectl dns dnssec ds ZONE lists both while it waits), and the
rollover waits until the parent holds it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if zsk == ksk {
				return errors.New("give one of --zsk and --ksk")
			}
			kind := dnssec.RollZSK
			if ksk {
				kind = dnssec.RollKSK
			}
			return c.requestRollover(cmd.Context(), dns.CanonicalName(args[0]), kind)
		},
	}
	cmd.Flags().BoolVar(&zsk, "zsk", false, "roll the zone-signing key (pre-publication)")
	cmd.Flags().BoolVar(&ksk, "ksk", false, "roll the key-signing key, or the CSK (double DS: the parent must take the new DS)")
	return cmd
}

// keyring reads and parses the zone's keys' Secret from the namespace the flags select.
func (c *cli) keyring(ctx context.Context, zone string) (dnssec.Keyring, *corev1.Secret, error) {
	cl, err := c.client()
	if err != nil {
		return dnssec.Keyring{}, nil, err
	}
	ns, _, err := c.namespace()
	if err != nil {
		return dnssec.Keyring{}, nil, err
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: ns, Name: dnsservercontroller.SecretName(zone)}
	if err := cl.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return dnssec.Keyring{}, nil, fmt.Errorf("no Secret %s: zone %s is not signed by a controller of namespace %s (give its namespace with -n)", key, zone, ns)
		}
		return dnssec.Keyring{}, nil, fmt.Errorf("Secret %s: %w", key, err)
	}
	ring, err := dnssec.Parse(zone, secret.Data)
	if err != nil {
		return ring, secret, fmt.Errorf("Secret %s: %w", key, err)
	}
	return ring, secret, nil
}

func writeKeyStatus(w io.Writer, ring dnssec.Keyring, secret *corev1.Secret) {
	fmt.Fprintf(w, "zone %s, keys in Secret %s/%s\n", ring.Zone, secret.Namespace, secret.Name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tROLE\tTAG\tALGORITHM\tSTATE\tDS WANTED\tSINCE\tDS SEEN")
	for _, k := range ring.Keys {
		t := ring.Times[k.ID]
		want, seen := "no", "-"
		if k.WantDS {
			want = "yes"
		}
		if !t.DSSeen.IsZero() {
			seen = t.DSSeen.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", k.ID, strings.ToUpper(string(k.Role)), k.KeyTag(),
			dns.AlgorithmToString[k.DNSKEY.Algorithm], k.State, want, t.Changed.UTC().Format(time.RFC3339), seen)
	}
	_ = tw.Flush()
	if ds := ring.DSRecords(); len(ds) > 0 {
		fmt.Fprintln(w, "DS for the parent:")
		for _, line := range ds {
			fmt.Fprintln(w, "  "+line)
		}
	}
	if req := secret.Annotations[dnsservercontroller.AnnotationRollover]; req != "" {
		fmt.Fprintf(w, "rollover asked for: %s (not yet taken up by the controller)\n", req)
	}
}

// requestRollover annotates the keys' Secret with the rollover asked for, at the resourceVersion it
// was read at, unless a request waits already or a rollover is under way (which the controller
// would refuse).
func (c *cli) requestRollover(ctx context.Context, zone string, kind dnssec.Rollover) error {
	ring, secret, err := c.keyring(ctx, zone)
	if err != nil {
		return err
	}
	if have := secret.Annotations[dnsservercontroller.AnnotationRollover]; have != "" {
		return fmt.Errorf("a %s rollover of zone %s was asked for already and is not yet taken up by the controller", have, zone)
	}
	if kind == dnssec.RollZSK && !slices.ContainsFunc(ring.Keys, func(k dnssec.Key) bool { return k.Role == dnssec.ZSK && k.State == dnssec.Active }) {
		return fmt.Errorf("zone %s has no active ZSK (its keys are a CSK, which rolls with --ksk)", zone)
	}
	for _, k := range ring.Keys {
		if k.State == dnssec.Published || k.State == dnssec.Retired {
			return fmt.Errorf("a rollover of zone %s is under way (key %s is %s): the controller would refuse another; see kubectl dns dnssec status %s", zone, k.ID, k.State, zone)
		}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(secret.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[dnsservercontroller.AnnotationRollover] = string(kind)
	if err := cl.Patch(ctx, secret, patch); err != nil {
		return fmt.Errorf("annotating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	fmt.Fprintf(c.out, "asked for a %s rollover of zone %s: the controller begins it at its next pass of the zone; kubectl dns dnssec status %s shows the keys\n",
		strings.ToUpper(string(kind)), zone, zone)
	return nil
}

// askServerDS asks a server of the zone for its CDS set, and where it has none, for the DS of its
// DNSKEY set's key-signing keys (flag SEP), in the form dnssec.Keyring.DSRecords prints.
func askServerDS(ctx context.Context, server, zone string, timeout time.Duration) ([]string, error) {
	cds, err := askApex(ctx, server, zone, dns.TypeCDS, timeout)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range cds {
		// Digest type 0 is RFC 8078's "delete the DS", not a DS.
		if c, ok := rr.(*dns.CDS); ok && c.DigestType != 0 {
			out = append(out, dsLine(zone, &c.DS))
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	keys, err := askApex(ctx, server, zone, dns.TypeDNSKEY, timeout)
	if err != nil {
		return nil, err
	}
	for _, rr := range keys {
		if k, ok := rr.(*dns.DNSKEY); ok && k.Flags&dns.SEP != 0 {
			out = append(out, dsLine(zone, k.ToDS(dns.SHA256)))
		}
	}
	return out, nil
}

func dsLine(zone string, ds *dns.DS) string {
	return fmt.Sprintf("%s IN DS %d %d %d %s", zone, ds.KeyTag, ds.Algorithm, ds.DigestType, strings.ToUpper(ds.Digest))
}

// askApex asks server for the zone's set of a type, with the DO bit, over TCP when the answer is
// truncated; only an authoritative answer counts.
func askApex(ctx context.Context, server, zone string, qtype uint16, timeout time.Duration) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetQuestion(zone, qtype)
	m.SetEdns0(1232, true)
	c := &dns.Client{Timeout: timeout}
	resp, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && resp.Truncated {
		c.Net = "tcp"
		resp, _, err = c.ExchangeContext(ctx, m, server)
	}
	what := fmt.Sprintf("asking %s for the %s set of %s", server, dns.TypeToString[qtype], zone)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if resp.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("%s: %s", what, dns.RcodeToString[resp.Rcode])
	}
	if !resp.Authoritative {
		return nil, fmt.Errorf("%s: the answer is not authoritative (ask a server of the zone)", what)
	}
	var out []dns.RR
	for _, rr := range resp.Answer {
		if rr.Header().Rrtype == qtype && dns.CanonicalName(rr.Header().Name) == zone {
			out = append(out, rr)
		}
	}
	return out, nil
}
