package breakage

import (
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
	"github.com/gatewitness/gatewitness/internal/hookset"
)

// TestSetMerges: every hook point of Set is of a kind hookset.Merge adds
// (it panics, naming the field, otherwise).
func TestSetMerges(t *testing.T) {
	got := hookset.Merge(Set{TransportResends: true}, Set{GRPC: GRPCTimeouts{LooserWins: true}})
	if !got.TransportResends || !got.GRPC.LooserWins {
		t.Errorf("Merge = %+v: lost a side", got)
	}
}

// own is a stand-in for the data plane's own parts: each part a distinct
// type, so that a replaced or wrapped one shows.
func own() part.Parts {
	return part.Parts{
		Retries: struct{ part.Retries }{}, Relay: struct{ part.Relay }{}, Timer: struct{ part.Timer }{},
		Transport: struct{ part.Transport }{}, Calls: struct{ part.Calls }{}, Reload: struct{ part.Reload }{},
	}
}

// partTypes names the dynamic type of each part.
func partTypes(p part.Parts) []string {
	v := reflect.ValueOf(p)
	types := make([]string, v.NumField())
	for i := range types {
		types[i] = fmt.Sprintf("%s %T", v.Type().Field(i).Name, v.Field(i).Interface())
	}
	return types
}

// TestBuildReplacesAPartForEveryField: the zero Set is the data plane's
// own parts, and every hook point on by itself replaces or wraps at least
// one of them, so that a field added to Set without its line in Build
// fails here.
func TestBuildReplacesAPartForEveryField(t *testing.T) {
	if got, want := partTypes(Build(Set{}, own())), partTypes(own()); !slices.Equal(got, want) {
		t.Errorf("Build(Set{}) = %v, want the own parts %v", got, want)
	}
	for _, leaf := range leaves(reflect.TypeFor[Set](), nil, "") {
		t.Run(leaf.name, func(t *testing.T) {
			var s Set
			f := reflect.ValueOf(&s).Elem().FieldByIndex(leaf.index)
			switch f.Kind() {
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Func:
				f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value {
					return []reflect.Value{reflect.ValueOf(true)}
				}))
			default:
				t.Fatalf("%s is a %s; a hook point is a bool or a func", leaf.name, f.Kind())
			}
			if got, want := partTypes(Build(s, own())), partTypes(own()); slices.Equal(got, want) {
				t.Errorf("Build with %s on left every part as it was: give it a line in Build", leaf.name)
			}
		})
	}
}

type leaf struct {
	name  string
	index []int
}

// leaves lists the fields of t that are not structs, through nested ones.
func leaves(t reflect.Type, index []int, prefix string) []leaf {
	var out []leaf
	for i := range t.NumField() {
		f := t.Field(i)
		at := append(slices.Clone(index), i)
		if f.Type.Kind() == reflect.Struct {
			out = append(out, leaves(f.Type, at, prefix+f.Name+".")...)
			continue
		}
		out = append(out, leaf{prefix + f.Name, at})
	}
	return out
}

// shorterWins is a stand-in for the data plane's own Calls: the shorter
// of the route's limit and the client's timeout.
type shorterWins struct{ part.Calls }

func (shorterWins) Budget(route time.Duration, _ bool, client time.Duration, hasClient bool) (time.Duration, part.BudgetSource) {
	if hasClient && client < route {
		return client, part.BudgetClient
	}
	return route, part.BudgetRoute
}

// TestBuildComposesInOrder: breakages merged into one Set act as the
// data plane broken both ways did when they were switches: a client
// timeout that is ignored is not looked at by LooserWins, and a response
// completed as if whole is not dropped.
func TestBuildComposesInOrder(t *testing.T) {
	p := own()
	p.Calls = shorterWins{}
	calls := Build(Set{GRPC: GRPCTimeouts{IgnoreClientTimeout: true, LooserWins: true}}, p).Calls
	if d, src := calls.Budget(10*time.Second, false, time.Minute, true); d != 10*time.Second || src != part.BudgetRoute {
		t.Errorf("IgnoreClientTimeout+LooserWins: budget %v from %v, want the route's 10s", d, src)
	}
	relay := Build(Set{Relay: Relay{CompletesTruncated: true, DropsOnAbort: true}}, p).Relay
	defer func() {
		if v := recover(); v != nil {
			t.Errorf("CompletesTruncated+DropsOnAbort: Aborted panicked with %v, want the response ended as if complete", v)
		}
	}()
	relay.Aborted(httptest.NewRecorder(), true)
}
