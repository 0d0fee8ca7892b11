package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/validation/spec"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/gatewitness/gatewitness/crds"
)

// NewScheme returns a scheme with the Kubernetes built-in types of client-go
// and the Gateway API types (v1, v1beta1, v1alpha2, v1alpha3 and the
// x-k8s.io v1alpha1 group) registered.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		gatewayv1.Install,
		gatewayv1beta1.Install,
		gatewayv1alpha2.Install,
		gatewayv1alpha3.Install,
		gatewayxv1alpha1.Install,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("store: building scheme: %w", err)
		}
	}
	return s, nil
}

// kindInfo is what the store knows about one kind it serves.
type kindInfo struct {
	gk             schema.GroupKind
	resource       string // plural, lower case
	namespaced     bool
	hasStatus      bool
	storageVersion string
	versions       []string // served versions
	// nameFn validates metadata.name (and generateName) the way the API
	// server does for this kind.
	nameFn apimachineryvalidation.ValidateNameFunc
	// schemas is set for CRD kinds, keyed by version; nil for built-ins.
	schemas map[string]*versionSchema
}

func (k *kindInfo) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.gk.Group, Resource: k.resource}
}

func (k *kindInfo) serves(version string) bool {
	for _, v := range k.versions {
		if v == version {
			return true
		}
	}
	return false
}

// versionSchema holds the compiled schema of one CRD version: what the API
// server builds once per CRD and then uses for every request.
type versionSchema struct {
	structural *structuralschema.Structural
	// embedded is structural trimmed to the embedded resources
	// (x-kubernetes-embedded-resource) and the paths to them, nil when it
	// has none (the Gateway API CRDs): the metadata coercion and checks
	// of embedded objects act only there.
	embedded        *structuralschema.Structural
	validator       apiextensionsvalidation.SchemaValidator
	statusValidator apiextensionsvalidation.SchemaValidator // nil without status subresource
	cel             *cel.Validator                          // nil without x-kubernetes-validations
	// celCreate runs cel's rules with no old object, remembering verdicts
	// on subtrees (see celTree); nil when cel is. celUpdate is celCreate
	// when no rule reads oldSelf, else nil; statusCELUpdate the same for
	// statusCEL.
	celCreate, celUpdate, statusCELUpdate *celTree
	// openAPI and statusOpenAPI validate as validator and statusValidator
	// do without an old object, remembering results; see openAPIMemo.
	openAPI, statusOpenAPI *openAPIMemo
	// statusCEL and statusStructural check a write of the status
	// subresource; see statusOnlyCEL.
	statusCEL        *cel.Validator
	statusStructural *structuralschema.Structural
	preserveUnknown  bool
	// defaults and listTypes are the parts of structural that defaulting
	// and the list-type checks act on (see trimSchema); nil when none.
	defaults, listTypes *structuralschema.Structural
}

// trimSchema returns the part of s where keep holds and the paths that
// lead there: a copy of s whose properties, items and additionalProperties
// are only those with a node below (or at) them that keep marks. It
// returns nil when keep holds nowhere in s. Defaulting and the list-type
// checks walk an object along its schema and do nothing at a node that
// has no default (no list type) at or below it, so walking the trimmed
// schema gives what walking the whole one gives, without visiting the
// parts of the object where nothing can happen. A node with both
// properties and additionalProperties (which a structural schema does not
// have) is kept whole.
func trimSchema(s *structuralschema.Structural, keep func(*structuralschema.Structural) bool) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	out := *s
	found := keep(s)
	out.Properties = nil
	for name, p := range s.Properties {
		if t := trimSchema(&p, keep); t != nil {
			if out.Properties == nil {
				out.Properties = map[string]structuralschema.Structural{}
			}
			out.Properties[name] = *t
			found = true
		}
	}
	if out.Items = trimSchema(s.Items, keep); out.Items != nil {
		found = true
	}
	out.AdditionalProperties = nil
	if s.AdditionalProperties != nil {
		if t := trimSchema(s.AdditionalProperties.Structural, keep); t != nil {
			out.AdditionalProperties = &structuralschema.StructuralOrBool{Structural: t}
			found = true
		}
	}
	switch {
	case !found:
		return nil
	case len(s.Properties) > 0 && s.AdditionalProperties != nil:
		return s
	}
	return &out
}

// hasDefault, hasListType and isEmbeddedResource are trimSchema's keep
// for defaulting, for the list-type checks (which check only sets and
// maps) and for the metadata coercion and checks of embedded objects.
func hasDefault(s *structuralschema.Structural) bool         { return s.Default.Object != nil }
func isEmbeddedResource(s *structuralschema.Structural) bool { return s.XEmbeddedResource }
func hasListType(s *structuralschema.Structural) bool {
	return s.XListType != nil && (*s.XListType == "set" || *s.XListType == "map")
}

// defaultObject applies the schema's defaults to obj, as
// structuraldefaulting.Default with the whole schema does.
func (vs *versionSchema) defaultObject(obj map[string]any) {
	if vs.defaults != nil {
		structuraldefaulting.Default(obj, vs.defaults)
	}
}

