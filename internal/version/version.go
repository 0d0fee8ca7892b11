// Package version says which gatewitness a binary is, in a form the
// Gateway API project accepts as an implementation version: a semantic
// version naming a snapshot.
package version

import (
	"runtime/debug"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Unknown is the version of a build that carries no version: go run and
// go test do not stamp one, and neither does go build with
// -buildvcs=false. It is a semantic version (v0.0.0 with the pre-release
// "unknown"), so reports stay valid, and it says plainly that the
// snapshot is not known. Build with `go build` (or `go run -buildvcs=true`)
// from a git checkout, or `go install` a tagged version, to get a real one.
const Unknown = "v0.0.0-unknown"

// stamped is the version a release build stamps into the binary:
//
//	go build -ldflags "-X github.com/gatewitness/gatewitness/internal/version.stamped=v0.1.0"
//
// (make release does). It wins over the build information, which a
// build from a tarball or with -buildvcs=false lacks.
var stamped string

// Gatewitness returns the version of the gatewitness module in this binary:
// the version make release stamped, else the module version for
// `go install ...@version`, the pseudo-version Go derives from the git
// commit for a build from a checkout (for example
// v0.0.0-20260301120000-0123456789ab, with "+dirty" when the work tree
// had changes), or Unknown.
func Gatewitness() string {
	if IsSemantic(stamped) {
		return stamped
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Unknown
	}
	return fromModules(&bi.Main, bi.Deps)
}

// modulePath is gatewitness's module path (internal/project.ModulePath;
// not imported, so this package stays a leaf).
const modulePath = "github.com/gatewitness/gatewitness"

// fromModules returns gatewitness's version from a binary's modules: the
// main module's when gatewitness is the main module, else that of the
// dependency gatewitness is (a program built in a module of its own that
// requires gatewitness, as the Gateway API v1.7 nightly builds it), with
// the version a replace gives it.
func fromModules(main *debug.Module, deps []*debug.Module) string {
	if main.Path == modulePath || main.Path == "" {
		return fromBuildInfo(main.Version)
	}
	for _, d := range deps {
		if d.Path != modulePath {
			continue
		}
		if d.Replace != nil && d.Replace.Version != "" {
			return fromBuildInfo(d.Replace.Version)
		}
		return fromBuildInfo(d.Version)
	}
	return fromBuildInfo(main.Version)
}

// fromBuildInfo keeps a module version that is a full semantic version
// and replaces anything else ("(devel)", "") with Unknown.
func fromBuildInfo(v string) string {
	// The placeholder go.mod files use for a module a replace provides
	// names no commit.
	if strings.HasPrefix(v, "v0.0.0-00010101000000-000000000000") {
		return Unknown
	}
	if IsSemantic(v) {
		return v
	}
	return Unknown
}

// IsSemantic reports whether v is a full semantic version
// (MAJOR.MINOR.PATCH with optional pre-release and build parts), with or
// without a leading "v".
func IsSemantic(v string) bool {
	if v == "" {
		return false
	}
	_, err := utilversion.ParseSemantic(v)
	return err == nil
}

// IsRelease reports whether v names a release: a semantic version with no
// pre-release part (so neither a Go pseudo-version nor Unknown), no build
// metadata, and not v0.0.0.
func IsRelease(v string) bool {
	sv, err := utilversion.ParseSemantic(v)
	return err == nil && sv.PreRelease() == "" && sv.BuildMetadata() == "" &&
		(sv.Major() != 0 || sv.Minor() != 0 || sv.Patch() != 0)
}
