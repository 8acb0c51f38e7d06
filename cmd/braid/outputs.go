package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/store"
)

// manyInputs reports whether a job runs one unit per input object, its
// result a manifest pairing each input with its output.
func manyInputs(spec api.JobSpec) bool {
	return len(spec.Inputs) > 0 || spec.InputList != "" || spec.InputJob != ""
}

// jobIDRE matches a job id.
var jobIDRE = regexp.MustCompile(`^j-[0-9a-f]{12}$`)

// getOutputs writes a done job of many inputs into dir: each unit's output,
// named after its input (the name the job gave it, else the input's id),
// with the extension its bytes call for, and the manifest as JOB.json. It
// prints each path it wrote. Every file goes into dir and nowhere else,
// whatever the server says: names and ids from the server are checked to
// be single file names before any is used.
func getOutputs(ctx context.Context, s session, j api.Job, dir string, out io.Writer) error {
	b, err := s.GetBytes(ctx, j.Result)
	if err != nil {
		return err
	}
	var m api.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("job %s: its result %s is not a manifest: %w", j.ID, j.Result, err)
	}
	if !jobIDRE.MatchString(j.ID) {
		return fmt.Errorf("the server gave %.80q as the job's id", j.ID)
	}
	names := outputNames{used: map[string]bool{}}
	manifest := names.take(j.ID + ".json")
	for _, u := range m.Units {
		if !store.ValidID(u.Output) {
			return fmt.Errorf("job %s: the manifest gives %.80q as unit %d's output, which is not an object id", j.ID, u.Output, u.Index)
		}
		tmp, err := download(ctx, s, u.Output, dir)
		if err != nil {
			return fmt.Errorf("unit %d's output %s: %w", u.Index, u.Output, err)
		}
		path, err := confined(dir, names.take(outputName(u, withExtension(tmp, ""))))
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return err
		}
		if err := install(tmp, path); err != nil {
			return err
		}
		fmt.Fprintln(out, path)
	}
	path, err := confined(dir, manifest)
	if err == nil {
		err = writeFile(path, b)
	}
	if err == nil {
		fmt.Fprintln(out, path)
	}
	return err
}

// outputName is the file name of a unit's output whose bytes call for the
// extension ext (".png", or ""): its input's name with ext in place of
// the name's own, else the input's id, else the unit's index.
func outputName(u api.ManifestUnit, ext string) string {
	switch {
	case api.ValidInputName(u.Name) && ext == "":
		return u.Name
	case api.ValidInputName(u.Name):
		return strings.TrimSuffix(u.Name, filepath.Ext(u.Name)) + ext
	case store.ValidID(u.Input):
		return u.Input[:12] + ext
	}
	return fmt.Sprintf("unit-%d%s", u.Index, ext)
}

// outputNames hands out file names, each once: a name already taken gets
// "-2", "-3", ... before its extension.
type outputNames struct{ used map[string]bool }

func (o outputNames) take(name string) string {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 2; o.used[name]; i++ {
		name = fmt.Sprintf("%s-%d%s", stem, i, ext)
	}
	o.used[name] = true
	return name
}

// confined is dir/name, if name is one file name that stays in dir.
func confined(dir, name string) (string, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("refusing to write %.80q: not a file name in %s", name, dir)
	}
	return filepath.Join(dir, name), nil
}

// writeFile writes b to path through a temporary file beside it, renamed
// into place once whole.
func writeFile(path string, b []byte) error {
	tmp, err := createTemp(filepath.Dir(path))
	if err != nil {
		return err
	}
	if _, err = tmp.Write(b); err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	return install(tmp, path)
}
