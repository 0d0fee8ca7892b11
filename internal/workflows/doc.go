// Package workflows holds the test that checks gatewitness's GitHub Actions
// workflows (.github/workflows/*.yml, and the template for implementers in
// docs/workflows/) with actionlint, and that each does what the README
// says it does. It has no code of its own.
package workflows
