package dnsserver

import (
	"fmt"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"
)

// continentPrefix marks a continent geo code, as in Route53 and Kuadrant.
const continentPrefix = "GEO-"

// location is where a client is, as two-letter codes packed by geoKey; zero means unknown. bits is
// the prefix length of the database network the address fell in: the answer holds for that network,
// which is the scope an EDNS Client Subnet answer reports.
type location struct {
	country   uint16
	continent uint16
	bits      uint8
}

// geoCacheBits sizes the location cache: 1<<geoCacheBits slots.
const geoCacheBits = 12

// geoDB answers "where is this address" from a MaxMind-format database (GeoLite2/GeoIP2 Country or
// City, or DB-IP's equivalents: anything with country.iso_code and continent.code).
type geoDB struct {
	reader *maxminddb.Reader
	// cache maps a database record (many networks share one) to its codes, so the hot path decodes
	// nothing once warm. Each slot is one word: record offset+1 in the high half, codes in the low.
	cache [1 << geoCacheBits]atomic.Uint64
}

// openGeoDB reads a database into memory. It is not memory-mapped: a reload swaps databases while
// queries may still be reading the old one, which the garbage collector then frees once unused.
func openGeoDB(path string) (*geoDB, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading geo database %s: %w", path, err)
	}
	r, err := maxminddb.OpenBytes(b)
	if err != nil {
		return nil, fmt.Errorf("opening geo database %s: %w", path, err)
	}
	if r.Metadata.NodeCount == 0 {
		return nil, fmt.Errorf("geo database %s has no networks", path)
	}
	return &geoDB{reader: r}, nil
}

// fileVersion identifies a version of a file well enough to notice it was replaced or rewritten.
type fileVersion struct {
	mod  time.Time
	size int64
	info os.FileInfo
}

func statFile(path string) (fileVersion, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileVersion{}, err
	}
	return fileVersion{mod: fi.ModTime(), size: fi.Size(), info: fi}, nil
}

func (v fileVersion) same(o fileVersion) bool {
	return v.mod.Equal(o.mod) && v.size == o.size && v.info != nil && o.info != nil && os.SameFile(v.info, o.info)
}

// watchGeo reloads the geo database when its file changes: a new file renamed over it (as a
// Kubernetes Secret or ConfigMap volume updates), or the file rewritten. A database that does not
// open is logged and counted, and the one in use stays until the file changes again.
func (s *Server) watchGeo() {
	defer s.wg.Done()
	seen, _ := statFile(s.geoPath)
	t := time.NewTicker(s.geoInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		v, err := statFile(s.geoPath)
		if err != nil || v.same(seen) {
			continue
		}
		seen = v
		g, err := openGeoDB(s.geoPath)
		if err != nil {
			s.stats.geoReloadFailed.Add(1)
			s.log.Error(err, "geo database changed but cannot be used; still serving the previous one", "path", s.geoPath)
			continue
		}
		s.geo.Store(g)
		s.stats.geoReloadOK.Add(1)
		meta := g.reader.Metadata
		s.log.Info("geo database reloaded", "path", s.geoPath, "type", meta.DatabaseType,
			"built", time.Unix(int64(meta.BuildEpoch), 0).UTC().Format(time.RFC3339))
	}
}

type geoRecord struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	RegisteredCountry struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"registered_country"`
	Continent struct {
		Code string `maxminddb:"code"`
	} `maxminddb:"continent"`
}

func (g *geoDB) locate(addr netip.Addr) location {
	res := g.reader.Lookup(addr.Unmap())
	bits := res.Prefix().Bits()
	loc := location{bits: uint8(max(bits, 0))}
	if !res.Found() {
		return loc
	}
	off := uint64(res.Offset())
	slot := &g.cache[(off*0x9E3779B97F4A7C15)>>(64-geoCacheBits)]
	if v := slot.Load(); v>>32 == off+1 {
		loc.country, loc.continent = uint16(v>>16), uint16(v)
		return loc
	}
	var rec geoRecord
	if err := res.Decode(&rec); err != nil {
		return loc
	}
	country := rec.Country.ISOCode
	if country == "" {
		// Networks without a located country (satellite, anycast) still have a registered one.
		country = rec.RegisteredCountry.ISOCode
	}
	if len(country) == 2 {
		loc.country = geoKey(country)
	}
	if len(rec.Continent.Code) == 2 {
		loc.continent = geoKey(rec.Continent.Code)
	}
	if off+1 < 1<<32 {
		slot.Store((off+1)<<32 | uint64(loc.country)<<16 | uint64(loc.continent))
	}
	return loc
}
