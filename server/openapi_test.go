package server

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
)

// openAPIDoc is the part of the document the tests look at.
type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Info       struct{ Title, Version string }       `json:"info"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	return doc
}

var routeRE = regexp.MustCompile(`mux\.HandleFunc\("([A-Z]+) (/[^"]*)"`)

// registeredRoutes parses the "METHOD /path" patterns out of routes() in
// http.go; the method-less catch-all "/" does not match.
func registeredRoutes(t *testing.T) [][2]string {
	t.Helper()
	src, err := os.ReadFile("http.go")
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, m := range routeRE.FindAllStringSubmatch(string(src), -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	if len(out) < 10 {
		t.Fatalf("found only %d routes in http.go; has routes() changed shape?", len(out))
	}
	return out
}

func TestOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	if !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(doc.OpenAPI) {
		t.Errorf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	if doc.Info.Title != "braid" || doc.Info.Version == "" {
		t.Errorf("info = %+v, want title braid and a version", doc.Info)
	}
}

func TestOpenAPICoversRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	routes := map[string]bool{}
	for _, r := range registeredRoutes(t) {
		method, path := strings.ToLower(r[0]), r[1]
		routes[method+" "+path] = true
		item, ok := doc.Paths[path]
		if !ok {
			t.Errorf("route %s %s: path missing from openapi.json", r[0], path)
			continue
		}
		if _, ok := item[method]; !ok {
			t.Errorf("route %s %s: method missing from openapi.json paths[%q]", r[0], path, path)
		}
	}
	// And the other way round: the document describes no route that is not served.
	methods := []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	for path, item := range doc.Paths {
		for key := range item {
			if slices.Contains(methods, key) && !routes[key+" "+path] {
				t.Errorf("openapi.json documents %s %s, which routes() does not register", strings.ToUpper(key), path)
			}
		}
	}
}

// TestOpenAPIRefs checks that every local $ref resolves.
func TestOpenAPIRefs(t *testing.T) {
	var root any
	if err := json.Unmarshal(openAPI, &root); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if !resolvePointer(root, ref) {
					t.Errorf("$ref %q does not resolve", ref)
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(root)
}

func resolvePointer(root any, ref string) bool {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	cur := root
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[tok]; !ok {
			return false
		}
	}
	return true
}

// TestOpenAPIErrorCodes checks that the Error.code enum lists exactly the
// Code* constants of package api.
func TestOpenAPIErrorCodes(t *testing.T) {
	doc := loadOpenAPI(t)
	f, err := parser.ParseFile(token.NewFileSet(), "../api/api.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					want = append(want, s)
				}
			}
		}
	}
	got := slices.Clone(doc.Components.Schemas["Error"].Properties["code"].Enum)
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("Error.code enum = %v, want the api.Code* constants %v", got, want)
	}
	for _, name := range []string{"Error", "ErrorBody", "Object", "Operation", "Parameter", "JobSpec", "Job",
		"Progress", "UnitStat", "Manifest", "ManifestUnit", "Endpoint", "WorkerInfo", "Worker", "Registration", "Event"} {
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("components.schemas has no %s", name)
		}
	}
}

// TestOpenAPIWorkerSchemas checks that the worker registry's schemas list
// exactly the JSON fields of their Go types, and that /healthz's names the
// version it serves.
func TestOpenAPIWorkerSchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	for name, v := range map[string]any{"WorkerInfo": api.WorkerInfo{}, "Worker": api.Worker{}, "Endpoint": api.Endpoint{},
		"Registration": api.Registration{}} {
		var want []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			if tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
				want = append(want, tag)
			}
		}
		got := slices.Collect(maps.Keys(doc.Components.Schemas[name].Properties))
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("components.schemas.%s has properties %v; api.%s has JSON fields %v", name, got, name, want)
		}
	}
	if _, ok := doc.Components.Schemas["Health"].Properties["version"]; !ok {
		t.Error("components.schemas.Health has no version")
	}
}
