package server

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
)

// TestOpenAPIJobAndObjectFields: the schemas of the job and object types
// list exactly the JSON fields of the api types, so a field added to one
// (progress.sent, object.existing) cannot be missing from the other.
func TestOpenAPIJobAndObjectFields(t *testing.T) {
	doc := loadOpenAPI(t)
	for name, v := range map[string]any{"Progress": api.Progress{}, "Object": api.Object{}, "Job": api.Job{},
		"JobSpec": api.JobSpec{}, "Manifest": api.Manifest{}, "UnitStat": api.UnitStat{}} {
		var want []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			want = append(want, tag)
		}
		var got []string
		for p := range doc.Components.Schemas[name].Properties {
			got = append(got, p)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s has properties %v, api.%s has JSON fields %v", name, got, name, want)
		}
	}
}
