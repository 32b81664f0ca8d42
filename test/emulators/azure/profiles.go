package azure

import (
	"context"
	"net/http"
	"strings"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/trafficmanager/armtrafficmanager"
	tmfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/trafficmanager/armtrafficmanager/fake"

	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
)

// regions are Traffic Manager's geographic regions above country level.
var regions = map[string]bool{
	"WORLD": true, "GEO-AF": true, "GEO-AN": true, "GEO-AS": true, "GEO-AP": true, "GEO-EU": true,
	"GEO-ME": true, "GEO-NA": true, "GEO-SA": true,
}

// IsGeoCode reports whether Traffic Manager's geographic routing takes code: WORLD, a region or an
// ISO 3166-1 alpha-2 country.
func IsGeoCode(code string) bool { return regions[code] || geo.IsCountry(code) }

func (s *Store) profileID(resourceGroup, name string) string {
	return "/subscriptions/" + s.subscription + "/resourceGroups/" + resourceGroup +
		"/providers/Microsoft.Network/trafficManagerProfiles/" + name
}

func profileKey(resourceGroup, name string) string {
	return strings.ToLower(resourceGroup + "/" + name)
}

// profileExists reports whether id names a stored profile. Callers hold s.mu.
func (s *Store) profileExists(id string) bool {
	for _, p := range s.profiles {
		if strings.EqualFold(*p.value.ID, id) {
			return true
		}
	}
	return false
}

func (s *Store) profilesServer() tmfake.ProfilesServer {
	return tmfake.ProfilesServer{
		CreateOrUpdate: func(_ context.Context, resourceGroup, name string, value armtrafficmanager.Profile, _ *armtrafficmanager.ProfilesClientCreateOrUpdateOptions) (resp azfake.Responder[armtrafficmanager.ProfilesClientCreateOrUpdateResponse], errResp azfake.ErrorResponder) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls["Profiles.CreateOrUpdate"]++
			if status, code := s.validateProfile(resourceGroup, name, &value); status != 0 {
				errResp.SetResponseError(status, code)
				return
			}
			stored := copyProfile(&value)
			stored.ID = to.Ptr(s.profileID(resourceGroup, name))
			stored.Name = to.Ptr(name)
			stored.Type = to.Ptr("Microsoft.Network/trafficManagerProfiles")
			stored.Properties.DNSConfig.Fqdn = to.Ptr(*stored.Properties.DNSConfig.RelativeName + ".trafficmanager.net")
			for _, ep := range stored.Properties.Endpoints {
				ep.ID = to.Ptr(*stored.ID + "/externalEndpoints/" + *ep.Name)
			}
			status := http.StatusCreated
			if _, ok := s.profiles[profileKey(resourceGroup, name)]; ok {
				status = http.StatusOK
			}
			s.profiles[profileKey(resourceGroup, name)] = &profile{resourceGroup: resourceGroup, value: *stored}
			resp.SetResponse(status, armtrafficmanager.ProfilesClientCreateOrUpdateResponse{Profile: *copyProfile(stored)}, nil)
			return
		},
		Get: func(_ context.Context, resourceGroup, name string, _ *armtrafficmanager.ProfilesClientGetOptions) (resp azfake.Responder[armtrafficmanager.ProfilesClientGetResponse], errResp azfake.ErrorResponder) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls["Profiles.Get"]++
			p, ok := s.profiles[profileKey(resourceGroup, name)]
			if !ok {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			resp.SetResponse(http.StatusOK, armtrafficmanager.ProfilesClientGetResponse{Profile: *copyProfile(&p.value)}, nil)
			return
		},
		Delete: func(_ context.Context, resourceGroup, name string, _ *armtrafficmanager.ProfilesClientDeleteOptions) (resp azfake.Responder[armtrafficmanager.ProfilesClientDeleteResponse], errResp azfake.ErrorResponder) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls["Profiles.Delete"]++
			key := profileKey(resourceGroup, name)
			p, ok := s.profiles[key]
			if !ok {
				resp.SetResponse(http.StatusNoContent, armtrafficmanager.ProfilesClientDeleteResponse{}, nil)
				return
			}
			// Azure refuses to delete a profile an alias record set still points at.
			for _, z := range s.zones {
				for _, set := range z.sets {
					if set.Properties.TargetResource != nil && strings.EqualFold(*set.Properties.TargetResource.ID, *p.value.ID) {
						errResp.SetResponseError(http.StatusConflict, "Conflict")
						return
					}
				}
			}
			delete(s.profiles, key)
			resp.SetResponse(http.StatusOK, armtrafficmanager.ProfilesClientDeleteResponse{
				DeleteOperationResult: armtrafficmanager.DeleteOperationResult{OperationResult: to.Ptr(true)},
			}, nil)
			return
		},
		NewListByResourceGroupPager: func(resourceGroup string, _ *armtrafficmanager.ProfilesClientListByResourceGroupOptions) (resp azfake.PagerResponder[armtrafficmanager.ProfilesClientListByResourceGroupResponse]) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls["Profiles.ListByResourceGroup"]++
			var page armtrafficmanager.ProfilesClientListByResourceGroupResponse
			for _, p := range s.profiles {
				if strings.EqualFold(p.resourceGroup, resourceGroup) {
					page.Value = append(page.Value, copyProfile(&p.value))
				}
			}
			resp.AddPage(http.StatusOK, page, nil)
			return resp
		},
	}
}

