package dnsserver

import "sync"

// sigCache holds the signed entries that depend on the query name, within a byte bound: a flood of
// random names evicts entries rather than growing memory. It is split in shards, each under its own
// lock, held only for a map lookup or insert; signing happens outside it, so a miss never stalls
// other answers (two concurrent misses may both sign; either result is kept).
type sigCache struct {
	shards   [sigShards]sigShard
	maxShard int
}

const sigShards = 16

// DefaultDNSSECCacheBytes bounds each signed zone's cache of name-dependent signatures.
const DefaultDNSSECCacheBytes = 16 << 20

type sigShard struct {
	mu    sync.Mutex
	m     map[string]*signed
	bytes int
}

func newSigCache(maxBytes int) *sigCache {
	c := &sigCache{maxShard: max(maxBytes/sigShards, 1)}
	for i := range c.shards {
		c.shards[i].m = map[string]*signed{}
	}
	return c
}

func (c *sigCache) shard(key []byte) *sigShard {
	h := uint32(2166136261)
	for _, b := range key {
		h = (h ^ uint32(b)) * 16777619
	}
	return &c.shards[h%sigShards]
}

// get returns the entry for key, or nil when there is none or it is due for refresh.
func (c *sigCache) get(key []byte, now int64) *signed {
	sh := c.shard(key)
	sh.mu.Lock()
	sg := sh.m[string(key)]
	sh.mu.Unlock()
	if sg == nil || now >= sg.refresh {
		return nil
	}
	return sg
}

// put adds an entry, evicting others until the shard is within its share of the bound. Go's map
// iteration starts at a random place, so what is evicted is a random entry: cheap, and under a
// flood the flood's own entries are the ones most likely to go.
func (c *sigCache) put(key []byte, sg *signed, st *zoneStats) {
	sh := c.shard(key)
	size := sg.size(len(key))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old := sh.m[string(key)]; old != nil {
		sh.bytes -= old.size(len(key))
	}
	sh.m[string(key)] = sg
	sh.bytes += size
	for sh.bytes > c.maxShard && len(sh.m) > 1 {
		for k, v := range sh.m {
			if k == string(key) {
				continue
			}
			delete(sh.m, k)
			sh.bytes -= v.size(len(k))
			st.sigEvictions.Add(1)
			break
		}
	}
}

// usage counts the cache's entries and bytes.
func (c *sigCache) usage() (entries, bytes int) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		entries += len(sh.m)
		bytes += sh.bytes
		sh.mu.Unlock()
	}
	return entries, bytes
}
