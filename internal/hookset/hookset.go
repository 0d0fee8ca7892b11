// Package hookset adds sets of hook points: structs whose fields are bools
// (an alternative path on), funcs (code a part calls at that point) or
// structs of those, as the test-only hook points of the reference data
// plane and probe proxy are (dataplanetest.Hooks, probeproxytest.Hooks).
// Adding one lets a single part carry several breakages at once, with no
// per-field code to keep in step with the fields.
package hookset

import (
	"fmt"
	"reflect"
)

// Merge returns a with every hook point of b added: a bool is on when it
// is on in either; a func is b's when b sets it, else a's. It panics on a
// field of any other kind, naming it, as a hook set must not have one.
func Merge[S any](a, b S) S {
	merge(reflect.ValueOf(&a).Elem(), reflect.ValueOf(b), reflect.TypeFor[S]().String())
	return a
}

func merge(dst, src reflect.Value, path string) {
	switch dst.Kind() {
	case reflect.Bool:
		dst.SetBool(dst.Bool() || src.Bool())
	case reflect.Func:
		if !src.IsNil() {
			dst.Set(src)
		}
	case reflect.Struct:
		for i := range dst.NumField() {
			merge(dst.Field(i), src.Field(i), path+"."+dst.Type().Field(i).Name)
		}
	default:
		panic(fmt.Sprintf("hookset.Merge: %s is a %s; a hook point is a bool, a func or a struct of those", path, dst.Kind()))
	}
}
