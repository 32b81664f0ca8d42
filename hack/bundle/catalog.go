package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"
)

type catalogEntry struct {
	variant Variant
	csv     *v1alpha1.ClusterServiceVersion
	image   string
}

// The file-based catalog's schemas (olm.package, olm.channel, olm.bundle), written as opm would
// render them from the bundle images, with the properties OLM resolves dependencies on: the
// package and version (which Kuadrant's olm.package dependency on dns-operator matches) and the
// group/version/kind of every owned API.
type fbcPackage struct {
	Schema         string `json:"schema"`
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel"`
	Description    string `json:"description,omitempty"`
}

type fbcChannel struct {
	Schema  string            `json:"schema"`
	Name    string            `json:"name"`
	Package string            `json:"package"`
	Entries []fbcChannelEntry `json:"entries"`
}

type fbcChannelEntry struct {
	Name string `json:"name"`
}

type fbcBundle struct {
	Schema        string            `json:"schema"`
	Name          string            `json:"name"`
	Package       string            `json:"package"`
	Image         string            `json:"image"`
	Properties    []fbcProperty     `json:"properties"`
	RelatedImages []fbcRelatedImage `json:"relatedImages"`
}

type fbcProperty struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type fbcRelatedImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// WriteCatalog writes one folder per package under dir, holding its package, channel and bundle.
func WriteCatalog(dir string, entries []catalogEntry) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for _, e := range entries {
		pkg := e.variant.Package
		props := []fbcProperty{{Type: "olm.package", Value: map[string]string{"packageName": pkg, "version": e.csv.Spec.Version.String()}}}
		for _, crd := range e.csv.Spec.CustomResourceDefinitions.Owned {
			group := crd.Name[strings.Index(crd.Name, ".")+1:]
			props = append(props, fbcProperty{Type: "olm.gvk", Value: map[string]string{"group": group, "kind": crd.Kind, "version": crd.Version}})
		}
		related := []fbcRelatedImage{{Name: "bundle", Image: e.image}}
		for _, r := range e.csv.Spec.RelatedImages {
			related = append(related, fbcRelatedImage(r))
		}
		docs := []any{
			fbcPackage{Schema: "olm.package", Name: pkg, DefaultChannel: "candidate", Description: e.variant.DisplayName},
			fbcChannel{Schema: "olm.channel", Name: "candidate", Package: pkg, Entries: []fbcChannelEntry{{Name: e.csv.Name}}},
			fbcBundle{Schema: "olm.bundle", Name: e.csv.Name, Package: pkg, Image: e.image, Properties: props, RelatedImages: related},
		}
		var out []byte
		for _, d := range docs {
			b, err := yaml.Marshal(d)
			if err != nil {
				return err
			}
			out = append(append(out, "---\n"...), b...)
		}
		if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, pkg, "catalog.yaml"), out, 0o644); err != nil {
			return fmt.Errorf("writing the catalog of %s: %w", pkg, err)
		}
	}
	return nil
}
