// Package testclient is how gatewitness's conformance tests talk to the
// echo-backend through a Gateway: an HTTP client for one route's hostname
// (Route), the request ids that key the backend's fault state and ledger
// (NewID), reading that ledger back (Route.Ledger, Route.SettledLedger,
// GRPCLedger), its admin switches (Route.Admin, with paths from
// contract/echowire), and the one way the tests wait for something (Poll).
//
// Every function that can fail a test takes the *testing.T of the
// (sub)test calling it: nothing here holds one, so a client made in a test
// can be used from its subtests, each failing its own.
//
// Wire names (headers, paths, modes) come from contract/echowire; no test
// spells one.
package testclient
