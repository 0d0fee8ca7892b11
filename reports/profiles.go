package reports

import confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"

// ProfileNotClaimed reports whether the run claimed nothing of profile p
// and ran none of its tests: no test counted in p passed, failed or was
// skipped, and no extended feature of p is claimed. Upstream's suite
// still lists such a profile, with its core a "success" of 0 tests and
// the summary "Core tests succeeded." (requesting a profile claims its
// core features, and each test of the profile that the run does not
// support leaves the profile in the report with nothing counted). The
// upstream report keeps that, as upstream's runner writes it; gatewitness's
// own report, summaries, CLI lines and pages say "not claimed" instead.
func ProfileNotClaimed(p confv1.ProfileReport) bool {
	if counted(p.Core) > 0 {
		return false
	}
	return p.Extended == nil || counted(p.Extended.Status) == 0 && len(p.Extended.SupportedFeatures) == 0
}

// NotClaimedSummary is the gatewitness report's summary of a profile that
// ProfileNotClaimed.
const NotClaimedSummary = "Not claimed: the run claims none of this profile's features beyond its core, and none of its tests ran."

// NotClaimed is how summaries and pages show the result of a profile that
// ProfileNotClaimed.
const NotClaimed = "not claimed"

// NotClaimedResult is the core result that run.json's gatewitness profiles
// and the gatewitness report give a profile that ProfileNotClaimed, in
// place of the "success" upstream's suite compiles for it: a machine
// reading the result must not take a profile nothing of which ran for a
// profile that passed. (The upstream report keeps upstream's "success".)
const NotClaimedResult confv1.Result = "not-claimed"

// MarkNotClaimed gives each profile of ps that ProfileNotClaimed the
// result NotClaimedResult and the summary NotClaimedSummary.
func MarkNotClaimed(ps []confv1.ProfileReport) {
	for i, p := range ps {
		if ProfileNotClaimed(p) {
			ps[i].Core.Result = NotClaimedResult
			ps[i].Summary = NotClaimedSummary
		}
	}
}

func counted(s confv1.Status) uint32 { return s.Passed + s.Failed + s.Skipped }
