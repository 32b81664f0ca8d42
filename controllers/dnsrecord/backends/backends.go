// Package backends holds the DNS backends the record controller builds from provider Secrets, and
// the zone list each backend last read.
//
// A backend is built once per version of its Secret and reused by every record that publishes with
// it; a changed Secret builds a new one and a deleted Secret's is dropped, as is any backend unused
// for Idle. Each record remembers the backend it last used, so a record deleted after its Secret can
// still withdraw its contributions with the credentials it published with (for as long as Idle keeps
// them: after a restart nothing is remembered).
package backends

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// DefaultIdle is how long an unused backend is kept when Cache.Idle is 0.
const DefaultIdle = time.Hour

// ZoneRelistAfter is how old a zone list must be before a miss lists again: a zone created since is
// found within seconds, and the records of one Secret that miss together (a policy's records,
// retrying on one backoff schedule) share one listing instead of each making their own.
const ZoneRelistAfter = 2 * time.Second

// Backend is the backend built from one version of one provider Secret: the parts its constructor
// declared (providers.Backend), the writers wrapped (Cache.Wrap), and what the controller keeps
// beside them.
type Backend struct {
	// Provider is the declared Zones, wrapped; nil for a backend that serves whole records.
	Provider providers.Provider
	// ZoneScope is the declared ZoneScope.
	ZoneScope string
	// Account identifies the credentials (namespace/name/UID of the Secret): publish queues of two
	// Secrets for one cloud account stay apart.
	Account string
	// Secret is the Secret the backend was built from.
	Secret types.NamespacedName
	// Data holds the Secret's keys that are settings of the controller rather than of the backend
	// (those of SettingKeys), so a pass need not read the Secret again for them.
	Data map[string]string
	// Records is the declared Records (k8gb): such a record has no zone, plan or ownership records.
	Records providers.RecordBackend
	// Hosts is the declared Hosts (coredns); HostProvider is then its HostProvider, wrapped as
	// Provider is.
	Hosts        providers.HostZones
	HostProvider providers.Provider

	uid     types.UID
	version string

	mu sync.Mutex
	// zonesAt is when zones was listed; zero until a listing succeeds (zones may be empty).
	zonesAt time.Time
	zones   []providers.Zone
}

// Zones lists the backend's zones, reusing a list younger than maxAge. Records of one Secret wait for
// one listing instead of each making their own.
func (b *Backend) Zones(ctx context.Context, now time.Time, maxAge time.Duration) ([]providers.Zone, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.zonesAt.IsZero() && now.Sub(b.zonesAt) < maxAge {
		return b.zones, nil
	}
	zones, err := b.Provider.Zones(ctx)
	if err != nil {
		return nil, err
	}
	b.zonesAt, b.zones = now, zones
	return zones, nil
}

// AccountOf is the Account of the backends built from secret: its namespace, name and UID, so that a
// Secret deleted and created again under its name is another account.
func AccountOf(secret metav1.Object) string {
	return secret.GetNamespace() + "/" + secret.GetName() + "/" + string(secret.GetUID())
}

// Cache builds and keeps backends.
type Cache struct {
	Factory *providers.Factory
	// Wrap, when set, wraps every backend built (metrics).
	Wrap func(providers.Provider) providers.Provider
	// Idle drops a backend no record has used for this long (0: DefaultIdle).
	Idle time.Duration
	// SettingKeys are the Secret keys kept in Backend.Data.
	SettingKeys []string
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu sync.Mutex
	// bySecret is the backend of each Secret's current version.
	bySecret map[types.UID]*entry
	// byRecord is the backend each record last used.
	byRecord  map[types.NamespacedName]*entry
	lastSweep time.Time
}

type entry struct {
	backend  *Backend
	lastUsed time.Time
}

func (c *Cache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Cache) idle() time.Duration {
	if c.Idle > 0 {
		return c.Idle
	}
	return DefaultIdle
}

