// Package version says which gatewitness a binary is, in a form the
// Gateway API project accepts as an implementation version: a semantic
// version naming a snapshot.
package version

import (
	"runtime/debug"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Unknown is the version of a build that carries no version: go run and
// go test do not stamp one, and neither does go build with
// -buildvcs=false. It is a semantic version (v0.0.0 with the pre-release
// "unknown"), so reports stay valid, and it says plainly that the
// snapshot is not known. Build with `go build` (or `go run -buildvcs=true`)
// from a git checkout, or `go install` a tagged version, to get a real one.
const Unknown = "v0.0.0-unknown"

// Gatewitness returns the version of the gatewitness module in this binary:
// the module version for `go install ...@version`, the pseudo-version Go
// derives from the git commit for a build from a checkout (for example
// v0.0.0-20260301120000-0123456789ab, with "+dirty" when the work tree
// had changes), or Unknown.
func Gatewitness() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Unknown
	}
	return fromBuildInfo(bi.Main.Version)
}

// fromBuildInfo keeps a module version that is a full semantic version
// and replaces anything else ("(devel)", "") with Unknown.
func fromBuildInfo(v string) string {
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
