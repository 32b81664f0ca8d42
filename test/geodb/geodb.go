// Package geodb writes small MaxMind-format country databases, in the layout of GeoLite2-Country
// that the embedded server reads, for tests, benchmarks and the local demo.
package geodb

import (
	"fmt"
	"net"
	"os"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Network places a network in a country and a continent.
type Network struct {
	// CIDR is the network; reserved ranges (documentation, loopback, private) may be placed too.
	CIDR string
	// Country is an ISO 3166 code; empty places the network in its continent alone.
	Country string
	// Continent is a continent code (EU, NA, AS, ...).
	Continent string
}

// Write writes a database of networks to path, by writing a new file and renaming it over path,
// as a Secret or ConfigMap volume is updated: a server watching path never reads half a database.
func Write(path string, networks ...Network) error {
	// Reserved networks are left out of a database by default; tests place documentation and
	// loopback ranges.
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-Country", IncludeReservedNetworks: true, RecordSize: 24})
	if err != nil {
		return err
	}
	for _, n := range networks {
		_, network, err := net.ParseCIDR(n.CIDR)
		if err != nil {
			return fmt.Errorf("geodb: %w", err)
		}
		record := mmdbtype.Map{"continent": mmdbtype.Map{"code": mmdbtype.String(n.Continent)}}
		if n.Country != "" {
			record["country"] = mmdbtype.Map{"iso_code": mmdbtype.String(n.Country)}
		}
		if err := w.Insert(network, record); err != nil {
			return fmt.Errorf("geodb: %s: %w", n.CIDR, err)
		}
	}
	tmp := path + ".new"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
