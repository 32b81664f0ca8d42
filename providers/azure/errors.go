package azure

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// zonesError explains a failed zone listing by the azure.json field to look at, where the Secret is
// what is wrong; retrying cannot help those.
func (p *Provider) zonesError(err error) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		field := "key " + v1alpha1.AzureJSONKey + ": field "
		switch {
		case re.ErrorCode == "ResourceGroupNotFound":
			return providers.Errorf(providers.Permanent, "%sresourceGroup: resource group %s does not exist in the subscription of field subscriptionId (HTTP 404 %s)",
				field, p.resourceGroup, re.ErrorCode)
		case re.ErrorCode == "SubscriptionNotFound" || re.ErrorCode == "InvalidSubscriptionId":
			return providers.Errorf(providers.Permanent, "%ssubscriptionId: the subscription does not exist or is not visible to the client of field aadClientId (HTTP %d %s)",
				field, re.StatusCode, re.ErrorCode)
		case re.StatusCode == 403:
			return providers.Errorf(providers.Permanent, "%saadClientId: the client is not allowed to list the DNS zones of resource group %s (HTTP 403 %s): grant it DNS Zone Contributor there",
				field, p.resourceGroup, re.ErrorCode)
		}
	}
	return classify("list zones of resource group", p.resourceGroup, err)
}

// classify turns an SDK error into a providers.Error whose message holds the operation, the HTTP
// status and Azure's error code: never the request ID, the response body or a credential.
func classify(op, what string, err error) error {
	var authErr *azidentity.AuthenticationFailedError
	if errors.As(err, &authErr) {
		return providers.Errorf(providers.Permanent, "azure: %s %s: authentication failed: check tenantId, aadClientId and aadClientSecret", op, what)
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
			if errors.Is(err, ctxErr) {
				return providers.Errorf(providers.Transient, "azure: %s %s: %v", op, what, ctxErr)
			}
		}
		return providers.Errorf(providers.Transient, "azure: %s %s: the request failed", op, what)
	}
	msg := fmt.Sprintf("azure: %s %s: HTTP %d %s", op, what, re.StatusCode, re.ErrorCode)
	switch {
	case re.StatusCode == 412 || re.StatusCode == 409:
		return providers.Errorf(providers.StaleView, "%s (the zone changed since it was read)", msg)
	case re.StatusCode == 401 || re.StatusCode == 403:
		return providers.Errorf(providers.Permanent, "%s (the credentials are not allowed to do this)", msg)
	case re.StatusCode == 408 || re.StatusCode == 429 || re.StatusCode >= 500:
		return providers.Errorf(providers.Transient, "%s", msg)
	default:
		return providers.Errorf(providers.Permanent, "%s", msg)
	}
}
