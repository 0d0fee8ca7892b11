package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// optimisticLockMsg is the API server's text for a stale resourceVersion.
const optimisticLockMsg = "the object has been modified; please apply your changes to the latest version and try again"

// create runs the create path of the API server on m (owned by the store
// from here on) and returns the stored object, which no one may change.
// typed says the caller wants the answer in gvk's Go type: it is then
// decoded before the store's lock is taken.
func (s *Store) create(ctx context.Context, info *kindInfo, gvk schema.GroupVersionKind, m map[string]any, dryRun, typed bool) (*decoded, error) {
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(gvk.GroupVersion().String())
	u.SetKind(gvk.Kind)
	if !info.namespaced && u.GetNamespace() != "" {
		// A cluster-scoped request path has no namespace: a client that sets
		// one gets it dropped, so do the same.
		u.SetNamespace("")
	}
	if u.GetName() == "" && u.GetGenerateName() != "" {
		u.SetName(generateName(u.GetGenerateName()))
	}

	// The namespace is checked first, as the API server's admission does;
	// decoding, defaulting and validation need no lock, so writes of other
	// clients go on meanwhile. The checks against the store's contents are
	// made again under the lock that stores the object.
	if info.namespaced && u.GetNamespace() != "" {
		s.mu.Lock()
		err := s.namespaceAcceptsLocked(u.GetNamespace())
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	if err := s.prepare(info, u, nil, false); err != nil {
		return nil, err
	}

	// System fields, as rest.FillObjectMetaSystemFields and the strategies'
	// PrepareForCreate set them.
	u.SetUID(uuid.NewUUID())
	u.SetCreationTimestamp(metav1.NewTime(s.now()))
	u.SetGeneration(1)
	u.SetDeletionTimestamp(nil)
	u.SetDeletionGracePeriodSeconds(nil)
	u.SetResourceVersion("")
	u.SetSelfLink("")
	if info.hasStatus && info.schemas != nil {
		delete(u.Object, "status")
	}

	if err := s.validateCreate(ctx, info, gvk, u); err != nil {
		return nil, err
	}
	u.SetAPIVersion(schema.GroupVersion{Group: info.gk.Group, Version: info.storageVersion}.String())
	key := objKey{u.GetNamespace(), u.GetName()}
	var pre *decoded
	if typed && !dryRun && !allocates(info) {
		pre = s.predecode(u.Object, gvk)
	}

	s.mu.Lock()
	if info.namespaced && key.namespace != "" {
		if err := s.namespaceAcceptsLocked(key.namespace); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	if _, exists := s.objects[info.gk][key]; exists {
		s.mu.Unlock()
		return nil, apierrors.NewAlreadyExists(info.groupResource(), key.name)
	}
	if s.count >= s.maxObjects {
		s.mu.Unlock()
		return nil, apierrors.NewInternalError(fmt.Errorf("store: the store holds %d objects, the limit set by Options.MaxObjects", s.maxObjects))
	}
	if err := s.allocateLocked(info, u, nil, dryRun); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if dryRun {
		s.mu.Unlock()
		return newDecoded(copyMap(u.Object)), nil
	}
	s.rv++
	rv := strconv.FormatUint(s.rv, 10)
	u.SetResourceVersion(rv)
	d := newDecoded(u.Object)
	if pre != nil {
		pre.setResourceVersion(rv)
		d = pre
	}
	if s.objects[info.gk] == nil {
		s.objects[info.gk] = map[objKey]map[string]any{}
	}
	s.objects[info.gk][key] = u.Object
	s.latest[objRef{info.gk, key}] = d
	s.count++
	s.byUID[u.GetUID()] = objRef{info.gk, key}
	s.emitLocked(info, eventAdded, nil, d)
	s.mu.Unlock()
	return d, nil // stored maps are never changed: no lock needed
}

// namespaceAcceptsLocked checks that namespace ns exists and is not
// terminating, with the API server's errors.
func (s *Store) namespaceAcceptsLocked(ns string) error {
	nsObj, ok := s.objects[schema.GroupKind{Kind: "Namespace"}][objKey{"", ns}]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, ns)
	}
	if phase, _, _ := unstructured.NestedString(nsObj, "status", "phase"); phase == "Terminating" {
		err := apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, ns,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    "NamespaceTerminating",
			Message: fmt.Sprintf("namespace %s is being terminated", ns),
			Field:   "metadata.namespace",
		})
		return err
	}
	return nil
}

