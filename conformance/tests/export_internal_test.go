package tests

// ConnManifest is connManifest, for the external tests: the manifest the
// connection timeout tests apply a renamed copy of (connFixture) without
// listing it in their Manifests.
const ConnManifest = connManifest
