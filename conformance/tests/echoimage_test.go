package tests

import (
	"bytes"
	"io"
	"io/fs"
	"strings"
	"testing"
)

func TestEchoImageForAVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v0.1.0":                               "gatewitness/echo-backend:v0.1.0",
		"v1.2.3":                               "gatewitness/echo-backend:v1.2.3",
		"v0.1.1-0.20260301120000-0123456789ab": ManifestEchoImage,
		"v0.1.0+dirty":                         ManifestEchoImage,
		"v0.0.0-unknown":                       ManifestEchoImage,
		"":                                     ManifestEchoImage,
	} {
		if got := echoImageFor(v); got != want {
			t.Errorf("echoImageFor(%q) = %q; want %q", v, got, want)
		}
	}
	// go test stamps no release: the default is the :dev image.
	if got := DefaultEchoImage(); got != ManifestEchoImage {
		t.Errorf("DefaultEchoImage() = %q in a test binary; want %q", got, ManifestEchoImage)
	}
}

func TestCheckEchoImage(t *testing.T) {
	for _, ok := range []string{"gatewitness/echo-backend:v0.1.0", "echo-backend", "localhost:5000/echo-backend",
		"registry.example.com:5000/team/echo-backend:dev", "gatewitness/echo-backend@sha256:0123"} {
		if err := CheckEchoImage(ok); err != nil {
			t.Errorf("CheckEchoImage(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "gatewitness/echo-basic:v1", "localhost:5000/other", "gatewitness/echo-backend:v1 x", "echo-backend-x:v1"} {
		if err := CheckEchoImage(bad); err == nil || !strings.Contains(err.Error(), "/echo-backend") {
			t.Errorf("CheckEchoImage(%q) = %v; want an error naming the accepted form", bad, err)
		}
	}
}

// Every manifest that names the echo-backend gets the run's image, read
// either way the applier reads (fs.ReadFile, Open), and nothing else in it
// changes.
func TestManifestsGetTheRunsEchoImage(t *testing.T) {
	const image = "registry.example.com/team/echo-backend:v0.1.0"
	rewritten := ManifestsWithEchoImage(image)
	seen := 0
	err := fs.WalkDir(Manifests, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		orig, err := fs.ReadFile(Manifests, name)
		if err != nil {
			return err
		}
		got, err := fs.ReadFile(rewritten, name)
		if err != nil {
			return err
		}
		f, err := rewritten.Open(name)
		if err != nil {
			return err
		}
		opened, err := io.ReadAll(f)
		st, _ := f.Stat()
		f.Close()
		if err != nil {
			return err
		}
		if !bytes.Equal(got, opened) || st.Size() != int64(len(got)) {
			t.Errorf("%s: Open gives %d bytes (Stat %d), ReadFile %d", name, len(opened), st.Size(), len(got))
		}
		n := bytes.Count(orig, []byte(ManifestEchoImage))
		seen += n
		if bytes.Contains(got, []byte(ManifestEchoImage)) || bytes.Count(got, []byte(image)) != n {
			t.Errorf("%s: %d of %s; after the rewrite %d of %s and %d left", name, n, ManifestEchoImage,
				bytes.Count(got, []byte(image)), image, bytes.Count(got, []byte(ManifestEchoImage)))
		}
		if !bytes.Equal(bytes.ReplaceAll(got, []byte(image), []byte(ManifestEchoImage)), orig) {
			t.Errorf("%s: the rewrite changed more than the image", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 20 {
		t.Errorf("%d echo-backend image lines in the manifests; want the tests' (at least 20)", seen)
	}
	if ManifestsWithEchoImage(ManifestEchoImage) != fs.FS(Manifests) || ManifestsWithEchoImage("") != fs.FS(Manifests) {
		t.Error("the :dev image (or none) should leave Manifests as they are")
	}
	if _, err := readManifest([]fs.FS{rewritten}, connManifest); err != nil {
		t.Errorf("readManifest %s: %v", connManifest, err)
	}
}
