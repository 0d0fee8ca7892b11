// Package docs embeds gatewitness's written decisions, so that tools built
// from this module (the report site) can find and link to the page that
// explains a verdict. The pages themselves are the Markdown files beside
// this one.
package docs

import "embed"

// Semantics holds docs/semantics/*.md: where a GEP leaves a choice, what
// gatewitness's tests check and why. Paths are "semantics/<name>.md".
//
//go:embed semantics/*.md
var Semantics embed.FS
