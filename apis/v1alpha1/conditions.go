package v1alpha1

// Condition types of DNSRecord, in the order the status lists them.
const (
	// ConditionTypeReady: is every record this owner wants published in the zone (possibly holding
	// another owner's value for a shared, single-valued thing)?
	ConditionTypeReady = "Ready"
	// ConditionTypeConflicted: did this owner lose a shared wish to another owner (a default geo
	// target, a TTL, a CNAME's target, a record type)? Set once the record has been planned.
	ConditionTypeConflicted = "Conflicted"
	// ConditionTypeHealthy: do the record's health probes pass?
	ConditionTypeHealthy = "Healthy"
	// ConditionTypeLeases: is this cluster's owner lease renewed in the record's zone, and how old
	// are the leases of the other clusters' owners at its names? Set only where the record shares a
	// name with another cluster's owner (package lease); absent otherwise, as Kuadrant's status.
	ConditionTypeLeases = "Leases"
	// ConditionTypeProviderAccepted: can the backend that serves the record's zone serve every
	// endpoint the record publishes? Set on records written into an authoritative record (coredns):
	// Kuadrant reports what the DNS server cannot route on the authoritative record's Ready
	// condition and leaves the record Ready, so this says it where the record's owner looks. Set
	// False (RoundRobin) too on a load-balanced record whose backend answers every client alike
	// (rfc2136), which publishes the union of the tree's leaves at the host instead of the tree.
	ConditionTypeProviderAccepted = "ProviderAccepted"
	// ConditionTypeReadyForDelegation: may a primary cluster take this delegating record (delegate:
	// true)? True once it has its finalizer, owner ID, validation and probes (Kuadrant's
	// condition; primaries skip a record without it). Set on delegating records only.
	ConditionTypeReadyForDelegation = "ReadyForDelegation"
	// ConditionTypeActive: is the group of the controller that reconciles the record (--group) among
	// the active groups of its zone (the kuadrant-active-groups TXT, package groups)? Set only on a
	// record in a group; absent on an ungrouped record, as Kuadrant's status.
	ConditionTypeActive = "Active"
)

// ConditionOrder is the order of a DNSRecord's conditions.
var ConditionOrder = []string{ConditionTypeReady, ConditionTypeConflicted, ConditionTypeHealthy, ConditionTypeLeases, ConditionTypeProviderAccepted, ConditionTypeReadyForDelegation, ConditionTypeActive}

// Reasons of the DNSRecord conditions: every reason the record controller writes is here, and each
// has an entry in docs/troubleshooting.md. Kuadrant's tooling reads the first group, with the
// messages below, so they are part of the wire contract.
const (
	ReasonProviderSuccess    = "ProviderSuccess"
	ReasonProviderError      = "ProviderError"
	ReasonDNSProviderError   = "DNSProviderError"
	ReasonAwaitingValidation = "AwaitingValidation"
	ReasonValidationError    = "ValidationError"
	// ReasonHealthChecksFailed: Healthy=False when no probe of the record passes (or none exists
	// yet), and Ready=False when the record publishes nothing because of it.
	ReasonHealthChecksFailed = "HealthChecksFailed"
	// ReasonSomeChecksPassed: Healthy=False when some probes pass and others do not.
	ReasonSomeChecksPassed = "SomeChecksPassed"
	// ReasonAllChecksPassed: Healthy=True.
	ReasonAllChecksPassed = "AllChecksPassed"
	// ReasonMemberOfActiveGroup: Active=True, the record's group is listed in its zone's
	// active-groups TXT.
	ReasonMemberOfActiveGroup = "MemberOfActiveGroup"
	// ReasonNotMemberOfActiveGroup: Active=False, the record's group is not listed there.
	ReasonNotMemberOfActiveGroup = "NotMemberOfActiveGroup"
	// ReasonMemberOfInactiveGroup: Ready=False while Active=False: the record publishes nothing.
	ReasonMemberOfInactiveGroup = "MemberOfInactiveGroup"
)

// Reasons of delegation, Kuadrant's (docs/delegation.md): a primary cluster reads and writes them in
// the status of this cluster's delegating records, so they are part of the wire contract.
const (
	// ReasonFinalizersSet: ReadyForDelegation=True.
	ReasonFinalizersSet = "FinalizersSet"
	// ReasonProviderEndpointsDeletion: Ready=False on a deleted record whose endpoints are being
	// withdrawn; here, a delegating record waiting for its primaries to withdraw them.
	ReasonProviderEndpointsDeletion = "ProviderEndpointsDeletion"
	// ReasonProviderEndpointsRemoved: Ready=False, the endpoints are withdrawn. A primary writes it
	// in its entry of status.remoteRecordStatuses once it has withdrawn the record's endpoints.
	ReasonProviderEndpointsRemoved = "ProviderEndpointsRemoved"
)