// prepare does what the API server's decoder does to a request body: for CRD
// kinds, prune unknown fields and nulls, coerce metadata and apply the
// schema's defaults; for built-in kinds, decode into the Go type (dropping
// unknown fields) and apply defaultBuiltin. old is the stored object on
// update, nil on create.
func (s *Store) prepare(info *kindInfo, u *unstructured.Unstructured, old *unstructured.Unstructured, status bool) error {
	if info.schemas != nil {
		vs := info.schemas[versionOf(u)]
		if status {
			prepareStatus(vs, u)
			return nil
		}
		meta, found, err := schemaobjectmeta.GetObjectMeta(u.Object, false)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("store: decoding metadata of %s: %v", info.gk.Kind, err))
		}
		apiVersion, kind := u.GetAPIVersion(), u.GetKind()
		if !vs.preserveUnknown {
			structuralpruning.PruneWithOptions(u.Object, vs.structural, true, structuralschema.UnknownFieldPathOptions{})
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, vs.structural)
		}
		// The object's own metadata is decoded above and set below; Coerce
		// (not at a resource root) acts only on embedded resources, which
		// vs.embedded leads to.
		if ferr := coerceEmbedded(u.Object, vs.embedded); ferr != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("store: %s: %v", info.gk.Kind, ferr))
		}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		if found {
			if err := schemaobjectmeta.SetObjectMeta(u.Object, meta); err != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("store: %s: %v", info.gk.Kind, err))
			}
		}
		vs.defaultObject(u.Object)
		return nil
	}
	gvk := info.gk.WithVersion(versionOf(u))
	typed, err := s.scheme.New(gvk)
	if err != nil {
		return fmt.Errorf("store: %s has no Go type in the scheme: %w", gvk, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("store: decoding %s %q: %v", info.gk.Kind, u.GetName(), err))
	}
	var oldTyped runtime.Object
	if old != nil {
		oldTyped, _ = s.scheme.New(gvk)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(old.Object, oldTyped); err != nil {
			return fmt.Errorf("store: decoding stored %s %q: %w", info.gk.Kind, old.GetName(), err)
		}
	}
	if !status {
		if old == nil && info.hasStatus {
			resetStatus(typed)
		}
		defaultBuiltin(typed, oldTyped)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return fmt.Errorf("store: encoding %s %q: %w", info.gk.Kind, u.GetName(), err)
	}
	u.Object = m
	u.SetAPIVersion(gvk.GroupVersion().String())
	u.SetKind(gvk.Kind)
	return nil
}

// prepareStatus prunes and defaults the status of u, a write of a CRD
// kind's status subresource. Everything else in u is the stored object,
// pruned and defaulted when it was written, and pruning and defaulting
// change nothing the second time: so only status is processed, in an
// object that holds nothing else, which gives it the same result as
// processing the whole object.
func prepareStatus(vs *versionSchema, u *unstructured.Unstructured) {
	shallow := map[string]any{"apiVersion": u.Object["apiVersion"], "kind": u.Object["kind"]}
	if st, has := u.Object["status"]; has {
		shallow["status"] = st
	}
	if !vs.preserveUnknown {
		structuralpruning.PruneWithOptions(shallow, vs.structural, true, structuralschema.UnknownFieldPathOptions{})
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(shallow, vs.structural)
	}
	vs.defaultObject(shallow)
	if st, has := shallow["status"]; has {
		u.Object["status"] = st
	} else {
		delete(u.Object, "status")
	}
}

func versionOf(u *unstructured.Unstructured) string {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	return gv.Version
}

