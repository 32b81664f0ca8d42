//go:build integration

package install_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
)

// `make image` twice gives the same digest, and the archive read back is an image that runs the
// controller as a non-root user, carries the CA certificates, and whose binary reports VERSION.
func TestImage(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(version))
	dir := t.TempDir()
	var archives, digests []string
	for _, name := range []string{"first.oci.tar", "second.oci.tar"} {
		out := filepath.Join(dir, name)
		cmd := exec.Command("make", "-s", "image", "IMAGE_ARCHIVE="+out)
		cmd.Dir = root
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("make image: %v\n%s", err, b)
		}
		archives = append(archives, out)
		digests = append(digests, strings.TrimSpace(string(b)))
	}
	if digests[0] != digests[1] || !strings.HasPrefix(digests[0], "sha256:") {
		t.Errorf("two builds of one commit gave digests %q and %q", digests[0], digests[1])
	}
	a, err := os.ReadFile(archives[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(archives[1])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two builds of one commit gave different archives")
	}

	// Read the archive back as an OCI layout.
	unpacked := filepath.Join(dir, "layout")
	untar(t, archives[0], unpacked)
	p, err := layout.FromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("%d images in the layout, want 1", len(m.Manifests))
	}
	if ref := m.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; !strings.HasSuffix(ref, ":v"+want) {
		t.Errorf("image reference %q is not tagged v%s", ref, want)
	}
	img, err := p.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.Config.User; u == "" || u == "0" || strings.HasPrefix(u, "0:") || u == "root" {
		t.Errorf("the image runs as user %q, want a non-root uid", u)
	}
	if got := cfg.Config.Labels["org.opencontainers.image.version"]; got != want {
		t.Errorf("version label %q, want %q", got, want)
	}
	if cfg.Config.Labels["org.opencontainers.image.source"] == "" || cfg.Config.Labels["org.opencontainers.image.revision"] == "" {
		t.Errorf("source labels missing: %v", cfg.Config.Labels)
	}
	if cfg.OS != "linux" || len(cfg.Config.Entrypoint) != 1 {
		t.Errorf("os %q entrypoint %v", cfg.OS, cfg.Config.Entrypoint)
	}

	files := map[string][]byte{}
	r := tar.NewReader(mutate.Extract(img))
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = data
			if h.Name == strings.TrimPrefix(cfg.Config.Entrypoint[0], "/") && h.Mode&0o111 == 0 {
				t.Errorf("%s is not executable (mode %o)", h.Name, h.Mode)
			}
		}
	}
	if n := bytes.Count(files["etc/ssl/certs/ca-certificates.crt"], []byte("BEGIN CERTIFICATE")); n < 50 {
		t.Errorf("the CA bundle holds %d certificates", n)
	}
	if !bytes.Contains(files["etc/passwd"], []byte(":65532:65532:")) {
		t.Errorf("/etc/passwd has no entry for the image's user: %q", files["etc/passwd"])
	}
	bin := filepath.Join(dir, "dnspolicy-controller")
	if err := os.WriteFile(bin, files[strings.TrimPrefix(cfg.Config.Entrypoint[0], "/")], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("the image's binary --version: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("the image's binary reports %q, VERSION is %q", got, want)
	}
}

// untar unpacks an archive of regular files and folders into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := tar.NewReader(f)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, filepath.Clean(dir)+string(os.PathSeparator)) {
			t.Fatalf("archive entry %q leaves the folder", h.Name)
		}
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