// listErrors checks the list types of obj, as
// structurallisttype.ValidateListSetsAndMaps with the whole schema does.
func (vs *versionSchema) listErrors(obj map[string]any) field.ErrorList {
	if vs.listTypes == nil {
		return nil
	}
	return structurallisttype.ValidateListSetsAndMaps(nil, vs.listTypes, obj)
}

// builtinKinds lists the core kinds the store serves. The API server serves
// many more; these are the ones the conformance suite, the pod runner and the
// gateway controller use.
var builtinKinds = []struct {
	group, version, kind, resource string
	namespaced, status             bool
	nameFn                         apimachineryvalidation.ValidateNameFunc
}{
	{"", "v1", "Namespace", "namespaces", false, true, apimachineryvalidation.ValidateNamespaceName},
	{"", "v1", "Service", "services", true, true, apimachineryvalidation.NameIsDNS1035Label},
	{"", "v1", "Pod", "pods", true, true, apimachineryvalidation.NameIsDNSSubdomain},
	{"", "v1", "ConfigMap", "configmaps", true, false, apimachineryvalidation.NameIsDNSSubdomain},
	{"", "v1", "Secret", "secrets", true, false, apimachineryvalidation.NameIsDNSSubdomain},
	{"", "v1", "ServiceAccount", "serviceaccounts", true, false, apimachineryvalidation.NameIsDNSSubdomain},
	{"", "v1", "Endpoints", "endpoints", true, false, apimachineryvalidation.NameIsDNSSubdomain},
	{"", "v1", "Event", "events", true, false, apimachineryvalidation.NameIsDNSSubdomain},
	{"apps", "v1", "Deployment", "deployments", true, true, apimachineryvalidation.NameIsDNSSubdomain},
	{"apps", "v1", "ReplicaSet", "replicasets", true, true, apimachineryvalidation.NameIsDNSSubdomain},
	{"apps", "v1", "StatefulSet", "statefulsets", true, true, apimachineryvalidation.NameIsDNSSubdomain},
	{"apps", "v1", "DaemonSet", "daemonsets", true, true, apimachineryvalidation.NameIsDNSSubdomain},
	{"discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true, false, apimachineryvalidation.NameIsDNSSubdomain},
	{"coordination.k8s.io", "v1", "Lease", "leases", true, false, apimachineryvalidation.NameIsDNSSubdomain},
}

func builtinKindInfos() []*kindInfo {
	out := make([]*kindInfo, 0, len(builtinKinds))
	for _, b := range builtinKinds {
		out = append(out, &kindInfo{
			gk:             schema.GroupKind{Group: b.group, Kind: b.kind},
			resource:       b.resource,
			namespaced:     b.namespaced,
			hasStatus:      b.status,
			storageVersion: b.version,
			versions:       []string{b.version},
			nameFn:         b.nameFn,
		})
	}
	return out
}

// Compiled CRD kinds are shared by every store in the process: compiling the
// Gateway API schemas and their CEL rules takes far longer than a test.
var (
	defaultCRDsOnce  sync.Once
	defaultCRDKinds  []*kindInfo
	defaultCRDsError error

	compiledMu sync.Mutex
	compiled   = map[string]*compiledCRD{} // key: CRD name + hash of its spec
)

type compiledCRD struct {
	once sync.Once
	info *kindInfo
	err  error
}

// defaultKinds compiles the embedded CRDs once per process.
func defaultKinds() ([]*kindInfo, error) {
	defaultCRDsOnce.Do(func() {
		all, err := crds.Load()
		if err != nil {
			defaultCRDsError = err
			return
		}
		defaultCRDKinds, defaultCRDsError = compileCRDs(all)
	})
	return defaultCRDKinds, defaultCRDsError
}

func compileCRDs(list []*apiextensionsv1.CustomResourceDefinition) ([]*kindInfo, error) {
	out := make([]*kindInfo, 0, len(list))
	for _, crd := range list {
		info, err := compileCached(crd)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// compileCached compiles a CRD, or returns the result of an earlier
// compilation of a CRD with the same name and spec.
func compileCached(crd *apiextensionsv1.CustomResourceDefinition) (*kindInfo, error) {
	spec, err := json.Marshal(crd.Spec)
	if err != nil {
		return nil, fmt.Errorf("store: CRD %s: encoding spec: %w", crd.Name, err)
	}
	sum := sha256.Sum256(spec)
	key := crd.Name + "/" + hex.EncodeToString(sum[:])
	compiledMu.Lock()
	c, ok := compiled[key]
	if !ok {
		c = &compiledCRD{}
		compiled[key] = c
	}
	compiledMu.Unlock()
	c.once.Do(func() { c.info, c.err = compileCRD(crd) })
	return c.info, c.err
}

// compileCRD builds, for every version of crd, the structural schema, the
// OpenAPI validators and the CEL validator, as the API server's CRD handler
// does when it starts serving a CRD.
func compileCRD(crd *apiextensionsv1.CustomResourceDefinition) (*kindInfo, error) {
	info := &kindInfo{
		gk:         schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind},
		resource:   crd.Spec.Names.Plural,
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		nameFn:     apimachineryvalidation.NameIsDNSSubdomain,
		schemas:    map[string]*versionSchema{},
	}
	if info.gk.Kind == "" || info.resource == "" || info.gk.Group == "" {
		return nil, fmt.Errorf("store: CRD %s: spec.group, spec.names.kind and spec.names.plural must be set", crd.Name)
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			info.storageVersion = v.Name
		}
		if !v.Served {
			continue
		}
		info.versions = append(info.versions, v.Name)
		if v.Subresources != nil && v.Subresources.Status != nil {
			info.hasStatus = true
		}
		vs, err := compileVersion(crd, v)
		if err != nil {
			return nil, fmt.Errorf("store: CRD %s version %s: %w", crd.Name, v.Name, err)
		}
		info.schemas[v.Name] = vs
	}
	if info.storageVersion == "" {
		return nil, fmt.Errorf("store: CRD %s: no version has storage: true", crd.Name)
	}
	if len(info.versions) == 0 {
		return nil, fmt.Errorf("store: CRD %s: no version has served: true", crd.Name)
	}
	return info, nil
}

func compileVersion(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) (*versionSchema, error) {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("schema.openAPIV3Schema is missing: apiextensions.k8s.io/v1 requires a structural schema")
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting schema: %w", err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("schema is not structural: %w", err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("pruning defaults: %w", err)
	}
	vs := &versionSchema{structural: s, preserveUnknown: crd.Spec.PreserveUnknownFields,
		defaults: trimSchema(s, hasDefault), listTypes: trimSchema(s, hasListType),
		embedded: trimSchema(s, isEmbeddedResource)}
	var openAPI *spec.Schema
	vs.validator, openAPI, err = apiextensionsvalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("building validator: %w", err)
	}
	vs.openAPI = &openAPIMemo{schema: openAPI, memo: sharedOpenAPIMemo}
	if v.Subresources != nil && v.Subresources.Status != nil {
		if st, ok := internal.OpenAPIV3Schema.Properties["status"]; ok {
			vs.statusValidator, openAPI, err = apiextensionsvalidation.NewSchemaValidator(&st)
			if err != nil {
				return nil, fmt.Errorf("building status validator: %w", err)
			}
			vs.statusOpenAPI = &openAPIMemo{schema: openAPI, memo: sharedOpenAPIMemo}
		}
	}
	vs.cel = cel.NewValidator(s, true, celconfig.PerCallLimit)
	vs.celCreate = newCELTree(vs.cel)
	vs.statusCEL, vs.statusStructural = vs.cel, s
	if v.Subresources != nil && v.Subresources.Status != nil {
		vs.statusCEL, vs.statusStructural = statusOnlyCEL(s, vs.cel)
	}
	if !usesOldSelf(s) {
		vs.celUpdate = vs.celCreate
	}
	switch {
	case vs.statusCEL == vs.cel:
		vs.statusCELUpdate = vs.celUpdate
	case !usesOldSelf(vs.statusStructural):
		vs.statusCELUpdate = newCELTree(vs.statusCEL)
	}
	return vs, nil
}

