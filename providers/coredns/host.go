package coredns

import (
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
	zonechoice "github.com/dnspolicy/dnspolicy-controller/pkg/zone"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

var _ providers.HostZones = (*Provider)(nil)

// HostProvider implements providers.HostZones: records of a kuadrant.io/coredns Secret are written
// through the endpoint backend into the authoritative record of their root host, as Kuadrant's
// dns-operator writes them, so they are labelled "endpoint".
func (p *Provider) HostProvider() providers.Provider { return p.host }

// HostZone implements providers.HostZones: the authoritative record of the root host (a leading "*."
// dropped, as Kuadrant hashes it), in the most specific zone of the Secret's ZONES that holds it.
func (p *Provider) HostZone(rootHost string) (providers.HostZone, error) {
	root := strings.TrimPrefix(v1alpha1.NormalizeName(rootHost), v1alpha1.WildcardPrefix)
	z, err := zonechoice.Choose(rootHost, p.zoneList(), true, "")
	if err != nil {
		return providers.HostZone{}, providers.NewError(providers.Permanent, err)
	}
	return providers.HostZone{Zone: providers.Zone{ID: RecordName(root), DNSName: z.DNSName}, DomainName: root}, nil
}

// CheckEndpoints implements providers.HostZones with Kuadrant's checks and messages: the DNS server
// could not route an unknown geo code or a weight that is not a whole number.
func (p *Provider) CheckEndpoints(endpoints []*v1alpha1.Endpoint) error {
	if err := geo.ValidateEndpoints(endpoints); err != nil {
		return providers.NewError(providers.Permanent, err)
	}
	return nil
}

// AuthoritativeLabels implements providers.HostZones: the zone label DNS servers select a zone's
// authoritative records by.
func (p *Provider) AuthoritativeLabels(z providers.Zone) map[string]string {
	return map[string]string{v1alpha1.CoreDNSZoneNameLabel: z.DNSName}
}

func (p *Provider) zoneList() []providers.Zone {
	zones := make([]providers.Zone, len(p.zones))
	for i, z := range p.zones {
		zones[i] = providers.Zone{ID: z, DNSName: z}
	}
	return zones
}

// hostLabels are the labels of the authoritative record of a root host in a zone: those DNS servers
// and Kuadrant's tools select it by, and the provider label its own pass sets.
func hostLabels(root, zoneName string) map[string]string {
	l := RecordLabels(root, zoneName)
	l[v1alpha1.ProviderNameLabel] = ProviderName
	return l
}