// validateCreate runs the create validation of the API server: for CRD
// kinds the custom resource strategy (metadata, OpenAPI schema, embedded
// resources, list types, CEL), then, for every kind, the generic metadata
// validation.
func (s *Store) validateCreate(ctx context.Context, info *kindInfo, gvk schema.GroupVersionKind, u *unstructured.Unstructured) error {
	var errs field.ErrorList
	if info.schemas != nil {
		vs := info.schemas[gvk.Version]
		errs = append(errs, validation.ValidateObjectMetaAccessor(u, info.namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
		errs = append(errs, apiextensionsvalidation.ValidateCustomResource(nil, u.Object, vs.openAPI)...)
		errs = append(errs, validateObjectMeta(ctx, u.Object, vs.embedded)...)
		errs = append(errs, vs.listErrors(u.Object)...)
		if vs.celCreate != nil && !celBlocked(errs) {
			celErrs, _ := vs.celCreate.validate(ctx, u.Object, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		} else {
			errs = appendCEL(ctx, errs, vs.cel, vs.structural, u.Object, nil)
		}
	} else {
		errs = append(errs, validation.ValidateObjectMetaAccessor(u, info.namespaced, info.nameFn, field.NewPath("metadata"))...)
	}
	if len(errs) == 0 {
		errs = validation.ValidateObjectMetaAccessor(u, info.namespaced, path.ValidatePathSegmentName, field.NewPath("metadata"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(info.gk, u.GetName(), errs)
	}
	return nil
}

// appendCEL runs the CEL rules unless errs already holds an error that the
// API server treats as blocking them.
func appendCEL(ctx context.Context, errs field.ErrorList, v *cel.Validator, sts *structuralschema.Structural, obj, old map[string]any, opts ...cel.Option) field.ErrorList {
	if v == nil {
		return errs
	}
	if celBlocked(errs) {
		return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	celErrs, _ := v.Validate(ctx, nil, sts, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return append(errs, celErrs...)
}

// celPasses reports whether obj passes the rules of tree within the
// budget.
func celPasses(ctx context.Context, tree *celTree, obj map[string]any) bool {
	errs, left := tree.validate(ctx, obj, celconfig.RuntimeCELCostBudget)
	return len(errs) == 0 && left >= 0
}

// celBlocked reports whether errs holds an error that the API server
// treats as blocking the CEL rules.
func celBlocked(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// update runs the update path of the API server for the object at key:
// the main resource (status false) or the status subresource. If mutate is
// not nil it computes the new object from a copy of the stored one (in the
// request version) and m is ignored. It returns the stored object (or,
// under dry run, the object that would be), which no one may change.
//
// A write of the status subresource and a patch are decoded, defaulted and
// validated against a snapshot of the stored object without holding the
// store's lock, as on the API server: if another write changed the object
// meanwhile, a status write that named the resourceVersion it read fails
// with a Conflict, and a patch (or a write that named none) is computed
// again from the new stored object (GuaranteedUpdate). An update of the
// main resource holds the lock throughout, as every write once did: a
// client that reads an object and updates it (upstream's applier does, for
// objects that exist) then conflicts only with writes made between its
// read and its update, not with the controllers' status writes during its
// validation, which would conflict on an API server too but far less often
// than in an in-memory store on a busy machine.
func (s *Store) update(ctx context.Context, info *kindInfo, gvk schema.GroupVersionKind, key objKey, m map[string]any, status, dryRun, typed bool, mutate func(current map[string]any) (map[string]any, error)) (*decoded, error) {
	held := !status && mutate == nil
	if held {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	// Only a request without a resourceVersion can be retried; tryUpdate
	// changes the map it is given, so such a request keeps the original.
	keep := !held && mutate == nil && (&unstructured.Unstructured{Object: m}).GetResourceVersion() == ""
	for {
		req := m
		if keep {
			req = copyMap(m)
		}
		out, retry, err := s.tryUpdate(ctx, info, gvk, key, req, status, dryRun, typed, mutate, held)
		if !retry {
			return out, err
		}
	}
}

// tryUpdate is one attempt of update; retry reports that the stored object
// changed while it was being validated and the request may be retried.
// held says the caller holds the store's lock; typed that the caller wants
// the answer in gvk's Go type, which is then decoded before the object is
// stored (outside the lock, unless the caller holds it).
func (s *Store) tryUpdate(ctx context.Context, info *kindInfo, gvk schema.GroupVersionKind, key objKey, m map[string]any, status, dryRun, typed bool, mutate func(current map[string]any) (map[string]any, error), held bool) (out *decoded, retry bool, err error) {
	if !held {
		s.mu.Lock()
	}
	stored, ok := s.objects[info.gk][key]
	prev := s.latestLocked(info, key, stored)
	if !held {
		s.mu.Unlock()
	}
	if !ok {
		return nil, false, apierrors.NewNotFound(info.groupResource(), key.name)
	}
	storedRV := (&unstructured.Unstructured{Object: stored}).GetResourceVersion()
	// old shares all but its top level with the stored object, which no
	// one changes: old's apiVersion is set below, and nothing here changes
	// what is inside old.
	old := &unstructured.Unstructured{Object: maps.Clone(stored)}
	old.SetAPIVersion(gvk.GroupVersion().String())
	if mutate != nil {
		if m, err = mutate(copyMap(old.Object)); err != nil {
			return nil, false, err
		}
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(gvk.GroupVersion().String())
	u.SetKind(gvk.Kind)
	if u.GetName() != key.name {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", u.GetName(), key.name))
	}
	if info.namespaced && u.GetNamespace() != key.namespace {
		return nil, false, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if !info.namespaced {
		u.SetNamespace("")
	}
	rv := u.GetResourceVersion()
	switch {
	case rv == "" && info.schemas != nil:
		return nil, false, apierrors.NewInvalid(info.gk, key.name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), rv, "must be specified for an update")})
	case rv == "":
		u.SetResourceVersion(old.GetResourceVersion())
	case rv != old.GetResourceVersion():
		return nil, false, apierrors.NewConflict(info.groupResource(), key.name, fmt.Errorf("%s", optimisticLockMsg))
	}
	// A request that named the version it read conflicts with any write
	// made since; one that did not is retried on the new version.
	retryable := rv == "" || mutate != nil

	if status {
		// The status subresource changes status only.
		// Of the stored object's parts, only metadata is changed below
		// (resourceVersion and the like): the others are shared.
		st, has := u.Object["status"]
		u.Object = maps.Clone(old.Object)
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			u.Object["metadata"] = copyMap(md)
		}
		if has {
			u.Object["status"] = st
		} else {
			delete(u.Object, "status")
		}
	}
	if err := s.prepare(info, u, old, status); err != nil {
		return nil, false, err
	}
	if !status {
		if info.hasStatus {
			if st, has := old.Object["status"]; has {
				u.Object["status"] = st
			} else {
				delete(u.Object, "status")
			}
		}
		// What rest.BeforeUpdate keeps from the stored object.
		u.SetGeneration(old.GetGeneration())
		if u.GetUID() == "" {
			u.SetUID(old.GetUID())
		}
		u.SetCreationTimestamp(old.GetCreationTimestamp())
		u.SetDeletionTimestamp(old.GetDeletionTimestamp())
		u.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
		if !equality.Semantic.DeepEqual(withoutMetadata(u.Object), withoutMetadata(old.Object)) {
			u.SetGeneration(old.GetGeneration() + 1)
		}
	}
	if err := s.validateUpdate(ctx, info, gvk, u, old, status); err != nil {
		return nil, false, err
	}
	u.SetAPIVersion(schema.GroupVersion{Group: info.gk.Group, Version: info.storageVersion}.String())
	old.SetAPIVersion(u.GetAPIVersion())
	noop := equality.Semantic.DeepEqual(u.Object, old.Object)
	var pre *decoded
	switch {
	case !typed || noop || dryRun || allocates(info):
	case status && prev != nil:
		pre = s.predecodeStatusWrite(u.Object, stored, prev, gvk)
	default:
		pre = s.predecode(u.Object, gvk)
	}

	result, retry, err := s.storeUpdate(info, key, storedRV, retryable, u, old, noop, dryRun, held, pre)
	if result == nil {
		return nil, retry, err
	}
	return result, false, nil // stored maps are never changed: no lock needed
}

// storeUpdate stores u over the object at key if that is still at
// storedRV, and returns the object to answer with (a copy of it under dry
// run). When the object changed, a retryable request is retried, another
// conflicts. held says the caller holds the store's lock. pre, when not
// nil, is u decoded by predecode.
func (s *Store) storeUpdate(info *kindInfo, key objKey, storedRV string, retryable bool, u, old *unstructured.Unstructured, noop, dryRun, held bool, pre *decoded) (result *decoded, retry bool, err error) {
	if !held {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	stored, ok := s.objects[info.gk][key]
	if !ok {
		return nil, false, apierrors.NewNotFound(info.groupResource(), key.name)
	}
	if (&unstructured.Unstructured{Object: stored}).GetResourceVersion() != storedRV {
		if retryable {
			return nil, true, nil
		}
		return nil, false, apierrors.NewConflict(info.groupResource(), key.name, fmt.Errorf("%s", optimisticLockMsg))
	}
	if err := s.allocateLocked(info, u, old, dryRun); err != nil {
		return nil, false, err
	}
	switch {
	case noop:
		// A no-op update writes nothing and sends no event, as etcd3 storage.
		return newDecoded(stored), false, nil
	case dryRun:
		return newDecoded(u.Object), false, nil
	case u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) == 0:
		s.objects[info.gk][key] = u.Object
		s.removeLocked(info, key, metav1.DeletePropagationBackground)
		return newDecoded(u.Object), false, nil
	}
	s.rv++
	rv := strconv.FormatUint(s.rv, 10)
	u.SetResourceVersion(rv)
	d := newDecoded(u.Object)
	if pre != nil {
		pre.setResourceVersion(rv)
		d = pre
	}
	s.objects[info.gk][key] = u.Object
	s.latest[objRef{info.gk, key}] = d
	s.emitLocked(info, eventModified, stored, d)
	return d, false, nil
}

func withoutMetadata(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// validateUpdate runs the API server's update validation, with ratcheting:
// unchanged invalid values that the stored object already had are accepted.
func (s *Store) validateUpdate(ctx context.Context, info *kindInfo, gvk schema.GroupVersionKind, u, old *unstructured.Unstructured, status bool) error {
	var errs field.ErrorList
	errs = append(errs, validation.ValidateObjectMetaAccessorUpdate(u, old, field.NewPath("metadata"))...)
	if info.schemas != nil {
		vs := info.schemas[gvk.Version]
		correlated := common.NewCorrelatedObject(u.Object, old.Object, &model.Structural{Structural: vs.structural})
		if status {
			// Ratcheting only drops errors: a value valid without it is
			// valid with it, and the check without it can use the memo.
			if st, has := u.Object["status"]; has && vs.statusValidator != nil && !vs.statusOpenAPI.Validate(st).IsValid() {
				errs = append(errs, apiextensionsvalidation.ValidateCustomResourceUpdate(field.NewPath("status"), st, old.Object["status"], vs.statusValidator,
					apiextensionsvalidation.WithRatcheting(correlated.Key("status")))...)
			}
			// Everything but status is the stored object's: an error
			// outside status is the old object's too, which drops every
			// error below. So only status needs checking in the new one.
			statusOnly := map[string]any{}
			if st, has := u.Object["status"]; has {
				statusOnly["status"] = st
			}
			if newErrs := vs.listErrors(statusOnly); len(newErrs) > 0 {
				if oldErrs := vs.listErrors(old.Object); len(oldErrs) == 0 {
					errs = append(errs, newErrs...)
				}
			}
		} else {
			if !vs.openAPI.Validate(u.Object).IsValid() {
				errs = append(errs, apiextensionsvalidation.ValidateCustomResourceUpdate(nil, u.Object, old.Object, vs.validator,
					apiextensionsvalidation.WithRatcheting(correlated))...)
			}
			errs = append(errs, validateObjectMeta(ctx, u.Object, vs.embedded)...)
			if oldErrs := vs.listErrors(old.Object); len(oldErrs) == 0 {
				errs = append(errs, vs.listErrors(u.Object)...)
			}
		}
		v, sts, tree := vs.cel, vs.structural, vs.celUpdate
		if status {
			v, sts, tree = vs.statusCEL, vs.statusStructural, vs.statusCELUpdate
		}
		// As above: with no rule that reads oldSelf (tree is nil if one
		// does), ratcheting can only drop errors, so an object the rules
		// pass without it passes with it.
		if tree == nil || celBlocked(errs) || !celPasses(ctx, tree, u.Object) {
			errs = appendCEL(ctx, errs, v, sts, u.Object, old.Object, cel.WithRatcheting(correlated))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(info.gk, u.GetName(), errs)
	}
	return nil
}

// patch applies patch to the stored object in obj's version and updates.
func (s *Store) patch(ctx context.Context, obj client.Object, patch client.Patch, status, dryRun bool) error {
	info, gvk, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	data, err := patch.Data(obj)
	if err != nil {
		return fmt.Errorf("store: computing patch: %w", err)
	}
	pt := patch.Type()
	switch pt {
	case types.JSONPatchType, types.MergePatchType:
	case types.StrategicMergePatchType:
		if info.schemas != nil {
			return &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
				Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
					types.JSONPatchType, types.MergePatchType, types.ApplyYAMLPatchType),
			}}
		}
	case types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
		return errApplyUnsupported
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("store: patch type %q is not supported: use %q, %q or (built-in kinds) %q",
			pt, types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType))
	}
	key := info.keyOf(obj)
	mutate := func(current map[string]any) (map[string]any, error) {
		current["kind"] = gvk.Kind
		orig, err := json.Marshal(current)
		if err != nil {
			return nil, fmt.Errorf("store: encoding stored object: %w", err)
		}
		var patched []byte
		switch pt {
		case types.JSONPatchType:
			p, err := jsonpatch.DecodePatch(data)
			if err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("store: decoding JSON patch: %v", err))
			}
			if patched, err = p.Apply(orig); err != nil {
				return nil, apierrors.NewInvalid(info.gk, key.name, field.ErrorList{field.Invalid(nil, string(data), err.Error())})
			}
		case types.MergePatchType:
			if patched, err = jsonpatch.MergePatch(orig, data); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("store: applying merge patch: %v", err))
			}
		case types.StrategicMergePatchType:
			typed, err := s.scheme.New(gvk)
			if err != nil {
				return nil, fmt.Errorf("store: %s: %w", gvk, err)
			}
			if patched, err = strategicpatch.StrategicMergePatch(orig, data, typed); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("store: applying strategic merge patch: %v", err))
			}
		}
		out := map[string]any{}
		if err := utiljson.Unmarshal(patched, &out); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("store: patched object is not a JSON object: %v", err))
		}
		return out, nil
	}
	_, unstructuredObj := obj.(runtime.Unstructured)
	out, err := s.update(ctx, info, gvk, key, nil, status, dryRun, !unstructuredObj, mutate)
	if err != nil {
		return err
	}
	return s.decodeVersionInto(out, gvk, obj)
}