// Backend returns the backend of this version of the Secret, building it on first use, and
// remembers it as the backend of record. env is handed to the constructor.
func (c *Cache) Backend(ctx context.Context, record types.NamespacedName, secret *corev1.Secret, env providers.Env) (*Backend, error) {
	now := c.now()
	c.mu.Lock()
	c.sweepLocked(now)
	e, ok := c.bySecret[secret.UID]
	c.mu.Unlock()
	if !ok || e.backend.version != secret.ResourceVersion {
		// Built outside the lock: a constructor may be slow, and two records building one backend
		// at once only cost a second build.
		declared, err := c.Factory.New(ctx, secret, env)
		if err != nil {
			return nil, err
		}
		b := &Backend{
			Provider: declared.Zones, ZoneScope: declared.ZoneScope, Records: declared.Records, Hosts: declared.Hosts,
			Account: AccountOf(secret),
			Secret:  types.NamespacedName{Namespace: secret.Namespace, Name: secret.Name},
			uid:     secret.UID, version: secret.ResourceVersion,
		}
		for _, k := range c.SettingKeys {
			if v, ok := secret.Data[k]; ok {
				if b.Data == nil {
					b.Data = map[string]string{}
				}
				b.Data[k] = string(v)
			}
		}
		if b.Hosts != nil {
			b.HostProvider = b.Hosts.HostProvider()
		}
		if c.Wrap != nil {
			if b.Provider != nil {
				b.Provider = c.Wrap(b.Provider)
			}
			if b.HostProvider != nil {
				b.HostProvider = c.Wrap(b.HostProvider)
			}
		}
		e = &entry{backend: b}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bySecret == nil {
		c.bySecret, c.byRecord = map[types.UID]*entry{}, map[types.NamespacedName]*entry{}
	}
	if cur, ok := c.bySecret[secret.UID]; ok && cur.backend.version == secret.ResourceVersion {
		e = cur // built by another record meanwhile
	}
	e.lastUsed = now
	c.bySecret[secret.UID] = e
	c.byRecord[record] = e
	return e.backend, nil
}

// Current returns the backend already built from version of the Secret uid, and remembers it as the
// backend of record, as Backend does; false when none is kept for that version. A caller that knows
// a Secret's current version from a metadata watch uses it without reading the Secret.
func (c *Cache) Current(record types.NamespacedName, uid types.UID, version string) (*Backend, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepLocked(now)
	e, ok := c.bySecret[uid]
	if !ok || e.backend.version != version {
		return nil, false
	}
	e.lastUsed = now
	c.byRecord[record] = e
	return e.backend, true
}

// Last returns the backend record last used, if it is still kept, whether or not its Secret still
// exists.
func (c *Cache) Last(record types.NamespacedName) (*Backend, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepLocked(now)
	e, ok := c.byRecord[record]
	if !ok {
		return nil, false
	}
	e.lastUsed = now
	return e.backend, true
}

// Forget drops what is kept for record (it is gone).
func (c *Cache) Forget(record types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byRecord, record)
}

// SecretChanged drops the backend of a Secret whose version is no longer version (a Secret that was
// deleted: version ""). Records that used it keep it as their last backend until they publish
// again, are forgotten, or Idle passes.
func (c *Cache) SecretChanged(uid types.UID, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.bySecret[uid]; ok && (version == "" || e.backend.version != version) {
		delete(c.bySecret, uid)
	}
}

// Len returns how many backends are kept per Secret and per record.
func (c *Cache) Len() (secrets, records int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bySecret), len(c.byRecord)
}

// sweepLocked drops entries unused for Idle, at most once per Idle/4.
func (c *Cache) sweepLocked(now time.Time) {
	idle := c.idle()
	if now.Sub(c.lastSweep) < idle/4 {
		return
	}
	c.lastSweep = now
	for k, e := range c.bySecret {
		if now.Sub(e.lastUsed) >= idle {
			delete(c.bySecret, k)
		}
	}
	for k, e := range c.byRecord {
		if now.Sub(e.lastUsed) >= idle {
			delete(c.byRecord, k)
		}
	}
}
