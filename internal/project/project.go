// Package project names the project and its home: the module path, the
// repository, its issue tracker and where its files are browsed. It is the
// one place these are written; the reports' defaults for the reference
// gateway, the submission README's Reproduce section, the site's links and
// the CLI take them from here, and TestDocsNameTheProjectsHome holds the
// docs, Makefiles and workflow templates to the same values.
package project

const (
	// Name is the project's name, as the binary, the reports and the
	// profiles (upper-cased: GATEWITNESS-*) spell it.
	Name = "gatewitness"
	// ModulePath is the Go module path: go install ModulePath+"/cmd/gatewitness@vX.Y.Z".
	ModulePath = "github.com/gatewitness/gatewitness"
	// RepositoryURL is the project's repository.
	RepositoryURL = "https://" + ModulePath
	// IssuesURL is where problems are reported; the reports' contact for
	// the reference gateway.
	IssuesURL = RepositoryURL + "/issues"
	// SourceURL is where the project's files are browsed at main, for links
	// to docs/semantics; a path relative to the repository's root follows it.
	SourceURL = RepositoryURL + "/blob/main/"
)
