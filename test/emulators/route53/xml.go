package route53

import "encoding/xml"

// The XML shapes of the Route53 API (version 2013-04-01) that the emulated operations read and write.

const xmlns = "https://route53.amazonaws.com/doc/2013-04-01/"

type hostedZoneXML struct {
	ID                     string `xml:"Id"`
	Name                   string `xml:"Name"`
	CallerReference        string `xml:"CallerReference"`
	PrivateZone            bool   `xml:"Config>PrivateZone"`
	ResourceRecordSetCount int    `xml:"ResourceRecordSetCount"`
}

type listHostedZonesResponse struct {
	XMLName     xml.Name        `xml:"ListHostedZonesResponse"`
	Xmlns       string          `xml:"xmlns,attr"`
	HostedZones []hostedZoneXML `xml:"HostedZones>HostedZone"`
	IsTruncated bool            `xml:"IsTruncated"`
	Marker      string          `xml:"Marker"`
	NextMarker  string          `xml:"NextMarker,omitempty"`
	MaxItems    int             `xml:"MaxItems"`
}

type listHostedZonesByNameResponse struct {
	XMLName          xml.Name        `xml:"ListHostedZonesByNameResponse"`
	Xmlns            string          `xml:"xmlns,attr"`
	HostedZones      []hostedZoneXML `xml:"HostedZones>HostedZone"`
	DNSName          string          `xml:"DNSName,omitempty"`
	HostedZoneID     string          `xml:"HostedZoneId,omitempty"`
	IsTruncated      bool            `xml:"IsTruncated"`
	NextDNSName      string          `xml:"NextDNSName,omitempty"`
	NextHostedZoneID string          `xml:"NextHostedZoneId,omitempty"`
	MaxItems         int             `xml:"MaxItems"`
}

type geoLocationXML struct {
	ContinentCode   string `xml:"ContinentCode,omitempty"`
	CountryCode     string `xml:"CountryCode,omitempty"`
	SubdivisionCode string `xml:"SubdivisionCode,omitempty"`
}

type recordSetXML struct {
	Name          string           `xml:"Name"`
	Type          string           `xml:"Type"`
	SetIdentifier string           `xml:"SetIdentifier,omitempty"`
	Weight        *int64           `xml:"Weight,omitempty"`
	GeoLocation   *geoLocationXML  `xml:"GeoLocation,omitempty"`
	TTL           *int64           `xml:"TTL,omitempty"`
	Records       []resourceRecord `xml:"ResourceRecords>ResourceRecord"`
	// AliasTarget and TrafficPolicyInstanceId are read only to apply Route 53's "exactly one of"
	// rule; the emulator stores neither kind of set.
	AliasTarget             *aliasTargetXML `xml:"AliasTarget,omitempty"`
	TrafficPolicyInstanceID string          `xml:"TrafficPolicyInstanceId,omitempty"`
}

type aliasTargetXML struct {
	HostedZoneID         string `xml:"HostedZoneId"`
	DNSName              string `xml:"DNSName"`
	EvaluateTargetHealth bool   `xml:"EvaluateTargetHealth"`
}

type resourceRecord struct {
	Value string `xml:"Value"`
}

type listRecordSetsResponse struct {
	XMLName              xml.Name       `xml:"ListResourceRecordSetsResponse"`
	Xmlns                string         `xml:"xmlns,attr"`
	RecordSets           []recordSetXML `xml:"ResourceRecordSets>ResourceRecordSet"`
	IsTruncated          bool           `xml:"IsTruncated"`
	NextRecordName       string         `xml:"NextRecordName,omitempty"`
	NextRecordType       string         `xml:"NextRecordType,omitempty"`
	NextRecordIdentifier string         `xml:"NextRecordIdentifier,omitempty"`
	MaxItems             int            `xml:"MaxItems"`
}

type changeXML struct {
	Action    string       `xml:"Action"`
	RecordSet recordSetXML `xml:"ResourceRecordSet"`
}

type changeRequest struct {
	XMLName xml.Name    `xml:"ChangeResourceRecordSetsRequest"`
	Comment string      `xml:"ChangeBatch>Comment"`
	Changes []changeXML `xml:"ChangeBatch>Changes>Change"`
}

type changeInfoXML struct {
	ID          string `xml:"Id"`
	Status      string `xml:"Status"`
	SubmittedAt string `xml:"SubmittedAt"`
	Comment     string `xml:"Comment,omitempty"`
}

type changeResponse struct {
	XMLName    xml.Name      `xml:"ChangeResourceRecordSetsResponse"`
	Xmlns      string        `xml:"xmlns,attr"`
	ChangeInfo changeInfoXML `xml:"ChangeInfo"`
}

type getChangeResponse struct {
	XMLName    xml.Name      `xml:"GetChangeResponse"`
	Xmlns      string        `xml:"xmlns,attr"`
	ChangeInfo changeInfoXML `xml:"ChangeInfo"`
}

type errorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	Messages  []string `xml:"Error>Messages>Message,omitempty"`
	RequestID string   `xml:"RequestId"`
}
