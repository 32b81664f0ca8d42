// Command image assembles the controller's container image without a container engine and without
// pulling a base image: an empty image, one layer holding the CA certificates of Debian's
// ca-certificates package and the passwd/group entries of the non-root user, and one layer holding
// the static binary. It writes the image as an OCI archive (a tar of an OCI image layout).
//
// The result is reproducible: every timestamp is the commit time (SOURCE_DATE_EPOCH), file entries
// are sorted with fixed owners and modes, and gzip output of one Go version is stable, so the same
// commit gives the same digest.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The non-root user the image runs as (the "nonroot" user of distroless images).
const (
	uid      = 65532
	userName = "nonroot"
	// BinaryPath is where the controller sits in the image.
	binaryPath = "dnspolicy-controller"
	caBundle   = "etc/ssl/certs/ca-certificates.crt"
)

func main() {
	binary := flag.String("binary", "", "static linux binary of the controller")
	version := flag.String("version", "", "the release (the VERSION file)")
	ref := flag.String("ref", "", "image reference recorded in the layout (org.opencontainers.image.ref.name)")
	source := flag.String("source", "https://github.com/dnspolicy/dnspolicy-controller", "source repository label")
	revision := flag.String("revision", "", "git commit label")
	epoch := flag.Int64("source-date-epoch", 0, "timestamp of every file and of the image, in Unix seconds (the commit time)")
	arch := flag.String("arch", "amd64", "architecture of the binary")
	out := flag.String("out", "", "OCI archive to write")
	flag.Parse()
	if *binary == "" || *version == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: image -binary FILE -version V -out FILE.tar [flags]")
		os.Exit(2)
	}
	digest, err := build(options{
		binary: *binary, version: *version, ref: *ref, source: *source, revision: *revision,
		created: time.Unix(*epoch, 0).UTC(), arch: *arch, out: *out,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

type options struct {
	binary, version, ref, source, revision, arch, out string
	created                                           time.Time
}

func build(o options) (v1.Hash, error) {
	certs, caVersion, err := debianCertificates()
	if err != nil {
		return v1.Hash{}, err
	}
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return v1.Hash{}, err
	}
	base, err := layer(o.created, []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, uid))},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", userName, uid, uid, userName, userName))},
		{name: "etc/ssl/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/", dir: true, mode: 0o755},
		{name: caBundle, mode: 0o644, data: certs},
		{name: "home/", dir: true, mode: 0o755},
		{name: "home/" + userName + "/", dir: true, mode: 0o700, owner: uid},
		{name: "tmp/", dir: true, mode: 0o1777},
	})
	if err != nil {
		return v1.Hash{}, err
	}
	app, err := layer(o.created, []file{{name: binaryPath, mode: 0o755, data: bin}})
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), base, app)
	if err != nil {
		return v1.Hash{}, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", o.arch, v1.Time{Time: o.created}
	cfg.Config.User = fmt.Sprintf("%d:%d", uid, uid)
	cfg.Config.Entrypoint = []string{"/" + binaryPath}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"SSL_CERT_FILE=/" + caBundle}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "dnspolicy-controller",
		"org.opencontainers.image.description": "DNS-based global load balancing for Gateway API",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.revision":    o.revision,
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"io.dnspolicy.ca-certificates.version": caVersion,
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	return digest, writeArchive(o.out, img, o.ref, o.created)
}

// debianCertificates concatenates the certificates shipped by the installed ca-certificates package
// (in path order) and returns them with the package version. The files come from the package's own
// list, not /etc/ssl/certs, so certificates a machine added locally never reach the image.
func debianCertificates() ([]byte, string, error) {
	version, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "ca-certificates").Output()
	if err != nil {
		return nil, "", fmt.Errorf("Debian's ca-certificates package is not installed (apt-get install ca-certificates): %w", err)
	}
	list, err := exec.Command("dpkg-query", "-L", "ca-certificates").Output()
	if err != nil {
		return nil, "", fmt.Errorf("listing ca-certificates: %w", err)
	}
	var paths []string
	for _, p := range strings.Split(string(list), "\n") {
		if strings.HasPrefix(p, "/usr/share/ca-certificates/") && strings.HasSuffix(p, ".crt") {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	if len(paths) == 0 {
		return nil, "", fmt.Errorf("the ca-certificates package lists no certificates")
	}
	var bundle bytes.Buffer
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		bundle.Write(b)
		if !bytes.HasSuffix(b, []byte("\n")) {
			bundle.WriteByte('\n')
		}
	}
	return bundle.Bytes(), strings.TrimSpace(string(version)), nil
}

type file struct {
	name  string
	dir   bool
	mode  int64
	owner int
	data  []byte
}

// layer makes a layer of files, in the order given, with fixed times and numeric owners.
func layer(mtime time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.owner, Gid: f.owner, ModTime: mtime, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// writeArchive writes img as an OCI image layout and packs the layout into a tar at out, entries
// sorted and timestamped with mtime so the archive itself is reproducible too.
func writeArchive(out string, img v1.Image, ref string, mtime time.Time) error {
	dir, err := os.MkdirTemp("", "oci-layout-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: nothing to do if it stays
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if ref != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
	}
	if err := p.AppendImage(img, opts...); err != nil {
		return err
	}
	var names []string
	if err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			rel += "/"
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(names)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // closed and checked below; this one is for the error paths
	w := tar.NewWriter(f)
	for _, name := range names {
		h := &tar.Header{Name: name, Mode: 0o644, ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		var data []byte
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		} else if data, err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			return err
		}
		h.Size = int64(len(data))
		if err := w.WriteHeader(h); err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