// validateProfile applies Traffic Manager's rules to a profile about to be written. It returns 0
// when the profile is valid. Callers hold s.mu.
func (s *Store) validateProfile(resourceGroup, name string, p *armtrafficmanager.Profile) (int, string) {
	props := p.Properties
	if props == nil || props.TrafficRoutingMethod == nil || props.DNSConfig == nil || props.DNSConfig.RelativeName == nil ||
		props.MonitorConfig == nil || len(props.Endpoints) > EndpointsPerProfile || !validResourceName(name) {
		return http.StatusBadRequest, "BadRequest"
	}
	for key, other := range s.profiles {
		if key != profileKey(resourceGroup, name) && strings.EqualFold(*other.value.Properties.DNSConfig.RelativeName, *props.DNSConfig.RelativeName) {
			return http.StatusConflict, "Conflict"
		}
	}
	names := map[string]bool{}
	mapped := map[string]bool{}
	for _, ep := range props.Endpoints {
		if ep == nil || ep.Name == nil || !validResourceName(*ep.Name) || names[strings.ToLower(*ep.Name)] ||
			ep.Properties == nil || ep.Properties.Target == nil || *ep.Properties.Target == "" ||
			ep.Type == nil || !strings.EqualFold(*ep.Type, "Microsoft.Network/trafficManagerProfiles/externalEndpoints") {
			return http.StatusBadRequest, "BadRequest"
		}
		names[strings.ToLower(*ep.Name)] = true
		switch *props.TrafficRoutingMethod {
		case armtrafficmanager.TrafficRoutingMethodWeighted:
			if ep.Properties.Weight == nil || *ep.Properties.Weight < 1 || *ep.Properties.Weight > 1000 {
				return http.StatusBadRequest, "BadRequest"
			}
		case armtrafficmanager.TrafficRoutingMethodGeographic:
			if len(ep.Properties.GeoMapping) == 0 {
				return http.StatusBadRequest, "BadRequest"
			}
			for _, code := range ep.Properties.GeoMapping {
				if code == nil || !IsGeoCode(*code) || mapped[*code] {
					return http.StatusBadRequest, "BadRequest"
				}
				mapped[*code] = true
			}
		default:
			return http.StatusBadRequest, "BadRequest"
		}
	}
	return 0, ""
}

// validResourceName applies ARM's rule for resource names: 1-260 characters, none of <>*%&:\?/+#
// or control characters, not ending in a period or a space.
func validResourceName(name string) bool {
	if name == "" || len(name) > 260 || strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return false
	}
	for _, r := range name {
		if r < 0x20 || strings.ContainsRune(`<>*%&:\?/+#`, r) {
			return false
		}
	}
	return true
}

func copyProfile(p *armtrafficmanager.Profile) *armtrafficmanager.Profile {
	out := *p
	if p.Properties == nil {
		return &out
	}
	props := *p.Properties
	if props.DNSConfig != nil {
		props.DNSConfig = to.Ptr(*props.DNSConfig)
	}
	props.Endpoints = nil
	for _, ep := range p.Properties.Endpoints {
		c := *ep
		if ep.Properties != nil {
			ep := *ep.Properties
			ep.GeoMapping = copyEach(ep.GeoMapping)
			c.Properties = &ep
		}
		props.Endpoints = append(props.Endpoints, &c)
	}
	out.Properties = &props
	return &out
}