// statusOnlyCEL returns the CEL validator for writes of the status
// subresource, and the schema to give it. Such a write copies every field
// but status from the stored object, so every rule outside status sees an
// unchanged value: the API server's ratcheting drops the errors of those
// that evaluate to false, and those that fail to evaluate (a missing key)
// failed the same way on the same value when the object was stored, which
// the store then refused. Evaluating them cannot change the verdict, and
// for an HTTPRoute it costs most of a write; the validator returned holds
// the rules of the root and of status only.
//
// Two kinds of rule would see a difference, and when the schema has either,
// full is returned instead: rules on the root itself (which may read spec),
// and transition rules outside status (ratcheting does not drop their
// errors: one that fails when a value does not change would fail every
// status write on an API server). What remains different is the CEL cost
// budget, which an API server charges for every rule of the object: a
// status write over an object whose spec rules use most of it is accepted
// here.
func statusOnlyCEL(s *structuralschema.Structural, full *cel.Validator) (*cel.Validator, *structuralschema.Structural) {
	if full == nil || len(s.XValidations) > 0 {
		return full, s
	}
	for name, p := range s.Properties {
		if name != "status" && usesOldSelf(&p) {
			return full, s
		}
	}
	trimmed := *s
	trimmed.Properties = map[string]structuralschema.Structural{}
	for name, p := range s.Properties {
		switch name {
		case "status", "metadata", "apiVersion", "kind":
			trimmed.Properties[name] = p
		}
	}
	return cel.NewValidator(&trimmed, true, celconfig.PerCallLimit), &trimmed
}

// usesOldSelf reports whether a rule in s or below it mentions oldSelf.
func usesOldSelf(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	for _, r := range s.XValidations {
		if strings.Contains(r.Rule, "oldSelf") {
			return true
		}
	}
	for _, p := range s.Properties {
		if usesOldSelf(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && usesOldSelf(s.AdditionalProperties.Structural) {
		return true
	}
	return usesOldSelf(s.Items)
}