// Reasons beyond Kuadrant's.
const (
	// ReasonConflicted: Ready=False when a record key this owner wants is not published at all
	// (it lost a record-type conflict, a record no owner claims holds the name, or its ownership TXT
	// name is taken); Conflicted=True when any wish lost.
	ReasonConflicted = "Conflicted"
	// ReasonNoConflict: Conflicted=False, every value this owner wants is published.
	ReasonNoConflict = "NoConflict"
	// ReasonProviderSecretMissing: the provider Secret named, or a default-provider Secret, is not
	// there.
	ReasonProviderSecretMissing = "ProviderSecretMissing"
	// ReasonMultipleDefaultProviders: no providerRef, and several Secrets of the namespace are
	// labelled as its default provider.
	ReasonMultipleDefaultProviders = "MultipleDefaultProviders"
	// ReasonUnsupportedProvider: the Secret's type has no backend in this controller (unknown, or not
	// enabled by --providers), or the backend refused the Secret.
	ReasonUnsupportedProvider = "UnsupportedProvider"
	// ReasonNotGranted: Ready=False (and, on authoritative records, Served=False) when no grant
	// of the administrator (--grant, --grants-file) lets the record's namespace publish its names;
	// nothing of the record is published.
	ReasonNotGranted = "NotGranted"
	// ReasonAccepted: ProviderAccepted=True, the backend serving the zone can serve every endpoint
	// of the record. (ProviderAccepted=False has reason ValidationError.)
	ReasonAccepted = "Accepted"
	// ReasonRoundRobin: ProviderAccepted=False, the backend answers every client alike
	// (providers.Capabilities.NoRoutingPolicies), so the record's weighted and geo tree is published
	// as one set of its leaves at the host (package builder, RoundRobin).
	ReasonRoundRobin = "RoundRobin"
	// ReasonOrphaned is the reason of the Warning event of a deleted record released without its
	// contributions withdrawn from the zone.
	ReasonOrphaned = "Orphaned"
	// ReasonLeaseRenewed: Leases=True, this cluster's lease in the zone is renewed.
	ReasonLeaseRenewed = "LeaseRenewed"
	// ReasonLeaseNotRenewed: Leases=False, the last renewal of this cluster's lease failed; other
	// clusters withdraw this owner from shared names once the lease is older than its duration.
	ReasonLeaseNotRenewed = "LeaseNotRenewed"
	// ReasonOwnerLeaseExpired: Ready=False in a primary's entry of another cluster's delegating
	// record (status.remoteRecordStatuses), when the owner lease the record carries
	// (OwnerLeaseAnnotation) has not changed for its duration: its cluster's controller stopped.
	// The primary publishes nothing more of it until the lease changes again; its endpoints leave
	// the names it shares with live owners, and stay where it is alone.
	ReasonOwnerLeaseExpired = "OwnerLeaseExpired"
	// ReasonOwnerWithdrawn is the reason of the event on a record whose pass withdrew another
	// cluster's owner, whose lease had expired, from a name they shared.
	ReasonOwnerWithdrawn = "OwnerWithdrawn"
	// ReasonInactiveGroupsRemoved is the reason of the event on a record of an active failover
	// group whose quiet pass removed from its zone what inactive groups' owners had published.
	ReasonInactiveGroupsRemoved = "InactiveGroupsRemoved"
	// ReasonGroupFailover is the reason of the event on a record whose controller switched its
	// zone's active groups by itself (automatic failover, --group-failover-order), and
	// ReasonGroupFailoverFailed of the Warning when the switch could not be written.
	ReasonGroupFailover       = "GroupFailover"
	ReasonGroupFailoverFailed = "GroupFailoverFailed"
	// ReasonRepublished is the reason of the event (and, until the next pass, the Leases condition)
	// on a record whose published records were gone from the zone, withdrawn by another cluster that
	// counted this one's lease expired or deleted by hand, and were published again.
	ReasonRepublished = "Republished"
	// ReasonOwnerIDInUse: Ready=False, the record's owner ID (spec.ownerID, or the one computed from
	// its UID) belongs in this cluster to another namespace, whose oldest DNSRecord used it first:
	// the record publishes nothing, and withdraws nothing when deleted.
	ReasonOwnerIDInUse = "OwnerIDInUse"
)

// Condition messages. Kuadrant's tooling matches the first group verbatim (DESIGN 4b).
const (
	MessageProviderSuccess    = "Provider ensured the dns record"
	MessageAwaitingValidation = "Awaiting validation"
	MessageNoZone             = "Unable to find suitable zone in provider: %s"
	MessageProviderError      = "The DNS provider failed to ensure the record: %s"
	MessageNotPublishing      = "Not publishing unhealthy records"
	MessageAllChecksPassed    = "All healthchecks succeeded"
	MessageNotHealthy         = "Not healthy addresses: %s"
	MessageProbesCreating     = "Probes are creating"
	// MessageEndpointsDeletion and MessageEndpointsRemoved go with ReasonProviderEndpointsDeletion
	// and ReasonProviderEndpointsRemoved.
	MessageEndpointsDeletion = "DNS records are being deleted from provider"
	MessageEndpointsRemoved  = "DNS records removed from provider"
	// Failover groups (Kuadrant's GroupAdapter.SetStatusConditions).
	MessageMemberOfActiveGroup    = "Group is included in active groups"
	MessageNotMemberOfActiveGroup = "Group is not included in active groups"
	MessageMemberOfInactiveGroup  = "No further actions to take while in inactive group"

	MessageAccepted    = "The DNS provider serving the zone accepts every endpoint of the record"
	MessageNotAccepted = "The DNS provider serving the zone cannot serve every endpoint of the record (authoritative record %s reports it): %s"
	MessageNoConflict  = "Every value this owner wants is published"
	MessageConflicted  = "Another owner's value is published: %s"
	// MessageOwnerIDInUse names the owner ID and the namespace holding it, nothing of its records.
	MessageOwnerIDInUse = "Owner ID %s belongs to namespace %s in this cluster (a DNSRecord there used it first): this record publishes nothing, and withdraws nothing when deleted, until it uses another owner ID or no record there uses this one"
	// MessageRoundRobin names the host; the leaves are in status.endpoints.
	MessageRoundRobin = "The DNS provider serving the zone answers every client alike and holds no weighted or geo records: the load-balanced tree is published as one set of its healthy leaves at %s, a round robin without weights or geography"
)
