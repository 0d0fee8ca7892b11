package breakage

import "github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"

// Build returns own, the data plane's own parts, with every part s breaks
// replaced or wrapped. Wrappers compose, so a merged Set (internal/hookset)
// breaks each of its ways at once; the order below keeps each wrapper's
// view of its inner part the one it was written against.
func Build(s Set, own part.Parts) part.Parts {
	p := own
	if s.TransportResends {
		p.Transport = resends{p.Transport}
	}
	if s.Relay.BuffersRequests {
		p.Transport = buffersRequests{p.Transport}
	}
	if s.NoNonIdempotentRetries {
		p.Retries = idempotentOnly{p.Retries}
	}
	if s.BodyNotHeld {
		p.Retries = bodyNotHeld{p.Retries}
	}
	if s.RetrySameEndpoint {
		p.Retries = sameEndpoint{p.Retries}
	}
	if s.RetriesAttemptError != nil {
		p.Retries = attemptErrors{p.Retries, s.RetriesAttemptError}
	}
	if s.RetryBudgetRelaysBackendStatus {
		p.Retries = budgetRelays{p.Retries}
	}
	if s.InactivityTimeouts {
		p.Timer = inactivity{}
		p.Calls = noPropagation{p.Calls} // a call's bound is then not told
	}
	if s.GRPC.NoTimeoutPropagation {
		p.Calls = noPropagation{p.Calls}
	}
	if s.GRPC.LooserWins {
		p.Calls = looserWins{p.Calls}
	}
	if s.GRPC.IgnoreClientTimeout { // outermost: the others see no client
		p.Calls = ignoreClient{p.Calls}
	}
	if s.GRPC.UnavailableOnExpiry {
		p.Calls = unavailableOnExpiry{p.Calls}
	}
	if s.Relay.DropsOnAbort {
		p.Relay = dropsOnAbort{p.Relay}
	}
	if s.Relay.BareResetOverHTTP2 {
		p.Relay = bareResetOverHTTP2{p.Relay}
	}
	if s.Relay.EndsTruncatedHTTP2Stream {
		p.Relay = endsTruncatedHTTP2Stream{p.Relay}
	}
	if s.Relay.CompletesTruncated { // outside DropsOnAbort: it ends first
		p.Relay = completesTruncated{p.Relay}
	}
	if s.Relay.BuffersResponses {
		p.Relay = buffersResponses{p.Relay}
	}
	if s.Relay.RefusesEarlyGRPCEnds {
		p.Relay = refusesEarlyGRPCEnds{p.Relay}
	}
	if s.Relay.GRPCResetAsOK {
		p.Relay = grpcResetAsOK{p.Relay}
	}
	if s.CloseTunnelOnBackendFIN {
		p.Relay = closeOnBackendFIN{p.Relay}
	}
	if s.ReloadRestartsTimers {
		p.Reload = &restartsTimers{}
	}
	return p
}
