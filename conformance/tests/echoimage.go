package tests

// The echo-backend image the manifests run: one reference, rewritten into
// every manifest as the applier reads it, so that the manifests, the
// release's image and the kind Makefile agree without editing each
// manifest's image line.

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/gatewitness/gatewitness/internal/version"
)

// ManifestEchoImage is the image reference the manifests carry as
// written. ManifestsWithEchoImage rewrites it to the image a run uses.
const ManifestEchoImage = EchoImageRepository + ":dev"

// EchoImageRepository is the repository of the echo-backend image that
// make release and the kind Makefile build.
const EchoImageRepository = "gatewitness/echo-backend"

// DefaultEchoImage returns the echo-backend image of this build: tagged
// with gatewitness's version when the binary is a release (make release
// stamps it; go install of a tag records it), as make release tags the
// image it ships; else (a build from a checkout, go test) ManifestEchoImage,
// the :dev image make kind-up and docker build build.
func DefaultEchoImage() string {
	return echoImageFor(version.Gatewitness())
}

func echoImageFor(v string) string {
	if version.IsRelease(v) {
		return EchoImageRepository + ":" + v
	}
	return ManifestEchoImage
}

// CheckEchoImage returns an error unless image is an image reference the
// manifests may run: non-empty, no whitespace, and a repository ending in
// /echo-backend (as the in-process runner and the tests expect).
func CheckEchoImage(image string) error {
	const form = "accepted: an image reference whose repository ends in /echo-backend, e.g. " + EchoImageRepository + ":v0.1.0 or registry.example.com/team/echo-backend@sha256:<digest>"
	if image == "" || strings.ContainsAny(image, " \t\r\n\"'") {
		return fmt.Errorf("%q: %s", image, form)
	}
	repo := image
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	if repo != "echo-backend" && !strings.HasSuffix(repo, "/echo-backend") {
		return fmt.Errorf("%q: %s", image, form)
	}
	return nil
}

// ManifestsWithEchoImage returns Manifests with every occurrence of
// ManifestEchoImage replaced by image, as read through fs.ReadFile or
// Open. With image equal to ManifestEchoImage (or empty) it returns
// Manifests itself.
func ManifestsWithEchoImage(image string) fs.FS {
	return withEchoImage(Manifests, image)
}

func withEchoImage(fsys fs.FS, image string) fs.FS {
	if image == "" || image == ManifestEchoImage {
		return fsys
	}
	return &imageFS{fsys: fsys, from: []byte(ManifestEchoImage), to: []byte(image)}
}

// imageFS rewrites one image reference in every regular file of fsys.
type imageFS struct {
	fsys     fs.FS
	from, to []byte
}

// ReadFile implements fs.ReadFileFS.
func (r *imageFS) ReadFile(name string) ([]byte, error) {
	b, err := fs.ReadFile(r.fsys, name)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b, r.from, r.to), nil
}

// Open implements fs.FS: a directory as fsys has it, a regular file with
// the image rewritten.
func (r *imageFS) Open(name string) (fs.File, error) {
	f, err := r.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return f, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	b = bytes.ReplaceAll(b, r.from, r.to)
	return &memFile{Reader: bytes.NewReader(b), info: memInfo{FileInfo: st, size: int64(len(b))}}, nil
}

// memFile is a rewritten regular file.
type memFile struct {
	*bytes.Reader
	info memInfo
}

func (m *memFile) Stat() (fs.FileInfo, error) { return m.info, nil }
func (m *memFile) Close() error               { return nil }

// memInfo is the original file's information with the rewritten size.
type memInfo struct {
	fs.FileInfo
	size int64
}

func (i memInfo) Size() int64 { return i.size }

// readManifest reads a manifest from the first of fsys that holds it, as
// the suite's applier does, so that a test decoding a manifest itself sees
// the echo-backend image the run uses. With no fsys it reads Manifests.
func readManifest(fsys []fs.FS, name string) ([]byte, error) {
	if len(fsys) == 0 {
		fsys = []fs.FS{Manifests}
	}
	var err error
	for _, f := range fsys {
		var b []byte
		if b, err = fs.ReadFile(f, name); err == nil {
			return b, nil
		}
	}
	return nil, err
}