// deleteLocked deletes the object at key; see Delete.
func (s *Store) deleteLocked(info *kindInfo, key objKey, do *client.DeleteOptions) error {
	stored, ok := s.objects[info.gk][key]
	if !ok {
		return apierrors.NewNotFound(info.groupResource(), key.name)
	}
	u := &unstructured.Unstructured{Object: stored}
	if p := do.Preconditions; p != nil {
		if p.UID != nil && *p.UID != u.GetUID() {
			return apierrors.NewConflict(info.groupResource(), key.name,
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, u.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != u.GetResourceVersion() {
			return apierrors.NewConflict(info.groupResource(), key.name,
				fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, u.GetResourceVersion()))
		}
	}
	if isDryRun(do.DryRun) {
		return nil
	}
	policy := metav1.DeletePropagationBackground
	if do.PropagationPolicy != nil {
		policy = *do.PropagationPolicy
	}
	if info.gk == (schema.GroupKind{Kind: "Namespace"}) {
		return s.terminateNamespaceLocked(info, key)
	}
	if len(u.GetFinalizers()) > 0 {
		if u.GetDeletionTimestamp() != nil {
			return nil // already being deleted
		}
		next := copyMap(stored)
		nu := &unstructured.Unstructured{Object: next}
		now := metav1.NewTime(s.now())
		nu.SetDeletionTimestamp(&now)
		zero := int64(0)
		nu.SetDeletionGracePeriodSeconds(&zero)
		s.rv++
		nu.SetResourceVersion(strconv.FormatUint(s.rv, 10))
		s.objects[info.gk][key] = next
		s.emitLocked(info, eventModified, stored, newDecoded(next))
		return nil
	}
	s.removeLocked(info, key, policy)
	return nil
}

// removeLocked removes the object at key for good, sends DELETED and handles
// its dependents and its namespace.
func (s *Store) removeLocked(info *kindInfo, key objKey, policy metav1.DeletionPropagation) {
	stored := s.objects[info.gk][key]
	u := &unstructured.Unstructured{Object: stored}
	uid := u.GetUID()
	if policy == metav1.DeletePropagationForeground {
		s.cascadeLocked(uid, policy)
	}
	delete(s.objects[info.gk], key)
	s.count--
	delete(s.byUID, uid)
	delete(s.latest, objRef{info.gk, key})
	s.releaseLocked(info, u)
	s.rv++
	final := copyMap(stored)
	(&unstructured.Unstructured{Object: final}).SetResourceVersion(strconv.FormatUint(s.rv, 10))
	s.emitLocked(info, eventDeleted, stored, newDecoded(final))
	if policy != metav1.DeletePropagationForeground {
		s.cascadeLocked(uid, policy)
	}
	if key.namespace != "" {
		s.finishNamespaceLocked(key.namespace)
	}
}

// cascadeLocked deals with the dependents of the object with uid owner,
// which is gone or going: with Orphan their ownerReferences to it are
// removed; otherwise dependents with no remaining owner are deleted.
func (s *Store) cascadeLocked(owner types.UID, policy metav1.DeletionPropagation) {
	type dep struct {
		info *kindInfo
		key  objKey
	}
	var deps []dep
	for gk, objs := range s.objects {
		for k, m := range objs {
			refs := (&unstructured.Unstructured{Object: m}).GetOwnerReferences()
			for _, r := range refs {
				if r.UID == owner {
					deps = append(deps, dep{s.kinds[gk], k})
					break
				}
			}
		}
	}
	for _, d := range deps {
		stored, ok := s.objects[d.info.gk][d.key]
		if !ok {
			continue // removed by an earlier cascade
		}
		u := &unstructured.Unstructured{Object: copyMap(stored)}
		if policy == metav1.DeletePropagationOrphan {
			var keep []metav1.OwnerReference
			for _, r := range u.GetOwnerReferences() {
				if r.UID != owner {
					keep = append(keep, r)
				}
			}
			u.SetOwnerReferences(keep)
			s.rv++
			u.SetResourceVersion(strconv.FormatUint(s.rv, 10))
			s.objects[d.info.gk][d.key] = u.Object
			s.emitLocked(d.info, eventModified, stored, newDecoded(u.Object))
			continue
		}
		alive := false
		for _, r := range u.GetOwnerReferences() {
			if _, ok := s.byUID[r.UID]; ok && r.UID != owner {
				alive = true
			}
		}
		if !alive {
			_ = s.deleteLocked(d.info, d.key, &client.DeleteOptions{PropagationPolicy: &policy})
		}
	}
}

// terminateNamespaceLocked marks a namespace Terminating, deletes what is in
// it and removes it when it is empty.
func (s *Store) terminateNamespaceLocked(info *kindInfo, key objKey) error {
	stored := s.objects[info.gk][key]
	u := &unstructured.Unstructured{Object: copyMap(stored)}
	if u.GetDeletionTimestamp() == nil {
		now := metav1.NewTime(s.now())
		u.SetDeletionTimestamp(&now)
		zero := int64(0)
		u.SetDeletionGracePeriodSeconds(&zero)
		_ = unstructured.SetNestedField(u.Object, "Terminating", "status", "phase")
		s.rv++
		u.SetResourceVersion(strconv.FormatUint(s.rv, 10))
		s.objects[info.gk][key] = u.Object
		s.emitLocked(info, eventModified, stored, newDecoded(u.Object))
	}
	ns := key.name
	for gk, objs := range s.objects {
		k := s.kinds[gk]
		if !k.namespaced {
			continue
		}
		var keys []objKey
		for ok := range objs {
			if ok.namespace == ns {
				keys = append(keys, ok)
			}
		}
		for _, ok := range keys {
			if _, still := objs[ok]; still {
				_ = s.deleteLocked(k, ok, &client.DeleteOptions{})
			}
		}
	}
	s.finishNamespaceLocked(ns)
	return nil
}

// finishNamespaceLocked removes a Terminating namespace once nothing is left
// in it.
func (s *Store) finishNamespaceLocked(ns string) {
	nsInfo := s.kinds[schema.GroupKind{Kind: "Namespace"}]
	nsObj, ok := s.objects[nsInfo.gk][objKey{"", ns}]
	if !ok {
		return
	}
	if phase, _, _ := unstructured.NestedString(nsObj, "status", "phase"); phase != "Terminating" {
		return
	}
	for gk, objs := range s.objects {
		if !s.kinds[gk].namespaced {
			continue
		}
		for k := range objs {
			if k.namespace == ns {
				return
			}
		}
	}
	s.removeLocked(nsInfo, objKey{"", ns}, metav1.DeletePropagationBackground)
}

// generateName appends five random characters to prefix, from the API
// server's alphabet, trimming the prefix as it does.
func generateName(prefix string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	const maxPrefix = 63 - 5
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return prefix + string(b)
}
